"""The order of static archives on a link line, computed from their symbols.

A single-pass linker (GNU ld, lld in its default mode, link.exe per library) pulls an archive
member only to satisfy a symbol that is undefined *when it reaches that archive*, so an archive
must come before every archive it needs. The algorithm:

1. Pull members the way a linker would: starting from the ``--for`` objects' undefined symbols
   (or from every member when there are none), resolve each undefined symbol to one member —
   the referrer's own archive first (a linker rescans the archive it is in), then a strong
   definition in argument order — and follow that member's undefined symbols in turn.
2. Archive A needs archive B when a pulled member of A resolves a symbol to a member of B.
3. Strongly connected components of that graph (Tarjan) are the cycles; the condensed graph is
   ordered topologically, keeping the argument order where the graph leaves a choice.

Symbols no archive (and no ``--for`` object) defines are listed: they must come from the system
libraries or the consumer, and a surprise there is a bug found before any consumer links.

Tarjan is written out instead of using networkx: the graph is a few hundred nodes at most, and
importing networkx alone (~0.17 s measured here) costs more than the whole computation.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts
from prebake.jsonio import SCHEMA_VERSION

N = TypeVar("N", int, str)  # a graph's node: an archive member's number, a module's name

FORMATS = ("ld", "ld64", "msvc", "cmake")
MAX_WHY = 3  # symbols quoted per edge
MAX_ENTRY_SIMULATIONS = 200  # per cycle, when no consumer is given (see _worst_sequence)
# Symbols the linker itself defines (GNU ld/lld, wasm-ld): never "missing" from the archives.
LINKER_DEFINED = frozenset({
    "_GLOBAL_OFFSET_TABLE_", "_DYNAMIC", "__ehdr_start", "__executable_start", "_edata", "_end",
    "__bss_start", "_etext", "__dso_handle", "__init_array_start", "__init_array_end",
    "__fini_array_start", "__fini_array_end", "__preinit_array_start", "__preinit_array_end",
    "__stack_pointer", "__memory_base", "__table_base", "__indirect_function_table",
    "__heap_base", "__heap_end", "__data_end", "__global_base", "__tls_base", "__tls_size",
    "__tls_align", "__wasm_call_ctors", "__ImageBase", "__mh_execute_header",
})
LINKER_DEFINED_PREFIXES = ("__start_", "__stop_")  # section bounds (ld, lld)


@dataclass(frozen=True)
class Member:
    """The symbols of one object (archive member or ``--for`` object) that linking cares about."""

    name: str
    defined: frozenset[str]
    undefined: frozenset[str]
    weak: frozenset[str] = frozenset()


ReadArchive = Callable[[Path], list[Member]]


def _members_of(facts: Facts) -> list[Member]:
    out = []
    for m in facts.members if facts.members is not None else [facts]:
        if m.members is not None:
            out.extend(_members_of(m))
            continue
        if m.symbols is None:
            continue
        name = m.path[m.path.rindex("(") + 1 : -1] if m.path.endswith(")") else m.path
        out.append(Member(name, frozenset(m.symbols.defined), frozenset(m.symbols.undefined),
                          frozenset(m.symbols.weak)))
    return out


def read_members(path: Path) -> list[Member]:
    """Per-member symbols of an archive (or the one member of an object file)."""
    facts = inspect(path, ParseOptions(symbols=True))
    if facts.error is not None:
        raise PrebakeError(f"{path}: {facts.error}")
    return _members_of(facts)


@dataclass
class LinkOrder:
    """Archives in link order; a group of more than one archive is a dependency cycle."""

    groups: list[list[Path]]
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # symbol -> referrers
    unused: list[Path] = field(default_factory=list)  # archives no pulled member comes from
    pulled: dict[Path, int] = field(default_factory=dict)  # members pulled per archive
    members: dict[Path, int] = field(default_factory=dict)  # members per archive
    needs: dict[Path, dict[Path, list[str]]] = field(default_factory=dict)  # A -> B -> symbols
    # strong symbols defined by more than one archive (two copies of a library): symbol -> archives
    clashes: dict[str, list[Path]] = field(default_factory=dict)
    # group index -> archives in the order a one-pass linker must see them (with repetition)
    sequences: dict[int, list[Path]] = field(default_factory=dict)

    def order(self) -> list[Path]:
        return [p for g in self.groups for p in g]

    def cycles(self) -> list[list[Path]]:
        return [g for g in self.groups if len(g) > 1]

    def repeated(self) -> list[Path]:
        """An explicit order with repetition, for linkers without groups (ld64, link.exe)."""
        out: list[Path] = []
        for i, g in enumerate(self.groups):
            out.extend(self.sequences.get(i, g) if len(g) > 1 else g)
        return out

    def render(self, fmt: str = "ld") -> str:
        if fmt == "ld":
            parts: list[str] = []
            for g in self.groups:
                if len(g) > 1:
                    parts += ["-Wl,--start-group", *map(_q, g), "-Wl,--end-group"]
                else:
                    parts.append(_q(g[0]))
            return " ".join(parts)
        if fmt in ("ld64", "msvc"):
            return " ".join(_q(p) for p in self.repeated())
        if fmt == "cmake":
            return self._cmake()
        raise PrebakeError(f"unknown link-order format {fmt!r} (one of {', '.join(FORMATS)})")

    def _cmake(self) -> str:
        """``PREBAKE_LINK_LIBRARIES`` for ``target_link_libraries``: cycles as LINK_GROUP where
        the linker supports RESCAN (CMake >= 3.24, GNU ld/lld), else the repeated order."""
        def item(p: Path) -> str:
            return f'  "{p.as_posix()}"'

        head = ["# static archives in link order (computed by prebake link-order)"]
        if not self.cycles():
            return "\n".join([*head, "set(PREBAKE_LINK_LIBRARIES", *map(item, self.order()), ")"])
        grouped = []
        for g in self.groups:
            if len(g) > 1:
                grouped.append(f'  "$<LINK_GROUP:RESCAN,{",".join(p.as_posix() for p in g)}>"')
            else:
                grouped.append(item(g[0]))
        return "\n".join([
            *head,
            "if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.24 AND "
            "CMAKE_LINK_GROUP_USING_RESCAN_SUPPORTED)",
            "  set(PREBAKE_LINK_LIBRARIES", *("  " + g for g in grouped), "  )",
            "else()  # no groups (ld64, link.exe): the cycles' archives repeated",
            "  set(PREBAKE_LINK_LIBRARIES", *("  " + item(p) for p in self.repeated()), "  )",
            "endif()",
        ])

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "groups": [[str(p) for p in g] for g in self.groups],
            "order": [str(p) for p in self.order()],
            "cycles": [[str(p) for p in g] for g in self.cycles()],
            "repeated": [str(p) for p in self.repeated()],
            "unused": [str(p) for p in self.unused],
            "members": {str(p): {"total": n, "pulled": self.pulled.get(p, 0)}
                        for p, n in self.members.items()},
            "needs": {str(a): {str(b): s for b, s in bs.items()} for a, bs in self.needs.items()},
            "unresolved": self.unresolved,
            "clashes": {s: [str(p) for p in ps] for s, ps in self.clashes.items()},
            "ld": self.render("ld"),
        }


def _q(p: Path) -> str:
    s = str(p)
    return f'"{s}"' if any(c.isspace() for c in s) else s


# --- 1. pulling members ---------------------------------------------------------------------


@dataclass
class _Index:
    archives: list[Path]
    members: list[list[Member]]
    # symbol -> [(archive index, member index)], strong definitions before weak, argument order
    definers: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _tables: list[dict[str, list[int]]] | None = None

    def build(self) -> None:
        strong: dict[str, list[tuple[int, int]]] = {}
        weak: dict[str, list[tuple[int, int]]] = {}
        for a, ms in enumerate(self.members):
            for m_i, m in enumerate(ms):
                for sym in m.defined:
                    (weak if sym in m.weak else strong).setdefault(sym, []).append((a, m_i))
        self.definers = strong
        for sym, where in weak.items():
            self.definers.setdefault(sym, []).extend(where)

    def tables(self) -> list[dict[str, list[int]]]:
        """Per archive: symbol -> members defining it (built once, shared by simulations)."""
        if self._tables is None:
            self._tables = []
            for ms in self.members:
                table: dict[str, list[int]] = {}
                for m_i, m in enumerate(ms):
                    for sym in m.defined:
                        table.setdefault(sym, []).append(m_i)
                self._tables.append(table)
        return self._tables

    def resolve(self, sym: str, from_archive: int) -> tuple[int, int] | None:
        where = self.definers.get(sym)
        if not where:
            return None
        for a, m in where:
            if a == from_archive:
                return a, m
        return where[0]


def _pull(ix: _Index, roots: Sequence[Member], everything: bool
          ) -> tuple[set[tuple[int, int]], dict[tuple[int, int], dict[int, list[str]]],
                     dict[str, list[str]]]:
    """Members pulled, cross-archive edges per member, and unresolved symbols."""
    defined_by_roots = set().union(*(r.defined for r in roots)) if roots else set()
    pulled: set[tuple[int, int]] = set()
    edges: dict[tuple[int, int], dict[int, list[str]]] = {}
    unresolved: dict[str, list[str]] = {}
    stack: list[tuple[int, int]] = []

    def need(sym: str, referrer: str, from_key: tuple[int, int] | None) -> None:
        if sym in defined_by_roots:
            return
        hit = ix.resolve(sym, from_key[0] if from_key else -1)
        if hit is None:
            unresolved.setdefault(sym, []).append(referrer)
            return
        if from_key is not None and hit[0] != from_key[0]:
            edges.setdefault(from_key, {}).setdefault(hit[0], []).append(sym)
        if hit not in pulled:
            pulled.add(hit)
            stack.append(hit)

    for r in roots:
        for sym in sorted(r.undefined):
            need(sym, r.name, None)
    if everything:
        for a, ms in enumerate(ix.members):
            for m_i in range(len(ms)):
                if (a, m_i) not in pulled:
                    pulled.add((a, m_i))
                    stack.append((a, m_i))
    while stack:
        key = stack.pop()
        m = ix.members[key[0]][key[1]]
        referrer = f"{ix.archives[key[0]].name}({m.name})"
        for sym in sorted(m.undefined):
            need(sym, referrer, key)
    return pulled, edges, unresolved


# --- 2./3. graph, strongly connected components, order --------------------------------------


def strongly_connected(nodes: Sequence[N], succ: Mapping[N, set[N]]) -> list[list[N]]:
    """Tarjan's algorithm, iterative; components come out in reverse topological order.

    Members here; modules in ``tests/unit/test_import_cycles.py``."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    out: list[list[N]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[N, list[N]]] = [(start, sorted(succ.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop(0)
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(succ.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def _topo(comps: list[list[int]], succ: dict[int, set[int]]) -> list[list[int]]:
    """Dependents before dependencies; ties broken by the lowest argument position."""
    comp_of = {n: i for i, c in enumerate(comps) for n in c}
    indeg = [0] * len(comps)
    csucc: list[set[int]] = [set() for _ in comps]
    for v, ws in succ.items():
        for w in ws:
            a, b = comp_of[v], comp_of[w]
            if a != b and b not in csucc[a]:
                csucc[a].add(b)
                indeg[b] += 1
    heap = [(comps[i][0], i) for i in range(len(comps)) if indeg[i] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(comps[i])
        for j in csucc[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (comps[j][0], j))
    return out


class _Linker:
    """A one-pass linker (GNU ld's archive rule): an archive supplies members only for symbols
    undefined when the linker reaches it, rescanning that archive until nothing new is loaded."""

    def __init__(self, ix: _Index, undefined: set[str], defined: set[str]) -> None:
        self.ix = ix
        self.defined = set(defined)
        self.loaded: set[tuple[int, int]] = set()
        self.by_archive = ix.tables()
        # archive -> symbols it defines that are undefined now: a visit touches only these
        self.pending: dict[int, set[str]] = {}
        for sym in undefined:
            self._want(sym)

    def _want(self, sym: str) -> None:
        if sym in self.defined:
            return
        for a, _ in self.ix.definers.get(sym, ()):
            self.pending.setdefault(a, set()).add(sym)

    def visit(self, a: int) -> int:
        """Scan archive ``a`` once (with rescans); the number of members it loaded."""
        table = self.by_archive[a]
        n = 0
        todo = self.pending.pop(a, set())
        while todo:
            sym = todo.pop()
            if sym in self.defined:
                continue
            for m_i in table.get(sym, ()):
                if (a, m_i) in self.loaded:
                    continue
                self.loaded.add((a, m_i))
                n += 1
                m = self.ix.members[a][m_i]
                self.defined |= m.defined
                for u in m.undefined:
                    self._want(u)
                todo |= self.pending.pop(a, set())  # GNU ld rescans the archive it is in
                break
        return n


def _sequence(ix: _Index, comps: list[list[int]], linker: _Linker) -> dict[int, list[int]]:
    """For each cycle, the archives a one-pass linker must see (repeated) to close it, for the
    consumer whose undefined symbols started ``linker``."""
    out: dict[int, list[int]] = {}
    for gi, group in enumerate(comps):
        if len(group) == 1:
            linker.visit(group[0])
            continue
        seq: list[int] = []  # only visits that load something: a visit that loads nothing
        for _ in range(len(group) * 4):  # changes no state, so dropping it changes no result
            progress = False
            for a in group:
                if linker.visit(a):
                    progress = True
                    seq.append(a)
            if not progress:
                break
        out[gi] = seq + [a for a in group if a not in seq]
    return out


def _worst_sequence(ix: _Index, comps: list[list[int]]) -> dict[int, list[int]]:
    """Without a consumer: repeat each cycle often enough for *any* single entry member.

    Each member of the cycle is tried as the one symbol set a consumer asks for; the group is
    repeated as many times as the worst of them needs (trimmed after its last useful visit).
    """
    out: dict[int, list[int]] = {}
    for gi, group in enumerate(comps):
        if len(group) == 1:
            continue
        longest = len(group)
        limit = sum(len(ix.members[a]) for a in group) + 1
        entries = [m for a0 in group for m in ix.members[a0] if m.defined]
        margin = 0
        if len(entries) > MAX_ENTRY_SIMULATIONS:  # huge cycle: a spread sample, one pass spare
            step = len(entries) / MAX_ENTRY_SIMULATIONS
            entries = [entries[int(i * step)] for i in range(MAX_ENTRY_SIMULATIONS)]
            margin = len(group)
        for m in entries:
            sim = _Linker(ix, set(m.defined), set())
            last = 0
            for n in range(limit):
                progress = False
                for i, a in enumerate(group):
                    if sim.visit(a):
                        progress = True
                        last = n * len(group) + i + 1
                if not progress:
                    break
            longest = max(longest, last)
        longest += margin
        reps = -(-longest // len(group))
        out[gi] = (group * reps)[:longest]
    return out


def _clashes(ix: _Index) -> dict[str, list[Path]]:
    """Symbols defined strongly by more than one archive (weak and GNU-unique ones merge)."""
    out: dict[str, list[Path]] = {}
    for sym, where in ix.definers.items():
        strong = {a for a, m in where if sym not in ix.members[a][m].weak}
        if len(strong) > 1:
            out[sym] = [ix.archives[a] for a in sorted(strong)]
    return dict(sorted(out.items()))


def compute_link_order(archives: Sequence[Path], for_objects: Sequence[Path] = (), *,
                       read: ReadArchive | None = None) -> LinkOrder:
    """Order ``archives`` for a one-pass linker; see the module docstring for how."""
    read = read or read_members
    paths = [Path(a) for a in archives]
    seen: dict[str, int] = {}
    for i, p in enumerate(paths):
        key = os.path.realpath(p)
        if key in seen:
            raise PrebakeError(f"{p}: given twice (also as {paths[seen[key]]})")
        seen[key] = i
    if not paths:
        raise PrebakeError("link-order: no archives given")
    ix = _Index(paths, [read(p) for p in paths])
    ix.build()
    roots = [m for o in for_objects for m in read(Path(o))]
    pulled, edges, unresolved = _pull(ix, roots, everything=not for_objects)

    used = sorted({a for a, _ in pulled})
    succ: dict[int, set[int]] = {a: set() for a in used}
    needs: dict[Path, dict[Path, list[str]]] = {}
    for (a, _), targets in sorted(edges.items()):
        for b, syms in targets.items():
            succ[a].add(b)
            why = needs.setdefault(paths[a], {}).setdefault(paths[b], [])
            for s in syms:
                if len(why) < MAX_WHY and s not in why:
                    why.append(s)
    comps = _topo(strongly_connected(used, succ), succ)
    result = LinkOrder(
        groups=[[paths[i] for i in c] for c in comps],
        unresolved={s: sorted(set(r)) for s, r in sorted(unresolved.items())
                    if s not in LINKER_DEFINED and not s.startswith(LINKER_DEFINED_PREFIXES)},
        unused=[p for i, p in enumerate(paths) if i not in set(used)],
        pulled={paths[a]: sum(1 for k in pulled if k[0] == a) for a in used},
        members={p: len(ix.members[i]) for i, p in enumerate(paths)},
        needs=needs,
    )
    result.clashes = _clashes(ix)
    if roots:
        start = set().union(*(r.undefined for r in roots))
        have = set().union(*(r.defined for r in roots))
        seqs = _sequence(ix, comps, _Linker(ix, start, have))
    else:
        seqs = _worst_sequence(ix, comps)
    result.sequences = {gi: [paths[a] for a in seq] for gi, seq in seqs.items()}
    return result


def relative_order(root: Path, archives: Sequence[str]) -> list[list[str]]:
    """The groups of :func:`compute_link_order` for ``archives`` named relative to ``root``,
    named the same way; fewer than two archives need no computation (one group each). The one
    place an install's order is computed: a recipe's guard, a stage's asset, a diff without a
    manifest."""
    if len(archives) < 2:
        return [[a] for a in archives]
    order = compute_link_order([root / a for a in archives])
    return [[Path(p).relative_to(root).as_posix() for p in g] for g in order.groups]
