"""The guards every recipe's outputs pass before anything is packaged, as steps like the build's,
and what a recipe ships as they see it.

Each guard takes typed inputs — the recipe's :class:`GuardInput` and the frozen values earlier
guards returned — and returns its own frozen value; a guard that stops the chain raises
``UnitFailed`` with every message found so far. :func:`run_guards` is the chain, in order:
outputs present, libraries found (with every other binary the build added, and no link
leaving the prefix), facts read, contract checked, license proven (and judged by the
contract's ``allowed_licenses``), the consumer's links (the snippet and every archive member,
side by side), link order; its :class:`GuardReport` is what packaging and the
manifest read. There is deliberately no switch to downgrade a failure to a warning. To add a
guard, write one function of that shape and call it where it belongs in :func:`run_guards`.

What a recipe ships: ``Outputs.libs`` entries may be globs (``"lib/libabsl_*.a"``); each must
match at least one file, and the matches, sorted, are the recipe's libraries. A library the
recipe did not list still ships in the asset, so it is guarded all the same: every binary the
recipe's build added to the prefix (found by ``prebake.inspect.resolve``, anywhere in the
prefix) is inspected and checked against the contract, and every such library is linked whole.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tempfile
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prebake.bake.process import BuildLog
from prebake.bake.stamp import prefix_files
from prebake.bake.unitrun import UnitFailed
from prebake.contract.check import check_paths, wants_deep
from prebake.contract.findings import CheckReport, Violation
from prebake.contract.licenses import judge
from prebake.contract.producer_rule import Allowed, ProducerPin
from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.resolve import resolve
from prebake.link.order import relative_order
from prebake.link.test import LinkTestResult, link_test
from prebake.link.whole import prove_whole_archive
from prebake.package.libs import Library, libraries
from prebake.package.license_proof import LicenseProof, prove_license, prove_text
from prebake.recipes.api import LicenseText, Recipe
from prebake.toolchain.producer_pin import pin_for
from prebake.toolchain.verify import verify_platform
from prebake.workspace.model import Platform


@dataclass(frozen=True)
class GuardInput:
    """What one recipe's guards read. ``env`` is the unit's environment for the consumer's
    links (``BuildEnv.base``); ``dep_libs`` the libraries of the recipes it builds on
    (earlier stages), which the links link too; ``include_dirs`` add their headers. ``before``
    are the prefix's files before the recipe built: every other binary in it is the recipe's,
    listed or not. ``workdir`` is the recipe's work folder (link tests write there)."""

    recipe: Recipe
    platform: Platform
    prefix: Path
    workdir: Path
    log: BuildLog
    env: Mapping[str, str]
    dep_libs: tuple[Path, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    before: frozenset[str] = frozenset()
    pins: Mapping[str, str] = field(default_factory=dict)  # the workspace's (the toolchain's)


@dataclass(frozen=True)
class Shipped:
    """The recipe's declared libraries (globs expanded), and the other binaries its build
    added that the outputs do not list (guarded the same, shipped, not exported)."""

    libs: tuple[Library, ...]
    unlisted: tuple[str, ...]

    def libraries(self, prefix: Path) -> list[Path]:
        """The libraries as a consumer's linker is given them (a DLL by its import library)."""
        return [prefix / lib.link_path for lib in self.libs]

    def binaries(self, prefix: Path) -> list[Path]:
        """Every binary the recipe ships: its libraries (a DLL with its import libraries),
        then what its outputs do not list."""
        return [*(prefix / f for lib in self.libs for f in lib.files),
                *(prefix / rel for rel in self.unlisted)]


@dataclass(frozen=True)
class FactsRead:
    """Each binary's facts for the manifest, and the binaries that could not be read (they
    fail the unit once the later guards have said their part)."""

    facts: tuple[dict[str, Any], ...]
    cxx: bool
    failures: tuple[str, ...]


@dataclass(frozen=True)
class OtherCompiled:
    """A file the recipe ships from another compiler on purpose (``Recipe.other_compilers``):
    what its bytes name (``says``; empty: nothing) and the entry that allows it."""

    file: str
    says: tuple[str, ...]
    producers: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class ProducersPinned:
    """What the contract's ``producer`` rule held the recipe's binaries to: the verified
    toolchain's pin (the manifest's ``guards.producer``), and the files exempt from it."""

    pin: ProducerPin | None
    other: tuple[OtherCompiled, ...] = ()
    why_none: str = ""  # why there is no pin (the compiler reported no release)

    def to_json(self) -> dict[str, Any]:
        p = self.pin
        return {"toolchain": p.toolchain if p else f"unverified: {self.why_none}",
                "own": list(p.own) if p else [],
                "runtime": list(p.runtime) if p else [],
                "runtime_from": list(p.runtime_from) if p else [],
                "other_compilers": [{"file": o.file, "says": list(o.says),
                                     "allowed": list(o.producers), "why": o.why}
                                    for o in self.other]}


@dataclass(frozen=True)
class Linked:
    """How the consumer's links used the recipe's libraries (the manifest's record)."""

    linked: tuple[str, ...]
    allowed: Mapping[str, tuple[str, ...]]  # allow_undefined pattern -> the names it let through


@dataclass(frozen=True)
class GuardReport:
    """What one recipe's guards proved: its libraries and their link order, their facts, the
    contract's rules left undecided for lack of evidence, how the consumer linked them
    (machine-independent: paths relative to the prefix)."""

    recipe: str
    libs: tuple[Library, ...]
    facts: tuple[dict[str, Any], ...]
    cxx: bool
    link_order: tuple[tuple[str, ...], ...]
    undecided: tuple[str, ...]
    linked: tuple[str, ...]
    allowed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    license: LicenseProof | None = None  # the recipe's license, proven from its bytes
    producers: ProducersPinned | None = None  # the producer rule's pin and exemptions


_GLOB = re.compile(r"[*?\[]")
LIBRARY_NAME = re.compile(r"\.(a|lib|so(\.\d+)*|dylib|dll)$")


def is_glob(entry: str) -> bool:
    return bool(_GLOB.search(entry))


def expand(entries: Sequence[str], prefix: Path, files: Sequence[str] | None = None
           ) -> tuple[list[str], list[str]]:
    """``(paths, missing)``: each plain entry that exists, each glob's matches (a glob matching
    nothing is missing, like an absent plain path)."""
    present = prefix_files(prefix) if files is None else list(files)
    out: list[str] = []
    missing: list[str] = []
    for entry in entries:
        if is_glob(entry):
            hits = [f for f in present if fnmatch.fnmatchcase(f, entry)]
            if not hits:
                missing.append(entry)
            out.extend(h for h in hits if h not in out)
        elif (prefix / entry).exists() or (prefix / entry).is_symlink():
            if entry not in out:
                out.append(entry)
        else:
            missing.append(entry)
    return out, missing


def dep_libraries(recipes: Mapping[str, Recipe], recipe: Recipe, platform: str,
                  deps: Path) -> list[Path]:
    """The libraries of the recipes ``recipe`` declares as deps, as installed in ``deps``."""
    files = prefix_files(deps)
    out: list[Path] = []
    for d in recipe.deps:
        if d in recipes:
            found, _missing = expand(recipes[d].outputs.libs_for(platform), deps, files)
            out.extend(deps / rel for rel in found)
    return out


def unlisted_binaries(prefix: Path, declared: Collection[str], before: Collection[str]
                      ) -> tuple[list[str], list[str]]:
    """``(binaries, escapes)``: binaries the recipe's build added to ``prefix`` that
    ``declared`` does not name (relative paths, each real file once: a symlink to a declared
    library is that library), and the symlinks it added that leave the prefix."""
    declared_real = {(prefix / d).resolve() for d in declared}
    base = str(prefix) + "/"
    with tempfile.TemporaryDirectory(prefix="prebake-shipped-") as tmp:
        found = resolve([prefix], Path(tmp))
        rels = [b.rel for b in found.binaries if b.shown == str(prefix / b.rel)]
    escapes = [e.removeprefix(base) for e in found.escapes]
    return ([r for r in rels if r not in before and r not in declared
             and (prefix / r).resolve() not in declared_real],
            [e for e in escapes if e.split(" -> ")[0] not in before])


def license_dest(recipe: Recipe) -> str | None:
    """Where an asset carries a recipe's licence: ``share/licenses/<recipe>/<file>``."""
    lic = recipe.outputs.license
    return f"share/licenses/{recipe.name}/{Path(lic).name}" if lic else None


# ---- the chain ------------------------------------------------------------------------------

def run_guards(g: GuardInput) -> GuardReport:
    """The guards on ``g.recipe``'s outputs in ``g.prefix``, in order; the log gets the
    details. Raises ``UnitFailed`` (with the contract's violations, if any) on the first
    guard that fails, naming what every guard before it found wrong too."""
    outputs_present(g)
    shipped = libraries_found(g)
    read = facts_read(g, shipped)
    pinned = producers_pinned(g, shipped, read)
    report = contract_checked(g, shipped, read.failures, pinned)
    lic, lic_undecided = license_proven(g, shipped, read.failures)
    linked = consumer_linked(g, shipped, read.failures)
    order = link_order_found(g, shipped)
    if read.failures:
        raise UnitFailed("\n".join(read.failures))
    return GuardReport(g.recipe.name, shipped.libs, read.facts, read.cxx, order,
                       (*_undecided(report, g.prefix), *lic_undecided), linked.linked,
                       linked.allowed, lic, pinned)


# ---- the guards, in the order they run ------------------------------------------------------

def outputs_present(g: GuardInput) -> None:
    """Every declared output is in the prefix (a glob that matches nothing is absent too)."""
    recipe = g.recipe
    wanted = [*recipe.outputs.libs_for(g.platform.name), *recipe.outputs.headers]
    lic = license_dest(recipe)
    if lic:
        wanted.append(lic)
    missing = expand(wanted, g.prefix)[1]
    if missing:
        raise UnitFailed(f"{recipe.name}: declared outputs missing from the prefix: "
                         + ", ".join(missing))


def libraries_found(g: GuardInput) -> Shipped:
    """The recipe's libraries, globs expanded (a recipe with none for the platform fails, and
    so does a Windows one whose DLLs are not in bin/ with their import libraries in lib/:
    ``prebake.package.windows``), and the binaries its build added that the outputs do not
    list; no symlink the build added may leave the prefix (a consumer's copy would dangle)."""
    recipe, platform = g.recipe, g.platform
    outputs = expand(recipe.outputs.libs_for(platform.name), g.prefix)[0]  # globs expanded
    added = [f for f in prefix_files(g.prefix) if f not in g.before]
    libs, problems = libraries(outputs, recipe.kind_for(platform.name), g.prefix,
                               os=platform.os, added=added)
    if problems:
        raise UnitFailed(f"{recipe.name}: the {platform.name} layout is wrong:\n"
                         + "\n".join(problems))
    if not libs:
        raise UnitFailed(f"{recipe.name}: declares no libraries for {platform.name}")
    declared = [f for lib in libs for f in lib.files]
    unlisted, escapes = unlisted_binaries(g.prefix, declared, g.before)
    if escapes:
        raise UnitFailed(f"{g.recipe.name}: symlinks leave the prefix (a consumer's copy "
                         "would dangle): " + ", ".join(escapes))
    if unlisted:
        g.log.write(f"# {g.recipe.name} also ships binaries its outputs do not list (guarded "
                    f"the same): {', '.join(unlisted)}")
    return Shipped(tuple(libs), tuple(unlisted))


def facts_read(g: GuardInput, shipped: Shipped) -> FactsRead:
    """Each binary's facts, for the manifest; one that cannot be read is a failure, and the
    contract check still runs (it names the same file with its own rule)."""
    facts: list[dict[str, Any]] = []
    failures: list[str] = []
    cxx = False
    for rel in [f for lib in shipped.libs for f in lib.files] + list(shipped.unlisted):
        try:
            f = inspect(g.prefix / rel, ParseOptions(symbols=False))
        except PrebakeError as exc:
            failures.append(f"{g.recipe.name}: inspect {rel}: {exc}")
            continue
        facts.append(f.summary(rel))
        cxx = cxx or f.abi.cxx_stdlib not in (None, "none")
    return FactsRead(tuple(facts), cxx, tuple(failures))


def producers_pinned(g: GuardInput, shipped: Shipped, read: FactsRead
                     ) -> ProducersPinned | None:
    """The verified toolchain the contract's ``producer`` rule holds the binaries to (its
    compiler asked again, through the probe's cache, and its runtime objects read:
    ``prebake.toolchain.producer_pin``), and the files the recipe's ``other_compilers`` exempt,
    each with what its bytes say. An entry that matches no shipped file fails the unit:
    an exemption names what it exempts. None when the contract has no such rule."""
    contract, platform, recipe = g.platform.contract, g.platform, g.recipe
    if not contract.producer:
        return None
    entries = [e for e in recipe.other_compilers if e.applies(platform.name)]
    says = {f["path"]: tuple((f.get("abi") or {}).get("producer") or ()) for f in read.facts}
    rels = [p.relative_to(g.prefix).as_posix() for p in shipped.binaries(g.prefix)]
    allowed: dict[str, Allowed] = {}
    other: list[OtherCompiled] = []
    for i, entry in enumerate(entries):
        hits = [r for r in rels if any(fnmatch.fnmatchcase(r, glob) for glob in entry.files)]
        if not hits:
            raise UnitFailed("\n".join([*read.failures, (
                f"{recipe.name}/{platform.name}: other_compilers[{i}] ({', '.join(entry.files)})"
                f" matches no file the recipe ships ({', '.join(rels)}): an exemption from "
                "the producer rule must name what it exempts")]))
        for rel in hits:
            real = _file_of(g.prefix, rel)
            for name in (rel, real):  # the guards check the link, a fetch the file
                allowed[str(g.prefix / name)] = Allowed(recipe.name, entry.producers, entry.why)
            if any(o.file == real for o in other):
                continue
            other.append(OtherCompiled(real, says.get(rel, ()), entry.producers, entry.why))
            g.log.write(f"# producer: {real} names {', '.join(says.get(rel, ())) or 'nothing'}"
                        f"; exempt from the platform's toolchain by {recipe.name}'s "
                        f"other_compilers ({', '.join(entry.producers)}): {entry.why}")
    verdict = verify_platform(platform, g.pins, caller_env=g.env)
    pin = pin_for(verdict, g.env, allowed)
    reason = verdict.reason or verdict.cc.error or "it reported no release"
    why = "" if pin is not None else f"its compiler did not say what it is ({reason})"
    if pin is not None:
        g.log.write(f"# producer: every binary held to {pin.toolchain} (its objects name "
                    f"{', '.join(pin.own)}"
                    + (f"; a linked image may also name its runtime's {', '.join(pin.runtime)}"
                       f": {'; '.join(pin.runtime_from)}" if pin.runtime else "") + ")")
    return ProducersPinned(pin, tuple(other), why)



def _file_of(prefix: Path, rel: str) -> str:
    """The file ``rel`` names inside the prefix through its links (``lib/libonnxruntime.so``
    -> ``lib/libonnxruntime.so.1.21.0``): what a check of the asset, which reads files and not
    links, calls it, and so what an exemption records. ``rel`` when it is no link to a file
    of the prefix."""
    path = prefix / rel
    if not path.is_symlink():
        return rel
    real, root = path.resolve(), prefix.resolve()
    return real.relative_to(root).as_posix() if real.is_relative_to(root) and real.is_file() \
        else rel

def contract_checked(g: GuardInput, shipped: Shipped, failed: Sequence[str],
                     pinned: ProducersPinned | None = None) -> CheckReport:
    """Every binary against the platform's contract; a rule without evidence is recorded as
    undecided (the manifest says so), a violation fails (after ``failed``, what the guards
    before it found). ``pinned``: the producer rule's verified toolchain and exemptions."""
    prefix, platform = g.prefix, g.platform
    checked = shipped.binaries(prefix)
    g.log.write(f"# guards for {g.recipe.name}: check "
                f"{', '.join(p.relative_to(prefix).as_posix() for p in checked)} "
                f"against the {platform.name} contract")
    # the guard's own deep read: a feature rule is judged on the whole list; the licence is
    # judged on the recipe's proof (license_proven), which no single binary can give
    report = check_paths(checked, replace(platform.contract, allowed_licenses=()),
                         deep=wants_deep(platform.contract),
                         pin=pinned.pin if pinned is not None else None,
                         no_pin=pinned.why_none if pinned is not None else "")
    g.log.write(report.render())
    if not report.ok:
        raise UnitFailed("\n".join([*failed, f"{g.recipe.name}: contract check failed for "
                                    f"{platform.name}:\n" + report.render()]),
                         _violations(report, prefix))
    return report


def license_proven(g: GuardInput, shipped: Shipped, failed: Sequence[str]
                   ) -> tuple[LicenseProof | None, tuple[str, ...]]:
    """The recipe's license from its libraries' bytes (``Recipe.license_check``), and the
    contract's ``allowed_licenses`` on it: a license it does not allow is refused here, before
    the links and packaging, in one line naming the library. A recipe that proves no license
    cannot be judged: it fails closed unless ``allow_unknown`` names the key (then the
    manifest lists it as undecided). Returns the proof and what stayed undecided."""
    recipe, contract = g.recipe, g.platform.contract
    allowed = contract.allowed_licenses
    where = f"{recipe.name}/{g.platform.name}"
    if recipe.license_check is None:
        if not allowed:
            return None, ()
        if "allowed_licenses" in contract.allow_unknown:
            g.log.write(f"# license: {recipe.name} proves none; not checked (allow_unknown)")
            return None, (f"allowed_licenses: {recipe.name}",)
        raise UnitFailed("\n".join([*failed, (
            f"{where}: the contract's allowed_licenses ({', '.join(allowed)}) cannot judge "
            f"{recipe.name}: its recipe proves no license (Recipe.license_check); fails closed "
            "(allow_unknown = [\"allowed_licenses\"] accepts it unchecked)")]))
    if isinstance(recipe.license_check, LicenseText):
        proof, problems = prove_text(recipe.name, recipe.license_check, g.prefix,
                                     license_dest(recipe))
    else:
        proof, problems = prove_license(recipe.name, recipe.license_check, g.prefix,
                                        {lib.path: lib.stem for lib in shipped.libs})
    if proof is None:
        raise UnitFailed("\n".join([*failed, *problems]))
    for lib in proof.libraries if not isinstance(recipe.license_check, LicenseText) else ():
        g.log.write(f"# license: {lib.path} says {lib.text!r}, configured with "
                    f"{', '.join(lib.switches) or 'none of the switches that change it'}: "
                    f"{lib.spdx}")
    if isinstance(recipe.license_check, LicenseText):
        g.log.write(f"# license: {proof.libraries[0].path} is the text of {proof.spdx}")
    judged = judge(proof.spdx, allowed) if allowed else None
    if judged is not None and not judged.ok:
        first = proof.libraries[0]
        raise UnitFailed("\n".join([*failed, (
            f"{where}: {first.path} is {proof.spdx} (its bytes say {first.text!r}"
            + (f", configured {' '.join(first.switches)}" if first.switches else "")
            + f"); {judged.refusal(allowed)}, nothing was packaged")]))
    return proof, ()


def consumer_linked(g: GuardInput, shipped: Shipped, failed: Sequence[str]) -> Linked:
    """The recipe's link-test snippet, and every member of every library it ships, link with
    the consumer's flags: two links of their own, run side by side (each a linker process; on
    the flagship's wasm archive they took 11 s one after the other). Both are recorded, in
    that order, and each failure is a message of its own (after ``failed``)."""
    libs = _whole_archive_libs(g, shipped)
    allow = g.recipe.link_test.allow_undefined if g.recipe.link_test else ()
    with ThreadPoolExecutor(2, thread_name_prefix="consumer-link") as pool:
        snippet = pool.submit(_link_snippet, g, shipped)
        # what the consumer provides is the recipe's link_test.allow_undefined
        whole = pool.submit(prove_whole_archive, libs, g.platform,
                            g.workdir / "whole-archive" / g.recipe.name,
                            deps=list(g.dep_libs), allow_undefined=allow, env=g.env)
    failures = list(failed)
    linked = _record_snippet(g, snippet.result(), failures)
    proof = whole.result()
    recipe, platform, log = g.recipe, g.platform, g.log
    log.write(f"# whole-archive proof for {recipe.name}: every member of "
              f"{', '.join(s for _p, s in libs)} links with the {platform.name} consumer flags"
              + (f"; the consumer provides {', '.join(allow)}" if allow else ""))
    for cmd in proof.commands:
        log.write("$ " + " ".join(cmd))
    log.write(proof.output or "")
    for pattern, names in proof.allowed.items():
        log.write(f"# allow_undefined {pattern}: " + (", ".join(names) or "matched nothing"))
    if not proof.ok:
        failures.append(
            f"{recipe.name}: whole-archive link failed for {platform.name} (every member "
            "must link; list what the consumer provides in link_test.allow_undefined):\n"
            + "\n".join(proof.failures()))
    if len(failures) > len(failed):
        raise UnitFailed("\n".join(failures))
    return Linked((*linked, *(f"whole archive {s}" for _p, s in libs)),
                  {p: tuple(names) for p, names in proof.allowed.items()})


def link_order_found(g: GuardInput, shipped: Shipped) -> tuple[tuple[str, ...], ...]:
    """The order of the recipe's static archives, for its CMake and pkg-config files."""
    order = relative_order(g.prefix, [lib.path for lib in shipped.libs if lib.kind == "static"])
    return tuple(tuple(group) for group in order)


# ---- helpers ----------------------------------------------------------------------------------

def _link_snippet(g: GuardInput, shipped: Shipped) -> LinkTestResult | None:
    """The snippet's link (``None``: the recipe has none)."""
    snippet = g.recipe.link_test
    if snippet is None or not (snippet.code or snippet.symbols):
        return None
    lib_in = _link_input(g, shipped)
    paths = shipped.libraries(g.prefix)
    # the other shared libraries after it: a consumer of several links them all
    more = [p for p, lib in zip(paths, shipped.libs, strict=True)
            if lib.kind != "static" and p != lib_in]
    return link_test(lib_in, g.platform, more=more,
                     include_dirs=[g.prefix / "include", *g.include_dirs],
                     snippet=snippet.code or None, symbols=snippet.symbols,
                     lang=snippet.lang, flags=snippet.flags,
                     workdir=g.workdir / "link-test" / g.recipe.name, env=g.env)


def _record_snippet(g: GuardInput, result: LinkTestResult | None, failures: list[str]
                    ) -> tuple[str, ...]:
    """The snippet's link into the log; how it referenced the library, or a failure."""
    if result is None:
        return ()
    snippet = g.recipe.link_test
    assert snippet is not None
    for cmd in result.commands:
        g.log.write("$ " + " ".join(cmd))
    g.log.write(result.output or "")
    if not result.ok:
        detail = "\n".join(result.errors) or result.output
        failures.append(f"{g.recipe.name}: link test failed for {g.platform.name}:\n{detail}")
        return ()
    return (*(["snippet"] if snippet.code else []), *(f"symbol {sym}" for sym in snippet.symbols))


def _whole_archive_libs(g: GuardInput, shipped: Shipped) -> list[tuple[Path, str]]:
    """Every library the recipe ships, with the name the log and the report give it."""
    paths = [*shipped.libraries(g.prefix),
             *(g.prefix / rel for rel in shipped.unlisted if LIBRARY_NAME.search(rel))]
    return [(p, p.relative_to(g.prefix).as_posix() if p.is_relative_to(g.prefix) else p.name)
            for p in paths]


def _relative(path: str, prefix: Path) -> str:
    p = Path(path)
    return p.relative_to(prefix).as_posix() if p.is_relative_to(prefix) else path


def _violations(report: CheckReport, prefix: Path) -> list[Violation]:
    """The contract's violations, each file named relative to the prefix (as it ships)."""
    return [replace(v, path=_relative(v.path, prefix)) for v in report.violations]


def _undecided(report: CheckReport, prefix: Path) -> tuple[str, ...]:
    """``rule: lib/x.a`` for each rule the check could not decide (the manifest lists them)."""
    out = []
    for u in report.unknown:
        where = Path(u.path)
        rel = where.relative_to(prefix).as_posix() if where.is_relative_to(prefix) else where.name
        out.append(f"{u.rule}: {rel}")
    return tuple(out)


def _link_input(g: GuardInput, shipped: Shipped) -> Path:
    """The one library the link test links: the recipe's library, or — when it has several
    static archives or builds on static libraries of earlier stages — one archive holding all
    their members (``llvm-ar qL`` copies members, for ELF, Mach-O and wasm alike), so the
    consumer resolves across them like a real link of the whole set would."""
    paths = shipped.libraries(g.prefix)
    static = [p for p, lib in zip(paths, shipped.libs, strict=True) if lib.kind == "static"]
    dep_static = [p for p in g.dep_libs if p.suffix == ".a"]
    if not static or len(static) + len(dep_static) < 2:
        return paths[0]
    combined = g.workdir / "link-test-input" / static[0].name
    combined.parent.mkdir(parents=True, exist_ok=True)
    combined.unlink(missing_ok=True)
    members = [str(p) for p in static + dep_static]
    for cmd in (["llvm-ar", "qcL", str(combined), *members], ["llvm-ar", "s", str(combined)]):
        g.log.write("$ " + " ".join(cmd))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(g.env))
        except FileNotFoundError:
            raise PrebakeError("combining archives for the link test failed: llvm-ar is not "
                               f"on the build's PATH ({g.env.get('PATH', '')})") from None
        if proc.returncode != 0:
            raise PrebakeError(f"combining archives for the link test failed: {proc.stderr}")
    return combined
