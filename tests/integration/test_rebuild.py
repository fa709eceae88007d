"""A warm rebuild through ``prebake build``, as a release engineer runs it: Debian's zstd
1.5.4 source, part of it compiled by CMake and Ninja, a command that writes into the source
tree (as onnxruntime's emsdk stand-in does) and one that prints terminal colours.

* the second ``build --force`` keeps the unpacked source (the path the command added removed)
  and gives the first build's asset, byte for byte;
* the first build leaves the unit's timing (``.prebake/logs/<unit>.timing.json``) and the
  second one's progress says how long is left, from it;
* on a stderr that is not a terminal the progress is plain lines — ninja's count, the time
  left — with no control character, the colours included.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from prebake.bake.progress import read_timing
from tests import support

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None,
                                reason="needs cmake and ninja")

POOL = "libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz"
SOURCE_CACHE = support.CACHE / "prebake-sources"

RECIPE = '''\
"""zstd's lib/common from Debian's .orig tarball, compiled by CMake and Ninja."""

from prebake.recipes import Build, Outputs, Recipe, Snippet, UrlSource

RECIPE = Recipe(
    name="zcommon",
    pin="zcommon",
    sources=(UrlSource("URL", sha256="SHA256"),),
    files=("CMakeLists.txt",),
    platforms={"linux-x86_64": Build(commands=(
        # a command that writes into its source tree, as onnxruntime's emsdk stand-in does
        "cmake -E make_directory {src}/cmake/external/emsdk",
        "cmake -E touch {src}/cmake/external/emsdk/emsdk",
        "cmake -E echo \\x1b[1;31mcoloured\\x1b[0m\\x07",
        "cmake -S {recipe_dir} -B {build} -G Ninja -DSRC={src} -DCMAKE_BUILD_TYPE=Release"
        " -DCMAKE_INSTALL_PREFIX={prefix}",
        "cmake --build {build} -j {jobs}",
        "cmake --install {build}",
    ), env={"CC": "{cc}"})},
    outputs=Outputs(libs={"*": ("lib/libzcommon.a",)}, headers=("include/zstd.h",),
                    license="LICENSE"),
    kind={"*": "static"},
    link_test=Snippet(code="#include <zstd.h>\\nint main(void) { return ZSTD_versionNumber() "
                           "== ZSTD_VERSION_NUMBER ? 0 : 1; }\\n", lang="c"),
)
'''

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(zcommon C)
file(GLOB COMMON ${SRC}/lib/common/*.c)
add_library(zcommon STATIC ${COMMON})
target_compile_definitions(zcommon PRIVATE ZSTD_MULTITHREAD=0)
install(TARGETS zcommon ARCHIVE DESTINATION lib)
install(FILES ${SRC}/lib/zstd.h DESTINATION include)
"""

WORKSPACE = support.gcc_workspace("zcommon", 'zcommon = "1.5.4"', "deps", '["zcommon"]')
UNIT = "zcommon/linux-x86_64"
ASSET = "zcommon-1.5.4-linux-x86_64.tar.xz"


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """The workspace built, then built again with ``--force``: the asset's sha256 after
    each, and each build's stderr (a pipe: not a terminal)."""
    support.seed_source_cache(SOURCE_CACHE, POOL)
    ws = tmp_path_factory.mktemp("rebuild") / "ws"
    (ws / "recipes" / "zcommon").mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE)
    (ws / "recipes" / "zcommon" / "recipe.py").write_text(
        RECIPE.replace("URL", support.debian_ref(POOL))
        .replace("SHA256", support.DEBIAN_ORIG[POOL]))
    (ws / "recipes" / "zcommon" / "CMakeLists.txt").write_text(CMAKELISTS)
    env = {"PREBAKE_CACHE": str(SOURCE_CACHE), "PREBAKE_PROGRESS_INTERVAL": "0.2"}
    digests, errs = [], []
    for extra in ((), ("--force",)):
        proc = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", *extra, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        digests.append(hashlib.sha256(next((ws / "releases").rglob(ASSET)).read_bytes())
                       .hexdigest())
        errs.append(proc.stderr)
    return ws, digests, errs


def test_the_rebuild_keeps_the_source_and_gives_the_same_bytes(
        twice: tuple[Path, list[str], list[str]]) -> None:
    ws, digests, _ = twice
    assert digests[0] == digests[1]
    log = (ws / ".prebake" / "logs" / "zcommon--linux-x86_64.log").read_text()
    kept = [line for line in log.splitlines() if "kept from the earlier build" in line]
    assert len(kept) == 1 and re.fullmatch(
        r"# src: kept from the earlier build: proven against its archive in [\d.]+ s \(\d+ "
        r"entries, [\d.]+ MB compared\); removed what the build added: cmake", kept[0]), log[-3000:]
    assert "# packaging: 0 of 1 xz blocks from the cache" in log


def test_the_timing_is_kept_and_the_rebuild_says_how_long_is_left(
        twice: tuple[Path, list[str], list[str]]) -> None:
    ws, _, errs = twice
    timing, why = read_timing(ws / ".prebake" / "logs" / "zcommon--linux-x86_64.timing.json")
    assert why == "" and timing is not None
    assert timing.lines >= 8 and timing.seconds > 0 and timing.marks
    assert re.search(rf"^{re.escape(UNIT)}: \[\d+/\d+\] \d+ % (<1|~\d+) min left \(",
                     errs[1], re.M), errs[1]


def test_plain_progress_lines_carry_no_control_characters(
        twice: tuple[Path, list[str], list[str]]) -> None:
    _, _, errs = twice
    for err in errs:
        assert re.search(rf"^{re.escape(UNIT)}: zcommon: \[5/6\] cmake --build ", err, re.M)
        assert re.search(rf"^{re.escape(UNIT)}: \[\d+/\d+\] \d+ %", err, re.M), err
        assert f"{UNIT}: built: " in err
        bad = sorted({hex(ord(c)) for c in err if (ord(c) < 32 and c != "\n")
                      or 0x7f <= ord(c) <= 0x9f})
        assert bad == [], err
