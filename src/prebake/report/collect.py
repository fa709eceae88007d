"""``prebake report``: one static HTML page for a store — the release matrix (dependency ×
platform), the diff of each release to the previous one, and sizes across versions.

The page is built here, not in a browser: Jinja2 with autoescaping renders it (every value from
a manifest or a binary is escaped — symbol names are attacker-controlled text), pygal draws the
charts as inline SVG, and there is no JavaScript at all, so it opens from disk and reads the
same with scripts off.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

from prebake.diff import (
    assets_in_store,
    diff_sides,
    download_verified,
    load_side,
    side_from_manifest,
    version_key,
)
from prebake.diff.side import Side
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_text
from prebake.package.naming import AssetId
from prebake.redact import redact_text
from prebake.report.data import Release, ReportData
from prebake.report.html import render
from prebake.store.base import Store, read_manifest


def collect(store: Store, *, download: bool = True,
            progress: Callable[[str], None] | None = None) -> ReportData:
    """Every asset's manifest, and the diff of each release to the previous version of the same
    dependency on the same platform (exports too when ``download``; else manifests only)."""
    data = ReportData(redact_text(store.url), [])  # the page is published: no credentials
    for aid, tag in sorted(assets_in_store(store), key=lambda at: at[0]):
        m = read_manifest(store, aid, tag)
        if m is None:
            data.warnings.append(f"{aid.filename}: manifest sidecar missing or not a valid "
                                 "manifest; skipped")
            continue
        data.releases.append(Release(aid, tag, m))
    by_line: dict[tuple[str, str], list[Release]] = {}
    for r in data.releases:
        by_line.setdefault((r.aid.name, r.aid.platform), []).append(r)
    with tempfile.TemporaryDirectory(prefix="prebake-report-") as tmp:
        sides: dict[AssetId, Side] = {}
        for line in by_line.values():
            line.sort(key=lambda r: version_key(r.aid.version))
            for a, b in itertools.pairwise(line):
                if progress:
                    progress(f"diff {a.aid.filename} → {b.aid.version}")
                old = _side(store, a, sides, Path(tmp), download, data.warnings)
                new = _side(store, b, sides, Path(tmp), download, data.warnings)
                data.diffs[(a.aid, b.aid)] = diff_sides(old, new)
    return data


def _side(store: Store, r: Release, cache: dict[AssetId, Side], tmp: Path, download: bool,
          warnings: list[str]) -> Side:
    if r.aid in cache:
        return cache[r.aid]
    side = None
    if download:
        try:
            path = download_verified(store, r.aid, r.release, tmp)
            side = load_side(path, r.aid.filename)
            path.unlink(missing_ok=True)
        except PrebakeError as exc:
            warnings.append(f"{r.aid.filename}: compared from its manifest only ({exc})")
    if side is None:
        side = side_from_manifest(r.manifest, r.aid.filename)
    cache[r.aid] = side
    return side


def write_report(store: Store, out_dir: Path, *, download: bool = True,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Write ``out_dir/index.html`` (atomically) and return its path."""
    data = collect(store, download=download, progress=progress)
    out = Path(out_dir) / "index.html"
    atomic_write_text(out, render(data))
    return out


