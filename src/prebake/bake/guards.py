"""The guards every recipe's outputs pass before anything is packaged, as a list of steps.

Each guard is a small function of the recipe's frozen :class:`GuardInput` and the
:class:`GuardReport` it records into; it returns whether the next guard runs. :data:`GUARDS`
holds them in order — outputs present, libraries found, links inside the prefix, facts read,
contract checked, the consumer's links (the snippet and every archive member, side by side),
link order — and
:func:`run_guards` runs them until one stops. Each failure becomes one message; any message fails
the unit. There is deliberately no switch to downgrade a failure to a warning. To add a guard,
write one function of that shape and put it where it belongs in :data:`GUARDS`.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.bake.process import BuildLog
from prebake.bake.result import GuardReport
from prebake.bake.shipped import LIBRARY_NAME, expand, prefix_files, unlisted_binaries
from prebake.contract.check import check_paths, wants_deep
from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.link.order import relative_order
from prebake.link.test import LinkTestResult, link_test
from prebake.link.whole import WholeArchiveProof, prove_whole_archive
from prebake.package.libs import Library, libraries
from prebake.package.manifest_builder import facts_summary
from prebake.recipes.model import Recipe
from prebake.workspace.model import Platform


@dataclass(frozen=True)
class GuardInput:
    """What one recipe's guards read. ``dep_libs`` are the libraries of the recipes it builds
    on (earlier stages), which the link tests link too; ``include_dirs`` add their headers.
    ``before`` are the prefix's files before the recipe built: every other binary in it is the
    recipe's, listed or not. ``workdir`` is the recipe's work folder (link tests write there)."""

    recipe: Recipe
    platform: Platform
    prefix: Path
    workdir: Path
    log: BuildLog
    dep_libs: tuple[Path, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    before: frozenset[str] = frozenset()

    def libraries(self, out: GuardReport) -> list[Path]:
        """The recipe's declared libraries (found by :func:`libraries_found`) as a consumer's
        linker is given them (a DLL by its import library), as paths."""
        return [self.prefix / lib.link_path for lib in out.libs]

    def binaries(self, out: GuardReport) -> list[Path]:
        """Every binary the recipe ships: its libraries (a DLL with its import libraries),
        then what its outputs do not list."""
        return [*(self.prefix / f for lib in out.libs for f in lib.files),
                *(self.prefix / rel for rel in out.unlisted)]


Guard = Callable[[GuardInput, GuardReport], bool]  # records into the report; False: stop here


def license_dest(recipe: Recipe) -> str | None:
    """Where an asset carries a recipe's licence: ``share/licenses/<recipe>/<file>``."""
    lic = recipe.outputs.license
    return f"share/licenses/{recipe.name}/{Path(lic).name}" if lic else None


# ---- the guards, in the order they run ------------------------------------------------------

def outputs_present(g: GuardInput, out: GuardReport) -> bool:
    """Every declared output is in the prefix (a glob that matches nothing is absent too)."""
    recipe = g.recipe
    wanted = [*recipe.outputs.libs_for(g.platform.name), *recipe.outputs.headers]
    lic = license_dest(recipe)
    if lic:
        wanted.append(lic)
    missing = expand(wanted, g.prefix)[1]
    if missing:
        out.failures.append(f"{recipe.name}: declared outputs missing from the prefix: "
                            + ", ".join(missing))
        return False
    return True


def libraries_found(g: GuardInput, out: GuardReport) -> bool:
    """The recipe's libraries, globs expanded; a recipe with none for the platform fails, and
    so does a Windows one whose DLLs are not in bin/ with their import libraries in lib/
    (``prebake.package.windows``)."""
    recipe, platform = g.recipe, g.platform
    outputs = expand(recipe.outputs.libs_for(platform.name), g.prefix)[0]  # globs expanded
    added = [f for f in prefix_files(g.prefix) if f not in g.before]
    out.libs, problems = libraries(outputs, recipe.kind_for(platform.name), g.prefix,
                                   os=platform.os, added=added)
    if problems:
        out.failures.append(f"{recipe.name}: the {platform.name} layout is wrong:\n"
                            + "\n".join(problems))
        return False
    if not out.libs:
        out.failures.append(f"{recipe.name}: declares no libraries for {platform.name}")
        return False
    return True


def links_stay_inside(g: GuardInput, out: GuardReport) -> bool:
    """No symlink the build added leaves the prefix (a consumer's copy would dangle); the
    binaries it added that the outputs do not list are found here, to be guarded the same."""
    declared = [f for lib in out.libs for f in lib.files]
    unlisted, escapes = unlisted_binaries(g.prefix, declared, g.before)
    if escapes:
        out.failures.append(f"{g.recipe.name}: symlinks leave the prefix (a consumer's copy "
                            "would dangle): " + ", ".join(escapes))
        return False
    out.unlisted = unlisted
    if unlisted:
        g.log.write(f"# {g.recipe.name} also ships binaries its outputs do not list (guarded "
                    f"the same): {', '.join(unlisted)}")
    return True


def facts_read(g: GuardInput, out: GuardReport) -> bool:
    """Each binary's facts, for the manifest; one that cannot be read fails, and the contract
    check still runs (it names the same file with its own rule)."""
    for rel in [f for lib in out.libs for f in lib.files] + out.unlisted:
        try:
            facts = inspect(g.prefix / rel, ParseOptions(symbols=False))
        except PrebakeError as exc:
            out.failures.append(f"{g.recipe.name}: inspect {rel}: {exc}")
            continue
        out.facts.append(facts_summary(facts, rel))
        out.cxx = out.cxx or facts.abi.cxx_stdlib not in (None, "none")
    return True


def contract_checked(g: GuardInput, out: GuardReport) -> bool:
    """Every binary against the platform's contract; a rule without evidence is recorded as
    undecided (the manifest says so), a violation fails."""
    prefix, platform = g.prefix, g.platform
    checked = g.binaries(out)
    g.log.write(f"# guards for {g.recipe.name}: check "
                f"{', '.join(p.relative_to(prefix).as_posix() for p in checked)} "
                f"against the {platform.name} contract")
    # the guard's own deep read: a feature rule is judged on the whole list
    report = check_paths(checked, platform.contract, deep=wants_deep(platform.contract))
    out.check = report
    g.log.write(report.render())
    for u in report.unknown:
        where = Path(u.path)
        rel = where.relative_to(prefix).as_posix() if where.is_relative_to(prefix) else where.name
        out.undecided.append(f"{u.rule}: {rel}")
    if not report.ok:
        out.failures.append(f"{g.recipe.name}: contract check failed for {platform.name}:\n"
                            + report.render())
        return False
    return True


def consumer_linked(g: GuardInput, out: GuardReport) -> bool:
    """The recipe's link-test snippet, and every member of every library it ships, link with
    the consumer's flags: two links of their own, run side by side (each a linker process; on
    the flagship's wasm archive they took 11 s one after the other). Both are recorded, in
    that order, and each failure is a message of its own."""
    libs = _whole_archive_libs(g, out)
    allow = g.recipe.link_test.allow_undefined if g.recipe.link_test else ()
    with ThreadPoolExecutor(2, thread_name_prefix="consumer-link") as pool:
        snippet = pool.submit(_link_snippet, g, out)
        # what the consumer provides is the recipe's link_test.allow_undefined
        whole = pool.submit(prove_whole_archive, libs, g.platform,
                            g.workdir / "whole-archive" / g.recipe.name,
                            deps=list(g.dep_libs), allow_undefined=allow)
    snippet_ok = _record_snippet(g, out, snippet.result())
    whole_ok = _record_whole_archive(g, out, libs, allow, whole.result())
    return snippet_ok and whole_ok


def _link_snippet(g: GuardInput, out: GuardReport) -> LinkTestResult | None:
    """The snippet's link (``None``: the recipe has none)."""
    snippet = g.recipe.link_test
    if snippet is None or not (snippet.code or snippet.symbols):
        return None
    paths = g.libraries(out)
    lib_in = _link_input(paths, out.libs, list(g.dep_libs), g.workdir, g.log)
    # the other shared libraries after it: a consumer of several links them all
    more = [p for p, lib in zip(paths, out.libs, strict=True)
            if lib.kind != "static" and p != lib_in]
    return link_test(lib_in, g.platform, more=more,
                     include_dirs=[g.prefix / "include", *g.include_dirs],
                     snippet=snippet.code or None, symbols=snippet.symbols,
                     lang=snippet.lang, flags=snippet.flags,
                     workdir=g.workdir / "link-test" / g.recipe.name)


def _record_snippet(g: GuardInput, out: GuardReport, result: LinkTestResult | None) -> bool:
    if result is None:
        return True
    snippet = g.recipe.link_test
    assert snippet is not None
    for cmd in result.commands:
        g.log.write("$ " + " ".join(cmd))
    g.log.write(result.output or "")
    if not result.ok:
        detail = "\n".join(result.errors) or result.output
        out.failures.append(f"{g.recipe.name}: link test failed for {g.platform.name}:\n"
                            f"{detail}")
        return False
    out.linked = (["snippet"] if snippet.code else []) + [
        f"symbol {sym}" for sym in snippet.symbols]
    return True


def _whole_archive_libs(g: GuardInput, out: GuardReport) -> list[tuple[Path, str]]:
    """Every library the recipe ships, with the name the log and the report give it."""
    paths = [*g.libraries(out),
             *(g.prefix / rel for rel in out.unlisted if LIBRARY_NAME.search(rel))]
    return [(p, p.relative_to(g.prefix).as_posix() if p.is_relative_to(g.prefix) else p.name)
            for p in paths]


def _record_whole_archive(g: GuardInput, out: GuardReport, libs: list[tuple[Path, str]],
                          allow: Sequence[str], proof: WholeArchiveProof) -> bool:
    """The proof (``prebake.link.whole``: every member of every library links) into the log
    and the report."""
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
        out.failures.append(
            f"{recipe.name}: whole-archive link failed for {platform.name} (every member "
            "must link; list what the consumer provides in link_test.allow_undefined):\n"
            + "\n".join(proof.failures()))
        return False
    out.linked.extend(f"whole archive {s}" for _p, s in libs)
    out.allowed.update(proof.allowed)
    return True


def link_order_found(g: GuardInput, out: GuardReport) -> bool:
    """The order of the recipe's static archives, for its CMake and pkg-config files."""
    out.link_order = relative_order(g.prefix,
                                    [lib.path for lib in out.libs if lib.kind == "static"])
    return True


GUARDS: tuple[Guard, ...] = (outputs_present, libraries_found, links_stay_inside, facts_read,
                             contract_checked, consumer_linked, link_order_found)


def run_guards(g: GuardInput) -> GuardReport:
    """Run :data:`GUARDS` on ``g.recipe``'s outputs in ``g.prefix`` until one stops; the log
    gets the details, the report what they found (``ok`` when nothing failed)."""
    out = GuardReport(recipe=g.recipe.name, prefix=g.prefix)
    for guard in GUARDS:
        if not guard(g, out):
            break
    return out


def guards_record(platform: Platform, outcomes: Sequence[GuardReport]) -> dict[str, Any]:
    """The manifest's ``guards`` field: which contract and link test an asset passed.

    An asset exists only when every guard passed, so ``ok`` is always true here; the record says
    what "passed" meant (the contract, the rules left undecided for lack of evidence, the
    consumer flags) so a report or an auditor need not take it on faith.
    """
    return {
        "check": {"ok": True, "platform": platform.name,
                  "contract": platform.contract.to_json(),
                  "undecided": sorted({u for o in outcomes for u in o.undecided})},
        "link_test": {"ok": True, "flags": list(platform.link_test.flags),
                      "linked": sorted({x for o in outcomes for x in o.linked}),
                      "allow_undefined": {p: sorted(names) for o in outcomes
                                          for p, names in o.allowed.items()}},
    }


# ---- helpers ----------------------------------------------------------------------------------

def _link_input(paths: list[Path], libs: list[Library], dep_libs: list[Path], workdir: Path,
                log: BuildLog) -> Path:
    """The one library the link test links: the recipe's library, or — when it has several
    static archives or builds on static libraries of earlier stages — one archive holding all
    their members (``llvm-ar qL`` copies members, for ELF, Mach-O and wasm alike), so the
    consumer resolves across them like a real link of the whole set would."""
    static = [p for p, lib in zip(paths, libs, strict=True) if lib.kind == "static"]
    dep_static = [p for p in dep_libs if p.suffix == ".a"]
    if not static or len(static) + len(dep_static) < 2:
        return paths[0]
    combined = workdir / "link-test-input" / static[0].name
    combined.parent.mkdir(parents=True, exist_ok=True)
    combined.unlink(missing_ok=True)
    ar = shutil.which("llvm-ar") or "llvm-ar"
    members = [str(p) for p in static + dep_static]
    for cmd in ([ar, "qcL", str(combined), *members], [ar, "s", str(combined)]):
        log.write("$ " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise PrebakeError(f"combining archives for the link test failed: {proc.stderr}")
    return combined
