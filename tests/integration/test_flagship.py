"""The flagship workspace (examples/flagship) at the scale the suite can afford.

The wasm build from source takes about 35 minutes on 2 cores: it is ``scripts/long-leg``, and
docs/flagship.md records its run. Here every piece of its logic runs on real files instead:
the repackage legs end to end from Microsoft's 1.21.0 wheels (guards, import libraries, the
soname chain, the version proof, a real inference through the fetched asset), the version
table against the real ``deps.txt`` of the release, the stand-in emsdk against a real emcc,
the ``-flto`` neutraliser on a real Emscripten CMake build, and the bad inputs the issue
names (another release's wheel, another release's header, a wrong Emscripten pin).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from prebake.model.recipe import Recipe, UrlSource, VersionCheck
from prebake.package import version_proof
from prebake.recipes.builtin.onnxruntime import emsdk_standin, fetchcontent
from prebake.recipes.builtin.onnxruntime import recipe as ort_recipe
from prebake.sources import SourceCache, materialize
from prebake.sources.lock import Locked, read_source_lock
from prebake.sources.mirrors import Resolver
from tests import support
from tests.mirror_build import mirror_of_lock
from tests.servers.registries import machine_config

FLAGSHIP = support.ROOT / "examples" / "flagship"
DEPS_TABLE = support.ROOT / "src" / "prebake" / "recipes" / "builtin" / "onnxruntime" / "deps.toml"
SOURCE_SHA = "32df1f82bd6b07b18372c0f387133214905cbde7a586b3ad83f0ed0075f80273"
# prebake's own download cache for the suite: the wheels and the source archive, once
PREBAKE_CACHE = support.CACHE / "prebake-cache"


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {"PREBAKE_CACHE": str(PREBAKE_CACHE)}
    env.update(extra or {})
    return env


def _prebake(ws: Path, *args: str, env: Mapping[str, str] | None = None,
             timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return support.prebake("-C", ws, *args, env=_env(env), timeout=timeout)


def _facts(path: Path, *flags: str) -> dict[str, Any]:
    """``prebake inspect --json`` of one path (one object)."""
    proc = support.prebake("inspect", "--json", *flags, path)
    assert proc.returncode == 0, proc.stderr
    (facts,) = json.loads(proc.stdout)["results"]
    return dict(facts)


def _copy(dest: Path) -> Path:
    shutil.copytree(FLAGSHIP, dest, ignore=shutil.ignore_patterns(".prebake", "releases"))
    return dest


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The three x86_64 repackage legs, built, guarded and published once (onnxruntime's
    units alone: FFmpeg's, in the same stage, build from source in scripts/long-leg), on a
    machine whose mirrors have other names: apt and pip point at a mirror on 127.0.0.1 with
    its own paths (``tests.mirror_build``) serving the locked files, and the download cache
    starts empty, so every wheel and the source archive come through the references."""
    top = tmp_path_factory.mktemp("flagship")
    ws = _copy(top / "ws")
    with mirror_of_lock(ws, top / "mirror") as mirror:
        env = {**machine_config(top / "home", mirror, suite="trixie"),
               "PREBAKE_CACHE": str(top / "cache")}
        proc = support.prebake("-C", ws, "build", *(f"--unit=onnxruntime/{p}" for p in (
            "linux-x86_64", "windows-x86_64", "macos-x86_64")), "--json", env=env,
            timeout=1800)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len([r for r in mirror.requests if r.startswith("/pkgs/files/")]) == 3
    return ws, {u["unit"]: u for u in data["units"]}


def _manifest(ws: Path, platform: str) -> dict[str, Any]:
    (sidecar,) = (ws / "releases").rglob(f"onnxruntime-1.21.0-{platform}.tar.xz.json")
    return dict(json.loads(sidecar.read_text()))


def _members(ws: Path, platform: str) -> dict[str, tarfile.TarInfo]:
    (asset,) = (ws / "releases").rglob(f"onnxruntime-1.21.0-{platform}.tar.xz")
    with tarfile.open(asset) as tf:
        return {m.name: m for m in tf.getmembers()}


def test_every_desktop_leg_is_built_guarded_and_published(
        desktop: tuple[Path, dict[str, Any]]) -> None:
    _, units = desktop
    for platform in ("linux-x86_64", "windows-x86_64", "macos-x86_64"):
        assert units[f"onnxruntime/{platform}"]["state"] == "built", units


def test_linux_keeps_the_soname_chain_and_proves_the_version(
        desktop: tuple[Path, dict[str, Any]]) -> None:
    ws, _ = desktop
    members = _members(ws, "linux-x86_64")
    assert members["lib/libonnxruntime.so"].linkname == "libonnxruntime.so.1"
    assert members["lib/libonnxruntime.so.1"].linkname == "libonnxruntime.so.1.21.0"
    assert members["lib/libonnxruntime.so.1.21.0"].isfile()
    assert "include/onnxruntime_c_api.h" in members
    assert "share/licenses/onnxruntime/ThirdPartyNotices.txt" in members
    said = json.dumps(_manifest(ws, "linux-x86_64"))
    for evidence in ("ORT_API_VERSION", "version node VERS_1.21.0", "soname"):
        assert evidence in said, evidence
    (asset,) = (ws / "releases").rglob("*linux-x86_64.tar.xz")
    lib = _facts(asset)  # an asset's result is its one library, by the file the links end at
    assert lib["path"].endswith("!lib/libonnxruntime.so.1.21.0"), lib["path"]
    assert lib["soname"] == "libonnxruntime.so.1"
    assert lib["abi"]["glibc_max"] in ("2.27", "2.17", "2.26")  # within the 2.28 floor


def test_windows_ships_import_libraries_made_from_the_dll(
        desktop: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = desktop
    (asset,) = (ws / "releases").rglob("onnxruntime-1.21.0-windows-x86_64.tar.xz")
    with tarfile.open(asset) as tf:
        tf.extractall(tmp_path, filter="data")
    lib = tmp_path / "lib"
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == ["onnxruntime.dll"]
    assert not list(lib.glob("*.dll"))
    dll = _facts(tmp_path / "bin" / "onnxruntime.dll", "--symbols")
    implib = _facts(lib / "onnxruntime.lib", "--symbols")
    assert [e["name"] for e in dll["exports"]] == [
        "OrtGetApiBase", "OrtSessionOptionsAppendExecutionProvider_CPU"]
    defined = {s["name"] for m in implib["members"] for s in m["defined"]}
    assert {"OrtGetApiBase", "__imp_OrtGetApiBase"} <= defined
    # the MinGW import library links a real consumer against the DLL's name (windows.h first:
    # 1.21's header needs the SAL macros MinGW's sal.h defines, see docs/flagship.md)
    src = tmp_path / "c.c"
    src.write_text("#include <windows.h>\n#include <onnxruntime_c_api.h>\n"
                   "int main(void) { return OrtGetApiBase() == 0; }\n")
    support.run(["x86_64-w64-mingw32-gcc", f"-I{tmp_path / 'include'}", str(src),
                 str(lib / "libonnxruntime.dll.a"), "-o", str(tmp_path / "c.exe")], tmp_path)
    exe = _facts(tmp_path / "c.exe")
    assert "onnxruntime.dll" in exe["needed"]


def test_the_fetched_windows_asset_runs_a_real_model_under_wine(
        desktop: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The consumer cross-built by MinGW-w64 through the asset's CMake package (its import
    library; the DLL copied from bin/ next to it) runs Microsoft's DLL under Wine: the same
    outputs as numpy, also from a folder whose name the ANSI code page cannot spell (the
    consumer reads its paths from the wide command line, as onnxruntime takes them)."""
    ws, _ = desktop
    into = tmp_path / "asset"
    proc = _prebake(ws, "fetch", "onnxruntime==1.21.0", "--platform", "windows-x86_64",
                    "--into", str(into), "--lock", str(tmp_path / "prebake.lock"))
    assert proc.returncode == 0, proc.stderr
    model = tmp_path / "modèle-模型"
    support.run([sys.executable, str(FLAGSHIP / "consumer" / "make_model.py"), str(model)],
                tmp_path)
    support.run(["cmake", "-S", str(FLAGSHIP / "consumer"), "-B", str(tmp_path / "b"),
                 f"-DCMAKE_TOOLCHAIN_FILE={FLAGSHIP / 'consumer' / 'mingw-w64.cmake'}",
                 f"-DCMAKE_PREFIX_PATH={into}"], tmp_path)
    support.run(["cmake", "--build", str(tmp_path / "b")], tmp_path)
    exe = tmp_path / "b" / "ort_check.exe"
    assert _facts(exe)["needed"][0] == "onnxruntime.dll"
    assert (tmp_path / "b" / "onnxruntime.dll").read_bytes() == (
        into / "bin" / "onnxruntime.dll").read_bytes()
    run = support.run_windows(exe, str(model / "model.onnx"), str(model / "reference.txt"))
    assert run.returncode == 0, run
    assert "onnxruntime 1.21.0 (API 21), providers: CPU" in run.stdout
    assert re.search(r"max \|onnxruntime - reference\| = \S+ over 8 outputs .*: equal",
                     run.stdout), run.stdout


def test_macos_keeps_the_universal2_library_and_says_so(
        desktop: tuple[Path, dict[str, Any]]) -> None:
    ws, _ = desktop
    members = _members(ws, "macos-x86_64")
    assert members["lib/libonnxruntime.dylib"].linkname == "libonnxruntime.1.21.0.dylib"
    (lib,) = _manifest(ws, "macos-x86_64")["facts"]  # the declared output, kept universal2
    assert lib["path"] == "lib/libonnxruntime.dylib", lib
    assert lib["soname"] == "@rpath/libonnxruntime.1.21.0.dylib", lib
    assert lib["format"] == "macho-fat" and lib["abi"]["macos_min"] == "13.3", lib


def test_the_fetched_linux_asset_runs_a_real_model(
        desktop: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    ws, _ = desktop
    into = tmp_path / "asset"
    proc = _prebake(ws, "fetch", "onnxruntime==1.21.0", "--platform", "linux-x86_64",
                    "--into", str(into), "--lock", str(tmp_path / "prebake.lock"))
    assert proc.returncode == 0, proc.stderr
    support.run([sys.executable, str(FLAGSHIP / "consumer" / "make_model.py"),
                 str(tmp_path / "model")], tmp_path)
    support.run(["cmake", "-S", str(FLAGSHIP / "consumer"), "-B", str(tmp_path / "b"),
                 f"-DCMAKE_PREFIX_PATH={into}"], tmp_path)
    support.run(["cmake", "--build", str(tmp_path / "b")], tmp_path)
    run = support.run([str(tmp_path / "b" / "ort_check"), str(tmp_path / "model/model.onnx"),
                       str(tmp_path / "model/reference.txt")], tmp_path)
    assert "onnxruntime 1.21.0 (API 21), providers: CPU" in run.stdout
    assert re.search(r"max \|onnxruntime - reference\| = \S+ over 8 outputs .*: equal",
                     run.stdout), run.stdout


def test_a_wheel_of_another_release_is_refused_and_nothing_published(tmp_path: Path) -> None:
    ws = _copy(tmp_path / "ws")
    toml = ws / "prebake.toml"
    other = "pypi:onnxruntime==1.27.0#cp311-cp311-manylinux_2_28_x86_64"
    text = re.sub(r'("https://github.com/microsoft/onnxruntime/releases/download/v1\.21\.0/'
                  r'onnxruntime-linux-x64-1\.21\.0\.tgz" = )"[^"]+"', rf'\1"{other}"',
                  toml.read_text())
    toml.write_text(text)
    pin = _prebake(ws, "pin", "onnxruntime", "1.21.0", "--platform", "linux-x86_64")
    assert pin.returncode == 0, pin.stdout + pin.stderr
    proc = _prebake(ws, "build", "--unit", "onnxruntime/linux-x86_64")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "libonnxruntime.so.1.27.0" in out and "expected 1.21.0" in out, out
    assert not list((ws / "releases").rglob("*.tar.xz"))


def test_a_header_of_another_release_is_refused(tmp_path: Path) -> None:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "onnxruntime_c_api.h").write_text("#define ORT_API_VERSION 27\n")
    recipe = Recipe("onnxruntime", "onnxruntime",
                    version_check=VersionCheck("include/onnxruntime_c_api.h",
                                               ("ORT_API_VERSION",), component=1))
    proof = version_proof.prove(recipe, "1.21.0", tmp_path, ["include/onnxruntime_c_api.h"])
    assert not proof.ok
    assert "ORT_API_VERSION 27 (expected 21 (component 1 of 1.21.0))" in proof.failure("ort")
    ok = version_proof.prove(recipe, "1.27.1", tmp_path, ["include/onnxruntime_c_api.h"])
    assert ok.ok, ok.failure("ort")


def _locked(fragment: str) -> tuple[Locked, Path]:
    """The flagship's one locked archive whose reference holds ``fragment``, fetched into the
    suite's prebake cache through this machine's mirrors: its lock entry and file. Fixtures
    call it, so the download happens before the tests' network guard."""
    lock = read_source_lock(FLAGSHIP)
    (entry,) = [e for e in lock.entries.values() if fragment in e.url]
    path = SourceCache(PREBAKE_CACHE, Resolver()).fetch([entry.url], entry.sha256,
                                                        size=entry.size)
    return entry, path


@pytest.fixture(scope="session")
def ort_source() -> Path:
    """onnxruntime 1.21.0's source archive as the flagship's lock pins it."""
    entry, path = _locked("onnxruntime_1.21.0")
    assert entry.sha256 == SOURCE_SHA
    return path


def test_the_version_table_matches_the_release_deps_txt(ort_source: Path,
                                                       tmp_path: Path) -> None:
    with tarfile.open(ort_source) as tf:
        member = tf.extractfile("onnxruntime-1.21.0/cmake/deps.txt")
        assert member is not None
        deps_txt = tmp_path / "deps.txt"
        deps_txt.write_bytes(member.read())
    table = fetchcontent.load_table(DEPS_TABLE)["1.21.0"]
    listed = fetchcontent.parse_deps_txt(deps_txt.read_text())
    for dep in table:  # every dependency the table supplies is the release's own URL
        assert listed[dep.name][1] == dep.url, dep.name
    # placed as the build places them: archives and unpacked trees under deps/
    deps = tmp_path / "deps"
    for dep in table:
        if dep.take == "archive":
            deps.mkdir(exist_ok=True)
            (deps / f"{dep.name}.tar.gz").write_bytes(dep.name.encode())
        for _, sub in (dep.variables or (("", dep.subdir),)) if dep.take != "archive" else ():
            (deps / dep.name / sub).mkdir(parents=True, exist_ok=True)
    script, said = fetchcontent.supply(table, deps_txt, deps)
    rewritten = fetchcontent.parse_deps_txt(deps_txt.read_text())
    assert rewritten["abseil_cpp"][1] == str(deps / "abseil_cpp.tar.gz")
    # FetchContent still checks a SHA1: the placed archive's own
    assert rewritten["abseil_cpp"][2] == hashlib.sha1(b"abseil_cpp").hexdigest()
    assert rewritten["cxxopts"][1].startswith("https://")  # what the table leaves alone
    assert f'set(FETCHCONTENT_SOURCE_DIR_EIGEN "{deps / "eigen"}"' in script
    assert "set(boost_headers_DIR" in script and "set(safeint_SOURCE_DIR" in script
    # KleidiAI has no archive: XNNPACK's use of it is off and its target an empty one
    assert 'set(XNNPACK_ENABLE_KLEIDIAI "OFF"' in script
    assert "add_library(kleidiai INTERFACE)" in (deps / "kleidiai" / "CMakeLists.txt").read_text()
    assert len(said) == len(table) + 2  # mp11 sets two variables, kleidiai a setting and a target


def test_the_cuda_kernels_left_out_of_the_source_are_read_by_cuda_builds_only(
        ort_source: Path) -> None:
    """The recipe does not unpack ``contrib_ops/cuda`` (two thirds of the archive's bytes):
    no source outside the GPU providers includes it, and the CMake files outside them that
    name it only glob it into ``onnxruntime_cuda_*`` lists that only GPU CMake files read (or
    list it for a reduced-ops build's substitution). A release that starts to need it fails
    here, not an hour into a build."""
    [source] = [s for s in ort_recipe.RECIPE.sources
                if isinstance(s, UrlSource) and s.url == ort_recipe.SOURCE]
    assert source.skip == ort_recipe.NOT_BUILT == ("onnxruntime/contrib_ops/cuda",)
    gpu = re.compile(r"/(cuda|rocm|training|orttraining|test|migraphx|tensorrt)/|"
                     r"cmake/onnxruntime_(providers_(cuda|rocm)|kernel_explorer|rocm_hipify)")
    includes, cmake = [], {}
    with tarfile.open(ort_source) as tf:
        for m in tf:
            name = m.name.split("/", 1)[-1]
            if not m.isfile() or name.startswith(source.skip) or gpu.search("/" + name):
                continue
            code = name.endswith((".cc", ".h", ".cpp", ".cu", ".inc"))
            if not (code or name.endswith((".cmake", "CMakeLists.txt"))):
                continue
            f = tf.extractfile(m)
            assert f is not None
            data = f.read()
            if not code:
                cmake[name] = data.decode()
            elif b"contrib_ops/cuda/" in data:
                includes.append(name)
    assert includes == []
    naming = {n for n, text in cmake.items() if "contrib_ops/cuda" in text}
    assert naming == {"cmake/onnxruntime_providers_cpu.cmake",
                      "cmake/onnxruntime_providers.cmake"}
    lists = set(re.findall(r"file\(GLOB_RECURSE (\w+)[^)]*contrib_ops/cuda",
                           cmake["cmake/onnxruntime_providers_cpu.cmake"]))
    assert lists == {"onnxruntime_cuda_contrib_ops_cc_srcs",
                     "onnxruntime_cuda_contrib_ops_cu_srcs"}
    for var in lists:  # read by no CMake file of a CPU or wasm build
        assert [n for n, text in cmake.items() if "${" + var + "}" in text] == []
    # the reduced-ops substitution names the file among others it replaces when present
    text = cmake["cmake/onnxruntime_providers.cmake"]
    assert text.count("contrib_ops/cuda") == 1
    assert re.search(r"function\(substitute_op_reduction_srcs[^§]*?contrib_ops/cuda/"
                     r"cuda_contrib_kernels\.cc", text)


@pytest.fixture(scope="session")
def boost_deb() -> UrlSource:
    """Debian's libboost1.83-dev as the flagship's lock pins it."""
    entry, _ = _locked("libboost1.83-dev")
    return UrlSource(entry.url, sha256=entry.sha256, size=entry.size, dest="deps/mp11")


def test_the_mp11_members_are_all_the_build_reads_of_debians_boost(
        boost_deb: UrlSource, tmp_path: Path) -> None:
    """The table unpacks 3 paths of Debian's libboost1.83-dev (17 000 files): the folders its
    variables name exist, and mp11 compiles with nothing else of Boost beside it."""
    (mp11,) = [d for d in fetchcontent.load_table(DEPS_TABLE)["1.21.0"] if d.name == "mp11"]
    assert mp11.members
    src = dataclasses.replace(boost_deb, members=mp11.members)
    tree = materialize(src, tmp_path / "work", DEPS_TABLE.parent,
                       SourceCache(PREBAKE_CACHE))
    for _, sub in mp11.variables:
        assert (tree / sub).is_dir(), sub
    files = [p for p in tree.rglob("*") if p.is_file()]
    assert 30 < len(files) < 100, len(files)
    (tmp_path / "m.cc").write_text(
        "#include <boost/mp11.hpp>\n"
        "using L = boost::mp11::mp_list<int, char, long>;\n"
        "static_assert(boost::mp11::mp_size<L>::value == 3);\n"
        "int main() { return boost::mp11::mp_find<L, char>::value - 1; }\n")
    proc = subprocess.run(["g++", "-std=c++17", "-I", str(tree / "include"), "-o",
                           str(tmp_path / "m"), str(tmp_path / "m.cc")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(tmp_path / "m")]).returncode == 0


def test_an_absent_dependency_configures_without_a_download(tmp_path: Path) -> None:
    """A real CMake configure: FetchContent of an unreachable URL, linked like onnxruntime
    links kleidiai, is served by the step's empty INTERFACE target and never downloaded."""
    url = "https://unreachable.invalid/kleidiai.zip"
    deps_txt = tmp_path / "deps.txt"
    deps_txt.write_text(f"kleidiai;{url};0\n")
    dep = fetchcontent.Dep("kleidiai", url, "absent", cache=(("USE_KLEIDIAI", "OFF"),),
                           reason="no archive")
    script, _said = fetchcontent.supply([dep], deps_txt, tmp_path / "deps")
    (tmp_path / "supplied.cmake").write_text(script)
    project = tmp_path / "p"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(p C)\ninclude(FetchContent)\n"
        f"FetchContent_Declare(kleidiai URL {url})\nFetchContent_MakeAvailable(kleidiai)\n"
        'file(WRITE ${CMAKE_BINARY_DIR}/m.c "int main(void){return 0;}")\n'
        "add_executable(m ${CMAKE_BINARY_DIR}/m.c)\ntarget_link_libraries(m kleidiai)\n"
        'message(STATUS "USE_KLEIDIAI=${USE_KLEIDIAI}")\n')
    proc = subprocess.run(["cmake", "-S", str(project), "-B", str(tmp_path / "b"),
                           f"-DCMAKE_PROJECT_INCLUDE_BEFORE={tmp_path / 'supplied.cmake'}"],
                          capture_output=True, text=True, env=support.tool_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "USE_KLEIDIAI=OFF" in proc.stdout
    assert "unreachable.invalid" not in proc.stdout + proc.stderr  # nothing downloaded
    built = subprocess.run(["cmake", "--build", str(tmp_path / "b")], capture_output=True,
                           text=True, env=support.tool_env())
    assert built.returncode == 0, built.stdout + built.stderr


def test_an_absent_dependency_needs_a_reason_and_its_switch(tmp_path: Path) -> None:
    table = tmp_path / "deps.toml"
    table.write_text('["1.0".x]\nurl = "https://example.invalid/x.zip"\ntake = "absent"\n')
    with pytest.raises(fetchcontent.PrebakeError, match="needs a reason and the cache settings"):
        fetchcontent.load_table(table)


def test_a_table_for_another_release_fails_naming_the_entry(tmp_path: Path) -> None:
    deps_txt = tmp_path / "deps.txt"
    deps_txt.write_text("abseil_cpp;https://github.com/abseil/abseil-cpp/archive/refs/tags/"
                        "20250127.0.zip;0123456789012345678901234567890123456789\n")
    table = [d for d in fetchcontent.load_table(DEPS_TABLE)["1.21.0"] if d.name == "abseil_cpp"]
    with pytest.raises(fetchcontent.PrebakeError, match=r"abseil_cpp is .*20250127\.0\.zip, "
                       r"the recipe's table says .*20240722\.0\.zip"):
        fetchcontent.supply(table, deps_txt, tmp_path)
    # a missing archive is an error too, never a silent download
    deps_txt.write_text("abseil_cpp;" + table[0].url + ";0\n")
    with pytest.raises(fetchcontent.PrebakeError, match="expected one archive abseil_cpp"):
        fetchcontent.supply(table, deps_txt, tmp_path)


def test_the_stand_in_emsdk_is_the_emcc_on_path(tmp_path: Path) -> None:
    folder = tmp_path / "cmake" / "external" / "emsdk"
    emsdk_standin.make(folder)
    env = support.tool_env()
    version = re.search(r"\) (\d+\.\d+\.\d+)", subprocess.run(
        ["emcc", "--version"], capture_output=True, text=True, env=env).stdout)
    assert version, "no emcc here"
    ok = subprocess.run([str(folder / "emsdk"), "install", version.group(1)], cwd=folder,
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    real = Path(os.path.realpath(shutil.which("emcc", path=env["PATH"]) or "")).parent
    assert (folder / "upstream" / "emscripten").resolve() == real
    assert (folder / "upstream/emscripten/cmake/Modules/Platform/Emscripten.cmake").is_file()
    bad = subprocess.run([str(folder / "emsdk"), "activate", "4.0.3"], cwd=folder,
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 1
    assert "asked for 4.0.3, but the toolchain's emcc" in bad.stderr
    assert version.group(1) in bad.stderr


FLTO_PROJECT = {
    # onnxruntime's cmake/adjust_global_compile_flags.cmake, the part that matters here
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.20)\nproject(ltoprobe CXX)\n"
                      "string(APPEND CMAKE_CXX_FLAGS \" -flto\")\n"
                      "add_library(probe STATIC probe.cc)\n",
    "probe.cc": "int probe(int x) { return x * 3; }\n",
}


CHECK_PROJECT = {
    # onnxruntime appends -flto before its configure checks (abseil's, its own -W probes)
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.20)\nproject(ltocheck CXX)\n"
                      "string(APPEND CMAKE_CXX_FLAGS \" -flto\")\n"
                      "include(CheckCXXSourceCompiles)\n"
                      "check_cxx_source_compiles(\"int main() { return 0; }\" PROBE_LINKS)\n",
}


@pytest.mark.parametrize("neutralised", [True, False])
def test_configure_checks_link_without_lto(tmp_path: Path, neutralised: bool) -> None:
    """A check's try_compile takes CMAKE_CXX_FLAGS (with onnxruntime's -flto) but no _RELEASE
    flags: the recipe's CMAKE_EXE_LINKER_FLAGS=-fno-lto must come after it on the link line,
    so that no check links Emscripten's bitcode system libraries with LTO (~4 s a link)."""
    for name, text in CHECK_PROJECT.items():
        (tmp_path / name).write_text(text)
    flag = ["-DCMAKE_EXE_LINKER_FLAGS=-fno-lto"] if neutralised else []
    support.run(["emcmake", "cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b"),
                 "-DCMAKE_BUILD_TYPE=Release", *flag], tmp_path)
    logs = [p for p in (tmp_path / "b" / "CMakeFiles").rglob("*") if p.name in (
        "CMakeOutput.log", "CMakeConfigureLog.yaml")]
    text = "\n".join(p.read_text() for p in logs)
    links = [line for line in text.splitlines() if "em++" in line and " -o cmTC_" in line]
    assert links, f"no check link line in {[str(p) for p in logs]}"
    for line in links:
        words = line.split()
        assert "-flto" in words
        if neutralised:
            assert "-fno-lto" in words[words.index("-flto"):], line
        else:
            assert "-fno-lto" not in words, line


@pytest.mark.parametrize("neutralised", [True, False])
def test_the_flto_neutraliser_leaves_wasm_objects(tmp_path: Path, neutralised: bool) -> None:
    for name, text in FLTO_PROJECT.items():
        (tmp_path / name).write_text(text)
    release = ["-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG -fno-lto"] if neutralised else []
    support.run(["emcmake", "cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b"),
                 "-DCMAKE_BUILD_TYPE=Release", *release], tmp_path)
    support.run(["cmake", "--build", str(tmp_path / "b")], tmp_path)
    lib = tmp_path / "b" / "libprobe.a"
    members = _facts(lib)["members"]
    assert {m["abi"]["lto"] for m in members} == {"none" if neutralised else "llvm-bitcode"}
    assert {m["format"] for m in members} == {"wasm" if neutralised else "llvm-bitcode"}
    # the guard decides on the bytes, whatever the flags said: bitcode fails lto = "none"
    contract = tmp_path / "c.toml"
    contract.write_text('arch = "wasm32"\nlto = "none"\n')
    check = support.prebake("check", "--contract", contract, lib)
    assert check.returncode == (0 if neutralised else 1), check.stdout + check.stderr
    if not neutralised:
        assert "lto: required none, found llvm-bitcode" in check.stdout + check.stderr


def test_wasm_is_refused_while_its_environment_is_not_installed(tmp_path: Path) -> None:
    ws = _copy(tmp_path / "ws")
    proc = _prebake(ws, "build", "--platform", "wasm",
                    env={"PREBAKE_TOOLCHAINS": str(tmp_path / "toolchains")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("toolchain environment debian-sid-emscripten is not installed: run `prebake "
            "toolchain install --platform wasm`") in proc.stderr
    assert not (ws / "releases").exists()


def test_the_wasm_leg_asks_1_21_for_exnref_explicitly(tmp_path: Path) -> None:
    """1.21's build.py has no --enable_wasm_jspi: the recipe's release table gives its flags
    (the dry run shows the commands even while the environment is not installed)."""
    proc = _prebake(_copy(tmp_path / "ws"), "build", "--unit", "onnxruntime/wasm", "--dry-run",
                    "--json", env={"PREBAKE_TOOLCHAINS": str(tmp_path / "toolchains")})
    (unit,) = json.loads(proc.stdout)["units"]
    (build,) = [c for c in unit["steps"][0]["commands"] if any("build.py" in a for a in c)]
    for flag in ("CMAKE_C_FLAGS=-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0",
                 "CMAKE_CXX_FLAGS=-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0",
                 "--disable_wasm_exception_catching", "--enable_wasm_simd",
                 "--enable_wasm_threads", "CMAKE_POLICY_VERSION_MINIMUM=3.5"):
        assert flag in build, flag
    assert "--enable_wasm_jspi" not in build
    defines = build.index("--cmake_extra_defines")
    assert build.index("CMAKE_CXX_FLAGS=-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0") > defines
    assert build[build.index("--emsdk_version") + 1] == "6.0.5"


@pytest.fixture(scope="module")
def environment() -> Path:
    """prebake's Debian sid environment (Emscripten 6.0.5), made by prebake itself into the
    suite's toolchains folder (a CI re-run reuses it)."""
    from tests import toolchains

    why = toolchains._why_not()
    if why:
        pytest.skip(why)
    proc = support.prebake("-C", FLAGSHIP, "toolchain", "install", "--platform", "wasm",
                           "--json", env={"PREBAKE_TOOLCHAINS": str(toolchains.TOOLCHAINS)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return toolchains.TOOLCHAINS


def test_the_environment_holds_the_system_libraries_the_builds_links_need(
        environment: Path, tmp_path: Path) -> None:
    """``toolchain install`` built Emscripten's system libraries for the platform's flags: a
    configure check's link and a target's link as the recipe makes them (its own flags,
    without the consumer's ``-sJSPI``) add nothing to the environment's cache. Left to the
    first build, onnxruntime built 17 there (~100 s) and wrote into the toolchain meanwhile."""
    proc = support.prebake("-C", FLAGSHIP, "toolchain", "install", "--platform", "wasm",
                           "--json", env={"PREBAKE_TOOLCHAINS": str(environment)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wasm,) = json.loads(proc.stdout)["platforms"]
    assert "system libraries for the platform's flags already built" in wasm["message"], wasm
    root = Path(wasm["path"]).with_suffix("")  # the wrappers sit beside the root
    libs = root / "var/cache/emscripten/sysroot/lib/wasm32-emscripten"
    before = {p.name: p.stat().st_mtime_ns for p in libs.glob("*.a")}
    assert {"libc-mt.a", "libc-mt-debug.a", "libc++-mt-wasmexcept.a",
            "libc++-debug-mt-wasmexcept.a", "libc++abi-mt-wasmexcept.a"} <= set(before), before
    src = tmp_path / "t.cc"
    src.write_text("#include <vector>\nint main() { try { std::vector<int>(1).at(3); }"
                   " catch (...) { return 0; } return 1; }\n")
    for level in ("-O0", "-O3"):
        support.run([str(Path(wasm["path"]) / "em++"), level, "-fwasm-exceptions",
                     "-sWASM_LEGACY_EXCEPTIONS=0", "-pthread", "-msimd128", str(src), "-o",
                     str(tmp_path / f"t{level}.js")], tmp_path)
    assert {p.name: p.stat().st_mtime_ns for p in libs.glob("*.a")} == before


def test_consumer_flags_the_environment_cannot_link_fail_the_install(
        environment: Path, tmp_path: Path) -> None:
    """An environment that cannot link its platform's consumer flags is not usable: the
    install says which link failed and what the compiler said, and stamps nothing."""
    ws = _copy(tmp_path / "ws")
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text().replace('flags = ["-sJSPI",',
                                             'flags = ["-sPREBAKE_BOGUS_SETTING=1", "-sJSPI",'))
    proc = _prebake(ws, "toolchain", "install", "--platform", "wasm",
                    env={"PREBAKE_TOOLCHAINS": str(environment)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.split()[0] == "cannot", line
    assert "emcc -O0 -sPREBAKE_BOGUS_SETTING=1 -sJSPI" in line, line
    said = line.split("failed in environment debian-sid-emscripten: ")[1]
    assert said.startswith("emcc: error:") and "PREBAKE_BOGUS_SETTING" in said, line
    stamps = environment / "env-debian-sid-emscripten" / "var" / "cache" / "prebake-warm"
    assert all("PREBAKE_BOGUS_SETTING" not in f.read_text() for f in stamps.iterdir())


def test_the_environment_reports_the_pinned_emscripten(environment: Path) -> None:
    proc = support.prebake("-C", FLAGSHIP, "toolchain", "list", "--json",
                           env={"PREBAKE_TOOLCHAINS": str(environment)})
    wasm = next(p for p in json.loads(proc.stdout)["platforms"] if p["platform"] == "wasm")
    assert wasm["status"] == "ok" and wasm["version"] == "6.0.5", wasm
    assert wasm["resolved"].startswith(str(environment)), wasm


def test_an_emscripten_pin_the_environment_contradicts_refuses_wasm(
        environment: Path, tmp_path: Path) -> None:
    ws = _copy(tmp_path / "ws")
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text().replace('emsdk = "6.0.5"', 'emsdk = "6.0.4"'))
    proc = _prebake(ws, "build", "--platform", "wasm",
                    env={"PREBAKE_TOOLCHAINS": str(environment)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pin emsdk = '6.0.4' but its cc" in proc.stderr and "6.0.5" in proc.stderr
    assert not (ws / "releases").exists()
