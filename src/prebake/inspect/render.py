"""The text of ``inspect`` results, written piece by piece to a sink so that it can stream.

* ``json_pieces`` — one result of ``inspect --json``: the bytes ``json.dumps(facts.to_json(…),
  indent=2, sort_keys=True, ensure_ascii=False)`` prints inside ``"results"``, written member by
  member (an archive of 100 000 members never exists as one string). Values go through orjson
  (the ``json`` module indents only in pure Python, and the facts of every member of a big
  archive are most of the command's work), or through ``json`` for a value orjson refuses;
  only the symbol lists are written from one template per entry with ``json``'s own string
  encoder.
* ``text_pieces`` — the human view: a title line, the facts table, the members table and
  ``nm``-style symbol lines, as plain text (ANSI styles when ``color``).

Both take their fields from ``facts.ABI_FIELDS`` and ``Facts.to_json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

import orjson

from prebake import abikeys, engines
from prebake.abikeys import AbiKey
from prebake.inspect import demangle, hotloops, hotloops_py
from prebake.inspect.facts import ABI_FIELDS, SYMBOL_LISTS, Facts, Symbols

Sink = Callable[[str], object]
MEMBER_ROWS = 60  # archive members listed in the human view before "… N more"
DEMANGLED_MAX = 1 << 18  # names kept demangled per process (bounds a hostile file)

_ENCODER = json.JSONEncoder(indent=2, sort_keys=True, ensure_ascii=False)
_ORJSON = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_demangled: dict[str, str | None] = {}  # name -> demangled form, filled a list at a time


def _demangle_all(names: list[str]) -> dict[str, str | None]:
    """The demangled form of every name in ``names``, in one call of ``fill_demangled``: the
    C loop where the runtime's demangler can be called directly, else the Python reference."""
    if len(_demangled) + len(names) > DEMANGLED_MAX:
        _demangled.clear()  # starts over between lists, never inside one
    address = demangle.address()
    scan = hotloops.scan if address else hotloops_py
    scan.fill_demangled(_demangled, names, address, max(DEMANGLED_MAX, len(names)))
    return _demangled


# --------------------------------------------------------------------------------------------
# JSON


def json_value(v: Any, ind: str) -> str:
    """``json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`` nested at ``ind``.

    orjson writes those bytes for every value facts hold (``tests/unit/test_render_json.py``
    holds the two to each other); what it refuses (an integer beyond 64 bits, a lone
    surrogate from an undecodable name) is left to ``json``. Facts hold no floats, the one
    type the two write differently (``1e-05`` against ``0.00001``)."""
    try:
        text = orjson.dumps(v, option=_ORJSON).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = _ENCODER.encode(v)
    return text.replace("\n", "\n" + ind)


def _engines(f: Facts) -> engines.Verdict | None:
    """The engines table's prediction for a wasm result (``prebake.engines``), else None."""
    need = engines.needs(f) if f.error is None else None
    return engines.verdict(need) if need is not None else None


def json_pieces(f: Facts, sink: Sink, *, symbols: bool, ind: str = "    ",
                top: bool = True) -> None:
    """The JSON object of ``f.to_json(symbols=…, demangle=…)`` at indent ``ind``; a wasm
    result (``top``, not its members) with ``engines``, the table's prediction."""
    verdict = _engines(f) if top else None
    if f.members is None and f.slices is None and not symbols:
        d = f.to_json()
        if verdict is not None:
            d["engines"] = verdict.to_json()
        sink(json_value(d, ind))
        return
    d = f.to_json(children=False)
    if verdict is not None:
        d["engines"] = verdict.to_json()
    children = {k: v for k, v in (("members", f.members), ("slices", f.slices)) if v is not None}
    lists = _symbol_lists(f.symbols, ind + "  ") if symbols else {}
    inner = ind + "  "
    for i, key in enumerate(sorted([*d, *children, *lists])):
        sink(("{\n" if i == 0 else ",\n") + inner + encode_basestring(key) + ": ")
        if key in children:
            kids = children[key]
            if not kids:
                sink("[]")
                continue
            for j, kid in enumerate(kids):
                sink(("[\n" if j == 0 else ",\n") + inner + "  ")
                json_pieces(kid, sink, symbols=symbols, ind=inner + "  ", top=False)
            sink("\n" + inner + "]")
        elif key in lists:
            sink(lists[key])
        else:
            sink(json_value(d[key], inner))
    sink("\n" + ind + "}")


def _symbol_lists(sy: Symbols | None, ind: str) -> dict[str, str]:
    """The text of each symbol list (``[{"demangled": …, "name": …}, …]``) at ``ind``."""
    if sy is None:
        return dict.fromkeys(SYMBOL_LISTS, "null")
    out = {"defined": _names(sy.defined, ind), "undefined": _names(sy.undefined, ind)}
    # archives and most objects export what they define
    same = sy.exports is sy.defined or sy.exports == sy.defined
    out["exports"] = out["defined"] if same else _names(sy.exports, ind)
    return out


def _names(names: list[str], ind: str) -> str:
    if not names:
        return "[]"
    entries = _entries.get(ind)
    if entries is None:
        entries = _entries[ind] = _Entries(ind)
    entries.demangled = _demangle_all(names)
    return "[\n" + ",\n".join(map(entries.__getitem__, names)) + "\n" + ind + "]"


class _Entries(dict[str, str]):
    """name -> its ``{"demangled": …, "name": …}`` text at one indent, made on first use.

    An archive repeats names (every member's ``undefined`` names ``llvm::errs()``, the
    archive's lists repeat its members'): most entries of a big run are found here. Bounded,
    like the demangling cache, against a hostile file.
    """

    def __init__(self, ind: str) -> None:
        super().__init__()
        self.head = f"{ind}  {{\n{ind}    \"demangled\": "
        self.mid = f",\n{ind}    \"name\": "
        self.tail = f"\n{ind}  }}"
        self.demangled: dict[str, str | None] = {}

    def __missing__(self, name: str) -> str:
        if len(self) >= DEMANGLED_MAX:
            self.clear()
        dm = self.demangled[name]
        text = self[name] = (f"{self.head}{'null' if dm is None else encode_basestring(dm)}"
                             f"{self.mid}{encode_basestring(name)}{self.tail}")
        return text


_entries: dict[str, _Entries] = {}


# --------------------------------------------------------------------------------------------
# human text

_BOLD, _DIM, _ITALIC, _RED, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[3m", "\x1b[31m", "\x1b[0m"


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "—" if v is None else str(v)


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and text else text


def text_pieces(f: Facts, sink: Sink, *, symbols: bool, color: bool = False) -> None:
    """The human view of one good result (errors go to stderr: the caller's business)."""
    st = _Style(color)
    title = " ".join(x for x in (f.format, f.kind, f.os, f.arch) if x)
    lines = [f"{st(_BOLD, f.path)}  {title}"]
    rows: list[tuple[str, str, str]] = []
    for key, attr in ABI_FIELDS:
        val = getattr(f.abi, attr)
        if val is not None:
            why = f.evidence.get(key, [""])[0]
            why = why if len(why) <= 90 else why[:89] + "…"
            rows.append((key, _fmt(val), why))
    if f.soname:
        rows.append(("soname", f.soname, ""))
    if f.needed:
        rows.append(("needed", _fmt(f.needed), ""))
    if f.delay_needed:
        rows.append(("delay_needed", _fmt(f.delay_needed), "delay-loaded on first call"))
    for key, counts in f.counts.items():
        rows.append((f"{key} (members)", ", ".join(f"{v}: {n}" for v, n in counts.items()), ""))
    verdict = _engines(f)
    if verdict is not None:
        rows.append(("engines", verdict.line(), "predicted by engines.toml, not run"))
    lines.extend(_facts_table(rows, st))
    for sub, label in ((f.members, "members"), (f.slices, "slices")):
        if sub:
            lines.extend(_members_table(sub, label, st))
    sink("\n".join(lines) + "\n")
    if symbols:
        _symbol_lines(f, sink)
    sink("\n")


def _facts_table(rows: list[tuple[str, str, str]], st: _Style) -> list[str]:
    """Two-space edges, four between columns, the last column dim; trailing blanks dropped."""
    if not rows:
        return []
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return [f"  {k.ljust(w0)}    {v.ljust(w1)}    {st(_DIM, why)}".rstrip() for k, v, why in rows]


def _member_columns() -> dict[str, tuple[AbiKey, ...]]:
    """The member table's columns after ``member``: each one a key of ``prebake.abikeys.KEYS``
    names, in the table's order, with the keys that fill it (several share ``other``)."""
    cols: dict[str, tuple[AbiKey, ...]] = {}
    for k in abikeys.KEYS:
        if k.column is not None:
            cols[k.column] = (*cols.get(k.column, ()), k)
    return cols


_COLUMNS = _member_columns()
_MEMBER_COLS = ("member", *_COLUMNS)


def _cell_text(m: Facts, keys: tuple[AbiKey, ...]) -> str:
    """The first of ``keys`` that has a value (with its label), else the last one's ``—``."""
    for i, k in enumerate(keys):
        v = getattr(m if k.fact == "top" else m.abi, k.attribute)
        if v or i == len(keys) - 1:
            return f"{k.label} {_fmt(v)}" if k.label and v else _fmt(v)
    return "—"


def _members_table(members: list[Facts], label: str, st: _Style) -> list[str]:
    """A boxed table (heavy head, one-space padding) under a title; errors in red."""
    body: list[tuple[str, ...]] = []
    blank = ("",) * (len(_MEMBER_COLS) - 3)
    for m in members[:MEMBER_ROWS]:
        name = str(m.details.get("member", m.path))
        if m.error is not None:
            body.append((name, "\0error", *blank, m.error))
            continue
        body.append((name, *(_cell_text(m, keys) for keys in _COLUMNS.values())))
    if len(members) > MEMBER_ROWS:
        body.append((f"… {len(members) - MEMBER_ROWS} more (use --json)", "", *blank, ""))
    widths = [max(len(c), *(len(r[i].lstrip("\0")) for r in body))
              for i, c in enumerate(_MEMBER_COLS)]

    def cell(text: str, w: int) -> str:
        if text.startswith("\0"):
            return " " + st(_RED, text[1:]) + " " * (w - len(text) + 2)
        return " " + text.ljust(w) + " "

    out = [st(_ITALIC, f"{len(members)} {label}"),
           "┏" + "┳".join("━" * (w + 2) for w in widths) + "┓",
           "┃" + "┃".join(" " + st(_BOLD, c.ljust(w)) + " " for c, w in zip(_MEMBER_COLS, widths,
                                                                          strict=True)) + "┃",
           "┡" + "╇".join("━" * (w + 2) for w in widths) + "┩"]
    out.extend("│" + "│".join(cell(t, w) for t, w in zip(r, widths, strict=True)) + "│"
               for r in body)
    out.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return out


def _symbol_lines(facts: Facts, sink: Sink) -> None:
    """``nm``-style lines (T defined, W weak, U undefined), one chunk per member."""
    for f in facts.walk():
        sy = f.symbols
        if sy is None or f.members is not None:
            continue
        tail = f"  ({f.details.get('member', f.path)})" if f is not facts else ""
        demangled = _demangle_all(sy.defined + sy.undefined)
        lines = [f"  {'W' if n in sy.weak else 'T'} {_shown(n, demangled[n])}{tail}\n"
                 for n in sy.defined]
        lines += [f"  U {_shown(n, demangled[n])}{tail}\n" for n in sy.undefined]
        if lines:
            sink("".join(lines))


def _shown(name: str, demangled: str | None) -> str:
    return f"{name}  {demangled}" if demangled else name
