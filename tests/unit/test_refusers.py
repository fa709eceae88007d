"""The tools folder refuses every compiler, preprocessor, assembler and linker the platform
does not pin (``prebake.toolchain.refusers``), with the real GCC 12, Clang 14, MinGW and zig:
on 7d26735 it refused only ``cc gcc c++ g++ clang clang++ ar ranlib nm strip windres``, so
``gcc-12``, ``x86_64-linux-gnu-gcc-12``, ``cpp``, ``as`` and ``ld`` reached the build
machine's programs, natively and on a cross leg."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.model.workspace import Platform
from prebake.toolchain import configure, platformtools, refusers
from tests.unit.test_configure_tools import MINGW, ZIG_ARM, platform, write_folder

CLANG14 = platform("linux-x86_64", "linux", "x86_64", ("clang-14",), ("clang++-14",),
                   ("llvm-ar-14",), nm=("llvm-nm-14",))


@pytest.mark.parametrize("name", [
    "gcc", "gcc-12", "g++-12", "x86_64-linux-gnu-gcc-12", "x86_64-linux-gnu-gcc",
    "aarch64-linux-gnu-gcc", "x86_64-w64-mingw32-gcc-12-posix", "x86_64-w64-mingw32-g++-win32",
    "clang-14", "clang++-16", "clang-cpp-14", "clang-cl", "cpp", "cpp-12",
    "x86_64-linux-gnu-cpp-12", "as", "ld", "ld.bfd", "ld.gold", "ld.lld-14", "wasm-ld-14",
    "x86_64-linux-gnu-ld.bfd", "aarch64-linux-gnu-as", "lld-link", "mold", "llvm-ar-14",
    "gcc-ar-12", "emcc", "em++", "c89", "c99", "tcc", "x86_64-pc-linux-gnu-gcc",
    "riscv64-unknown-linux-gnu-g++", "arm-linux-gnueabihf-gcc-12"])
def test_every_spelling_of_a_compiler_assembler_or_linker_is_matched(name: str) -> None:
    assert refusers.matches(name)


@pytest.mark.parametrize("name", [
    "ccache", "clang-format-14", "clang-tidy", "c++filt", "nm-online", "make", "pkg-config",
    "x86_64-linux-gnu-pkg-config", "python3", "zig", "link", "ldd", "lldb", "objdump",
    "strings", "asdf", "gccgo-x", "nasm", "ninja", "meson", "cmake", "linux-gnu-gcc"])
def test_other_programs_are_not(name: str) -> None:
    assert not refusers.matches(name)


def _folder(tmp: Path, plat: Platform) -> dict[str, str]:
    """The unit's folder written for ``plat`` on this machine's PATH; the commands' env."""
    return write_folder(tmp, plat, ["cc", "cxx"])[1]


def _run(env: dict[str, str], *argv: str, cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=cwd,
                          timeout=300)


def _refused(proc: subprocess.CompletedProcess[str], name: str, platform: str) -> bool:
    return proc.returncode == configure.REFUSED_EXIT and \
        f"prebake: '{name}' is not a tool platform {platform} pins" in proc.stderr


needs = pytest.mark.skipif(shutil.which("clang-14") is None or shutil.which("gcc-12") is None,
                           reason="needs clang-14 and gcc-12")


@needs
@pytest.mark.parametrize("name", ["gcc-12", "x86_64-linux-gnu-gcc-12", "g++-12", "cpp",
                                  "cpp-12", "x86_64-linux-gnu-cpp-12", "clang-16", "clang-13",
                                  "ld.gold", "ld.bfd", "gcc", "cc", "clang"])
def test_a_native_platform_pinned_to_clang_14_refuses_every_other_compiler_on_path(
        tmp_path: Path, name: str) -> None:
    if shutil.which(name) is None and name not in refusers.BASES:
        pytest.skip(f"{name} is not on this machine's PATH")
    env = _folder(tmp_path, CLANG14)
    assert _refused(_run(env, name, "--version"), name, "linux-x86_64")


@needs
def test_the_pinned_compiler_still_assembles_and_links_with_its_own_as_and_ld(tmp_path: Path
                                                                               ) -> None:
    env = _folder(tmp_path, CLANG14)
    (tmp_path / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("hi");}\n')
    built = _run(env, "x86_64-linux-gnu-cc", "-fno-integrated-as", "hello.c", "-o", "hello",
                 cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert _run(env, str(tmp_path / "hello")).stdout == "hi\n"
    # the wrapper runs clang with the folder off PATH: what it finds by name is the machine's
    ld_gold = _run(env, "x86_64-linux-gnu-cc", "-print-prog-name=ld.gold").stdout.strip()
    assert ld_gold and not ld_gold.startswith(str(tmp_path)), ld_gold
    # as and ld by name are clang 14's own (-print-prog-name=), so a step that runs them gets
    # those: an absolute GCC that slips through is then refused by its objects' producer
    gnu_as = _run(env, "as", "--version")
    assert gnu_as.returncode == 0 and gnu_as.stdout.startswith("GNU assembler"), gnu_as.stderr
    text = (configure.tools_folder(tmp_path) / "ld").read_text()
    assert "exec /usr/bin/" in text and "pinned compiler's own" in text


@needs
def test_a_cross_leg_refuses_the_build_machines_compiler_assembler_and_linker(tmp_path: Path
                                                                              ) -> None:
    env = _folder(tmp_path, ZIG_ARM)
    for name in ("x86_64-linux-gnu-gcc", "x86_64-linux-gnu-gcc-12", "as", "ld", "cpp", "gcc",
                 "x86_64-linux-gnu-ld", "clang-14"):
        assert _refused(_run(env, name, "--version"), name, "linux-aarch64"), name
    (tmp_path / "x.c").write_text("int f(int a){return a+1;}\n")
    built = _run(env, "aarch64-linux-gnu-cc", "-c", "x.c", "-o", "x.o", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "x.o").read_bytes()[18:20] == b"\xb7\x00"  # EM_AARCH64


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_mingw_keeps_its_own_assembler_never_the_build_machines(tmp_path: Path) -> None:
    env = _folder(tmp_path, MINGW)
    as_text = (configure.tools_folder(tmp_path) / "as").read_text()
    assert "x86_64-w64-mingw32" in as_text, as_text  # the cross driver's own, by its path
    assert _refused(_run(env, "x86_64-linux-gnu-gcc", "--version"), "x86_64-linux-gnu-gcc",
                    "windows-x86_64")
    (tmp_path / "x.c").write_text("int f(int a){return a+1;}\n")
    built = _run(env, "x86_64-w64-mingw32-cc", "-c", "x.c", "-o", "x.o", cwd=tmp_path)
    assert built.returncode == 0, built.stderr


def test_the_scan_reads_only_names_and_stays_bounded(tmp_path: Path) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for i in range(50):
        (many / f"gcc-{i}").touch()
    (many / "x86_64-linux-gnu-g++-99").touch()
    (many / "readme").touch()
    found = refusers.scan(f"{many}:{tmp_path / 'gone'}")
    assert "x86_64-linux-gnu-g++-99" in found and "gcc-7" in found and "readme" not in found
    assert refusers.scan(refusers.without(f"{many}:{many}/", str(many))) == ()
    folders = ":".join([str(tmp_path / "gone")] * (refusers.MAX_DIRS + 5) + [str(many)])
    assert refusers.scan(folders) == ()  # past the folder bound: never read


def test_the_portable_text_states_the_policy_never_this_machines_scan(tmp_path: Path) -> None:
    a = configure.portable(CLANG14).rendered()
    assert refusers.describe() in a
    decoy = tmp_path / "bin"
    decoy.mkdir()
    (decoy / "gcc-77").touch()
    made = configure.render(platformtools.portable(CLANG14), path=str(decoy))
    assert "gcc-77" in made.refused and "gcc-77" not in a
