"""FFmpeg through the built-in recipe at the scale the suite can afford: its own configure and
make with the platform's pinned tools (``prebake.toolchain.configure``), in a small
configuration (the components one consumer needs: the WAV and FLAC formats, the PCM and FLAC
codecs, the file protocol, libswresample and libswscale), for linux-x86_64 (Debian's gcc,
nasm) and windows-x86_64 (MinGW-w64: DLLs in bin/, import libraries in lib/). The build is
cached under $PREBAKE_TEST_CACHE by the workspace and prebake's code.

Each asset is fetched as an addon fetches it, and the consumer of ``examples/flagship/consumer/
ffmpeg`` (a WAV of a known signal decoded, round-tripped through FLAC to every sample,
converted by libswresample, an image by libswscale, each checked against Python's own numbers)
is built against it through the asset's CMake package and through its ``.pc`` files, and run:
natively, and under Wine. The full configuration on every platform is ``scripts/long-leg
ffmpeg``'s (docs/flagship.md).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import support

BUILTIN = support.ROOT / "src" / "prebake" / "recipes" / "builtin" / "ffmpeg"
CONSUMER = support.ROOT / "examples" / "flagship" / "consumer" / "ffmpeg"
MINGW_TOOLCHAIN = support.ROOT / "examples" / "flagship" / "consumer" / "mingw-w64.cmake"
VERSION = "7.1.5"
ORIG = "debian:pool/main/f/ffmpeg/ffmpeg_{}.orig.tar.xz"
# Debian's archive of each release the suite builds: sha256 and size, read by hand (what
# `prebake pin ffmpeg VERSION` locks: tests/integration/test_pin.py)
ARCHIVES = {
    "7.1.5": ("de668509caf9e35e3cd162473441fdb29538c6d96ed080292b3cf9e6fc5d558f", 11050340),
    "8.1.2": ("464beb5e7bf0c311e68b45ae2f04e9cc2af88851abb4082231742a74d97b524c", 11710924),
}
LIBRARIES = ("avformat", "avcodec", "swresample", "swscale", "avutil")
SMALL = ("--disable-everything", "--disable-network", "--disable-avdevice",
         "--disable-avfilter", "--enable-protocol=file", "--enable-demuxer=wav,flac",
         "--enable-muxer=flac,wav", "--enable-decoder=pcm_s16le,flac",
         "--enable-encoder=flac,pcm_s16le", "--enable-parser=flac")
RECIPE = '''\
"""FFmpeg in the suite's small configuration: the built-in recipe, fewer components."""
from prebake.recipes.builtin.ffmpeg.recipe import ffmpeg_recipe

RECIPE = ffmpeg_recipe(
    components=COMPONENTS,
    libraries=LIBRARIES,
    only=("PLATFORM",))
'''
LINUX = """\
[platforms.linux-x86_64]
os = "linux"
arch = "x86_64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
toolchain = { cc = "gcc", cxx = "g++", ar = "ar" }
contract = { extends = "manylinux_2_36_x86_64"CONTRACT }
link_test = { flags = ["-pthread"] }
"""
PLATFORMS = {"linux-x86_64": LINUX, "windows-x86_64": support.MINGW_PLATFORM}


def recipe(platform: str, components: tuple[str, ...] = SMALL,
           libraries: tuple[str, ...] = LIBRARIES) -> str:
    return (RECIPE.replace("PLATFORM", platform).replace("COMPONENTS", repr(components))
            .replace("LIBRARIES", repr(libraries)))


LGPL_ONLY = ', allowed_licenses = ["LGPL-*"]'


def workspace(platform: str, version: str = VERSION, contract: str = LGPL_ONLY) -> str:
    """One platform's workspace (the Windows one names no gcc: a decoy ``gcc`` on PATH is
    then a fallback, never the platform's own compiler); the provided line follows the pin;
    ``contract`` adds keys to the linux-x86_64 contract."""
    return f"""\
[project]
name = "ffmpeg-small"
version = "0.1.0"

[pins]
ffmpeg = "{version}"

{PLATFORMS[platform].replace("CONTRACT", contract)}
[stages.media]
recipes = ["ffmpeg"]
package = "per-recipe"

[sources.provided]
"https://ffmpeg.org/releases/ffmpeg-{{pins[ffmpeg]}}.tar.xz" = "{ORIG.format('{pins[ffmpeg]}')}"
"""


def files(platform: str, version: str = VERSION, *, contract: str = LGPL_ONLY,
          components: tuple[str, ...] = SMALL, libraries: tuple[str, ...] = LIBRARIES
          ) -> dict[str, str]:
    """The small workspace's files at one release: a bump changes the pin and the lock only;
    the license tests change the contract and the configuration."""
    sha, size = ARCHIVES[version]
    lock = (f'version = 1\n\n[[source]]\nurl = "{ORIG.format(version)}"\nsha256 = "{sha}"\n'
            f"size = {size}\n")
    patches = {f"recipes/ffmpeg/{p.name}": p.read_text() for p in BUILTIN.glob("*.patch")}
    return {"prebake.toml": workspace(platform, version, contract), "prebake.sources.lock": lock,
            "recipes/ffmpeg/recipe.py": recipe(platform, components, libraries), **patches}


# what the linux-x86_64 libraries may need at load time: the C library's, and each other
SYSTEM = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
          "ld-linux-x86-64.so.2"}

pytestmark = pytest.mark.skipif(shutil.which("nasm") is None
                                or shutil.which("x86_64-w64-mingw32-gcc") is None,
                                reason="needs nasm and mingw-w64 (scripts/bootstrap)")


@pytest.fixture(scope="module")
def small() -> dict[str, Path]:
    """Each platform's workspace, built (cached). Windows is built with decoys first on the
    caller's PATH under every generic name FFmpeg's configure falls back to (its host
    compiler's ``gcc``, ``nm``, ``ar``…): none of them may run."""
    decoys = support.CACHE / "ffmpeg-decoys"
    marker = decoys / "ran"
    decoys.mkdir(parents=True, exist_ok=True)
    for name in ("gcc", "cc", "nm", "ar", "ranlib", "strip", "windres"):
        (decoys / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {marker}\nexit 1\n')
        (decoys / name).chmod(0o755)
    out = {}
    for platform, env in (("linux-x86_64", None),
                          ("windows-x86_64", {"PATH": f"{decoys}:{support.tool_env()['PATH']}"})):
        ws, rc, data = build(platform, env=env)
        assert rc == 0, json.dumps(data, indent=1)[-3000:]
        out[platform] = ws
    assert not marker.exists(), f"a decoy ran: {marker.read_text()}"
    return out


def build(platform: str, *, env: dict[str, str] | None = None, name: str = "small",
          contract: str = LGPL_ONLY, components: tuple[str, ...] = SMALL,
          libraries: tuple[str, ...] = LIBRARIES) -> tuple[Path, int, dict[str, Any]]:
    """One workspace's ``prebake build`` (cached by its files, prebake's code and ``env``)."""
    return support.cached_prebake_build(
        f"ffmpeg-{name}-{platform}",
        files(platform, contract=contract, components=components, libraries=libraries),
        ["build", "-j", "2"], env=env, timeout=3600)


@pytest.fixture(scope="module")
def fetched(small: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Path]:
    """Each platform's asset as an addon fetches it (sha256, contract, safe unpack, lock)."""
    out = {}
    for platform, ws in small.items():
        into = tmp_path_factory.mktemp(f"asset-{platform}")
        proc = support.prebake("-C", ws, "fetch", f"ffmpeg=={VERSION}", "--platform",
                               platform, "--into", into, "--lock", into.parent / "lock")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[platform] = into
    return out


def _manifest(asset_dir: Path) -> dict[str, Any]:
    return dict(json.loads((asset_dir / "share" / "prebake" / "manifest.json").read_text()))


def _check(output: str, flac: Path, tmp: Path) -> str:
    """check.py's verdict on one run (the signal, FLAC, swresample and swscale numbers)."""
    (tmp / "out.txt").write_text(output)
    proc = subprocess.run([sys.executable, str(CONSUMER / "check.py"), str(tmp / "out.txt"),
                           str(flac), "--version", VERSION], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("signal")
    subprocess.run([sys.executable, str(CONSUMER / "make_wav.py"), str(folder / "tone.wav")],
                   check=True, capture_output=True)
    return folder / "tone.wav"


def test_linux_ships_shared_libraries_that_name_no_folder_of_the_build(
        fetched: dict[str, Path]) -> None:
    asset = fetched["linux-x86_64"]
    manifest = _manifest(asset)
    facts = {f["path"]: f for f in manifest["facts"]}
    assert sorted(facts) == sorted(f"lib/lib{lib}.so" for lib in LIBRARIES)
    for path, fact in facts.items():
        # only the C library and FFmpeg's own libraries at load time, glibc within the contract
        own = {f"lib{lib}.so.{s}" for lib in LIBRARIES for s in range(5, 62)}
        assert set(fact["needed"]) <= SYSTEM | own, (path, fact["needed"])
    # the version proof: each library's header = its .pc = its file name and soname; the
    # release = the string its bytes hold
    evidence = manifest["guards"]["version"]["ffmpeg"]["evidence"]
    says = {(e["file"], e["says"]): e["version"] for e in evidence}
    assert says[("lib/libavcodec.so", "soname")] == "61"
    assert says[("lib/libavcodec.so.61.19.101", "file name")] == "61.19.101"
    assert says[("lib/pkgconfig/libavcodec.pc", "Version:")] == "61.19.101"
    assert says[("lib/libavformat.so", "bytes 'FFmpeg version ([0-9][0-9.]*)'")] == VERSION
    # FFmpeg's own .pc files, relocated, their private dependencies kept
    pc = (asset / "lib/pkgconfig/libavformat.pc").read_text()
    assert pc.startswith("prefix=${pcfiledir}/../..\n")
    assert "Requires.private: libavcodec >= 61.19.101, libavutil >= 59.39.100" in pc
    config = (asset / "lib/cmake/ffmpeg/ffmpegConfig.cmake").read_text()
    assert 'INTERFACE_LINK_LIBRARIES "ffmpeg::avcodec;ffmpeg::avutil"' in config


def test_the_windows_dlls_are_in_bin_with_both_import_libraries(
        fetched: dict[str, Path]) -> None:
    asset = fetched["windows-x86_64"]
    dlls = sorted(p.name for p in (asset / "bin").iterdir())
    assert dlls == ["avcodec-61.dll", "avformat-61.dll", "avutil-59.dll", "swresample-5.dll",
                    "swscale-8.dll"]
    for lib in LIBRARIES:
        assert (asset / "lib" / f"lib{lib}.dll.a").is_file()  # MinGW's, from FFmpeg's link
        assert (asset / "lib" / f"{lib}.lib").is_file()  # MSVC's, from the DLL's exports
    evidence = _manifest(asset)["guards"]["version"]["ffmpeg"]["evidence"]
    assert {"file": "bin/avcodec-61.dll", "says": "version resource FileVersion",
            "version": "61.19.101.0"} in evidence


def _cmake(src: Path, build: Path, prefix: Path, *extra: str) -> None:
    support.run(["cmake", "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
                 "-DCMAKE_BUILD_TYPE=Release", *extra], build.parent)
    support.run(["cmake", "--build", str(build)], build.parent)


def test_the_linux_consumer_runs_through_cmake_and_through_pkg_config(
        fetched: dict[str, Path], wav: Path, tmp_path: Path) -> None:
    asset = fetched["linux-x86_64"]
    _cmake(CONSUMER, tmp_path / "cmake", asset)
    ran = support.run([str(tmp_path / "cmake" / "ffcheck"), str(wav), str(tmp_path / "a.flac")],
                      tmp_path)
    verdict = _check(ran.stdout, tmp_path / "a.flac", tmp_path)
    assert verdict.endswith(" checks passed\n") and "FAIL" not in verdict
    # the same program through the asset's relocated .pc files (an unpacked asset, any folder)
    env = {"PKG_CONFIG_LIBDIR": str(asset / "lib" / "pkgconfig"), "PKG_CONFIG_PATH": ""}
    flags = support.run(["pkg-config", "--cflags", "--libs", *(f"lib{x}" for x in LIBRARIES)],
                        tmp_path, env=env).stdout
    assert f"-L{asset}/lib" in flags.replace("//", "/") or f"-L{asset.resolve()}/lib" in flags
    support.run(["gcc", str(CONSUMER / "ffcheck.c"), *shlex.split(flags), "-lm",
                 f"-Wl,-rpath,{asset}/lib", "-o", "ffcheck-pc"], tmp_path)
    again = support.run([str(tmp_path / "ffcheck-pc"), str(wav), str(tmp_path / "b.flac")],
                        tmp_path)
    assert again.stdout == ran.stdout  # the same libraries, the same numbers


def test_the_windows_consumer_runs_under_wine(fetched: dict[str, Path], wav: Path,
                                              tmp_path: Path) -> None:
    asset = fetched["windows-x86_64"]
    _cmake(CONSUMER, tmp_path / "b", asset, f"-DCMAKE_TOOLCHAIN_FILE={MINGW_TOOLCHAIN}")
    exe = tmp_path / "b" / "ffcheck.exe"
    assert (tmp_path / "b" / "avutil-59.dll").is_file()  # copied from bin/ by CMake
    shutil.copyfile(wav, tmp_path / "b" / "tone.wav")
    ran = support.run_windows(exe, "tone.wav", "out.flac", cwd=tmp_path / "b")
    assert ran.returncode == 0, ran
    verdict = _check(ran.stdout.replace("\r\n", "\n"), tmp_path / "b" / "out.flac", tmp_path)
    assert "FAIL" not in verdict


# ---- the license, proven from the bytes -------------------------------------------------------

# --enable-gpl also builds libpostproc in 7.1 (a GPL-only library none of these configurations
# lists): left out, so each asset holds the libraries its recipe names
GPL = (*SMALL, "--disable-postproc", "--enable-gpl")
# libavutil alone, GPL: the smallest build a refusal can be shown on (~1/10 of the small one)
AVUTIL_GPL = ("--disable-everything", "--disable-network", "--disable-avdevice",
              "--disable-avfilter", "--disable-avformat", "--disable-avcodec",
              "--disable-swresample", "--disable-swscale", "--disable-postproc", "--enable-gpl")


def _fetch(ws: Path, into: Path) -> Path:
    proc = support.prebake("-C", ws, "fetch", f"ffmpeg=={VERSION}", "--platform",
                           "linux-x86_64", "--into", into, "--lock", into.parent / "lock")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return into


def _license_bytes(path: Path, stem: str) -> str:
    """The license a library's bytes spell, read here by the test's own pattern."""
    found = set(re.findall(rb"lib" + stem.encode() + rb" license: ([^\x00]*)\x00",
                           path.read_bytes()))
    assert len(found) == 1, (path, found)
    return found.pop().decode()


def _sbom_licenses(asset: Path) -> dict[str, list[dict[str, Any]]]:
    """Each component's licenses, by name; the asset itself (``metadata.component``) as
    ``"(asset)"``."""
    bom = json.loads((asset / "share" / "prebake" / "sbom.cdx.json").read_text())
    return {"(asset)": bom["metadata"]["component"].get("licenses", []),
            **{c["name"]: c.get("licenses", []) for c in bom["components"]}}


@pytest.fixture(scope="module")
def lgpl_asset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small configuration's linux-x86_64 asset (the ``small`` fixture's build), fetched
    under a contract that allows LGPL only."""
    ws, rc, data = build("linux-x86_64")
    assert rc == 0, json.dumps(data, indent=1)[-3000:]
    return _fetch(ws, tmp_path_factory.mktemp("lgpl") / "asset")


@pytest.fixture(scope="module")
def gpl_asset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The small configuration with ``--enable-gpl`` (no license rule), built and fetched."""
    ws, rc, data = build("linux-x86_64", name="gpl", contract="", components=GPL)
    assert rc == 0, json.dumps(data, indent=1)[-3000:]
    return ws, _fetch(ws, tmp_path_factory.mktemp("gpl") / "asset")


def test_the_default_build_is_lgpl_2_1_in_the_manifest_and_the_sbom_as_its_bytes_say(
        lgpl_asset: Path) -> None:
    manifest = _manifest(lgpl_asset)
    assert [r["license"] for r in manifest["recipes"]] == ["LGPL-2.1-or-later"]
    record = manifest["guards"]["license"]["ffmpeg"]
    assert record["spdx"] == "LGPL-2.1-or-later"
    assert record["text"] == _license_bytes(lgpl_asset / "lib" / "libavutil.so", "avutil")
    # every library was read, libavutil first, none configured with a switch that changes it
    assert record["evidence"][0]["file"] == "lib/libavutil.so"
    assert sorted(e["file"] for e in record["evidence"]) == sorted(
        f"lib/lib{lib}.so" for lib in LIBRARIES)
    assert all(e["configured"] == [] for e in record["evidence"])
    for lib in LIBRARIES:
        assert _license_bytes(lgpl_asset / "lib" / f"lib{lib}.so", lib) == record["text"]
    assert manifest["guards"]["check"]["contract"]["allowed_licenses"] == ["LGPL-*"]
    sbom = _sbom_licenses(lgpl_asset)
    assert sbom["ffmpeg"] == [{"expression": "LGPL-2.1-or-later"}]
    assert sbom["(asset)"] == [{"expression": "LGPL-2.1-or-later"}]
    assert (lgpl_asset / "share/licenses/ffmpeg/COPYING.LGPLv2.1").is_file()


def test_an_enable_gpl_build_is_gpl_2_everywhere(gpl_asset: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    ws, asset = gpl_asset
    manifest = _manifest(asset)
    assert [r["license"] for r in manifest["recipes"]] == ["GPL-2.0-or-later"]
    record = manifest["guards"]["license"]["ffmpeg"]
    assert (record["spdx"], record["text"]) == ("GPL-2.0-or-later", "GPL version 2 or later")
    assert {tuple(e["configured"]) for e in record["evidence"]} == {("--enable-gpl",)}
    for lib in LIBRARIES:
        assert _license_bytes(asset / "lib" / f"lib{lib}.so", lib) == "GPL version 2 or later"
    sbom = _sbom_licenses(asset)
    assert sbom["ffmpeg"] == [{"expression": "GPL-2.0-or-later"}]
    assert sbom["(asset)"] == [{"expression": "GPL-2.0-or-later"}]
    assert "LGPL" not in json.dumps(sbom)
    assert (asset / "share/licenses/ffmpeg/COPYING.GPLv2").is_file()
    # a consumer whose contract allows LGPL only refuses it at fetch, from the manifest
    (tmp_path / "lgpl.toml").write_text('allowed_licenses = ["LGPL-*"]\n')
    proc = support.prebake("-C", ws, "fetch", f"ffmpeg=={VERSION}", "--platform",
                           "linux-x86_64", "--into", tmp_path / "refused", "--contract",
                           tmp_path / "lgpl.toml", "--lock", tmp_path / "lock")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("ffmpeg is GPL-2.0-or-later; this contract's allowed_licenses (LGPL-*) refuses "
            "it; nothing was installed") in proc.stderr
    assert not (tmp_path / "refused").exists()


def test_a_contract_that_allows_lgpl_only_refuses_a_gpl_build_before_packaging() -> None:
    ws, rc, data = build("linux-x86_64", name="gpl-refused", components=AVUTIL_GPL,
                         libraries=("avutil",))
    assert rc == 1, json.dumps(data, indent=1)[-3000:]
    message = data["units"][0]["message"]
    assert message == (
        "ffmpeg/linux-x86_64: lib/libavutil.so is GPL-2.0-or-later (its bytes say 'GPL "
        "version 2 or later', configured --enable-gpl); the contract's allowed_licenses "
        "(LGPL-*) refuses it, nothing was packaged"), message
    assert not list((ws / "releases").rglob("*.tar.xz"))
