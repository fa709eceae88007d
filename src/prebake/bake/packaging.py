"""What a unit's asset holds, for the ``package`` step: the files it ships, the link order
across its libraries, its own CMake and pkg-config files, the manifest (what the guards proved,
the toolchain, the build settings, the inputs), and the relocation that keeps every build
folder out of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prebake import jsonio
from prebake.bake.guards import GuardReport
from prebake.bake.stamp import prefix_files
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.link.order import relative_order
from prebake.manifest import Manifest
from prebake.model.recipe import Build, Recipe, Strategy
from prebake.model.workspace import Platform
from prebake.package import cmake, pcdeps, pcjudge, pkgconfig, relocate
from prebake.package.archive import Entry, collect_tree, with_generated
from prebake.package.cmakecache import CacheError, recorded
from prebake.package.libs import Library, ordered
from prebake.package.manifest_builder import make_manifest
from prebake.package.version_proof import Proof, summary
from prebake.plan.units import Unit
from prebake.toolchain.verify import record

Outcomes = Sequence[tuple[Recipe, GuardReport]]  # each recipe of the unit, as its guards found it


def generated_configs(run: UnitRun, outcomes: Outcomes, order: Sequence[Sequence[str]]
                      ) -> dict[str, bytes]:
    """The unit's own CMake package and ``.pc`` file, named like the asset and linking every
    library it ships in ``order``; none when a recipe named like the asset made its own."""
    aid = run.unit.asset
    libs: list[Library] = [lib for _r, o in outcomes for lib in o.libs]
    cxx = any(o.cxx for _r, o in outcomes)
    names = {r.name for r, _o in outcomes}
    req = sorted({d for r, _o in outcomes for d in r.deps if d not in names
                  and d in run.ws.recipes})
    if aid.name in names:
        return {}
    return config_files(run, aid.name, aid.version, libs, order, cxx=cxx, requires=req)


def config_files(run: UnitRun, name: str, version: str, libs: Sequence[Library],
                 order: Sequence[Sequence[str]], *, cxx: bool, requires: Sequence[str],
                 cmake_too: bool = True) -> dict[str, bytes]:
    """``lib/cmake/<name>/`` and ``lib/pkgconfig/<name>.pc`` for ``libs``: linked in
    ``order``, or as each library's own ``.pc`` states where the install has one per
    library (``prebake.package.pcdeps``)."""
    p = run.unit.platform
    deps = pcdeps.read(run.dirs.prefix, libs, sorted(prefix_files(run.dirs.prefix)))
    flat = [lib.path for group in ordered(libs, order) for lib in group]
    return {**(cmake.generated_files(name, version, libs, order, arch=p.arch, cxx=cxx,
                                     requires=requires, deps=deps) if cmake_too else {}),
            **pkgconfig.generated_files(name, version, libs, order, requires=requires,
                                        os=p.os, extra_libs=pcdeps.private_libs(deps, flat))}


def unit_manifest(run: UnitRun, outcomes: Outcomes, order: Sequence[Sequence[str]],
                  settings: Mapping[str, Mapping[str, str]],
                  proofs: Sequence[tuple[str, Proof]]) -> Manifest:
    """The manifest before provenance: what the guards proved (contract, link tests, the
    version evidence in ``proofs``), the toolchain, the recipes and their build settings, the
    inputs."""
    unit, ws = run.unit, run.ws
    return make_manifest(
        unit.asset, input_hash=unit.input_hash,
        toolchain=record(unit.platform, ws.pins),  # the spec, pin and verified identity
        facts=[f for _r, o in outcomes for f in o.facts], link_order=order,
        recipes=[{"name": r.name, "version": ws.pins[r.pin],
                  **({"public_symbols": list(r.outputs.public_symbols)}
                     if r.outputs.public_symbols else {}),
                  **({"build_settings": settings[r.name]} if settings[r.name] else {}),
                  **({"license": o.license.spdx} if o.license else {})}
                 for r, o in outcomes],
        guards={**guards_record(unit.platform, [o for _r, o in outcomes]),
                "version": summary(proofs),
                **({"producer": producer} if (producer := producer_record(
                    [o for _r, o in outcomes])) else {}),
                **({"license": licenses} if (licenses := {
                    r.name: o.license.to_json() for r, o in outcomes if o.license}) else {})},
        inputs=unit.inputs,
    )


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


def producer_record(outcomes: Sequence[GuardReport]) -> dict[str, Any] | None:
    """The manifest's ``guards.producer``: the verified toolchain every binary was held to
    (what its objects name, what its runtime adds in a linked image) and each file a recipe
    exempted (what it says, what was allowed, why). None: the contract has no such rule."""
    pinned = [o.producers for o in outcomes if o.producers is not None]
    if not pinned:
        return None
    out = pinned[0].to_json()
    out["other_compilers"] = [{"recipe": o.recipe, **x} for o in outcomes
                              if o.producers is not None
                              for x in o.producers.to_json()["other_compilers"]]
    return out


def build_settings(run: UnitRun, recipe: Recipe, strategy: Strategy) -> dict[str, str]:
    """The CMake cache entries the recipe records (``Build.record``), read from its build:
    the manifest shows them, and the SBOM lists an optional component only where they
    show its option on."""
    if not isinstance(strategy, Build) or not strategy.record:
        return {}
    ctx = run.env.invocation(recipe).context
    path = Path(ctx.fill(strategy.cmake_cache, f"recipe {recipe.name} cmake_cache"))
    try:
        settings = recorded(path, strategy.record)
    except CacheError as exc:
        raise UnitFailed(f"{recipe.name}: {exc}") from None
    run.log.write("# build settings (CMake cache): "
                  + ", ".join(f"{k}={v}" for k, v in settings.items()))
    return dict(settings)


def relocate_files(run: UnitRun, entries: list[Entry], generated: Mapping[str, bytes],
                   manifest: Manifest) -> list[Entry]:
    """Rewrite the install files prebake knows to be relative to their own folder, then
    refuse the asset if any file it would ship still names the workspace, the unit's work
    folder or its prefix (``prebake.package.relocate``)."""
    dirs = run.dirs
    paths = relocate.BuildPaths.of(dirs.prefix, dirs.root, run.ws.root)
    done = relocate.rewrite_install(dirs.prefix, [e.path for e in entries if e.kind == "file"],
                                    paths)
    for rel in done.changed:
        run.log.write(f"# relocated {rel}: build prefix -> relative to the file")
    for rel in done.dropped:
        run.log.write(f"# dropped {rel}: a libtool archive names the build machine's libdir")
    gone = set(done.dropped)
    kept = [e for e in entries if e.path not in gone]
    pcs = {**{e.path: e.source.read_bytes() for e in kept
              if e.kind == "file" and e.path.endswith(".pc") and e.source is not None},
           **{rel: data for rel, data in generated.items() if rel.endswith(".pc")}}
    try:
        outside = pcjudge.judge_files(pcs)
    except pcjudge.PkgConfigMissing as exc:
        raise UnitFailed(f"{run.unit.id}: {exc} (the asset ships {len(pcs)} .pc file(s), "
                         "judged by pkg-config's own expansion)") from None
    if outside:
        raise UnitFailed(f"{run.unit.id}: {len(outside)} pkg-config setting(s) name a folder "
                         "outside the asset (the build machine's; a consumer's compiler "
                         "would be sent there):\n" + "\n".join(f"  {x.render()}"
                                                              for x in outside))
    manifest_json = jsonio.dumps(manifest.to_json()).encode()
    shipped = with_generated(kept, {**generated, "share/prebake/manifest.json": manifest_json})
    leaks = relocate.scan(shipped, paths)
    if leaks:
        raise UnitFailed(relocate.render_leaks(run.unit.id, leaks))
    return kept


def asset_entries(unit: Unit, prefix: Path, added: Sequence[str]) -> list[Entry]:
    """A recipe unit ships its whole prefix; a stage unit the files it added (and their dirs)."""
    entries = collect_tree(prefix)
    if unit.per_recipe:
        return entries
    keep = set(added)
    return _prune_dirs([e for e in entries if e.kind == "dir" or e.path in keep])


def _prune_dirs(entries: list[Entry]) -> list[Entry]:
    """Keep only folders that hold a kept file (a stage ships what it added, not empty dirs)."""
    keep = {e.path for e in entries if e.kind != "dir"}
    parents = {p for path in keep for p in _parents(path)}
    return [e for e in entries if e.kind != "dir" or e.path in parents]


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def combined_order(outcomes: Outcomes, prefix: Path) -> list[list[str]]:
    """The link order across every library the unit ships (one recipe: its own order, as its
    guard found it; several: their static archives ordered together, then the shared ones)."""
    static = [lib for _r, o in outcomes for lib in o.libs if lib.kind == "static"]
    if len(outcomes) == 1 or len(static) < 2:
        return [list(g) for _r, o in outcomes for g in o.link_order] or [
            [lib.path] for _r, o in outcomes for lib in o.libs]
    shared = [[lib.path] for _r, o in outcomes for lib in o.libs if lib.kind != "static"]
    return relative_order(prefix, [lib.path for lib in static]) + shared
