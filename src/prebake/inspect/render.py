"""The text of ``inspect`` results, produced piece by piece so that it can be streamed.

Two forms, both written as a sequence of ``str`` pieces handed to a sink (a list, a file, a
pipe) instead of one value built whole:

* ``json_pieces`` — one result of ``inspect --json`` exactly as ``json.dumps(facts.to_json(...),
  indent=2, sort_keys=True, ensure_ascii=False)`` would print it inside ``"results"``, but
  without building the dict tree or running the json module's pure-Python indenting encoder:
  member by member, and symbol lists through templates and the C string encoder. Byte equality
  with ``json.dumps`` is what ``tests/unit/test_inspect_stream.py`` checks.
* ``text_pieces`` — the human view: a title line, the facts table, the members table and the
  ``nm``-style symbol lines, as plain text (ANSI styles when ``color``). Rich's table layout is
  reproduced for these two fixed shapes: laying out 176 tables through rich cost three times
  the facts they show.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

try:  # the C string encoder that ``json.encoder`` itself uses, without importing ``json``
    # (its decoder and scanner): 2 ms of every inspect worker's start-up
    from _json import encode_basestring
except ImportError:  # another Python implementation
    from json.encoder import encode_basestring

from prebake.inspect.facts import Abi, Facts

Sink = Callable[[str], object]
MEMBER_ROWS = 60  # archive members listed in the human view before "… N more"
SYMBOL_KEYS = ("defined", "exports", "undefined")
_ENC: Callable[[str], str] = encode_basestring  # the C encoder (ensure_ascii=False)


@functools.cache
def _filler() -> Callable[[dict[str, str | None], list[str], int], None]:
    """``demangle.fill``, imported on first use (ctypes is start-up time a facts run saves)."""
    from prebake.inspect.demangle import fill

    return fill


DEMANGLED_MAX = 1 << 18  # names kept demangled per process (bounds a hostile file)
_demangled: dict[str, str | None] = {}  # name -> demangled, filled a member's lists at a time


def _prefill(names: list[str]) -> None:
    """Demangle the names of one list the caches lack, in one call (``demangle.fill``)."""
    if names:
        _filler()(_demangled, names, DEMANGLED_MAX)


def _demangled_of(name: str) -> str | None:
    """What ``_prefill`` found; a name it did not see, or dropped, is demangled now."""
    try:
        return _demangled[name]
    except KeyError:
        _prefill([name])
        return _demangled[name]


def _demangled_json(name: str) -> str:
    dm = _demangled_of(name)
    return "null" if dm is None else _ENC(dm)


# --------------------------------------------------------------------------------------------
# JSON


def _text(v: Any, ind: str) -> str:
    """``v`` as ``json.dumps(indent=2, sort_keys=True, ensure_ascii=False)`` at indent ``ind``."""
    t = type(v)
    if t is str:
        return _ENC(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return int.__repr__(v)
    if t is dict and v and all(type(k) is str for k in v):
        inner = ind + "  "
        return ("{\n" + inner + (",\n" + inner).join([_ENC(k) + ": " + _text(v[k], inner)
                                                        for k in sorted(v)])
                + "\n" + ind + "}")
    if (t is list or t is tuple) and v:
        inner = ind + "  "
        return "[\n" + inner + (",\n" + inner).join([_text(x, inner) for x in v]) + "\n" + ind + "]"
    if not v and (t is dict or t is list or t is tuple):
        return "{}" if t is dict else "[]"
    # floats, enums, odd keys: the json module's own answer
    import json

    return json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n" + ind)


def json_value(v: Any, ind: str) -> str:
    """``json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`` nested at ``ind``."""
    return _text(v, ind)


class _Entries(dict[str, str]):
    """name -> its ``{"demangled": …, "name": …}`` text at one indent, made on first use.

    Archives repeat names (every member's ``undefined`` names ``llvm::errs()``, the archive's
    lists repeat its members'), so most entries are a dict hit at C speed (``map``).
    """

    MAX = 1 << 18  # entries kept per indent before starting over (bounds a hostile file)

    def __init__(self, ind: str) -> None:
        super().__init__()
        self.head = ind + "  {\n" + ind + '    "demangled": '
        self.mid = ",\n" + ind + '    "name": '
        self.tail = "\n" + ind + "  }"

    def __missing__(self, name: str) -> str:
        if len(self) >= self.MAX:
            self.clear()
        text = self[name] = f"{self.head}{_demangled_json(name)}{self.mid}{_ENC(name)}{self.tail}"
        return text


_entries: dict[str, _Entries] = {}


def _names(names: list[str], ind: str) -> tuple[str, ...]:
    """``[{"demangled": …, "name": …}, …]`` at indent ``ind``, as pieces: the list's text is
    most of a big archive's output, so it is not copied once more to add its brackets."""
    if not names:
        return ("[]",)
    entries = _entries.get(ind)
    if entries is None:
        entries = _entries[ind] = _Entries(ind)
    _prefill(names)
    return "[\n", ",\n".join(map(entries.__getitem__, names)), "\n" + ind + "]"


def json_pieces(f: Facts, sink: Sink, *, symbols: bool, ind: str = "    ",
                flush_at: int = 4096) -> None:
    """The JSON object of ``f`` (``to_json(symbols=…, demangle=demangle)``) at indent ``ind``.

    Pieces reach ``sink`` in batches of about ``flush_at`` (a few dozen members' worth): an
    archive of 100 000 members never exists as one string.
    """
    out: list[str] = []
    _facts(f, ind, symbols, out, sink, flush_at)
    if out:
        sink("".join(out))


_REPEATED = frozenset({"abi", "evidence"})  # values the members of an archive mostly share
_repeats: dict[tuple[Any, ...], str] = {}


def _repeated(v: dict[str, Any], ind: str) -> str:
    """``_text`` of a value archive members repeat (their ``abi`` and ``evidence``), made once.

    Members of one archive share all but a few of these values, so the key (the items, lists
    as tuples) is cheaper to build than the text; the cache starts over past a bound.
    """
    try:
        key = (ind, *[(k, tuple(x) if type(x) is list else x) for k, x in v.items()])
        text = _repeats.get(key)
    except TypeError:  # an unhashable value (a nested dict): no cache
        return _text(v, ind)
    return text if text is not None else _remember(_repeats, 1 << 14, key, v, ind)


def _remember(cache: dict[tuple[Any, ...], str], bound: int, key: tuple[Any, ...], v: Any,
              ind: str) -> str:
    """``_text(v, ind)``, kept in ``cache`` under ``key``; the cache starts over past
    ``bound`` entries (a hostile archive's members may all differ)."""
    if len(cache) >= bound:
        cache.clear()
    text = cache[key] = _text(v, ind)
    return text


def _str_or_null(v: str | None) -> str:
    return "null" if v is None else _ENC(v)


_ABI_FIELDS = attrgetter(*Abi.__slots__)
_abis: dict[tuple[Any, ...], str] = {}


def _abi(a: Abi, ind: str) -> str:
    """``_repeated`` of ``a.to_json()``, keyed by the fields themselves (no dict per member)."""
    key = (ind, *_ABI_FIELDS(a))
    try:
        text = _abis.get(key)
    except TypeError:  # a list (wasm features): the general path
        return _repeated(a.to_json(), ind)
    return text if text is not None else _remember(_abis, 1 << 12, key, a.to_json(), ind)


def _flat(d: dict[str, Any], ind: str) -> str:
    """``_text`` of a dict of strings and numbers (a member's ``details``) in one pass."""
    if not d or not all(type(x) is str or type(x) is int for x in d.values()):
        return _text(d, ind)
    inner = ind + "  "
    return ("{\n" + inner + (",\n" + inner).join([
        _ENC(k) + (": " + _ENC(x) if type(x) is str else ": " + int.__repr__(x))
        for k, x in sorted(d.items())]) + "\n" + ind + "}")


def _leaf(f: Facts, ind: str, out: list[str]) -> None:
    """``_facts`` of a result with no members, slices or symbols (an archive member, most of
    a facts run's output): its keys in sorted order from a fixed list, without building the
    ``to_json`` dict first, as one f-string (no chain of concatenations).
    ``tests/integration/test_inspect_stream.py`` holds it to ``json.dumps``."""
    inner = ind + "  "
    sep = ",\n" + inner
    counts = f"{sep}\"counts\": {_text(f.counts, inner)}" if f.counts else ""
    error = f"{sep}\"error\": {_ENC(f.error)}" if f.error is not None else ""
    needed = "null" if f.needed is None else _text(f.needed, inner)
    size = "null" if f.size is None else _text(f.size, inner)
    out.append(
        f"{{\n{inner}\"abi\": {_abi(f.abi, inner)}{sep}\"arch\": {_str_or_null(f.arch)}{counts}"
        f"{sep}\"details\": {_flat(f.details, inner)}{error}"
        f"{sep}\"evidence\": {_repeated(f.evidence, inner)}"
        f"{sep}\"format\": {_str_or_null(f.format)}{sep}\"kind\": {_str_or_null(f.kind)}"
        f"{sep}\"needed\": {needed}{sep}\"os\": {_str_or_null(f.os)}"
        f"{sep}\"path\": {_ENC(f.path)}{sep}\"size\": {size}"
        f"{sep}\"soname\": {_str_or_null(f.soname)}\n{ind}}}")


def _facts(f: Facts, ind: str, symbols: bool, out: list[str], sink: Sink, flush_at: int) -> None:
    if not symbols and f.members is None and f.slices is None:
        _leaf(f, ind, out)
        return
    d = f.to_json(children=False)
    children = {k: v for k, v in (("members", f.members), ("slices", f.slices)) if v is not None}
    keys = sorted([*d, *children, *(SYMBOL_KEYS if symbols else ())])
    defined: tuple[str, ...] = ()  # "defined" sorts before "exports"
    inner = ind + "  "
    out.append("{")
    for i, k in enumerate(keys):
        out.append(("\n" if i == 0 else ",\n") + inner + f'"{k}": ')
        if k in children:
            kids = children[k]
            if not kids:
                out.append("[]")
                continue
            kid_ind = inner + "  "
            out.append("[\n" + kid_ind)
            for j, kid in enumerate(kids):
                if j:
                    out.append(",\n" + kid_ind)
                _facts(kid, kid_ind, symbols, out, sink, flush_at)
                if len(out) >= flush_at:
                    sink("".join(out))
                    out.clear()
            out.append("\n" + inner + "]")
        elif k in _REPEATED:
            out.append(_repeated(d[k], inner))
        elif k in d:
            out.append(_text(d[k], inner))
        else:
            sy = f.symbols
            if sy is None:
                out.append("null")
            elif k == "exports" and (sy.exports is sy.defined or sy.exports == sy.defined):
                out.extend(defined)  # archives and most objects export what they define
            else:
                parts = _names(getattr(sy, k), inner)
                if k == "defined":
                    defined = parts
                out.extend(parts)
    out.append("\n" + ind + "}")


# --------------------------------------------------------------------------------------------
# human text

_ABI_ORDER = (
    "eh",
    "lto",
    "glibc_max",
    "glibcxx_max",
    "cxx_stdlib",
    "macos_min",
    "macos_sdk",
    "msvc_runtime",
    "threads",
    "simd128",
    "relaxed_simd",
    "async",
    "wasm_features",
)
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
    d = f.to_json(children=False)
    title = " ".join(str(x) for x in (d["format"], d["kind"], d["os"], d["arch"]) if x)
    lines = [f"{st(_BOLD, f.path)}  {title}"]
    rows: list[tuple[str, str, str]] = []
    for key in _ABI_ORDER:
        val = d["abi"][key]
        if val is not None:
            why = f.evidence.get(key, [""])[0]
            why = why if len(why) <= 90 else why[:89] + "…"
            rows.append((key, _fmt(val), why))
    if f.soname:
        rows.append(("soname", f.soname, ""))
    if f.needed:
        rows.append(("needed", _fmt(f.needed), ""))
    for key, counts in f.counts.items():
        rows.append((f"{key} (members)", ", ".join(f"{v}: {n}" for v, n in counts.items()), ""))
    lines.extend(_facts_table(rows, st))
    for sub, label in ((f.members, "members"), (f.slices, "slices")):
        if sub:
            lines.extend(_members_table(sub, label, st))
    sink("\n".join(lines) + "\n")
    if symbols:
        _symbol_lines(f, sink)
    sink("\n")


def _facts_table(rows: list[tuple[str, str, str]], st: _Style) -> list[str]:
    """Rich's ``Table(show_header=False, box=None, padding=(0, 2))``: two-space edges, four
    between columns, the last column dim; trailing blanks dropped."""
    if not rows:
        return []
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return [f"  {k.ljust(w0)}    {v.ljust(w1)}    {st(_DIM, why)}".rstrip() for k, v, why in rows]


_MEMBER_COLS = ("member", "format", "arch", "eh", "lto", "glibc", "c++", "other")


def _members_table(members: list[Facts], label: str, st: _Style) -> list[str]:
    """Rich's default table (heavy head box, one-space padding) with a left-aligned title."""
    body: list[tuple[str, ...]] = []
    for m in members[:MEMBER_ROWS]:
        name = str(m.details.get("member", m.path))
        if m.error is not None:
            body.append((name, "\0error", "", "", "", "", "", m.error))
            continue
        a = m.abi
        other = (a.macos_min and f"macos {a.macos_min}") or a.msvc_runtime or _fmt(a.wasm_features)
        body.append((name, _fmt(m.format), _fmt(m.arch), _fmt(a.eh), _fmt(a.lto),
                     _fmt(a.glibc_max), _fmt(a.cxx_stdlib), other))
    if len(members) > MEMBER_ROWS:
        body.append((f"… {len(members) - MEMBER_ROWS} more (use --json)", "", "", "", "", "", "",
                     ""))
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


class _Shown(dict[str, str]):
    """name -> ``name`` or ``name  demangled``, as a symbol line shows it (made on first use)."""

    MAX = 1 << 18

    def __missing__(self, name: str) -> str:
        if len(self) >= self.MAX:
            self.clear()
        dm = _demangled_of(name)
        text = self[name] = f"{name}  {dm}" if dm else name
        return text


_shown = _Shown()


def _symbol_lines(facts: Facts, sink: Sink) -> None:
    """``nm``-style lines (T defined, W weak, U undefined), one chunk per member."""
    shown = _shown
    for f in facts.walk():
        sy = f.symbols
        if sy is None or f.members is not None:
            continue
        tail = (f"  ({f.details.get('member', f.path)})" if f is not facts else "") + "\n"
        weak = sy.weak
        _prefill(sy.defined)
        _prefill(sy.undefined)
        # a run of lines with one letter is one join: the tail and the next line's head are
        # the separator (no string per line; 290 000 lines for LLVM's archives)
        if weak:
            text = "".join([f"  {'W' if n in weak else 'T'} {shown[n]}{tail}" for n in sy.defined])
        else:
            text = _run("  T ", tail, map(shown.__getitem__, sy.defined), bool(sy.defined))
        text += _run("  U ", tail, map(shown.__getitem__, sy.undefined), bool(sy.undefined))
        if text:
            sink(text)


def _run(head: str, tail: str, shown: Iterator[str], nonempty: bool) -> str:
    return head + (tail + head).join(shown) + tail if nonempty else ""
