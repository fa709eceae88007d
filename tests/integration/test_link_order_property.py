"""Property test of the link-order algorithm on random archive sets (no toolchain needed).

A small independent model of GNU ld's archive rule (an archive supplies members only for symbols
undefined when the linker reaches it; ``--start-group`` rescans the group until nothing new)
links the computed order. Whatever the archives, the computed order must resolve every symbol
some archive defines, both with groups (``ld``) and with repetition alone (``ld64``/``msvc``).
The real-linker versions of these checks are in ``test_link_order.py``.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from prebake.link.order import Member, compute_link_order, strongly_connected

SYMS = [f"s{i}" for i in range(12)]


@st.composite
def archive_sets(draw: st.DrawFn) -> dict[str, list[Member]]:
    n_archives = draw(st.integers(1, 5))
    owner = {s: draw(st.integers(0, n_archives - 1)) for s in SYMS}  # one definer per symbol
    archives: dict[str, list[Member]] = {f"lib{a}.a": [] for a in range(n_archives)}
    for a in range(n_archives):
        mine = [s for s in SYMS if owner[s] == a]
        while mine:  # split the archive's symbols into members
            k = draw(st.integers(1, len(mine)))
            defs, mine = mine[:k], mine[k:]
            refs = draw(st.lists(st.sampled_from(SYMS), max_size=3))
            archives[f"lib{a}.a"].append(
                Member(f"m{len(archives[f'lib{a}.a'])}.o", frozenset(defs),
                       frozenset(r for r in refs if r not in defs)))
    return archives


def gnu_ld(seq: list[str | list[str]], archives: dict[str, list[Member]],
           undefined: set[str]) -> set[str]:
    """Symbols still undefined after a one-pass link of ``seq`` (a list item is a group)."""
    defined: set[str] = set()
    loaded: set[tuple[str, int]] = set()

    def scan(name: str) -> bool:
        progress = False
        again = True
        while again:
            again = False
            for i, m in enumerate(archives[name]):
                if (name, i) not in loaded and m.defined & undefined:
                    loaded.add((name, i))
                    defined.update(m.defined)
                    undefined.update(m.undefined - defined)
                    undefined.difference_update(defined)
                    again = progress = True
        return progress

    for item in seq:
        if isinstance(item, list):
            while True:
                passes = [scan(a) for a in item]  # every archive of the group, each round
                if not any(passes):
                    break
        else:
            scan(item)
    return undefined


@settings(max_examples=300, deadline=None)
@given(archive_sets(), st.lists(st.sampled_from(SYMS), min_size=1, max_size=3))
def test_computed_order_resolves_everything(archives: dict[str, list[Member]],
                                            wanted: list[str]) -> None:
    names = list(archives)
    consumer = Member("main.o", frozenset(), frozenset(wanted))
    read = {Path(n): ms for n, ms in archives.items()}
    read[Path("main.o")] = [consumer]
    for roots in ([Path("main.o")], []):
        lo = compute_link_order([Path(n) for n in names], roots, read=lambda p: read[p])
        grouped: list[str | list[str]] = [
            [str(p) for p in g] if len(g) > 1 else str(g[0]) for g in lo.groups]
        flat: list[str | list[str]] = [str(p) for p in lo.repeated()]
        for seq in (grouped, flat):
            left = gnu_ld(seq, archives, set(wanted))
            assert left <= set(lo.unresolved), (seq, left)
        # the plain order (no groups, no repeats) is enough exactly when there is no cycle
        if not lo.cycles():
            assert gnu_ld([str(p) for p in lo.order()], archives, set(wanted)) <= set(
                lo.unresolved)


@given(st.dictionaries(st.integers(0, 9), st.sets(st.integers(0, 9), max_size=4), max_size=10))
def test_tarjan_matches_mutual_reachability(succ: dict[int, set[int]]) -> None:
    nodes = sorted(set(succ) | {w for ws in succ.values() for w in ws})

    def reach(v: int) -> set[int]:
        seen, todo = {v}, [v]
        while todo:
            for w in succ.get(todo.pop(), ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    r = {v: reach(v) for v in nodes}
    expected = sorted({tuple(sorted(w for w in nodes if w in r[v] and v in r[w])) for v in nodes})
    comps = strongly_connected(nodes, succ)
    assert sorted(tuple(c) for c in comps) == expected
    # reverse topological: a component never points to a later one
    pos = {v: i for i, c in enumerate(comps) for v in c}
    assert all(pos[w] <= pos[v] for v in nodes for w in succ.get(v, ()))
