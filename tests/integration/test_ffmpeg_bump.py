"""FFmpeg 7.1.5 -> 8.1.2 as an SDK sees it: both releases built in the suite's small
configuration (``test_ffmpeg``'s workspace, Debian's gcc, linux-x86_64; cached under
$PREBAKE_TEST_CACHE), then ``prebake diff`` of the two assets set beside ``abidiff``
(libabigail, Debian's ``abigail-tools``) on the same ``.so`` files.

How the two are compared: a symbol is its name and its version node for both. abidiff lists
as removed every old symbol whose name is gone *or* whose node moved (a major bump moves them
all: ``av_add_q@@LIBAVUTIL_59``), and as added only the names that are new; prebake says the
same in three parts (export removed, symbol-version moved, export added), so abidiff's removed
set is prebake's removed plus moved, each with its old node, and its added set is prebake's
added. The assets are stripped (FFmpeg strips at install), so abidiff reads the ELF symbol
tables, as prebake does; on the default configuration's build trees *with* DWARF it gives the
same sets (docs/flagship.md). abidiff has no idea of a public API without ``--headers-dir``:
the sets compared are every export; prebake's public/internal split is on top.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from prebake.extract import safe_extract
from tests import support
from tests.integration.abidiff import abidiff, prebake_view
from tests.integration.test_diff import SCHEMA
from tests.integration.test_ffmpeg import ARCHIVES, files

pytestmark = pytest.mark.skipif(shutil.which("nasm") is None or shutil.which("abidiff") is None,
                                reason="needs nasm and abigail-tools (scripts/bootstrap)")


@pytest.fixture(scope="module")
def assets() -> dict[str, Path]:
    """Each release's linux-x86_64 asset from the small workspace, built (cached): 7.1.5 is
    test_ffmpeg's own build, 8.1.2 the same files after ``prebake pin ffmpeg 8.1.2`` (the pin
    and the lock; the recipe, its patch and the version proof unchanged)."""
    out = {}
    for version in ARCHIVES:
        ws, rc, data = support.cached_prebake_build(
            "ffmpeg-small-linux-x86_64", files("linux-x86_64", version), ["build", "-j", "2"],
            timeout=3600)
        assert rc == 0, json.dumps(data, indent=1)[-3000:]
        (out[version],) = (ws / "releases").rglob(f"ffmpeg-{version}-linux-x86_64.tar.xz")
    return out


# each library's soname in each release: its LIB<NAME>_VERSION_MAJOR (FFmpeg's headers; the
# version proof checks the asset's against them)
SONAMES = {"avformat": (61, 62), "avcodec": (61, 62), "swresample": (5, 6), "swscale": (8, 9),
           "avutil": (59, 60)}


def _real(lib_dir: Path, key: str) -> Path:
    """The file ``lib<name>.so`` stands for (the asset keeps FFmpeg's symlinks)."""
    return (lib_dir / key).resolve(strict=True)


def test_prebake_diff_names_what_abidiff_names(assets: dict[str, Path], tmp_path: Path
                                                ) -> None:
    """Per library: the soname change, and the symbols removed and added — functions and
    variables apart, each with its version node — are the same sets in ``prebake diff`` of the
    two assets and in ``abidiff`` of their ``.so`` files (``tests/integration/abidiff.py``
    says how the two count a symbol that only moved to the new node)."""
    old, new = assets["7.1.5"], assets["8.1.2"]
    proc = support.prebake("diff", old, new, "--json")
    assert proc.returncode == 1, proc.stderr  # breaking: every soname changed
    payload = json.loads(proc.stdout)
    jsonschema.validate(payload, SCHEMA)
    trees = {}
    for version, asset in assets.items():
        safe_extract(asset, tmp_path / version)
        trees[version] = tmp_path / version / "lib"
    for lib, (a, b) in SONAMES.items():
        key = f"lib{lib}.so"
        soname = next(c for c in payload["changes"]
                      if c["library"] == key and c["subject"] == "soname")
        assert (soname["old"], soname["new"], soname["breaking"]) == (
            f"{key}.{a}", f"{key}.{b}", True)
        theirs = abidiff(_real(trees["7.1.5"], key), _real(trees["8.1.2"], key))
        assert theirs.rc & 8, theirs.text  # abidiff too: an incompatible change
        assert theirs.soname == (soname["old"], soname["new"])
        mine = prebake_view(payload, key)
        assert {k: v for k, v in theirs.symbols.items() if v} == mine, (key, theirs.text)
        # every export both releases have moved to the new major's node
        nodes = {(c["old"], c["new"]) for c in payload["changes"]
                 if c["library"] == key and c["category"] == "symbol-version"}
        assert nodes == {(f"LIB{lib.upper()}_{a}", f"LIB{lib.upper()}_{b}")}
    # FFmpeg 8 removed avcodec_close (deprecated since 6.1): public API, so breaking
    close = next(c for c in payload["changes"] if c["subject"] == "avcodec_close")
    assert (close["category"], close["kind"], close["breaking"], close["old"]) == (
        "export", "function", True, "LIBAVCODEC_61")
    # the markdown a CI summary shows: each soname, the public functions gone, one row per
    # library for the exports that moved node
    md = support.prebake("diff", old, new).stdout
    assert ("soname: <code>libavcodec.so.61</code> → <code>libavcodec.so.62</code> | "
            "<code>libavcodec.so</code>") in md
    assert "| function removed <code>avcodec_close</code> | <code>libavcodec.so</code> |" in md
    assert "export(s) moved to another version node: <code>LIBAVUTIL_59</code> → " \
           "<code>LIBAVUTIL_60</code>" in md
