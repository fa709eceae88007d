"""A compiler the platform does not pin, swapped into a build, is refused by the producer its
objects carry: a linux-x86_64 platform pinned to clang 14 whose configure is told
``CC=/usr/bin/gcc`` builds ``libtiny.a`` with GCC 12, every other guard passes, and the
contract's ``producer = ["toolchain"]`` (the manylinux preset's) refuses it naming the member,
what it says and what the platform pins. A recipe that ships another compiler's objects on
purpose says so in ``other_compilers``: reported in the build's output and the manifest,
judged against its own globs, and an entry that matches nothing fails.

The tiny autotools project of ``test_configure_make.py``, built with its own configure and
make; an absolute compiler path is the route no tools folder can shadow.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests import support
from tests.integration.test_configure_make import RECIPE, TINY

WORKSPACE = """\
[project]
name = "tiny-ws"
version = "0.1.0"

[pins]
tiny = "1.2.0"
clang = "14"

[platforms.linux-x86_64]
os = "linux"
arch = "x86_64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
contract = { extends = "manylinux_2_36_x86_64" }

[platforms.linux-x86_64.toolchain]
cc = "clang-14"
cxx = "clang++-14"
ar = "llvm-ar-14"
nm = "llvm-nm-14"
pin = "clang"

[stages.lib]
recipes = ["tiny"]
package = "per-recipe"
"""
ASSET = "tiny-1.2.0-linux-x86_64.tar.xz"
GCC_IDENT = subprocess.run(["gcc", "--version"], capture_output=True, text=True,
                           check=True).stdout.splitlines()[0]


def _gcc_release() -> str:
    m = re.search(r"\) (\d+\.\d+\.\d+)$", GCC_IDENT)
    assert m is not None, GCC_IDENT
    return m.group(1)


def _workspace(tmp: Path, configure: str, other: str = "") -> Path:
    ws = tmp / "ws"
    shutil.copytree(TINY, ws / "recipes" / "tiny" / "src")
    (ws / "prebake.toml").write_text(WORKSPACE)
    text = RECIPE.format(configure=configure, imports="from prebake.recipes import "
                         "OtherCompiler" if other else "", host_tools="")
    if other:
        text = text.replace("\n    link_test=",
                            f"\n    other_compilers=({other},),\n    link_test=")
    (ws / "recipes" / "tiny" / "recipe.py").write_text(text)
    return ws


def _build(ws: Path) -> tuple[int, dict[str, object], str]:
    proc = support.prebake("-C", ws, "build", "--json", timeout=900)
    (unit,) = json.loads(proc.stdout)["units"]
    return proc.returncode, unit, proc.stdout + proc.stderr


def _manifest(ws: Path) -> dict[str, object]:
    with tarfile.open(ws / "releases" / "continuous" / ASSET) as tf:
        fh = tf.extractfile("share/prebake/manifest.json")
        assert fh is not None
        data: dict[str, object] = json.loads(fh.read())
        return data


def test_the_pinned_compiler_builds_and_the_manifest_says_what_held_it(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, " CC={tools[cc]}")
    rc, unit, out = _build(ws)
    assert rc == 0 and unit["state"] == "built", out
    manifest = _manifest(ws)
    record = manifest["guards"]["producer"]  # type: ignore[index]
    assert record["toolchain"] == "clang 14.0.6"
    assert record["own"] == ["clang 14.0.6", "llvm 14.0.6"]
    assert record["runtime"] == [f"gcc {_gcc_release()}"] and record["other_compilers"] == []
    (lib,) = manifest["facts"]  # type: ignore[misc]
    assert lib["abi"]["producer"] == ["clang 14.0.6"]


def _refused_by_producer(message: str) -> bool:
    gcc = _gcc_release()
    text = GCC_IDENT.split(" ", 1)[1]  # "(Debian 12.2.0-14+deb12u1) 12.2.0"
    return (f"lib/libtiny.a: producer: required clang 14.0.6 (the platform's verified "
            f"compiler; gcc {gcc} from its runtime in a linked image), found gcc {gcc} in 1 of "
            f"1 member: tiny.o (.comment 'GCC: {text}')") in message


@pytest.mark.parametrize("cc", ["/usr/bin/gcc", "/usr/bin/gcc-12",
                                "/usr/bin/x86_64-linux-gnu-gcc-12"])
def test_a_swapped_in_gcc_is_refused_naming_the_member_and_both_compilers(
        tmp_path: Path, cc: str) -> None:
    """An absolute path is no PATH lookup: no tools folder can shadow it, the bytes say GCC."""
    ws = _workspace(tmp_path, f" CC={cc}")
    rc, unit, out = _build(ws)
    assert rc == 1 and unit["state"] == "failed", out
    message = str(unit["message"])
    assert _refused_by_producer(message), message
    violations = unit["violations"]
    assert [(v["rule"], v["members"]) for v in violations] == [  # type: ignore[attr-defined]
        ("producer", ["tiny.o"])]
    assert not (ws / "releases" / "continuous" / ASSET).exists()  # nothing published



@pytest.mark.parametrize("cc", ["gcc-12", "x86_64-linux-gnu-gcc-12"])
def test_a_gcc_found_by_name_is_refused_by_the_tools_folder(tmp_path: Path, cc: str) -> None:
    """A versioned or triple-prefixed name is a PATH lookup: the tools folder refuses it
    (a refuser under that very name, found by the scan of the build's PATH) before
    configure gets a compiler, and nothing is published (on 7d26735 GCC 12 built it)."""
    ws = _workspace(tmp_path, f" CC={cc}")
    rc, unit, out = _build(ws)
    assert rc == 1 and unit["state"] == "failed", out
    assert f"'{cc}' is not a tool platform linux-x86_64 pins" in out, out
    assert not (ws / "releases" / "continuous" / ASSET).exists()

def test_another_compilers_objects_ship_only_by_a_reported_allowance(tmp_path: Path) -> None:
    why = "upstream's own GCC build, kept as it is"
    ws = _workspace(tmp_path, " CC=/usr/bin/gcc",
                    other=f'OtherCompiler(("lib/libtiny.a",), ("gcc 12.*",), "{why}")')
    proc = support.prebake("-C", ws, "build", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # said in the build's output and its log, and recorded
    said = (f"lib/libtiny.a names gcc {_gcc_release()}, not the platform's toolchain: "
            f"allowed by other_compilers ({why})")
    assert said in proc.stderr  # the progress lines, as a CI log shows them
    assert said in (ws / ".prebake" / "logs" / "tiny--linux-x86_64.log").read_text()
    record = _manifest(ws)["guards"]["producer"]  # type: ignore[index]
    assert record["other_compilers"] == [{"recipe": "tiny", "file": "lib/libtiny.a",
                                          "says": [f"gcc {_gcc_release()}"],
                                          "allowed": ["gcc 12.*"], "why": why}]
    # a consumer's fetch holds the bytes to what the manifest says (the toolchain, the
    # exemption); check --platform holds the asset to the platform's compiler, the same way
    asset = ws / "releases" / "continuous" / ASSET
    contract = tmp_path / "c.toml"
    contract.write_text('producer = ["toolchain"]\n')
    fetched = support.prebake("fetch", "tiny==1.2.0", "--platform", "linux-x86_64",
                              "--store", f"file://{ws / 'releases'}", "--into",
                              tmp_path / "into", "--lock", tmp_path / "l.lock",
                              "--contract", contract)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert support.prebake("-C", ws, "check", "--platform", "linux-x86_64",
                           asset).returncode == 0
    alone = support.prebake("-C", ws, "check", "--platform", "linux-x86_64",
                            tmp_path / "into" / "lib" / "libtiny.a")
    assert alone.returncode == 1 and "producer: required clang 14.0.6" in alone.stdout



# A prebuilt shared library behind its links, as a repackaged upstream build ships it: made
# by GCC after the clang build (libc kept NEEDED: the Linux evidence), the archive removed,
# the library listed by its link name.
SHARED = (', "/usr/bin/gcc -O2 -fPIC -shared -Wl,-soname,libtiny.so.1,--no-as-needed -I. '
          '-I{{src}} {{src}}/tiny.c -o {{prefix}}/lib/libtiny.so.1.2.0", "ln -s libtiny.so.1.2.0 '
          '{{prefix}}/lib/libtiny.so.1", "ln -s libtiny.so.1 {{prefix}}/lib/libtiny.so", '
          '"rm {{prefix}}/lib/libtiny.a")')


def test_an_exempt_library_behind_its_links_is_exempt_wherever_it_is_checked(
        tmp_path: Path) -> None:
    """The build checks the library by the name its outputs give (``lib/libtiny.so``, a
    link); a fetch and ``check`` read the file the links lead to. The exemption is recorded
    under that file, so a consumer's fetch accepts what the build accepted (before, the
    manifest named the link and the fetch refused the asset)."""
    why = "upstream's own GCC build"
    ws = _workspace(tmp_path, " CC={tools[cc]}",
                    other=f'OtherCompiler(("lib/libtiny.so*",), ("gcc 12.*",), "{why}")')
    recipe = ws / "recipes" / "tiny" / "recipe.py"
    text = recipe.read_text().replace('"make install")', '"make install"' + SHARED.format())
    recipe.write_text(text.replace('"lib/libtiny.a"', '"lib/libtiny.so"'))
    rc, unit, out = _build(ws)
    assert rc == 0 and unit["state"] == "built", out
    record = _manifest(ws)["guards"]["producer"]  # type: ignore[index]
    assert record["other_compilers"] == [{"recipe": "tiny", "file": "lib/libtiny.so.1.2.0",
                                          "says": [f"gcc {_gcc_release()}"],
                                          "allowed": ["gcc 12.*"], "why": why}]
    asset = ws / "releases" / "continuous" / ASSET
    fetched = support.prebake("-C", ws, "fetch", "tiny==1.2.0", "--platform", "linux-x86_64",
                              "--into", tmp_path / "into", "--lock", tmp_path / "l.lock")
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    assert (tmp_path / "into" / "lib" / "libtiny.so.1.2.0").is_file()
    checked = support.prebake("-C", ws, "check", "--platform", "linux-x86_64", asset)
    assert checked.returncode == 0, checked.stdout + checked.stderr

def test_an_allowance_is_judged_and_one_that_exempts_nothing_fails(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "a", " CC=/usr/bin/gcc",
                    other='OtherCompiler(("lib/libtiny.a",), ("gcc 11.*",), "an old GCC")')
    rc, unit, out = _build(ws)
    assert rc == 1, out
    assert "producer: required gcc 11.* (tiny's other_compilers: an old GCC), found gcc " \
           f"{_gcc_release()}" in str(unit["message"])
    ws = _workspace(tmp_path / "b", " CC={tools[cc]}",
                    other='OtherCompiler(("lib/libother.a",), ("gcc *",), "nothing")')
    rc, unit, out = _build(ws)
    assert rc == 1, out
    assert "other_compilers[0] (lib/libother.a) matches no file the recipe ships" in \
        str(unit["message"])
