"""A ``Repackage`` strategy: an upstream prebuilt archive (sha256-verified) laid out into the
prefix by the recipe's globs, headers from its own sources, soname links and import libraries
rebuilt."""

from __future__ import annotations

import fnmatch
import shutil
from collections.abc import Mapping
from pathlib import Path

from prebake.bake.from_source import fetch_sources, write_import_libs
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.model.recipe import Recipe, Repackage
from prebake.sources.unpack import extract


def repackage(run: UnitRun, recipe: Recipe, strategy: Repackage, work: Path) -> None:
    ver = run.version(recipe)
    prefix = run.dirs.prefix
    urls = [u.format(version=ver) for u in (strategy.url, *strategy.mirrors)]
    run.say(f"{recipe.name}: downloading {urls[0]}")
    archive = run.cache.fetch(urls, strategy.sha256, run.log.write, size=strategy.size)
    run.log.write(f"# {urls[0]}: sha256 {strategy.sha256} verified")
    upstream = extract(archive, work / "upstream")
    filled = _place(run, upstream, strategy.layout)
    if strategy.source_layout:
        fetch_sources(run, recipe, work)
        for dest, ok in _place(run, work, strategy.source_layout).items():
            filled[dest] = filled.get(dest, False) or ok
    layouts = {**strategy.layout, **strategy.source_layout}
    for dest, ok in filled.items():  # globs with one folder are alternatives: one must match
        if not ok:
            pats = [p for p, d in layouts.items() if d == dest]
            raise UnitFailed(f"{recipe.name}: nothing in {urls[0]} or its sources matches "
                             f"{' or '.join(map(repr, pats))} (for {dest}/)")
    for link, target in strategy.links.items():
        path = prefix / link
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(target.format(version=ver))
            run.log.write(f"# {link} -> {target.format(version=ver)}")
        if not path.exists():  # a dangling link: the archive is not the pinned release
            held = sorted(p.name for p in path.parent.iterdir() if not p.is_symlink())
            raise UnitFailed(f"{recipe.name}: {urls[0]} has no {path.parent.relative_to(prefix)}"
                             f"/{path.readlink()} for the link {link} (it holds "
                             f"{', '.join(held) or 'nothing there'}; expected {ver})")
    write_import_libs(run, strategy.import_libs)


def _place(run: UnitRun, root: Path, layout: Mapping[str, str]) -> dict[str, bool]:
    """Copy what each glob matches below ``root`` into its prefix folder; which folders got
    something (the caller fails a folder that none of its alternatives filled)."""
    prefix = run.dirs.prefix
    filled: dict[str, bool] = {}
    for pattern, dest in layout.items():
        matches = sorted(p for p in root.rglob("*")
                         if fnmatch.fnmatchcase(p.relative_to(root).as_posix(), pattern))
        filled[dest] = filled.get(dest, False) or bool(matches)
        for m in matches:
            if any(parent in matches for parent in m.parents):
                continue  # inside a folder copied whole
            target = prefix / dest / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if m.is_symlink():
                target.unlink(missing_ok=True)
                target.symlink_to(str(m.readlink()))
            elif m.is_dir():
                shutil.copytree(m, target, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copyfile(m, target)
            run.log.write(f"# {m.relative_to(root)} -> {target.relative_to(prefix)}")
    return filled

