"""An autotools-style project built with its own ``configure`` and ``make`` through prebake's
tools folder (``prebake.toolchain.configure``), for two platforms, by a recipe that is data
only — no new Python: ``tests/data/autotools/tiny`` is a configure script in autoconf's manner
(``--host``/``--build``, tools looked for as ``AC_CHECK_TOOL`` does, ``config.log``), and the
library records the tools it was given, as autoconf projects do.

Judged here: the tools the script records are one word each (no folder of this machine
reaches the asset), a fallback never reaches a decoy ``gcc``/``cc``/``nm`` on the caller's
``PATH``, a configure that fails is one line with its log's last error and the log kept, a
``.pc`` naming a folder outside the prefix is refused, a missing host tool (nasm) is one line
before anything is built.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests import support

TINY = support.ROOT / "tests" / "data" / "autotools" / "tiny"
WORKSPACE = """\
[project]
name = "tiny-ws"
version = "0.1.0"

[pins]
tiny = "1.2.0"
zig = "0.17.1"

[platforms.linux-aarch64]
os = "linux"
arch = "aarch64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
contract = { extends = "manylinux_2_28_aarch64" }

[platforms.linux-aarch64.toolchain]
cc = "{python} -m ziglang cc -target aarch64-linux-gnu.2.28"
cxx = "{python} -m ziglang c++ -target aarch64-linux-gnu.2.28"
ar = "{python} -m ziglang ar"
nm = "llvm-nm"
pin = "zig"

""" + support.MINGW_PLATFORM + """
[stages.lib]
recipes = ["tiny"]
package = "per-recipe"
"""
# The recipe a workspace writes for an autotools project: data, no Python of its own.
RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet, VersionCheck
{imports}
RECIPE = Recipe(
    name="tiny",
    pin="tiny",
    sources=(LocalSource("src"),),{host_tools}
    platforms={{"*": Build(
        commands=("{{src}}/configure --host={{triple}} --build={{build_triple}} --prefix={{prefix}}"
                  "{configure}", "make", "make install"),
        config_log="{{build}}/config.log")}},
    outputs=Outputs(libs={{"*": ("lib/libtiny.a",)}}, headers=("include/tiny.h",),
                    license="COPYING"),
    version_check=VersionCheck("include/tiny.h", ("TINY_VERSION",)),
    link_test=Snippet(code="#include <tiny.h>\\nint main(void) {{ return tiny_add(1, 2) != 3; }}"
                           "\\n", lang="c", symbols=("tiny_add",)),
)
'''


def _workspace(tmp: Path, configure: str = " CC={tools[cc]}", imports: str = "",
               host_tools: str = "") -> Path:
    ws = tmp / "ws"
    shutil.copytree(TINY, ws / "recipes" / "tiny" / "src")
    (ws / "prebake.toml").write_text(WORKSPACE)
    (ws / "recipes" / "tiny" / "recipe.py").write_text(RECIPE.format(
        configure=configure, imports=imports, host_tools=host_tools))
    return ws


def _member(asset: Path, name: str) -> bytes:
    with tarfile.open(asset) as tf:
        fh = tf.extractfile(name)
        assert fh is not None
        return fh.read()


def _failed(ws: Path, platform: str, env: dict[str, str] | None = None) -> str:
    """The unit's one-line failure (``build --json``: the terminal wraps long lines)."""
    proc = support.prebake("-C", ws, "build", "--platform", platform, "--json", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (unit,) = json.loads(proc.stdout)["units"]
    assert unit["state"] == "failed"
    return str(unit["message"])


def _decoys(folder: Path, marker: Path) -> Path:
    """gcc, cc, nm, ar, ranlib, strip that a fallback would find first on the caller's PATH:
    each leaves a mark, then answers like the real tool would not."""
    folder.mkdir(parents=True)
    for name in ("gcc", "cc", "nm", "ar", "ranlib", "strip"):
        (folder / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n")
        (folder / name).chmod(0o755)
    return folder


def test_an_autotools_project_builds_for_two_platforms_from_data_alone(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    built = support.prebake("-C", ws, "build", "--json", timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    for platform, triple, cross in (("linux-aarch64", "aarch64-linux-gnu", "yes"),
                                    ("windows-x86_64", "x86_64-w64-mingw32", "yes")):
        asset = ws / "releases" / "continuous" / f"tiny-1.2.0-{platform}.tar.xz"
        lib = _member(asset, "lib/libtiny.a")
        # what the script recorded of its tools: one word each, no folder of this machine
        assert (f"host={triple} cc={triple}-cc ar={triple}-ar nm={triple}-nm "
                f"cross={cross}").encode() in lib
        assert str(ws).encode() not in lib
        pc = _member(asset, "lib/pkgconfig/tiny.pc").decode()
        assert pc.startswith("prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\n")
        manifest = json.loads(_member(asset, "share/prebake/manifest.json"))
        assert "symbol tiny_add" in manifest["guards"]["link_test"]["linked"]
        log = (ws / ".prebake" / "logs" / f"tiny--{platform}.log").read_text()
        # AC_CHECK_TOOL found the folder's <triple>-ar/-ranlib/-nm by their conventional names
        assert (f"configure: {triple} (yes cross), cc {triple}-cc, ar {triple}-ar, "
                f"nm {triple}-nm, symbol prefix ''") in log
    # the folder's text is part of the input hash: naming another nm rebuilds the platform
    plan = support.prebake("-C", ws, "plan", "--explain", "tiny/linux-aarch64")
    assert "configure-tools" in plan.stdout


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_a_fallback_never_reaches_a_decoy_on_the_callers_path(tmp_path: Path) -> None:
    marker = tmp_path / "decoys-ran"
    decoys = _decoys(tmp_path / "decoys", marker)
    env = {"PATH": f"{decoys}:{support.tool_env()['PATH']}"}
    # the script told nothing: autoconf's search order finds the folder's <triple>-gcc, -ar…
    ws = _workspace(tmp_path / "fallback", configure="")
    built = support.prebake("-C", ws, "build", "--platform", "windows-x86_64", "--json",
                            env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    log = (ws / ".prebake" / "logs" / "tiny--windows-x86_64.log").read_text()
    assert "cc x86_64-w64-mingw32-gcc, ar x86_64-w64-mingw32-ar" in log
    # told a compiler the platform does not pin: the refuser answers, never the decoy
    wrong = _workspace(tmp_path / "wrong", configure=" CC=gcc")
    assert _failed(wrong, "windows-x86_64", env).startswith(
        "tiny on windows-x86_64: configure failed: C compiler cannot create executables "
        "(prebake: 'gcc' is not a tool platform windows-x86_64 pins")
    assert not marker.exists(), marker.read_text()


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_a_failing_configure_is_one_line_and_its_log_is_kept(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, configure=" CC={tools[cc]} CFLAGS=-fno-such-flag")
    kept = ws / ".prebake" / "logs" / "tiny--windows-x86_64.config.log"
    assert _failed(ws, "windows-x86_64") == (
        "tiny on windows-x86_64: configure failed: C compiler cannot create executables "
        "(x86_64-w64-mingw32-gcc: error: unrecognized command-line option '-fno-such-flag'; "
        f"did you mean '-fno-mudflap'?) (its log: {kept})")
    assert "configure:53: error: C compiler cannot create executables" in kept.read_text()
    assert not (ws / "releases").exists()


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_a_pc_naming_a_folder_outside_the_asset_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, configure=" CC={tools[cc]} "
                                        "--with-extra-libdir=/usr/lib/x86_64-linux-gnu")
    message = _failed(ws, "windows-x86_64")
    assert message.startswith("tiny/windows-x86_64: 1 pkg-config setting(s) name a folder "
                              "outside the asset")
    assert ("lib/pkgconfig/tiny.pc: pkg-config --cflags --libs --static gives "
            "-L/usr/lib/x86_64-linux-gnu") in message
    assert not (ws / "releases").exists()


def test_a_missing_host_tool_is_one_line_and_nothing_is_built(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, configure=" CC={tools[cc]} AS={tools[nasm]}",
                    imports="from prebake.recipes.builtin.ffmpeg.recipe import NASM\n",
                    host_tools="\n    host_tools=(NASM,),")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    assert _failed(ws, "linux-aarch64", {"PATH": str(empty)}) == (
        "tiny/linux-aarch64: host tool nasm 2.16 is not on the build's PATH (install Debian's "
        "nasm (apt-get install nasm))")
    work = ws / ".prebake" / "work"
    assert not [p for p in work.rglob("*") if p.name in ("src", "tools")]  # nothing built


def test_the_tools_words_are_on_the_commands_path(tmp_path: Path) -> None:
    """The dry run shows the words and the folder first on PATH: what a reviewer reads."""
    ws = _workspace(tmp_path)
    dry = support.prebake("-C", ws, "build", "--platform", "linux-aarch64", "--dry-run",
                          "--json")
    assert dry.returncode == 0, dry.stderr
    step = json.loads(dry.stdout)["units"][0]["steps"][0]
    assert "--host=aarch64-linux-gnu" in step["commands"][0]
    assert "CC=aarch64-linux-gnu-cc" in step["commands"][0]
    folder = ws / ".prebake" / "work" / "linux-aarch64" / "lib-tiny" / "toolchain" / "tools"
    assert step["env"]["PATH"].startswith(f"{folder}:")


def test_build_unit_builds_one_recipe_of_a_platform(tmp_path: Path) -> None:
    """``--unit``: one unit of the plan (the flagship's ffmpeg/wasm without onnxruntime/wasm),
    a name that is not one is one line naming those that are."""
    ws = _workspace(tmp_path)
    dry = support.prebake("-C", ws, "build", "--unit", "tiny/windows-x86_64", "--dry-run",
                          "--json")
    assert dry.returncode == 0, dry.stderr
    assert [u["unit"] for u in json.loads(dry.stdout)["units"]] == ["tiny/windows-x86_64"]
    bad = support.prebake("-C", ws, "build", "--unit", "tiny/windows")
    assert bad.returncode == 2
    assert ("--unit tiny/windows: not a unit of this build (did you mean "
            "'tiny/windows-x86_64'?) (units: tiny/linux-aarch64, tiny/windows-x86_64)"
            in bad.stderr), bad.stderr
