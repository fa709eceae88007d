"""Rebuild a published asset in a fresh folder and say whether the bytes are the same.

How a consumer or a second CI checks a release (reproducible-builds practice; what SLSA's
verifiers do): the asset's manifest says which unit made it and from which inputs (its input
hash); the workspace at hand, with its ``prebake.sources.lock``, must plan that unit with the
same input hash — else it does not hold what the asset was built from, and the inputs that
differ are named. The workspace is then copied into a fresh folder (by default
``.prebake/rebuild/`` under it, so the rebuild also runs at another path), built there from
nothing into a store of its own, and the two assets compared: the same sha256, or the first
file (and archive member) that differs and every one that does (``prebake.rebuild.compare``).

The check shares nothing with the build it checks that could have made both alike: the given
asset and its manifest are read and hashed first, before any folder is touched (an asset or
manifest inside the rebuild's own folder, which is emptied and rebuilt into, is refused, and
so is an ``--into`` inside the workspace, which the copy would copy into itself); the rebuild
gets no compiler launcher, none of the caller's cache variables and empty toolchain caches of
its own (``prebake.rebuild.isolation``), no block cache and no kept source tree (a fresh
folder has none), and the report says what it was given.

Nothing is written outside the workspace's ``.prebake``, the ``--into`` folder and the
caches; the given asset and the workspace's stores are only read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.bake import Options, UnitResult, build, plan_units
from prebake.bake.layout import Layout
from prebake.bounded import read_bounded
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.intake import load_workspace, resolve_store_url
from prebake.manifest import MAX_MANIFEST_BYTES, Manifest, parse_manifest
from prebake.model.workspace import Workspace
from prebake.package.naming import MANIFEST_SUFFIX, asset_id, parse_asset_name
from prebake.plan.planner import refuse_unlocked
from prebake.plan.status import changed_inputs
from prebake.plan.units import Unit
from prebake.rebuild.compare import Difference, differing, first_difference, stream_size
from prebake.rebuild.isolation import Isolation, isolated
from prebake.sources.lock import read_source_lock

#: the manifest inside every asset
MANIFEST_MEMBER = "share/prebake/manifest.json"
#: where the rebuild runs unless ``--into`` says otherwise (inside the workspace's state)
DEFAULT_FOLDER = Path(".prebake") / "rebuild"
#: what is not copied into the rebuild's workspace: build state, version control, and the
#: workspace's own local stores (the rebuild publishes into a store of its own)
NOT_COPIED = (".prebake", ".git")

Builder = Callable[[Workspace, Sequence[Unit], Options], list[UnitResult]]


@dataclass(frozen=True)
class RebuildReport:
    """What ``verify-rebuild`` found; ``same`` is the verdict, ``first`` and ``differing`` say
    where the bytes part (``differing`` is ``None`` when the given asset cannot be read)."""

    asset: Path
    sha256: str
    size: int
    unit: str
    input_hash: str
    manifest: str  # where the manifest was read
    manifest_sha256: str  # of its bytes, read before anything else
    isolation: Isolation
    folder: Path
    rebuilt: Path | None
    rebuilt_sha256: str | None
    rebuilt_size: int | None
    seconds: float
    log: str | None
    message: str = ""  # why there is no rebuilt asset (the build failed)
    first: Difference | None = None
    differing: tuple[str, ...] | None = None

    @property
    def same(self) -> bool:
        return self.rebuilt_sha256 == self.sha256

    def to_json(self) -> dict[str, Any]:
        return {
            "asset": str(self.asset), "sha256": self.sha256, "size": self.size,
            "unit": self.unit, "input_hash": self.input_hash, "manifest": self.manifest,
            "manifest_sha256": self.manifest_sha256, "isolation": self.isolation.to_json(),
            "folder": str(self.folder), "log": self.log, "seconds": round(self.seconds, 3),
            "rebuilt": None if self.rebuilt is None else {
                "path": str(self.rebuilt), "sha256": self.rebuilt_sha256,
                "size": self.rebuilt_size},
            "same": self.same, "message": self.message,
            "first_difference": None if self.first is None else self.first.to_json(),
            "differing": None if self.differing is None else list(self.differing),
        }


def read_asset_manifest(asset: Path, manifest: Path | None = None
                        ) -> tuple[Manifest, str, str]:
    """The asset's manifest, where it was read and the sha256 of its bytes: ``manifest`` if
    given, else the ``.json`` sidecar beside the asset (what a store publishes with it), else
    the one inside it. One line naming the file when it cannot be read or is not a
    manifest."""
    if manifest is None:
        sidecar = asset.with_name(asset.name + MANIFEST_SUFFIX)
        manifest = sidecar if sidecar.is_file() else None
    if manifest is not None:
        raw = read_bounded(manifest, MAX_MANIFEST_BYTES, "manifest")
        return (parse_manifest(raw, str(manifest)), str(manifest),
                hashlib.sha256(raw).hexdigest())
    where = f"{asset}: {MANIFEST_MEMBER}"
    try:
        with tarfile.open(asset, "r:xz") as tf:
            info = tf.getmember(MANIFEST_MEMBER)
            fh = tf.extractfile(info) if info.isfile() else None
            if fh is None:
                raise PrebakeError(f"{where}: not a file")
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
    except KeyError:
        raise PrebakeError(f"{asset}: no {MANIFEST_MEMBER} in it (and no {asset.name}"
                           f"{MANIFEST_SUFFIX} beside it): not an asset prebake made") from None
    except (tarfile.TarError, EOFError, OSError) as exc:  # lzma.LZMAError is an OSError
        raise PrebakeError(f"{asset}: cannot read its manifest ({exc}); give the manifest "
                           f"with --manifest (the {MANIFEST_SUFFIX} sidecar)") from None
    return parse_manifest(raw, where), where, hashlib.sha256(raw).hexdigest()


def _inside(path: Path, folder: Path) -> bool:
    resolved = path.resolve()
    return resolved == folder or folder in resolved.parents


def _refuse_shared(asset: Path, manifest: Path | None, folder: Path, root: Path,
                   into: Path | None) -> None:
    """One line for a rebuild that would read or write what it checks: the given asset or
    manifest inside the rebuild's own folder (emptied first, then rebuilt into), or an
    ``--into`` inside the workspace (which it copies)."""
    if into is not None and _inside(into, root):
        raise PrebakeError(f"--into {into}: inside the workspace {root}, which the rebuild "
                           "copies into it; name a folder outside the workspace")
    for what, path in (("the asset", asset), ("the manifest", manifest)):
        if path is not None and _inside(path, folder):
            raise PrebakeError(f"{path}: {what} to check lies inside the rebuild's own folder "
                               f"{folder}, which is emptied and rebuilt into; give a copy from "
                               "outside it")


def _copy_workspace(ws: Workspace, dest: Path) -> Path:
    """The workspace's files in ``dest`` (not its build state, history or local stores)."""
    skip = {ws.root / n for n in NOT_COPIED}
    for store in ws.stores.values():
        url = resolve_store_url(store.url, ws.root)
        if url.startswith("file://"):
            skip.add(Path(url[len("file://"):]))

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if Path(folder, n) in skip}

    shutil.copytree(ws.root, dest, symlinks=True, ignore=ignore)
    return dest


def _fresh(folder: Path, default: bool) -> None:
    """The rebuild's folder, empty: the default one is prebake's own and is emptied; a folder
    the user named must not hold anything (nothing of theirs is deleted)."""
    if folder.exists():
        if not default:
            if not folder.is_dir() or any(folder.iterdir()):
                raise PrebakeError(f"{folder}: --into must name an empty or new folder")
        else:
            shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


def _unit_for(ws: Workspace, manifest: Manifest, asset: Path) -> Unit:
    aid = asset_id(*manifest.named)
    for u in plan_units(ws, None, [manifest.platform]) if manifest.platform in ws.platforms \
            else ():
        if u.asset == aid:
            return u
    raise PrebakeError(f"{asset}: the workspace {ws.root} has no unit that makes {aid} "
                       "(its manifest's name, version and platform)")


def _upstream(units: Sequence[Unit], target: Unit) -> list[Unit]:
    """``target`` and the units it builds on, in plan order."""
    by_id = {u.id: u for u in units}
    want: set[str] = set()
    todo = [target.id]
    while todo:
        uid = todo.pop()
        if uid in want or uid not in by_id:
            continue
        want.add(uid)
        todo.extend(by_id[uid].deps)
    return [u for u in units if u.id in want]


def _short(value: str | None) -> str:
    """An input's value with its digests cut to 12 hex digits (the line stays readable)."""
    return "absent" if value is None else re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1…",
                                                  value)


def _inputs_differ(unit: Unit, manifest: Manifest, asset: Path) -> PrebakeError:
    changes = changed_inputs(unit, manifest) or []
    named = "; ".join(f"{n} (asset: {_short(was)}, here: {_short(now)})"
                      for n, was, now in changes[:8])
    more = f"; +{len(changes) - 8} more" if len(changes) > 8 else ""
    why = f": {named}{more}" if named else " (the manifest does not list its inputs)"
    return PrebakeError(f"{asset}: the workspace does not hold what it was built from (input "
                        f"hash {manifest.input_hash[:16]}…, here {unit.input_hash[:16]}…)"
                        f"{why}")


def verify_rebuild(asset: Path, workspace: Path, *, into: Path | None = None,
                   manifest: Path | None = None, caller_env: Mapping[str, str],
                   builder: Builder | None = None) -> RebuildReport:
    """Rebuild ``asset`` from ``workspace`` in a fresh folder and compare (see the module).

    Raises ``PrebakeError`` (exit 2) for what makes the check impossible: the asset, its
    manifest or the workspace's source lock unreadable, an asset, manifest or ``--into``
    where the rebuild would touch what it checks, or a workspace that does not plan the
    asset's unit with the same input hash. A build that fails is a report without a rebuilt
    asset."""
    asset = Path(asset)
    if not asset.is_file():
        raise PrebakeError(f"{asset}: no such asset")
    digest, size = file_sha256(asset), asset.stat().st_size  # before anything else
    man, where, man_digest = read_asset_manifest(asset, manifest)
    if parse_asset_name(asset.name) not in (None, asset_id(*man.named)):
        raise PrebakeError(f"{asset}: its manifest ({where}) is of {asset_id(*man.named)}")
    root = Path(workspace).resolve()
    folder = (Path(into) if into is not None else root / DEFAULT_FOLDER).resolve()
    _refuse_shared(asset, manifest, folder, root, into)
    ws = load_workspace(workspace)
    lock = read_source_lock(ws.root)
    target = _unit_for(ws, man, asset)
    if target.input_hash != man.input_hash:
        raise _inputs_differ(target, man, asset)
    refuse_unlocked(ws, (target,), lock)

    _fresh(folder, into is None)
    env, isolation = isolated(caller_env, folder, target.platform, ws.pins)
    copy = load_workspace(_copy_workspace(ws, folder / "workspace"))
    store = folder / "store"
    store.mkdir()
    copy = dataclasses.replace(copy, default_store=f"file://{store}")
    units = plan_units(copy, None, [man.platform])
    mine = next(u for u in units if u.id == target.id)
    if mine.input_hash != man.input_hash:  # the copy lacks something the original reads
        raise _inputs_differ(mine, man, asset)
    t0 = time.monotonic()
    results = (builder or build)(copy, _upstream(units, mine),
                                 Options(force=True, caller_env=env))
    result = next(r for r in results if r.unit == mine.id)
    seconds = time.monotonic() - t0
    if file_sha256(asset) != digest:
        raise PrebakeError(f"{asset}: changed while it was rebuilt (sha256 {digest[:16]}… "
                           "when the check began); nothing compared")
    base = RebuildReport(asset=asset, sha256=digest, size=size, unit=mine.id,
                         input_hash=man.input_hash, manifest=where, manifest_sha256=man_digest,
                         isolation=isolation, folder=folder, rebuilt=None,
                         rebuilt_sha256=None, rebuilt_size=None, seconds=seconds,
                         log=result.log)
    if result.state != "built":
        failed = next((r for r in results if r.state.bad), result)
        return dataclasses.replace(base, message=f"{failed.unit} {failed.state}: "
                                                 f"{failed.message or failed.reason}")
    rebuilt = Layout(copy.root).dist(man.platform) / mine.asset.filename
    report = dataclasses.replace(base, rebuilt=rebuilt, rebuilt_sha256=file_sha256(rebuilt),
                                 rebuilt_size=rebuilt.stat().st_size)
    if report.same:
        return report
    tar_size = stream_size(rebuilt)
    found = differing(asset, rebuilt, tar_size)
    return dataclasses.replace(report, first=first_difference(asset, rebuilt, tar_size),
                               differing=None if found is None else tuple(found))
