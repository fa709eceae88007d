"""The engines a wasm binary can run in: the table of which engine has which WebAssembly
feature from which release (``engines.toml``, each row citing its sources), what a binary's
facts say it needs, and the verdict for an engine at a release.

A feature is needed when the facts show it: a feature of ``abi.wasm_features`` (every
instruction and type the code uses, or what an object's ``target_features`` enable), the
encoding of its native exceptions (``abi.wasm_eh_encoding``: the legacy and the exnref
encodings are two rows), shared memory (``abi.threads``) and JSPI (``abi.async``: a JSPI
module's code is like any other; only its JS loader wraps imports in
``WebAssembly.Suspending``). What the facts cannot rule out is *unsure* — JSPI for a linked
module with no loader beside it, the encoding of an object that declares exceptions but whose
code could not be read — and an engine that lacks an unsure feature cannot be judged. A list
of features that is not whole (``wasm_features_complete`` false) may hide anything: no engine
is then said to run it. Unknown cells stay unknown, so nothing is predicted that the table
cannot stand behind.

The module sits on the ground floor (docs/architecture.md): ``prebake inspect`` (the
readers' floor) shows the prediction, the contract's rule (``engines``) and the browser runner
(``prebake.link.browser``) hold binaries and runs to it. It reads binaries' facts through the
small protocol below, so it imports nothing from the floors above.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

TABLE = Path(__file__).with_name("engines.toml")
WASM_FORMATS = ("wasm",)
_FLOOR = re.compile(r"\s*([a-z][a-z0-9-]*)\s*>=\s*([0-9]+(?:\.[0-9]+){0,3})\s*")
_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+){0,3}")


class TableError(ValueError):
    """The shipped table is malformed: a defect of prebake's data, named with its row."""


@dataclass(frozen=True)
class Cell:
    """One engine's support of one feature: ``since`` a release, ``absent`` in none (or only
    behind a flag), neither: unknown."""

    since: str | None = None
    absent: bool = False
    note: str = ""

    @property
    def known(self) -> bool:
        return self.since is not None or self.absent


@dataclass(frozen=True)
class Feature:
    id: str
    title: str
    what: str
    sources: tuple[str, ...]
    cells: Mapping[str, Cell]
    wasm_features: tuple[str, ...] = ()  # the abi.wasm_features names that mean it
    encoding: str | None = None  # the abi.wasm_eh_encoding that means it
    async_: str | None = None  # the abi.async that means it

    def cell(self, engine: str) -> Cell:
        return self.cells.get(engine, Cell())


@dataclass(frozen=True)
class EngineRow:
    id: str
    title: str
    note: str


@dataclass(frozen=True)
class Table:
    sources: Mapping[str, str]
    engines: Mapping[str, EngineRow]
    features: Mapping[str, Feature]

    def by_wasm_feature(self) -> dict[str, str]:
        return {name: f.id for f in self.features.values() for name in f.wasm_features}


def release_key(release: str) -> tuple[int, ...]:
    """``"18.4"`` -> ``(18, 4, 0, 0)``: releases compare number by number."""
    parts = [int(p) for p in re.findall(r"\d+", release)][:4]
    return tuple(parts + [0] * (4 - len(parts)))


def _cell(value: Any, note: str, where: str) -> Cell:
    if value is False:
        return Cell(absent=True, note=note)
    if isinstance(value, str) and _RELEASE.fullmatch(value):
        return Cell(since=value, note=note)
    raise TableError(f"{where}: a release like \"137\" or false; got {value!r}")


def _feature(fid: str, row: Mapping[str, Any], engines: Mapping[str, EngineRow],
             sources: Mapping[str, str]) -> Feature:
    where = f"{TABLE.name}: features.{fid}"
    known = {"title", "what", "sources", "notes", "wasm_features", "encoding", "async"}
    bad = sorted(set(row) - known - set(engines))
    if bad:
        raise TableError(f"{where}: unknown keys {bad}")
    cited = tuple(row.get("sources", ()))
    if not cited or any(s not in sources for s in cited):
        raise TableError(f"{where}: sources must name entries of [sources]; got {cited!r}")
    notes = dict(row.get("notes", {}))
    if set(notes) - set(engines):
        raise TableError(f"{where}.notes: unknown engines {sorted(set(notes) - set(engines))}")
    cells = {e: _cell(row[e], str(notes.get(e, "")), f"{where}.{e}")
             for e in engines if e in row}
    return Feature(fid, str(row.get("title", fid)), str(row.get("what", "")), cited, cells,
                   tuple(row.get("wasm_features", ())), row.get("encoding"), row.get("async"))


@cache
def table() -> Table:
    """The shipped table, read and checked once per process."""
    try:
        data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TableError(f"{TABLE}: {exc}") from None
    sources = {str(k): str(v) for k, v in data.get("sources", {}).items()}
    engines = {k: EngineRow(k, str(v.get("title", k)), str(v.get("note", "")))
               for k, v in data.get("engines", {}).items()}
    features = {k: _feature(k, v, engines, sources) for k, v in data.get("features", {}).items()}
    seen: dict[str, str] = {}
    for f in features.values():
        for name in f.wasm_features:
            if name in seen:
                raise TableError(f"{TABLE.name}: {name} is in both {seen[name]} and {f.id}")
            seen[name] = f.id
    return Table(sources, engines, features)


# --------------------------------------------------------------------------------------------
# an engine named with its lowest release: "chrome>=137"


@dataclass(frozen=True)
class Floor:
    """An engine from a release on (the contract's ``engines``: every release from it runs)."""

    engine: str
    release: str

    def __str__(self) -> str:
        return f"{self.engine}>={self.release}"

    @property
    def label(self) -> str:
        return f"{table().engines[self.engine].title} {self.release}"


def parse_floor(text: str) -> Floor:
    """``"chrome>=137"`` as a ``Floor``, or ``ValueError`` saying in one line what is wrong."""
    found = _FLOOR.fullmatch(text) if isinstance(text, str) else None
    engines = table().engines
    if found is None:
        raise ValueError(f"{text!r} is not ENGINE>=RELEASE (e.g. \"chrome>=137\"); engines: "
                         + ", ".join(engines))
    name, release = found.groups()
    if name not in engines:
        close = difflib.get_close_matches(name, list(engines), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"{text!r}: unknown engine {name!r}{hint}; engines: "
                         + ", ".join(engines))
    return Floor(name, release)


# --------------------------------------------------------------------------------------------
# what a binary needs


class _Abi(Protocol):
    @property
    def wasm_features(self) -> list[str] | None: ...
    @property
    def wasm_features_complete(self) -> bool | None: ...
    @property
    def wasm_eh_encoding(self) -> str | None: ...
    @property
    def threads(self) -> bool | None: ...
    @property
    def simd128(self) -> bool | None: ...
    @property
    def relaxed_simd(self) -> bool | None: ...
    @property
    def async_(self) -> str | None: ...


class Binary(Protocol):
    """What the verdict reads of ``prebake.inspect.facts.Facts``."""

    @property
    def format(self) -> str | None: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def arch(self) -> str | None: ...
    @property
    def abi(self) -> _Abi: ...


@dataclass(frozen=True)
class Needs:
    """The table's features a binary's facts show it uses (``certain``), those they cannot rule
    out (``unsure``: feature -> why), and why the list may lack more (``partial``)."""

    certain: tuple[str, ...]
    unsure: Mapping[str, str]
    partial: str | None = None
    # feature names the binary has that no row of the table means (fp16…): nothing is known
    foreign: tuple[str, ...] = ()


def is_wasm(binary: Binary) -> bool:
    return binary.format in WASM_FORMATS or binary.arch in ("wasm32", "wasm64")


def needs(binary: Binary) -> Needs | None:
    """What ``binary`` needs of an engine, in the table's order; None when it is no wasm."""
    if not is_wasm(binary):
        return None
    t = table()
    abi = binary.abi
    names = {f.lstrip("+") for f in (abi.wasm_features or []) if not f.startswith("-")}
    if abi.simd128:
        names.add("simd128")
    if abi.relaxed_simd:
        names.add("relaxed-simd")
    if abi.threads:
        names.add("atomics")
    mapped = t.by_wasm_feature()
    found = {mapped[n] for n in names if n in mapped}
    foreign = tuple(sorted(names - set(mapped) - {"exception-handling"}))
    unsure: dict[str, str] = {}
    encoding = abi.wasm_eh_encoding
    by_encoding = {f.encoding: f.id for f in t.features.values() if f.encoding}
    if encoding in ("legacy", "exnref"):
        found.add(by_encoding[encoding])
    elif encoding == "both":
        found.update(by_encoding.values())
    elif encoding is None and "exception-handling" in names:
        for fid in by_encoding.values():
            unsure[fid] = "it has native exceptions, in an encoding its code does not show"
    jspi = next(f.id for f in t.features.values() if f.async_ == "jspi")
    if abi.async_ == "jspi":
        found.add(jspi)
    elif abi.async_ is None and binary.kind == "module":
        unsure[jspi] = "no JS loader beside the module says whether it suspends (JSPI)"
    partial = None
    if abi.wasm_features is None:
        partial = "its wasm features could not be read"
    elif abi.wasm_features_complete is False:
        partial = "its wasm features are not the whole list (some code could not be read)"
    order = list(t.features)
    return Needs(tuple(sorted(found, key=order.index)),
                 {k: unsure[k] for k in sorted(unsure, key=order.index)}, partial, foreign)


# --------------------------------------------------------------------------------------------
# the verdict


@dataclass(frozen=True)
class Lack:
    """Why an engine at a release cannot be said to run a binary: a feature it ``lacks``, one
    the table does not know for it (``unknown``), or one the binary may need that it lacks or
    is not known to have (``unsure``)."""

    feature: str
    engine: str
    release: str | None  # the release judged (None: any release)
    how: str  # lacks | unknown | unsure | foreign (a feature no row means)
    since: str | None = None  # the release that has it, when one does
    why: str = ""
    absent: bool = False  # no release has it

    def text(self) -> str:
        t = table()
        if self.how == "foreign":
            return f"{self.feature}: a feature engines.toml has no row for"
        title = t.features[self.feature].title
        who = t.engines[self.engine].title + (f" {self.release}" if self.release else "")
        if self.how == "lacks":
            later = (f"from {self.since}" if self.since else "no release has it")
            return f"{title}: {who} lacks it ({later})"
        if self.how == "unknown":
            return f"{title}: unknown for {t.engines[self.engine].title} (no source says)"
        has = (f"lacks it (from {self.since})" if self.since else
               "lacks it (no release has it)" if self.absent else "is not known to have it")
        return f"{title}: cannot tell whether it needs it ({self.why}) and {who} {has}"


def judge(need: Needs, floor: Floor) -> list[Lack]:
    """Every reason ``floor`` (an engine from a release on) may not run a binary with ``need``."""
    t = table()
    at = release_key(floor.release)
    out = []
    for fid in need.certain:
        cell = t.features[fid].cell(floor.engine)
        if cell.since is not None and release_key(cell.since) <= at:
            continue
        how = "unknown" if not cell.known else "lacks"
        out.append(Lack(fid, floor.engine, floor.release, how, cell.since))
    for fid, why in need.unsure.items():
        cell = t.features[fid].cell(floor.engine)
        if cell.since is not None and release_key(cell.since) <= at:
            continue
        out.append(Lack(fid, floor.engine, floor.release, "unsure", cell.since, why,
                        cell.absent))
    out += [Lack(name, floor.engine, floor.release, "foreign") for name in need.foreign]
    return out


@dataclass(frozen=True)
class Verdict:
    """Per engine of the table: the first release that runs the binary (``runs``), or why
    none does (``lacks``) or why the table cannot say (``undecided``)."""

    need: Needs
    runs: Mapping[str, str | None]  # None: every release the table knows
    lacks: Mapping[str, tuple[str, ...]]
    undecided: Mapping[str, tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        return {"needs": list(self.need.certain), "unsure": dict(self.need.unsure),
                "partial": self.need.partial, "foreign": list(self.need.foreign),
                "runs": dict(self.runs),
                "lacks": {k: list(v) for k, v in self.lacks.items()},
                "undecided": {k: list(v) for k, v in self.undecided.items()}}

    def line(self) -> str:
        """One line for the human view: ``chrome>=137, firefox>=153; not safari (relaxed
        SIMD); undecided: bun``."""
        t = table()
        parts = [", ".join(f"{e}>={r}" if r else f"{e} (any release)"
                           for e, r in self.runs.items()) or "no engine"]
        if self.lacks:
            parts.append("not " + ", ".join(
                f"{e} ({', '.join(t.features[f].title for f in fs)})"
                for e, fs in self.lacks.items()))
        if self.undecided:
            parts.append("undecided: " + ", ".join(self.undecided))
        if self.need.foreign:
            parts.append("no row for " + ", ".join(self.need.foreign))
        if self.need.partial:
            parts.append(self.need.partial)
        return "; ".join(parts)


def verdict(need: Needs) -> Verdict:
    """For every engine of the table, the earliest release that has all ``need`` asks."""
    t = table()
    runs: dict[str, str | None] = {}
    lacks: dict[str, tuple[str, ...]] = {}
    undecided: dict[str, tuple[str, ...]] = {}
    for engine in t.engines:
        cells = {fid: t.features[fid].cell(engine) for fid in (*need.certain, *need.unsure)}
        absent = tuple(f for f in need.certain if cells[f].absent)
        unknown = tuple(f for f in need.certain if not cells[f].known)
        shaky = tuple(f for f in need.unsure if cells[f].since is None)
        if absent:
            lacks[engine] = absent
        elif unknown or shaky or need.partial or need.foreign:
            undecided[engine] = unknown + shaky + need.foreign
        else:
            since = [c.since for c in cells.values() if c.since is not None]
            runs[engine] = max(since, key=release_key) if since else None
    return Verdict(need, runs, lacks, undecided)

