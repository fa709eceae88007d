"""Shared by ``publish`` and ``fetch``: which workspace, which store, which progress display."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from prebake.errors import PrebakeError
from prebake.store.base import ProgressFn

if TYPE_CHECKING:
    from prebake.model.workspace import Workspace


def workspace_root(args: argparse.Namespace) -> Path | None:
    """``-C DIR`` (must hold prebake.toml) or the nearest parent with one; ``None`` if none."""
    from prebake.commands._common import find_workspace

    if args.workspace is not None:
        return find_workspace(args.workspace)
    try:
        return find_workspace(None)
    except PrebakeError:
        return None


def store_url(explicit: str | None, root: Path | None, ws: Workspace | None = None) -> str:
    """``--store`` (a URL, or the name of one of the workspace's ``[stores.NAME]``), else
    ``$PREBAKE_STORE``, else the workspace's default store (``ws`` when the caller has loaded
    it already)."""
    if explicit:
        if "://" not in explicit and "," not in explicit and root is not None:
            if ws is None:
                from prebake.intake import load_workspace

                ws = load_workspace(root)
            if explicit in ws.stores:
                return ws.stores[explicit].url
        return explicit
    if os.environ.get("PREBAKE_STORE"):
        return os.environ["PREBAKE_STORE"]
    if root is None:
        raise PrebakeError("no store: pass --store URL, set PREBAKE_STORE, or run inside a "
                           "workspace (prebake.toml)")
    if ws is not None:
        return ws.default_store
    from prebake.intake import load_workspace

    return load_workspace(root).default_store


@contextmanager
def byte_progress(enabled: bool, label: str) -> Iterator[ProgressFn | None]:
    """A rich progress bar on stderr (stdout stays clean for --json and scripts); none when
    stderr is not a terminal (a log or a pipe would keep a blank line before any error)."""
    from prebake.commands._common import err_console

    if not enabled or not err_console().is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TransferSpeedColumn,
    )

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), console=err_console(), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield update
