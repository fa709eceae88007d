"""Fetch one source (git / URL archive / local folder) into ``<workdir>/<dest>``."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path, PurePosixPath

from prebake.errors import PrebakeError
from prebake.model.recipe import GitSource, LocalSource, Source, UrlSource
from prebake.redact import redact_text
from prebake.registry_refs import filename
from prebake.sources import reuse
from prebake.sources.cache import SourceCache
from prebake.sources.treeproof import Origin
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

    The ref (a tag, a branch or a full commit) is fetched by name into ``FETCH_HEAD``; a full
    commit is fetched by id (GitHub and any server with ``uploadpack.allowReachableSHA1InWant``
    serve one). The fourth command checks out the commit the lock names (``src.commit``),
    which ``materialize`` compares with ``FETCH_HEAD`` first, else ``FETCH_HEAD`` itself.
    """
    depth = ["--depth", "1"] if src.shallow else []
    d = str(dest)
    cmds = [["git", "init", "-q", d],
            ["git", "-C", d, "remote", "add", "origin", src.url],
            ["git", "-C", d, "fetch", "-q", *depth, "origin", src.ref],
            ["git", "-C", d, "checkout", "-q", "--detach", src.commit or "FETCH_HEAD"]]
    if src.submodules:
        cmds.append(["git", "-C", d, "submodule", "update", "--init", "--recursive",
                     *depth])
    return cmds


def fetched_commit(dest: Path) -> str:
    """The commit ``FETCH_HEAD`` names (an annotated tag peeled), or ``""``."""
    proc = subprocess.run(["git", "-C", str(dest), "rev-parse", "--verify", "-q",
                           "FETCH_HEAD^{commit}"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


_FETCHED_TAG = re.compile(r"([0-9a-f]{40})\t[^\t]*\ttag '([^'\n]+)' of ")


def _keep_tag(dest: Path) -> None:
    """The tag just fetched as a tag of the checkout too, as a clone would have it (a build
    that runs ``git describe`` finds its release); a branch or a commit makes none."""
    head = dest / ".git" / "FETCH_HEAD"
    m = _FETCHED_TAG.match(head.read_text("utf-8", "replace")) if head.is_file() else None
    if m is not None:
        subprocess.run(["git", "-C", str(dest), "update-ref", f"refs/tags/{m[2]}", m[1]],
                       capture_output=True, check=False)


def moved_ref_message(src: GitSource, now: str) -> str:
    """A locked ref that names another commit today: both commits, and the way out."""
    return redact_text(f"{src.url}: {src.ref} now names commit {now or '(none)'}, but "
                       f"prebake.sources.lock locked it at {src.commit}: the ref moved "
                       "upstream; nothing is built from it (if the move is intended, run "
                       "`prebake pin` for its pin to lock the new commit)")


def scrub_git_config(dest: Path) -> None:
    """Credentials in a remote's URL (``https://x-access-token:TOKEN@host/…``) out of the
    checkout's git configs (its own and its submodules'): git keeps the URL it was given, and
    the work tree is read by the build and kept after it."""
    git = dest / ".git"
    configs = [git / "config", *git.glob("modules/**/config")] if git.is_dir() else []
    for cfg in configs:
        if not cfg.is_file():
            continue
        text = cfg.read_text("utf-8", "replace")
        clean = redact_text(text)
        if clean != text:
            cfg.write_text(clean, "utf-8")


def describe(src: Source, workdir: Path, recipe_dir: Path, cache: SourceCache) -> list[str]:
    """What fetching ``src`` would do, one line per step (for ``--dry-run``)."""
    dest = workdir / src.dest
    if isinstance(src, GitSource):
        lines = [" ".join(c) for c in git_commands(src, dest)]
        if src.commit:
            lines.insert(3, f"check that FETCH_HEAD is {src.commit} (prebake.sources.lock)")
        return lines
    if isinstance(src, UrlSource):
        urls = "; ".join(cache.resolver.describe(u) for u in [src.url, *src.mirrors])
        if not src.sha256:
            return [f"download {urls}: no digest in prebake.sources.lock (the build would "
                    "refuse; run `prebake pin`)"]
        only = f", only {', '.join(src.members)}" if src.members else ""
        only += f", not {', '.join(src.skip)}" if src.skip else ""
        place = (f"unpack -> {dest} (strip {src.strip_components}{only})" if src.unpack
                 else f"copy the archive -> {dest}")
        return [f"download {urls} (sha256 {src.sha256}) -> {cache.path_for(src.sha256)}", place]
    return [f"copy {(recipe_dir / src.path).resolve()} -> {dest}"]


ARCHIVE_SUFFIXES = (".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst", ".tgz", ".txz", ".tbz2",
                    ".zip", ".tar", ".deb")


def archive_suffix(url: str) -> str:
    """The archive kind a URL or registry reference names (``.tar.xz``…): CMake's
    FetchContent unpacks by suffix."""
    path = filename(url).lower()
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
        raise PrebakeError(redact_text(f"{' '.join(cmd)} failed ({proc.returncode}):\n  "
                                       + "\n  ".join(tail)))


def _quiet(_msg: str) -> None:
    pass


def tree_key(src: UrlSource, recipe_dir: Path) -> str:
    """What an unpacked ``src`` is made from (``prebake.sources.reuse.key``)."""
    patches = [(recipe_dir / rel).read_bytes() if (recipe_dir / rel).is_file() else b""
               for rel in src.patches]
    return reuse.key(src.sha256, src.strip_components, src.members, src.skip, patches)


def materialize(src: Source, workdir: Path, recipe_dir: Path, cache: SourceCache,
                run: Runner = _run, *, earlier: Path | None = None,
                log: Callable[[str], None] = _quiet) -> Path:
    """Fetch ``src`` into ``workdir/src.dest`` (replacing what was there); returns that path.

    ``earlier``: the earlier build's work folder, whose unpacked tree of the same archive is
    moved here instead when it is proven against the archive to be what unpacking again would
    write (``prebake.sources.reuse``); ``log`` hears why it was or was not."""
    dest = _safe_dest(workdir, src.dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(src, GitSource):
        cmds = git_commands(src, dest)
        try:
            for cmd in cmds[:3]:
                run(cmd, workdir)
            if src.commit and fetched_commit(dest) != src.commit:
                raise PrebakeError(moved_ref_message(src, fetched_commit(dest)))
            _keep_tag(dest)
            for cmd in cmds[3:]:
                run(cmd, workdir)
        finally:
            scrub_git_config(dest)
        want = src.commit or (src.ref if FULL_COMMIT.fullmatch(src.ref) else "")
        if want:
            head = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            if head != want:
                raise PrebakeError(f"{redact_text(src.url)}: checked out {head}, expected {want}")
        return dest
    if isinstance(src, UrlSource):
        rel = dest.relative_to(workdir.resolve()).as_posix()
        # a tree that is the work folder itself has no earlier place of its own to be kept from
        key = tree_key(src, recipe_dir) if src.unpack and rel != "." else ""
        rewritten: tuple[str, ...] = ()
        archive = cache.fetch([src.url, *src.mirrors], src.sha256, log, size=src.size)
        if not src.unpack:  # the build unpacks it itself (FetchContent): the verified bytes,
            placed = dest.with_name(dest.name + archive_suffix(src.url))  # named by kind
            shutil.copyfile(archive, placed)
            return placed
        if key and earlier is not None:
            patches = tuple(recipe_dir / p for p in src.patches)

            def apply_all(folder: Path) -> None:
                for patch in patches:
                    apply_patch(patch, folder, run)

            made_from = Origin(archive, src.strip_components, tuple(src.members),
                               tuple(src.skip), patches, apply_all)
            verdict = reuse.keep(earlier, workdir, rel, key, made_from, log)
            if verdict.kept:
                return dest
            rewritten = verdict.rewritten
        tree = extract(archive, dest, strip_components=src.strip_components,
                       members=src.members, skip=src.skip)
        for patch in src.patches:
            apply_patch(recipe_dir / patch, tree, run)
        if key:
            reuse.record(workdir, rel, key, rewritten)
        return tree
    if isinstance(src, LocalSource):
        origin = (recipe_dir / src.path).resolve()
        if not origin.is_dir():
            raise PrebakeError(f"{origin}: local source folder does not exist")
        shutil.copytree(origin, dest, symlinks=True)
        return dest
    raise PrebakeError(f"unknown source type {type(src).__name__}")


#: trees proven side by side: the two cores of the machines this is measured on (an archive's
#: decompression and the comparison of its files each take most of one)
PROOFS_AT_ONCE = 2


def _nests(a: str, b: str) -> bool:
    """Whether one of two dests lies in (or is) the other."""
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def materialize_all(srcs: Sequence[Source], workdir: Path, recipe_dir: Path,
                    cache: SourceCache, run: Runner = _run, *, earlier: Path | None = None,
                    log: Callable[[str], None] = _quiet) -> list[Path]:
    """:func:`materialize` of each of ``srcs``; where an earlier tree may be kept, the proofs
    of archives whose trees nest in no other source's run side by side first
    (``PROOFS_AT_ONCE``: onnxruntime's source and its dependencies' took 3.5 s one after the
    other), then the rest in order."""
    dests = [s.dest for s in srcs]
    side = [i for i, s in enumerate(srcs)
            if earlier is not None and isinstance(s, UrlSource) and s.unpack
            and PurePosixPath(s.dest).parts not in ((), (".",))
            and sum(_nests(s.dest, d) for d in dests) == 1]
    out: dict[int, Path] = {}
    if len(side) > 1:
        with ThreadPoolExecutor(PROOFS_AT_ONCE, thread_name_prefix="tree-proof") as pool:
            jobs = {i: pool.submit(materialize, srcs[i], workdir, recipe_dir, cache, run,
                                   earlier=earlier, log=log) for i in side}
            out = {i: job.result() for i, job in jobs.items()}
    for i, src in enumerate(srcs):
        if i not in out:
            out[i] = materialize(src, workdir, recipe_dir, cache, run, earlier=earlier, log=log)
    return [out[i] for i in range(len(srcs))]
