"""Our consumer of dav1d (``examples/flagship/consumer/dav1d``: ``av1check.c`` decodes an AV1
stream and prints the frame count, the size and a checksum over the decoded planes) against
each asset the built-in recipe makes, fetched as an addon fetches it: natively
(linux-x86_64, through the asset's CMake package and through its ``.pc``), under
``qemu-aarch64`` (linux-aarch64, cross-built by the platform's own zig against the asset's
``.pc``), under Wine (windows-x86_64, MinGW-w64 through the CMake package; and the same program
linked by LLD against the MSVC import library ``dav1d.lib`` alone), and in Node 24 (wasm, Debian's
emcc against the static library, dav1d's worker threads as pthreads).

The stream is made here: 12 frames of a moving 160x96 pattern encoded by SVT-AV1, the AV1
encoder PyPI's ``av`` (PyAV) ships (``make_ivf.py``; cached under $PREBAKE_TEST_CACHE by the
script and PyAV's version). The reference numbers are not written here: ``check.py``
computes them on every run by decoding the same file with the reference decoder, FFmpeg's
``libdav1d`` wrapper in PyAV's wheel over the wheel's own dav1d build (docs/flagship.md says
why that one), and each consumer's output must equal them line for line.

Each unit is built by ``prebake build --unit dav1d/PLATFORM`` on a workspace of that platform
and cached by its files and prebake's code (``support.cached_prebake_build``); linux-x86_64's
is test_dav1d.py's own build (the same files, so the same cache entry).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import av
import pytest

from tests import support
from tests.integration.test_dav1d import LOCK, VERSION, WORKSPACE

CONSUMER = support.ROOT / "examples" / "flagship" / "consumer" / "dav1d"
MINGW_TOOLCHAIN = support.ROOT / "examples" / "flagship" / "consumer" / "mingw-w64.cmake"
AARCH64 = """\
[platforms.linux-aarch64]
os = "linux"
arch = "aarch64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
contract = { extends = "manylinux_2_28_aarch64" }
link_test = { flags = ["-pthread"] }

[platforms.linux-aarch64.toolchain]
cc = "{python} -m ziglang cc -target aarch64-linux-gnu.2.28"
cxx = "{python} -m ziglang c++ -target aarch64-linux-gnu.2.28"
ar = "{python} -m ziglang ar"
nm = "aarch64-linux-gnu-nm"
strip = "aarch64-linux-gnu-strip"
pin = "zig"
"""
LINUX_TABLE = WORKSPACE[WORKSPACE.index("[platforms.linux-x86_64]"):
                        WORKSPACE.index("[stages.media]")]
PLATFORMS = {"linux-aarch64": AARCH64, "windows-x86_64": support.MINGW_PLATFORM + "\n",
             "wasm": support.EMCC_WASM_PLATFORM + "\n"}

pytestmark = pytest.mark.skipif(
    shutil.which("nasm") is None or shutil.which("x86_64-w64-mingw32-gcc") is None
    or shutil.which("emcc") is None or shutil.which("qemu-aarch64") is None,
    reason="needs nasm, mingw-w64, emcc and qemu-user (scripts/bootstrap)")


def workspace(platform: str) -> str:
    """test_dav1d's workspace with its one platform replaced by ``platform``'s (and the zig
    pin the aarch64 toolchain names)."""
    if platform == "linux-x86_64":
        return WORKSPACE
    text = WORKSPACE.replace(LINUX_TABLE, PLATFORMS[platform])
    return text.replace(f'dav1d = "{VERSION}"\n', f'dav1d = "{VERSION}"\nzig = "0.17.1"\n')


_ASSETS: dict[str, Path] = {}


def asset(platform: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The platform's unit, built (cached) and fetched as an addon fetches it (sha256,
    contract, safe unpack, lock); once per session."""
    if platform not in _ASSETS:
        args = ["build", "-j", "2"] if platform == "linux-x86_64" else [
            "build", "--unit", f"dav1d/{platform}", "-j", "2"]
        ws, rc, data = support.cached_prebake_build(
            f"dav1d-{platform}", {"prebake.toml": workspace(platform),
                                  "prebake.sources.lock": LOCK}, args, timeout=1800)
        assert rc == 0, json.dumps(data, indent=1)[-3000:]
        into = tmp_path_factory.mktemp(f"dav1d-{platform}")
        proc = support.prebake("-C", ws, "fetch", f"dav1d=={VERSION}", "--platform", platform,
                               "--into", into, "--lock", into.parent / "lock")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        _ASSETS[platform] = into
    return _ASSETS[platform]


@pytest.fixture(scope="module")
def stream() -> Path:
    """The AV1 stream, made once per make_ivf.py and PyAV release (the encoder is the
    wheel's)."""
    key = hashlib.sha256((CONSUMER / "make_ivf.py").read_bytes() + av.__version__.encode())
    path = support.CACHE / "dav1d-stream" / key.hexdigest()[:16] / "pattern.ivf"
    with support.cache_lock("dav1d-stream"):
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.ivf")
            subprocess.run([sys.executable, str(CONSUMER / "make_ivf.py"), str(tmp)],
                           check=True, capture_output=True, env={**support.tool_env(),
                                                                 "SVT_LOG": "1"})
            tmp.replace(path)
    return path


@pytest.fixture(scope="module")
def reference(stream: Path) -> list[str]:
    """The reference decoder's lines (PyAV's libdav1d), computed now."""
    proc = subprocess.run([sys.executable, str(CONSUMER / "check.py"), str(stream), "--print"],
                          capture_output=True, text=True, check=True)
    lines = proc.stdout.splitlines()
    assert "frames=12" in lines and "size=160x96" in lines, lines
    return lines


def judge(output: str, stream: Path, tmp: Path, reference: list[str]) -> None:
    """check.py's verdict on one run, and every reference line in the output as it is."""
    text = output.replace("\r\n", "\n")
    (tmp / "out.txt").write_text(text)
    proc = subprocess.run([sys.executable, str(CONSUMER / "check.py"), str(stream),
                           str(tmp / "out.txt"), "--version", VERSION],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout
    got = text.splitlines()
    assert [line for line in got if line in reference] == reference, got


def _cmake(build: Path, prefix: Path, *extra: str) -> None:
    support.run(["cmake", "-S", str(CONSUMER), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
                 "-DCMAKE_BUILD_TYPE=Release", *extra], build.parent)
    support.run(["cmake", "--build", str(build)], build.parent)


def _pc_flags(asset_dir: Path, tmp: Path) -> list[str]:
    env = {"PKG_CONFIG_LIBDIR": str(asset_dir / "lib" / "pkgconfig"), "PKG_CONFIG_PATH": ""}
    return shlex.split(support.run(["pkg-config", "--cflags", "--libs", "dav1d"], tmp,
                                   env=env).stdout)


def test_linux_x86_64_natively_through_cmake_and_pkg_config(
        tmp_path_factory: pytest.TempPathFactory, stream: Path, reference: list[str],
        tmp_path: Path) -> None:
    got = asset("linux-x86_64", tmp_path_factory)
    _cmake(tmp_path / "b", got)
    ran = support.run([str(tmp_path / "b" / "av1check"), str(stream)], tmp_path)
    judge(ran.stdout, stream, tmp_path, reference)
    # dav1d's worker threads (one per core): the same pictures
    threaded = support.run([str(tmp_path / "b" / "av1check"), str(stream), "0"], tmp_path)
    assert threaded.stdout.replace("threads=0", "threads=1") == ran.stdout
    # the same program through the asset's relocated .pc
    support.run(["gcc", str(CONSUMER / "av1check.c"), *_pc_flags(got, tmp_path),
                 f"-Wl,-rpath,{got}/lib", "-o", "av1check-pc"], tmp_path)
    assert support.run([str(tmp_path / "av1check-pc"), str(stream)], tmp_path).stdout \
        == ran.stdout


def test_a_cut_stream_is_an_error_not_a_shorter_answer(
        tmp_path_factory: pytest.TempPathFactory, stream: Path, tmp_path: Path) -> None:
    got = asset("linux-x86_64", tmp_path_factory)
    _cmake(tmp_path / "b", got)
    data = stream.read_bytes()
    (tmp_path / "cut.ivf").write_bytes(data[:len(data) - 7])
    proc = support.run([str(tmp_path / "b" / "av1check"), str(tmp_path / "cut.ivf")],
                       tmp_path, check=False)
    assert proc.returncode == 1, proc
    assert "left" in proc.stderr and "done=1" not in proc.stdout, proc.stderr


def test_linux_aarch64_under_qemu(tmp_path_factory: pytest.TempPathFactory, stream: Path,
                                  reference: list[str], tmp_path: Path) -> None:
    got = asset("linux-aarch64", tmp_path_factory)
    # the platform's own compiler, against the asset's .pc; run with Debian's aarch64 glibc
    support.run([*support.ZIG, "cc", "-target", "aarch64-linux-gnu.2.28", "-O2",
                 str(CONSUMER / "av1check.c"), *_pc_flags(got, tmp_path),
                 f"-Wl,-rpath,{got}/lib", "-o", "av1check"], tmp_path)
    ran = support.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu",
                       str(tmp_path / "av1check"), str(stream), "2"], tmp_path)
    judge(ran.stdout, stream, tmp_path, reference)


def test_windows_under_wine_with_the_mingw_and_the_msvc_import_library(
        tmp_path_factory: pytest.TempPathFactory, stream: Path, reference: list[str],
        tmp_path: Path) -> None:
    got = asset("windows-x86_64", tmp_path_factory)
    _cmake(tmp_path / "b", got, f"-DCMAKE_TOOLCHAIN_FILE={MINGW_TOOLCHAIN}")
    assert (tmp_path / "b" / "libdav1d.dll").is_file()  # copied from bin/ by CMake
    shutil.copyfile(stream, tmp_path / "b" / "pattern.ivf")
    ran = support.run_windows(tmp_path / "b" / "av1check.exe", "pattern.ivf", "2",
                              cwd=tmp_path / "b")
    assert ran.returncode == 0, ran
    judge(ran.stdout, stream, tmp_path, reference)
    # MSVC's import library (written by prebake from the DLL's exports) alone, linked by LLD
    # (which reads it as lld-link does): no MSVC C runtime here, so MinGW's, but every dav1d
    # symbol resolved through dav1d.lib
    msvc = tmp_path / "msvc"
    msvc.mkdir()
    support.run(["x86_64-w64-mingw32-gcc", "-fuse-ld=lld", "-O2", f"-I{got}/include",
                 str(CONSUMER / "av1check.c"), str(got / "lib" / "dav1d.lib"),
                 "-o", str(msvc / "av1check.exe")], tmp_path)
    shutil.copyfile(got / "bin" / "libdav1d.dll", msvc / "libdav1d.dll")
    shutil.copyfile(stream, msvc / "pattern.ivf")
    again = support.run_windows(msvc / "av1check.exe", "pattern.ivf", "2", cwd=msvc)
    assert again.returncode == 0, again
    assert again.stdout == ran.stdout


def test_wasm_in_node_24(tmp_path_factory: pytest.TempPathFactory, stream: Path,
                         reference: list[str], tmp_path: Path) -> None:
    got = asset("wasm", tmp_path_factory)
    b = tmp_path / "b"
    # the module inside the JS (SINGLE_FILE): Debian 12's Emscripten 3.1.6 fetch()es its .wasm
    # by path wherever a global fetch exists, and Node 24's refuses a path ("Failed to parse
    # URL"); the flagship's Emscripten 6.0.5 (the long leg) reads it from the file system
    support.run(["emcmake", "cmake", "-S", str(CONSUMER), "-B", str(b),
                 "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={got}",
                 f"-DCMAKE_FIND_ROOT_PATH={got}", "-DCMAKE_EXE_LINKER_FLAGS=-sSINGLE_FILE=1"],
                tmp_path)
    support.run(["cmake", "--build", str(b)], tmp_path)
    node = support.node24()
    # two of dav1d's worker threads: pthreads, Node's workers
    ran = support.run([str(node), str(b / "av1check.js"), str(stream), "2"], tmp_path)
    judge(ran.stdout, stream, tmp_path, reference)
