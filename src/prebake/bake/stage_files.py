"""The files a stage unit added, kept for the later stages that build on them: saved after the
stage passed everything, restored from its asset in the store when not built here."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from prebake.bake.layout import stage_marker
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.package.naming import SHA256_SUFFIX, parse_sha256_line
from prebake.plan.units import Unit
from prebake.sources.unpack import extract
from prebake.store.base import read_manifest


def restore_stage(run: UnitRun, stage: str, up: Unit | None, files: Path) -> None:
    """An upstream stage not built here (or built from other inputs): take its files from
    its asset in the store, which must have been built from the current inputs."""
    if up is None:
        raise UnitFailed(f"stage {stage} has no files here and no asset to restore them from")
    store, aid = run.store, up.asset
    manifest = read_manifest(store, aid)
    if manifest is not None and manifest.input_hash != up.input_hash:
        raise UnitFailed(f"{run.unit.id} builds on stage {stage}, whose asset "
                         f"{aid.filename} in {store.url} was built from other inputs "
                         f"(build --stage {stage} first)")
    run.say(f"restoring stage {stage} from {aid.filename} in the store")
    tmp = files.with_name(files.name + ".download")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        store.download(aid, tmp)
    except PrebakeError as exc:
        raise UnitFailed(
            f"{run.unit.id} builds on stage {stage}, which was not built here and whose "
            f"asset {aid.filename} is not in {store.url} (build --stage {stage} "
            f"first): {exc}") from None
    want = store.read_sidecar(aid, SHA256_SUFFIX)
    got = file_sha256(tmp)
    if want is None or parse_sha256_line(want.decode(), aid.filename) != got:
        tmp.unlink(missing_ok=True)
        raise UnitFailed(f"{aid.filename} from {store.url} does not match its "
                         f".sha256 sidecar; not building on it")
    new = files.with_name(files.name + ".new")
    try:
        shutil.rmtree(new, ignore_errors=True)
        extract(tmp, new)
        shutil.rmtree(files, ignore_errors=True)
        new.rename(files)
        stage_marker(files).write_text(up.input_hash + "\n")
    finally:
        tmp.unlink(missing_ok=True)


def save_stage_files(run: UnitRun, added: Sequence[str]) -> None:
    """Keep the files a stage unit added, for later stages to build upon (only a stage that
    passed everything is built upon)."""
    unit, prefix = run.unit, run.dirs.prefix
    dest = run.layout.stage_files(unit.platform.name, unit.stage.name)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel in added:
        src = prefix / rel
        if not src.is_symlink() and not src.exists():
            continue  # packaging dropped it (a libtool .la)
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            (tmp / rel).symlink_to(str(src.readlink()))
        else:
            shutil.copy2(src, tmp / rel)
    tmp.mkdir(parents=True, exist_ok=True)
    stage_marker(dest).unlink(missing_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    stage_marker(dest).write_text(unit.input_hash + "\n")

