"""Compare two sides and classify every change as breaking or compatible.

Breaking means a consumer that built or ran against OLD may fail with NEW: a removed export of
the public API (undefined symbol at link or load time; ``prebake.diff.public`` says which
exports are API — an internal global no header declares is reported, not breaking), a raised
glibc/libstdc++/macOS floor (the oldest supported system can no longer load it), a changed EH
model, thread model, LTO kind or architecture (the link dies, like ``__resumeException`` on
wasm), a new required archive or a new NEEDED library (the consumer's link line or system
lacks it), a removed library or header. The rules are data (``FACT_RULES``); the functions
below only apply them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from prebake import abikeys
from prebake.diff.changes import Change, DiffResult, LibraryRow, pct
from prebake.diff.public import PublicApi, public_api
from prebake.diff.side import Library, Side, library_key
from prebake.inspect.demangle import demangle

# fact -> (how a change breaks, why it matters to a consumer), from the table of ABI keys
# (``prebake.abikeys.Diff`` says what "changed", "raised" and "added" mean)
FACT_RULES: dict[str, tuple[str, str]] = {
    k.name: (k.diff.how, k.diff.why) for k in abikeys.KEYS if k.diff is not None}
TOP_LEVEL_FACTS = tuple(k.name for k in abikeys.KEYS if k.fact == "top")


def fact_value(facts: Mapping[str, Any], name: str) -> Any:
    if name in TOP_LEVEL_FACTS:
        return facts.get(name)
    abi = facts.get("abi")
    return abi.get(name) if isinstance(abi, Mapping) else None


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def classify_fact(name: str, old: Any, new: Any) -> tuple[bool, str] | None:
    """``(breaking, reason)`` for one fact, or ``None`` when it did not change."""
    how, why = FACT_RULES[name]
    if old == new:
        return None
    if how == "changed":
        if old is None or new is None:
            return False, f"{name} {'now known' if old is None else 'no longer known'}"
        return True, why
    if how == "raised":
        if new is None:
            return False, f"{name} requirement dropped"
        if old is None or version_tuple(str(new)) > version_tuple(str(old)):
            return True, f"floor raised: {why}"
        if version_tuple(str(new)) == version_tuple(str(old)):
            return None
        return False, "floor lowered"
    added = sorted(set(new or ()) - set(old or ()))
    removed = sorted(set(old or ()) - set(new or ()))
    if not added and not removed:
        return None
    if added:
        return True, f"added {', '.join(added)}: {why}"
    return False, f"removed {', '.join(removed)}"


INTERNAL_REMOVED = ("internal symbol removed: no installed header declares it and the "
                    "recipe's public_symbols do not list it")


MOVED = ("moved to another symbol version node: consumers linked against the old node do "
         "not find it at load time")


def _kind(lib: Library, name: str) -> str | None:
    if lib.functions is None:
        return None
    return "function" if name in lib.functions else "variable"


def _exports(key: str, old: Library, new: Library, api: PublicApi) -> list[Change]:
    """Removed and added exports by name (public or internal, function or variable), and the
    exports both sides have whose version node moved (``LIBAVUTIL_59`` -> ``_60``): what
    ``abidiff`` lists as removed besides the names that are gone."""
    if old.exports is None or new.exports is None:
        return []
    out = []
    for n in sorted(old.exports - new.exports):  # old: its version node, where it has one
        d = demangle(n)
        node = old.export_versions.get(n)
        if api.is_public(n, d):
            out.append(Change("export", n, True, "export removed: consumers using it fail to "
                              "link or load", key, node, None, d, _kind(old, n)))
        else:
            out.append(Change("export", n, False, INTERNAL_REMOVED, key, node, None, d,
                              _kind(old, n)))
    out += [Change("export", n, False, "export added", key, None, new.export_versions.get(n),
                   demangle(n), _kind(new, n)) for n in sorted(new.exports - old.exports)]
    for n in sorted(old.exports & new.exports):
        a, b = old.export_versions.get(n), new.export_versions.get(n)
        if a is not None and b is not None and a != b:
            d = demangle(n)
            public = api.is_public(n, d)
            out.append(Change("symbol-version", n, public, MOVED if public else
                              f"internal symbol {MOVED.split(':')[0]}", key, a, b, d,
                              _kind(new, n)))
    return out


def _facts(key: str, old: Library, new: Library) -> list[Change]:
    out = []
    for name in FACT_RULES:
        a, b = fact_value(old.facts, name), fact_value(new.facts, name)
        verdict = classify_fact(name, a, b)
        if verdict is not None:
            out.append(Change("fact", name, verdict[0], verdict[1], key, a, b))
    return out


def _library_changes(old: Side, new: Side) -> tuple[list[Change], list[LibraryRow]]:
    # the API consumers compiled against: the old side's headers and both sides' globs
    api = public_api(old.declared, (*old.public_symbols, *new.public_symbols))
    changes: list[Change] = []
    rows: list[LibraryRow] = []
    pairs = _pairs(old, new)
    for key in sorted(pairs):
        a, b = pairs[key]
        if a is None and b is not None:
            if b.static:
                changes.append(Change("library", key, True, "new required archive: consumers "
                                      "must add it to their link line", key, None, b.path))
            else:
                changes.append(Change("library", key, False, "new library", key, None, b.path))
        elif b is None and a is not None:
            changes.append(Change("library", key, True, "library removed: consumers linking "
                                  "it fail", key, a.path, None))
        elif a is not None and b is not None:
            mine = _facts(key, a, b) + _exports(key, a, b, api)
            if a.size != b.size:
                mine.append(Change("size", key, False, f"{_signed(pct(a.size, b.size))}",
                                   key, a.size, b.size))
            changes += mine
        rows.append(_row(key, a, b, changes))
    return changes, rows


def _signed(p: float | None) -> str:
    return "size changed" if p is None else f"size {p:+.1f} %"


def _row(key: str, a: Library | None, b: Library | None, changes: Sequence[Change]) -> LibraryRow:
    status = ("added" if a is None else "removed" if b is None else
              "changed" if any(c.library == key for c in changes) else "unchanged")
    lib = b or a
    return LibraryRow(key, status, a.path if a else None, b.path if b else None,
                      a.size if a else None, b.size if b else None,
                      len(a.exports) if a and a.exports is not None else None,
                      len(b.exports) if b and b.exports is not None else None,
                      lib.facts.get("kind") if lib else None)


def _pairs(old: Side, new: Side) -> dict[str, tuple[Library | None, Library | None]]:
    """Libraries matched by key; two single binaries always pair, whatever their names."""
    if len(old.libraries) == 1 and len(new.libraries) == 1 and "binary" in (old.kind, new.kind):
        (a,), (b,) = old.libraries.values(), new.libraries.values()
        key = a.key if a.key == b.key else f"{a.key} → {b.key}"
        return {key: (a, b)}
    keys = set(old.libraries) | set(new.libraries)
    return {k: (old.libraries.get(k), new.libraries.get(k)) for k in keys}


def _headers(old: Side, new: Side) -> list[Change]:
    if old.headers is None or new.headers is None:
        return []
    a, b = old.headers, new.headers
    out = [Change("header", p, True, "header removed: consumers including it fail to compile")
           for p in sorted(set(a) - set(b))]
    out += [Change("header", p, False, "header added") for p in sorted(set(b) - set(a))]
    out += [Change("header", p, False, "header changed (review the API)", None, a[p][:12],
                   b[p][:12]) for p in sorted(set(a) & set(b)) if a[p] != b[p]]
    return out


def _order_keys(side: Side) -> list[list[str]]:
    by_path = {lib.path: lib.key for lib in side.libraries.values()}
    return [[by_path.get(p, library_key(p.rsplit("/", 1)[-1])) for p in g]
            for g in side.link_order or []]


def _restrict(groups: list[list[str]], keep: set[str]) -> list[list[str]]:
    """The order of the libraries in ``keep`` only; members of a cycle are unordered."""
    out = []
    for g in groups:
        kept = [k for k in g if k in keep]
        if kept:
            out.append(sorted(kept) if len(kept) > 1 else kept)
    return out


def _order_text(groups: list[list[str]]) -> str:
    return " ".join("(" + " ".join(g) + ")" if len(g) > 1 else g[0] for g in groups)


def _link_order(old: Side, new: Side) -> tuple[list[Change], dict[str, Any]]:
    info: dict[str, Any] = {"old": old.link_order, "new": new.link_order,
                            "old_source": old.link_order_source,
                            "new_source": new.link_order_source, "changed": False}
    if not old.link_order or not new.link_order:
        return [], info
    a, b = _order_keys(old), _order_keys(new)
    common = {k for g in a for k in g} & {k for g in b for k in g}
    ra, rb = _restrict(a, common), _restrict(b, common)
    if ra == rb:
        return [], info
    info["changed"] = True
    return [Change("link-order", "link order", False, "order of existing archives changed: "
                   "update hand-written link lines (prebake's CMake and pkg-config files carry "
                   "the new order)", None, _order_text(ra), _order_text(rb))], info


def diff_sides(old: Side, new: Side) -> DiffResult:
    """Every change from ``old`` to ``new``, classified."""
    lib_changes, rows = _library_changes(old, new)
    order_changes, order_info = _link_order(old, new)
    changes = lib_changes + order_changes + _headers(old, new)
    p = pct(old.size, new.size)
    if p is not None and old.size != new.size:
        changes.append(Change("size", "total", False, _signed(p), None, old.size, new.size))
    return DiffResult(old.identity, new.identity, changes, rows, order_info,
                      {"old": len(old.headers) if old.headers is not None else None,
                       "new": len(new.headers) if new.headers is not None else None})
