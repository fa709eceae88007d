"""Fetch one source (git / URL archive / local folder) into ``<workdir>/<dest>``."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.recipes.model import GitSource, LocalSource, Source, UrlSource
from prebake.sources.cache import SourceCache
from prebake.sources.unpack import extract

FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
Runner = Callable[[Sequence[str], Path], None]


def _fill(text: str, version: str, pins: Mapping[str, str]) -> str:
    return text.format(version=version, pins=dict(pins)) if "{" in text else text


def render_source(src: Source, version: str, pins: Mapping[str, str]) -> Source:
    """The source with ``{version}`` / ``{pins[NAME]}`` filled into its URL and ref."""
    if isinstance(src, GitSource):
        return replace(src, url=_fill(src.url, version, pins), ref=_fill(src.ref, version, pins))
    if isinstance(src, UrlSource):
        return replace(src, url=_fill(src.url, version, pins),
                       mirrors=tuple(_fill(m, version, pins) for m in src.mirrors))
    return src


def _safe_dest(workdir: Path, dest: str) -> Path:
    p = (workdir / dest).resolve()
    if not p.is_relative_to(workdir.resolve()):
        raise PrebakeError(f"source dest {dest!r} leaves the work dir")
    return p


def git_commands(src: GitSource, dest: Path) -> list[list[str]]:
    """The git command lines that check ``src`` out at exactly its ref into ``dest``.

    A full commit is fetched by id (``git fetch`` of a sha works on GitHub and any server with
    ``uploadpack.allowReachableSHA1InWant``); a tag or branch is cloned with ``--branch``.
    """
    depth = ["--depth", "1"] if src.shallow else []
    d = str(dest)
    if FULL_COMMIT.fullmatch(src.ref):
        cmds = [["git", "init", "-q", d],
                ["git", "-C", d, "remote", "add", "origin", src.url],
                ["git", "-C", d, "fetch", "-q", *depth, "origin", src.ref],
                ["git", "-C", d, "checkout", "-q", "--detach", "FETCH_HEAD"]]
    else:
        cmds = [["git", "clone", "-q", "--branch", src.ref, *depth,
                 *(["--shallow-submodules"] if src.shallow and src.submodules else []),
                 src.url, d]]
    if src.submodules:
        cmds.append(["git", "-C", d, "submodule", "update", "--init", "--recursive",
                     *depth])
    return cmds


def describe(src: Source, workdir: Path, recipe_dir: Path, cache: SourceCache) -> list[str]:
    """What fetching ``src`` would do, one line per step (for ``--dry-run``)."""
    dest = workdir / src.dest
    if isinstance(src, GitSource):
        return [" ".join(c) for c in git_commands(src, dest)]
    if isinstance(src, UrlSource):
        urls = ", ".join([src.url, *src.mirrors])
        if not src.sha256:
            return [f"download {urls}: no digest in prebake.sources.lock (the build would "
                    "refuse; run `prebake pin`)"]
        place = (f"unpack -> {dest} (strip {src.strip_components})" if src.unpack
                 else f"copy the archive -> {dest}")
        return [f"download {urls} (sha256 {src.sha256}) -> {cache.path_for(src.sha256)}", place]
    return [f"copy {(recipe_dir / src.path).resolve()} -> {dest}"]


ARCHIVE_SUFFIXES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst", ".tgz", ".txz", ".tbz2",
                    ".zip", ".tar", ".deb")


def archive_suffix(url: str) -> str:
    """The archive kind a URL names (``.tar.xz``…): CMake's FetchContent unpacks by suffix."""
    path = url.split("?", 1)[0].lower()
    for suffix in ARCHIVE_SUFFIXES:
        if path.endswith(suffix):
            return suffix
    raise PrebakeError(f"{url}: not an archive name CMake can unpack (one of "
                       f"{', '.join(ARCHIVE_SUFFIXES)})")


def apply_patch(patch: Path, tree: Path, run: Runner) -> None:
    """``patch -p1`` in ``tree``; ``--forward`` so an already-applied patch fails, not flips."""
    if not patch.is_file():
        raise PrebakeError(f"{patch}: patch file does not exist")
    run(["patch", "-p1", "--forward", "--batch", "--silent", "-d", str(tree), "-i",
         str(patch)], tree)


def _run(cmd: Sequence[str], cwd: Path) -> None:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise PrebakeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n  " + "\n  ".join(tail))


def materialize(src: Source, workdir: Path, recipe_dir: Path, cache: SourceCache,
                run: Runner = _run) -> Path:
    """Fetch ``src`` into ``workdir/src.dest`` (replacing what was there); returns that path."""
    dest = _safe_dest(workdir, src.dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(src, GitSource):
        for cmd in git_commands(src, dest):
            run(cmd, workdir)
        if FULL_COMMIT.fullmatch(src.ref):
            head = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            if head != src.ref:
                raise PrebakeError(f"{src.url}: checked out {head}, expected {src.ref}")
        return dest
    if isinstance(src, UrlSource):
        archive = cache.fetch([src.url, *src.mirrors], src.sha256)
        if not src.unpack:  # the build unpacks it itself (FetchContent): the verified bytes,
            placed = dest.with_name(dest.name + archive_suffix(src.url))  # named by kind
            shutil.copyfile(archive, placed)
            return placed
        tree = extract(archive, dest, strip_components=src.strip_components)
        for rel in src.patches:
            apply_patch(recipe_dir / rel, tree, run)
        return tree
    if isinstance(src, LocalSource):
        origin = (recipe_dir / src.path).resolve()
        if not origin.is_dir():
            raise PrebakeError(f"{origin}: local source folder does not exist")
        shutil.copytree(origin, dest, symlinks=True)
        return dest
    raise PrebakeError(f"unknown source type {type(src).__name__}")
