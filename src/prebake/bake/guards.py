"""The guards every unit passes before anything is packaged: outputs present, facts inspected,
contract checked, link test linked. Each failure becomes one message; any message fails the unit.
There is deliberately no switch to downgrade a failure to a warning."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from prebake.bake.result import GuardReport
from prebake.errors import PrebakeError
from prebake.package.libs import Library
from prebake.package.manifest import facts_summary
from prebake.recipes.model import Recipe
from prebake.workspace.model import Platform


def license_dest(recipe: Recipe) -> str | None:
    """Where an asset carries a recipe's licence: ``share/licenses/<recipe>/<file>``."""
    lic = recipe.outputs.license
    return f"share/licenses/{recipe.name}/{Path(lic).name}" if lic else None


def _missing_outputs(recipe: Recipe, platform: str, prefix: Path) -> list[str]:
    """Declared outputs absent from the prefix (a glob that matches nothing is absent too)."""
    from prebake.bake.shipped import expand

    wanted = [*recipe.outputs.libs_for(platform), *recipe.outputs.headers]
    lic = license_dest(recipe)
    if lic:
        wanted.append(lic)
    return expand(wanted, prefix)[1]


def _kind_of(rel: str, declared: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if name.endswith((".so", ".dylib", ".dll")) or ".so." in name:
        return "shared"
    if name.endswith(".a"):
        return "static"
    return declared


def _libraries(recipe: Recipe, platform: Platform, prefix: Path) -> list[Library]:
    """The recipe's libraries; a Windows import library rides on its DLL, not on its own."""
    from prebake.bake.shipped import expand

    declared = recipe.kind_for(platform.name)
    outputs = expand(recipe.outputs.libs_for(platform.name), prefix)[0]  # globs expanded
    implibs: dict[str, str] = {}
    for rel in outputs:
        if rel.endswith(".dll"):
            stem = rel.rsplit("/", 1)[-1][: -len(".dll")]
            cands = [o for o in outputs if o.endswith(f"/{stem}.lib")] + [f"lib/{stem}.lib"]
            found = next((c for c in cands if (prefix / c).exists()), None)
            if found:
                implibs[rel] = found
    libs = []
    for rel in outputs:
        if rel in implibs.values():
            continue
        libs.append(Library(rel, _kind_of(rel, declared), implibs.get(rel)))
    return libs


def _link_input(paths: list[Path], libs: list[Library], dep_libs: list[Path], workdir: Path,
                log: Any) -> Path:
    """The one library the link test links: the recipe's library, or — when it has several
    static archives or builds on static libraries of earlier stages — one archive holding all
    their members (``llvm-ar qL`` copies members, for ELF, Mach-O and wasm alike), so the
    consumer resolves across them like a real link of the whole set would."""
    static = [p for p, lib in zip(paths, libs, strict=True) if lib.kind == "static"]
    dep_static = [p for p in dep_libs if p.suffix == ".a"]
    if not static or len(static) + len(dep_static) < 2:
        return paths[0]
    import shutil
    import subprocess

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


def run_guards(recipe: Recipe, platform: Platform, prefix: Path, workdir: Path,
               log: Any, *, dep_libs: Sequence[Path] = (),
               include_dirs: Sequence[Path] = (), before: Collection[str] = ()) -> GuardReport:
    """Run every guard for ``recipe``'s outputs in ``prefix``; ``log`` gets the details.

    ``dep_libs`` are the libraries of the recipes it builds on (earlier stages), which the
    link test links too; ``include_dirs`` add their headers. ``before`` are the prefix's files
    before the recipe built: every other binary in it is the recipe's, listed or not.
    """
    from prebake.contract.check import check_paths
    from prebake.inspect import ParseOptions, inspect
    from prebake.link.test import link_test

    out = GuardReport(recipe=recipe.name, prefix=prefix)
    missing = _missing_outputs(recipe, platform.name, prefix)
    if missing:
        out.failures.append(f"{recipe.name}: declared outputs missing from the prefix: "
                            + ", ".join(missing))
        return out
    out.libs = _libraries(recipe, platform, prefix)
    paths = [prefix / lib.path for lib in out.libs]
    if not paths:
        out.failures.append(f"{recipe.name}: declares no libraries for {platform.name}")
        return out
    from prebake.bake.shipped import LIBRARY_NAME, unlisted_binaries

    declared = [lib.path for lib in out.libs] + [lib.implib for lib in out.libs if lib.implib]
    unlisted, escapes = unlisted_binaries(prefix, declared, before)
    if escapes:
        out.failures.append(f"{recipe.name}: symlinks leave the prefix (a consumer's copy "
                            "would dangle): " + ", ".join(escapes))
        return out
    out.unlisted = unlisted
    if unlisted:
        log.write(f"# {recipe.name} also ships binaries its outputs do not list (guarded the "
                  f"same): {', '.join(unlisted)}")
    for rel in [lib.path for lib in out.libs] + unlisted:
        try:
            facts = inspect(prefix / rel, ParseOptions(symbols=False))
        except PrebakeError as exc:
            out.failures.append(f"{recipe.name}: inspect {rel}: {exc}")
            continue
        out.facts.append(facts_summary(facts, rel))
        out.cxx = out.cxx or facts.abi.cxx_stdlib not in (None, "none")
    checked = [*paths, *(prefix / rel for rel in unlisted)]
    log.write(f"# guards for {recipe.name}: check "
              f"{', '.join(p.relative_to(prefix).as_posix() for p in checked)} "
              f"against the {platform.name} contract")
    from prebake.contract.check import wants_deep

    # the guard's own deep read: a feature rule is judged on the whole list
    report = check_paths(checked, platform.contract, deep=wants_deep(platform.contract))
    out.check = report
    log.write(report.render())
    for u in report.unknown:
        where = Path(u.path)
        rel = where.relative_to(prefix).as_posix() if where.is_relative_to(prefix) else where.name
        out.undecided.append(f"{u.rule}: {rel}")
    if not report.ok:
        out.failures.append(f"{recipe.name}: contract check failed for {platform.name}:\n"
                            + report.render())
        return out
    snippet = recipe.link_test
    if snippet is not None and (snippet.code or snippet.symbols):
        lib_in = _link_input(paths, out.libs, list(dep_libs), workdir, log)
        result = link_test(lib_in, platform,
                           include_dirs=[prefix / "include", *include_dirs],
                           snippet=snippet.code or None, symbols=snippet.symbols,
                           lang=snippet.lang, flags=snippet.flags,
                           workdir=workdir / "link-test" / recipe.name)
        for cmd in result.commands:
            log.write("$ " + " ".join(cmd))
        log.write(result.output or "")
        if not result.ok:
            detail = "\n".join(result.errors) or result.output
            out.failures.append(f"{recipe.name}: link test failed for {platform.name}:\n{detail}")
            return out
        out.linked = (["snippet"] if snippet.code else []) + [
            f"symbol {sym}" for sym in snippet.symbols]
    from prebake.bake.whole import whole_archive_guard

    whole = [*paths, *(prefix / rel for rel in unlisted if LIBRARY_NAME.search(rel))]
    failure = whole_archive_guard(recipe, platform, prefix, whole, list(dep_libs), workdir, log,
                                  out)
    if failure:
        out.failures.append(failure)
        return out
    out.link_order = _link_order([lib for lib in out.libs if lib.kind == "static"], prefix)
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


def _link_order(static: list[Library], prefix: Path) -> list[list[str]]:
    if len(static) < 2:
        return [[lib.path] for lib in static]
    from prebake.link.order import compute_link_order

    order = compute_link_order([prefix / lib.path for lib in static])
    return [[Path(p).relative_to(prefix).as_posix() for p in g] for g in order.groups]
