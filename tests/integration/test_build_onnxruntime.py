"""The onnxruntime recipe: source builds checked through ``--dry-run`` (they cannot run here), the
repackage path run for real against an upstream-layout archive served on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests import support
from tests.integration.test_build import EXAMPLE, build_json, copy_workspace, prebake
from tests.servers.static_http import closed_port_url

VERSION = "1.30.0"
NO_FLAGS = ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS")
LEAKY = {"CFLAGS": "-flto", "CXXFLAGS": "-flto", "LDFLAGS": "-flto", "EMCC_CFLAGS": "-flto",
         "CPPFLAGS": "-DX", "MACOSX_DEPLOYMENT_TARGET": "15.0"}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    ws = copy_workspace(tmp_path_factory.mktemp("ort-dry") / "sdk")
    rc, data = build_json(ws, "--stage", "extra", "--dry-run", env=LEAKY)
    assert rc == 0, data
    assert data["dry_run"] is True
    steps = {}
    for u in data["units"]:
        assert u["state"] == "planned"
        if not u["unit"].startswith("onnxruntime/"):  # FFmpeg's: tests/integration/
            continue  # test_ffmpeg.py and the long leg
        # the example's emsdk (Debian 12's 3.1.6) cannot emit exnref: a real run would refuse
        if u["unit"] == "onnxruntime/wasm":
            assert u["reason"].startswith("dry run: would refuse: onnxruntime/wasm: needs "
                                          "Emscripten (emcc/em++) 4.0 or newer (exnref "
                                          "exceptions (-sWASM_LEGACY_EXCEPTIONS=0) for a -sJSPI "
                                          "consumer)"), u["reason"]
        elif u["unit"] == "onnxruntime/macos-arm64":  # AppleClang: only on a macOS runner
            assert u["reason"].startswith("dry run: would refuse: platform macos-arm64: "
                                          "AppleClang (Xcode, via xcrun) runs only on macos"), \
                u["reason"]
        else:
            assert "refuse" not in u["reason"]
        (step,) = u["steps"]
        steps[step["platform"]] = step
    assert not (ws / "releases").exists() and not (ws / ".prebake" / "dist").exists()
    return steps


def _cmd(step: dict[str, Any], needle: str) -> list[str]:
    return next(c for c in step["commands"] if any(needle in a for a in c))


def test_dry_run_lists_every_platform(dry_run: dict[str, dict[str, Any]]) -> None:
    assert set(dry_run) == {"wasm", "linux-x86_64", "linux-aarch64", "macos-arm64",
                            "macos-x86_64", "windows-x86_64"}
    for p in ("wasm", "linux-aarch64", "macos-arm64"):
        assert dry_run[p]["strategy"] == "build"
        for var in NO_FLAGS:
            if p == "wasm" and var == "EMCC_CFLAGS":  # prebake's own, not the caller's: only
                # the prefix map that keeps the unit's work folder out of the objects
                flags = dry_run[p]["env"][var].split()
                assert flags and all(f.startswith("-ffile-prefix-map=") and f.endswith("=.")
                                     and "/.prebake/work/wasm/" in f for f in flags), flags
                continue
            assert var not in dry_run[p]["env"], f"{p}: {var} leaks into the build"
        assert "-flto" not in json.dumps(dry_run[p]["env"])
        # the release's source archive (pending here: GitHub is not reachable); 1.21.0's
        # dependency archives are not fetched for 1.27.0
        (src,) = dry_run[p]["sources"]
        assert src.startswith("download https://github.com/microsoft/onnxruntime/archive/refs/"
                              "tags/v1.27.0.tar.gz: no digest in prebake.sources.lock"), src
    for p in ("linux-x86_64", "macos-x86_64", "windows-x86_64"):
        assert dry_run[p]["strategy"] == "repackage"
        assert dry_run[p]["download"][0].startswith(
            "https://github.com/microsoft/onnxruntime/releases/download/v1.27.0/onnxruntime-")


def test_wasm_uses_onnxruntime_build_py_with_the_pinned_emscripten(
        dry_run: dict[str, dict[str, Any]]) -> None:
    step = dry_run["wasm"]
    build = _cmd(step, "build.py")
    assert build[0] == "python3"  # the toolchain's own (its environment's, when it has one)
    assert build[1].endswith("/wasm/extra-onnxruntime/onnxruntime/src/tools/ci_build/build.py")
    for flag in ("--build_wasm_static_lib", "--enable_wasm_simd", "--enable_wasm_threads",
                 "--skip_tests", "--skip_submodule_sync", "--allow_running_as_root",
                 "--compile_no_warning_as_error"):
        assert flag in build
    # 1.27's build.py has --enable_wasm_jspi (exnref EH, JSPI): the recipe's release table
    # gives it instead of 1.21's explicit flags, which would fight it
    assert "--enable_wasm_jspi" in build
    assert "--disable_wasm_exception_catching" not in build
    assert not any(a.startswith(("CMAKE_C_FLAGS=", "CMAKE_CXX_FLAGS=")) for a in build), build
    assert build[build.index("--emsdk_version") + 1] == "3.1.6"
    for define in ("onnxruntime_BUILD_UNIT_TESTS=OFF", "CMAKE_POLICY_VERSION_MINIMUM=3.5",
                   "CMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG -fno-lto",
                   "CMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG -fno-lto",
                   "CMAKE_EXE_LINKER_FLAGS=-fno-lto"):  # the configure checks' links
        assert define in build, define
    # no emsdk download: a stand-in that is the platform's emcc, made before build.py runs
    assert not any("emscripten-core/emsdk" in " ".join(c) for c in step["commands"])
    standin = _cmd(step, "prebake.recipes.builtin.onnxruntime.emsdk_standin")
    supply = _cmd(step, "prebake.recipes.builtin.onnxruntime.fetchcontent")
    assert standin[-1].endswith("/src/cmake/external/emsdk")
    order = step["commands"].index
    assert order(supply) < order(standin) < order(build)
    # upstream's ar script, each lib once
    bundle = _cmd(step, "prebake.recipes.builtin.onnxruntime.bundle")
    assert bundle[-3].endswith("/Release/onnxruntime_webassembly.ar")
    assert bundle[-2].endswith("/prefix/lib/libonnxruntime.a") and bundle[-1] == "emar"
    assert order(build) < order(bundle)


def test_linux_aarch64_is_shared_with_xnnpack_a_cross_file_and_the_host_tools(
        dry_run: dict[str, dict[str, Any]]) -> None:
    step = dry_run["linux-aarch64"]
    build = _cmd(step, "build.py")
    for flag in ("--build_shared_lib", "--use_xnnpack", "--skip_tests", "--skip_submodule_sync",
                 "--allow_running_as_root", "--compile_no_warning_as_error"):
        assert flag in build
    assert "--enable_lto" not in build  # the cross archiver would drop it
    assert "onnxruntime_BUILD_UNIT_TESTS=OFF" in build
    # 1.21 has no onnxruntime_USE_ARM_NEON_NCHWC: a define CMake never reads claims nothing
    assert not any("NCHWC" in a for a in build)
    assert any(a.startswith("CMAKE_PROJECT_INCLUDE_BEFORE=") for a in build)  # deps supplied
    cmake = build[build.index("--cmake_path") + 1]  # CMake >= 3.28, the pinned host tool
    assert cmake.startswith("/") or cmake == "cmake"
    (toolchain,) = [a for a in build if a.startswith("CMAKE_TOOLCHAIN_FILE=")]
    assert toolchain.endswith("/linux-aarch64/extra-onnxruntime/toolchain/toolchain.cmake")
    protoc = build[build.index("--path_to_protoc_exe") + 1]
    assert protoc.startswith("/") or protoc == "protoc"  # the host's, resolved (or its name)
    assert f"ONNX_CUSTOM_PROTOC_EXECUTABLE={protoc}" in build
    assert "CC" not in step["env"] and "CXX" not in step["env"]  # the toolchain file says it


def test_macos_arm64_is_shared_with_coreml_xnnpack_and_13_3(
        dry_run: dict[str, dict[str, Any]]) -> None:
    step = dry_run["macos-arm64"]
    build = _cmd(step, "build.py")
    for flag in ("--build_shared_lib", "--use_coreml", "--use_xnnpack",
                 "--compile_no_warning_as_error"):
        assert flag in build
    assert "--allow_running_as_root" not in build and "--enable_lto" not in build
    assert "CMAKE_OSX_DEPLOYMENT_TARGET=13.3" in build  # the contract's macos_min
    assert build[build.index("--apple_deploy_target") + 1] == "13.3"
    assert "MACOSX_DEPLOYMENT_TARGET" not in step["env"]


def test_pending_archives_are_flagged_and_refused(dry_run: dict[str, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    """The example's lock records the upstream archives GitHub serves as pending (GitHub is not
    reachable here): plan works, and the build refuses exactly those units, naming the step."""
    assert dry_run["windows-x86_64"]["verified"] is False
    assert dry_run["windows-x86_64"]["sha256"] == ""
    ws = copy_workspace(tmp_path / "sdk")
    plan = prebake(ws, "plan", "--stage", "extra")
    assert plan.returncode == 0, plan.stderr
    rc, data = build_json(ws, "--unit", "onnxruntime/linux-x86_64")
    (unit,) = data["units"]
    assert rc == 1 and unit["state"] == "failed"
    assert ("onnxruntime-linux-x64-1.27.0.tgz has no digest in prebake.sources.lock"
            in unit["message"])
    assert "run `prebake pin onnxruntime 1.27.0` where its host is reachable" in unit["message"]
    assert not (ws / "releases").exists() or not list((ws / "releases").rglob("*.tar.xz"))
    check = prebake(ws, "pin", "--check")
    assert check.returncode == 1
    # the three release archives, and the release's source archive on each of six platforms
    # (its headers for the repackage legs, its tree for the source builds)
    assert check.stdout.count("is pending in prebake.sources.lock") == 9
    assert check.stdout.count("archive/refs/tags/v1.27.0.tar.gz is pending") == 6


# ---- the repackage path, for real ------------------------------------------------------------

C_API_HEADER = """\
#ifndef ONNXRUNTIME_C_API_H
#define ONNXRUNTIME_C_API_H
/* the part of onnxruntime_c_api.h the link test needs (the real header is 5000 lines) */
#ifdef __cplusplus
extern "C" {
#endif
#define ORT_API_VERSION 30
typedef struct OrtApi OrtApi;
typedef struct OrtApiBase {
  const OrtApi* (*GetApi)(unsigned int version);
  const char* (*GetVersionString)(void);
} OrtApiBase;
const OrtApiBase* OrtGetApiBase(void);
#ifdef __cplusplus
}
#endif
#endif
"""


def upstream_archive(ort_node: Path, dest: Path) -> Path:
    """``onnxruntime-linux-x64-1.30.0.tgz`` laid out like the GitHub release archive."""
    so = ort_node / "bin" / "napi-v6" / "linux" / "x64" / "libonnxruntime.so.1"
    top = dest / f"onnxruntime-linux-x64-{VERSION}"
    (top / "lib").mkdir(parents=True)
    (top / "include").mkdir()
    shutil.copyfile(so, top / "lib" / f"libonnxruntime.so.{VERSION}")
    (top / "lib" / "libonnxruntime.so.1").symlink_to(f"libonnxruntime.so.{VERSION}")
    (top / "lib" / "libonnxruntime.so").symlink_to("libonnxruntime.so.1")
    (top / "include" / "onnxruntime_c_api.h").write_text(C_API_HEADER)
    (top / "include" / "onnxruntime_cxx_api.h").write_text("#include \"onnxruntime_c_api.h\"\n")
    (top / "LICENSE").write_text("MIT License\n\nCopyright (c) Microsoft Corporation\n")
    (top / "VERSION_NUMBER").write_text(VERSION + "\n")
    tgz = dest / f"onnxruntime-linux-x64-{VERSION}.tgz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(top, arcname=top.name)
    shutil.rmtree(top)
    return tgz


WORKSPACE = support.gcc_workspace(
    "ort-sdk", 'onnxruntime = "{version}"\nemsdk = "5.0.5"', "extra", '["onnxruntime"]',
    version="0.1.0", contract='arch = "x86_64"\nglibc_max = "2.28"\n'
                             'forbid_exports = ["_ZN6google8protobuf*", "_ZN4absl*"]')

RECIPE = """\
# The built-in onnxruntime recipe, reduced to linux-x86_64 with its archive pinned for this
# test: the first URL is a mirror that is down, the second serves the upstream-layout archive.
import dataclasses

from prebake.recipes import Outputs, Repackage
from prebake.recipes.loader import BUILTIN_DIR, load_recipe_file

_base = load_recipe_file(BUILTIN_DIR / "onnxruntime" / "recipe.py")
_linux = _base.platforms["linux-x86_64"]
_out = _base.outputs
RECIPE = dataclasses.replace(
    _base, path=None, kind={{"linux-x86_64": _base.kind_for("linux-x86_64")}}, sources=(), files=(),
    outputs=Outputs(libs={{"linux-x86_64": _out.libs_for("linux-x86_64")}},
                    headers=_out.headers, license=_out.license),
    platforms={{"linux-x86_64": Repackage(
        url="{down}/down/onnxruntime-linux-x64-{{version}}.tgz",
        mirrors=("{base}/v{{version}}/onnxruntime-linux-x64-{{version}}.tgz",),
        layout=_linux.layout,
    ),
}})
"""


def test_repackage_downloads_from_the_next_mirror_guards_and_packages(
        ort_node: Path, www: tuple[str, Path], tmp_path: Path) -> None:
    base, root = www
    (root / f"v{VERSION}").mkdir()
    tgz = upstream_archive(ort_node, root / f"v{VERSION}")
    sha = hashlib.sha256(tgz.read_bytes()).hexdigest()
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE.format(version=VERSION))
    down = closed_port_url()
    (ws / "recipes" / "onnxruntime.py").write_text(RECIPE.format(down=down, base=base))
    cache = tmp_path / "cache"
    env = {"PREBAKE_CACHE": str(cache)}
    # before `prebake pin` the archive has no digest: no plan, and the message says what to run
    refused = prebake(ws, "plan", env=env)
    assert refused.returncode == 2 and f"run `prebake pin onnxruntime {VERSION}`" in refused.stderr
    pinned = prebake(ws, "pin", "onnxruntime", VERSION, env=env)
    assert pinned.returncode == 0, pinned.stderr
    assert "/down/" in pinned.stderr and "trying the next mirror" in pinned.stderr
    lock = (ws / "prebake.sources.lock").read_text()
    url = f"{down}/down/onnxruntime-linux-x64-{VERSION}.tgz"  # keyed by the recipe's URL
    assert f'url = "{url}"\nsha256 = "{sha}"\nsize = {tgz.stat().st_size}' in lock
    rc, data = build_json(ws, "--platform", "linux-x86_64", env=env)
    (unit,) = data["units"]
    assert rc == 0, unit["message"]
    assert unit["state"] == "built"
    assert unit["asset"] == f"onnxruntime-{VERSION}-linux-x86_64.tar.xz"
    log = Path(unit["log"]).read_text()
    assert f"sha256 {sha} verified" in log
    assert "OrtGetApiBase" in (ws / ".prebake" / "work" / "linux-x86_64" / "extra-onnxruntime"
                               / "onnxruntime" / "link-test" / "onnxruntime" / "consumer.c"
                               ).read_text()
    assert (cache / "sources" / sha).is_file(), "the download is cached by content"
    asset = next((ws / "releases").rglob(unit["asset"]))
    with tarfile.open(asset) as tf:
        names = set(tf.getnames())
        link = tf.getmember("lib/libonnxruntime.so")
        assert link.issym() and link.linkname == "libonnxruntime.so.1"
        manifest = json.loads(tf.extractfile("share/prebake/manifest.json").read())  # type: ignore[union-attr]
    assert {f"lib/libonnxruntime.so.{VERSION}", "include/onnxruntime_c_api.h",
            "share/licenses/onnxruntime/LICENSE", "lib/cmake/onnxruntime/onnxruntimeConfig.cmake",
            "lib/pkgconfig/onnxruntime.pc"} <= names
    (facts,) = manifest["facts"]
    assert facts["kind"] == "shared-library" and facts["abi"]["glibc_max"] == "2.28"
    files = {f["path"]: f for f in manifest["files"]}
    real = ort_node / "bin" / "napi-v6" / "linux" / "x64" / "libonnxruntime.so.1"
    assert files[f"lib/libonnxruntime.so.{VERSION}"]["sha256"] == hashlib.sha256(
        real.read_bytes()).hexdigest()

    # a second run skips by hash without touching the network (the archive is gone)
    for p in root.rglob("*.tgz"):
        p.unlink()
    rc, data = build_json(ws, "--platform", "linux-x86_64", env=env)
    assert rc == 0 and data["units"][0]["state"] == "skipped"


def test_repackage_with_a_wrong_pin_fails_and_caches_nothing(
        ort_node: Path, www: tuple[str, Path], tmp_path: Path) -> None:
    base, root = www
    (root / f"v{VERSION}").mkdir()
    upstream_archive(ort_node, root / f"v{VERSION}")
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE.format(version=VERSION))
    down = closed_port_url()
    (ws / "recipes" / "onnxruntime.py").write_text(RECIPE.format(down=down, base=base))
    (archive,) = (root / f"v{VERSION}").glob("*.tgz")
    (ws / "prebake.sources.lock").write_text(  # a lock whose digest is not the archive's
        f'version = 1\n[[source]]\nurl = "{down}/down/onnxruntime-linux-x64-{VERSION}.tgz"\n'
        f'sha256 = "{"0" * 64}"\nsize = {archive.stat().st_size}\n')
    cache = tmp_path / "cache"
    rc, data = build_json(ws, "--platform", "linux-x86_64", env={"PREBAKE_CACHE": str(cache)})
    assert rc == 1
    assert "not the lock's" in data["units"][0]["message"]
    assert not any(p.is_file() for p in (cache / "sources").rglob("*"))
    assert not (ws / "releases").exists() or not list((ws / "releases").rglob("*.tar.xz"))
    # a lock that says 1 byte: the download stops there, in one line, and keeps nothing
    lock = ws / "prebake.sources.lock"
    lock.write_text(lock.read_text().replace(f"size = {archive.stat().st_size}", "size = 1"))
    rc, data = build_json(ws, "--platform", "linux-x86_64", env={"PREBAKE_CACHE": str(cache)})
    message = data["units"][0]["message"]
    assert rc == 1 and "\n" not in message
    assert "longer than the 1 bytes prebake.sources.lock records" in message, message
    assert not any(p.is_file() for p in (cache / "sources").rglob("*"))


def test_example_workspace_is_untouched() -> None:
    assert not (EXAMPLE / "recipes" / "onnxruntime.py").exists()
