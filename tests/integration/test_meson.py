"""The Meson build family, judged by building a real Meson C library (written here) through a
recipe that is data only — ``{host_tools[meson]} setup … {meson_cross}``, ``ninja``, ``meson
install`` — for linux-x86_64 natively (Debian's gcc, a native file), windows-x86_64 cross
(mingw-w64, a cross file) and wasm cross (Debian's emcc, threads and SIMD128 from the
contract's ABI flags), with prebake's pinned PyPI meson and ninja.

Judged by what ``prebake inspect`` reads of the shipped archive's objects (ELF x86-64; COFF
x86-64; wasm32 with atomics and SIMD128) and by the library's own record of what Meson
configured it for (``host_machine``, the compiler's id); a subproject's wrap that would
download, and a probe for a compiler no platform pins, are each one line naming it; the
machine file's text is part of the input hash.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from prebake.model.recipe import MESON_VERSION
from tests import support

pytestmark = pytest.mark.skipif(
    shutil.which("x86_64-w64-mingw32-gcc") is None or shutil.which("gcc") is None
    or shutil.which("emcc") is None, reason="needs gcc, mingw-w64 and emcc")

MESON_BUILD = """\
project('mtiny', 'c', version: '1.2.0', meson_version: '>=1.0')
cc = meson.get_compiler('c')
conf = configuration_data()
conf.set_quoted('MTINY_HOST', host_machine.system() + '/' + host_machine.cpu_family())
conf.set_quoted('MTINY_CC', cc.get_id())
conf.set10('MTINY_CROSS', meson.is_cross_build())
configure_file(output: 'mtiny_config.h', configuration: conf)
lib = library('mtiny', 'mtiny.c', install: true)
install_headers('mtiny.h')
"""
MTINY_C = """\
#include "mtiny.h"
#include "mtiny_config.h"
const char mtiny_built_for[] = "mtiny-built-for=" MTINY_HOST " cc=" MTINY_CC;
int mtiny_add(int a, int b) { return a + b + 0 * MTINY_CROSS; }
"""
MTINY_H = "#define MTINY_VERSION \"1.2.0\"\nint mtiny_add(int a, int b);\n"
# a wrap whose source would be downloaded (from a port where nothing listens: never reached)
WRAP = """\
[wrap-file]
directory = zfoo-1.0
source_url = http://127.0.0.1:9/zfoo-1.0.tar.gz
source_filename = zfoo-1.0.tar.gz
source_hash = 0000000000000000000000000000000000000000000000000000000000000000
"""
RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet, VersionCheck

RECIPE = Recipe(
    name="mtiny",
    pin="mtiny",
    sources=(LocalSource("src"),),
    platforms={"*": Build(commands=(
        "{host_tools[meson]} setup {build} {src} {meson_cross} --prefix={prefix} --libdir=lib"
        " --buildtype=release --default-library=static",
        "{host_tools[ninja]} -C {build} -j {jobs}",
        "{host_tools[meson]} install -C {build}"))},
    outputs=Outputs(libs={"*": ("lib/libmtiny.a",)}, headers=("include/mtiny.h",)),
    kind={"*": "static"},
    version_check=VersionCheck("include/mtiny.h", ("MTINY_VERSION",)),
    link_test=Snippet(code="#include <mtiny.h>\\nint main(void) "
                           "{ return mtiny_add(1, 2) != 3; }\\n",
                      lang="c", symbols=("mtiny_add",)),
)
'''
WORKSPACE = support.gcc_workspace(
    "meson-ws", 'mtiny = "1.2.0"', "lib", '["mtiny"]',
    more="\n" + support.MINGW_PLATFORM + "\n" + support.EMCC_WASM_PLATFORM)


def _workspace(tmp: Path, *, subproject: bool = False, native_c: bool = False) -> Path:
    ws = tmp / "ws"
    src = ws / "recipes" / "mtiny" / "src"
    src.mkdir(parents=True)
    build = MESON_BUILD
    if subproject:
        build += "zfoo = subproject('zfoo')\n"
        (src / "subprojects").mkdir()
        (src / "subprojects" / "zfoo.wrap").write_text(WRAP)
    if native_c:  # a compiler of the build machine, which no platform pins
        build += "add_languages('c', native: true, required: true)\n"
    (src / "meson.build").write_text(build)
    (src / "mtiny.c").write_text(MTINY_C)
    (src / "mtiny.h").write_text(MTINY_H)
    (ws / "recipes" / "mtiny" / "recipe.py").write_text(RECIPE)
    (ws / "prebake.toml").write_text(WORKSPACE)
    return ws


def _member(asset: Path, name: str, into: Path) -> Path:
    with tarfile.open(asset) as tf:
        fh = tf.extractfile(name)
        assert fh is not None
        out = into / Path(name).name
        out.write_bytes(fh.read())
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = _workspace(tmp_path_factory.mktemp("meson"))
    proc = support.prebake("-C", ws, "build", "--json", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ws


@pytest.mark.parametrize(("platform", "arch", "fmt", "host", "cc", "producer"), [
    ("linux-x86_64", "x86_64", "elf", "linux/x86_64", "gcc", "gcc 12.2.0"),  # Debian 12's
    ("windows-x86_64", "x86_64", "coff", "windows/x86_64", "gcc", "gcc 12"),  # MinGW (COFF)
    ("wasm", "wasm32", "wasm", "emscripten/wasm32", "emscripten", "clang 14.0.6"),  # emcc
])
def test_a_meson_library_builds_natively_and_cross_from_data_alone(
        built: Path, tmp_path: Path, platform: str, arch: str, fmt: str, host: str, cc: str,
        producer: str) -> None:
    asset = built / "releases" / "continuous" / f"mtiny-1.2.0-{platform}.tar.xz"
    lib = _member(asset, "lib/libmtiny.a", tmp_path)
    (facts,) = json.loads(support.prebake("inspect", lib, "--json").stdout)["results"]
    assert (facts["arch"], facts["kind"]) == (arch, "static-library")
    if platform == "wasm":  # the contract's ABI flags (-pthread -msimd128) reached the compile
        assert (facts["abi"]["threads"], facts["abi"]["simd128"]) == (True, True)
    assert facts["details"]["member_formats"] == {fmt: 1}  # mtiny.c's one object
    assert facts["abi"]["producer"] == [producer]  # the pinned compiler, from the object
    # what Meson configured: the target's system and cpu family, the pinned compiler
    assert f"mtiny-built-for={host} cc={cc}".encode() in lib.read_bytes()


def test_the_build_ran_the_pinned_meson_with_the_machine_file(built: Path) -> None:
    logs = built / ".prebake" / "logs"
    win = (logs / "mtiny--windows-x86_64.log").read_text()
    native = (logs / "mtiny--linux-x86_64.log").read_text()
    for text, name in ((win, "meson-cross.ini"), (native, "meson-native.ini")):
        assert f"The Meson build system\nVersion: {MESON_VERSION}" in text
        assert f"{name} --wrap-mode=nodownload --prefix=" in text
    assert "Build type: cross build" in win and "Build type: native build" in native
    assert "C compiler for the host machine: /usr/bin/x86_64-w64-mingw32-gcc " in win
    assert "C compiler for the host machine: /usr/bin/gcc " in native
    assert "[host_machine]" in win and "[host_machine]" not in native


def test_a_subproject_that_would_download_is_one_line_naming_its_wrap(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, subproject=True)
    proc = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", "--json",
                           timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (unit,) = json.loads(proc.stdout)["units"]
    message = str(unit["message"])
    assert "\n" not in message
    assert "subproject zfoo (subprojects/zfoo.wrap: source_url http://127.0.0.1:9/" in message
    assert "a build never downloads" in message


def test_the_machine_file_is_part_of_the_input_hash(tmp_path: Path) -> None:
    """The unit's ``meson-machine-file`` input is the digest of the text ``prebake toolchain
    meson`` prints, and a tool the file names changes it."""
    ws = _workspace(tmp_path)

    def inputs() -> tuple[str, str]:
        plan = support.prebake("-C", ws, "plan", "--platform", "windows-x86_64", "--json")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        shown = support.prebake("-C", ws, "toolchain", "meson", "--platform", "windows-x86_64")
        assert shown.returncode == 0, shown.stdout + shown.stderr
        header, text = shown.stdout.split("\n", 1)
        assert header == "# ==== platform windows-x86_64 (cross: meson-cross.ini) ===="
        return (json.loads(plan.stdout)["units"][0]["inputs"]["meson-machine-file"],
                hashlib.sha256(text.encode()).hexdigest())

    hashed, printed = inputs()
    assert hashed == printed
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text().replace('ar = "x86_64-w64-mingw32-ar"',
                                             'ar = "x86_64-w64-mingw32-ar"\nnm = "llvm-nm"'))
    again, printed_again = inputs()
    assert again == printed_again != hashed


def test_a_probe_for_an_unpinned_compiler_fails_naming_it(built: Path, tmp_path: Path) -> None:
    """A cross build's Meson also looks for the build machine's C compiler: it meets the
    tools folder's refusers (the pinned build above found none: "not found", never
    /usr/bin/cc), and a project that requires one fails in one line naming what it asked."""
    win = (built / ".prebake" / "logs" / "mtiny--windows-x86_64.log").read_text()
    assert "Compiler for language c for the build machine not found." in win
    ws = _workspace(tmp_path, native_c=True)
    proc = support.prebake("-C", ws, "build", "--platform", "windows-x86_64", "--json",
                           timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (unit,) = json.loads(proc.stdout)["units"]
    assert unit["message"] == (
        "mtiny on windows-x86_64: meson looked for a compiler platform windows-x86_64 does not "
        "pin (cc, gcc, clang, nvc…: a compiler of the build machine, which a cross build has "
        "none of); turn off the project's parts built for the build machine (its native: true "
        "targets)")
