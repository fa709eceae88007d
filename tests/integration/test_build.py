"""``prebake build`` on the example workspace, for real: host (gcc) and wasm (Debian's emcc).

One build of a copy of ``examples/sdk`` (module fixture) is shared by the tests that read its
results; the variants (``-fexceptions``, a stage that overwrites an earlier stage's file) each
build only the units they need.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prebake.package.manifest_builder import schema_path
from tests import support

EXAMPLE = support.ROOT / "examples" / "sdk"
PLATFORMS = ("linux-x86_64", "wasm")
LEAKY = {"CFLAGS": "-flto", "CXXFLAGS": "-flto", "LDFLAGS": "-flto", "EMCC_CFLAGS": "-flto",
         "CPPFLAGS": "-DLEAKED=1"}


def prebake(ws: Path, *args: str, env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return support.prebake("-C", ws, *args, env=env)


BUILD_SCHEMA = support.ROOT / "schemas" / "build.schema.json"


def build_json(ws: Path, *args: str, env: Mapping[str, str] | None = None
               ) -> tuple[int, dict[str, Any]]:
    """``prebake build … --json``; the output is validated against the committed schema."""
    proc = prebake(ws, "build", *args, "--json", env=env)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
                             ) from None
    jsonschema.validate(data, json.loads(BUILD_SCHEMA.read_text()))
    return proc.returncode, data


def copy_workspace(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".prebake", "releases"))
    return dest


def assets(ws: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ws / "releases").rglob("*.tar.xz"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The README's main job on a copy of the example, with leaky flag variables exported."""
    ws = copy_workspace(tmp_path_factory.mktemp("build") / "sdk")
    args = ["--stage", "full", "-j", "2"]
    for p in PLATFORMS:
        args += ["--platform", p]
    rc, data = build_json(ws, *args, env=LEAKY)
    assert rc == 0, json.dumps(data, indent=2)
    return ws, data


def test_main_job_builds_checks_and_packages_every_unit(built: tuple[Path, dict[str, Any]]
                                                        ) -> None:
    ws, data = built
    assert data["schema_version"] == 1 and data["ok"] is True
    states = {u["unit"]: u["state"] for u in data["units"]}
    assert states == {f"{s}/{p}": "built" for s in ("core", "media") for p in PLATFORMS}
    names = set(assets(ws))
    assert names == {f"kiln-sdk-{s}-0.12.0-{p}.tar.xz" for s in ("core", "media")
                     for p in PLATFORMS}
    schema = json.loads(schema_path().read_text())
    for name in names:
        folder = next((ws / "releases").rglob(name)).parent
        manifest = json.loads((folder / f"{name}.json").read_text())
        jsonschema.validate(manifest, schema)
        unit = next(u for u in data["units"] if u["asset"] == name)
        assert manifest["input_hash"] == unit["input_hash"]
        assert manifest["inputs"]["asset-format"] == "4"  # what `plan --explain` compares
        # the guards it passed are on record: the platform's contract and consumer link flags
        guards = manifest["guards"]
        platform = manifest["platform"]
        assert guards["check"]["ok"] and guards["check"]["platform"] == platform
        # every binary's compiler was read from its bytes and held to the verified one
        assert guards["producer"]["toolchain"] == {
            "wasm": "emscripten 3.1.6 (clang 14.0.6)", "linux-x86_64": "gcc 12.2.0",
            "linux-aarch64": "zig 0.17.1 (clang 22.1.8)"}[platform]
        assert all(f["abi"]["producer"] for f in manifest["facts"])
        assert guards["check"]["contract"]["arch"] == {"wasm": "wasm32"}.get(platform, "x86_64")
        assert guards["link_test"]["ok"] and "snippet" in guards["link_test"]["linked"]
        if platform == "wasm":
            assert "-fwasm-exceptions" in guards["link_test"]["flags"]
        # the toolchain that built it, as its compiler reported it (emcc is pinned and checked)
        verified = manifest["toolchain"]["verified"]
        assert verified["status"] == {"wasm": "ok"}.get(platform, "unpinned")
        assert verified["family"] == {"wasm": "emscripten"}.get(platform, "gcc")
        assert verified["version"] == ({"wasm": "3.1.6"}.get(platform) or verified["version"])
        assert verified["version"] and verified["target"] and str(ws) not in json.dumps(verified)
        sidecar = (folder / f"{name}.sha256").read_text().split()[0]
        assert sidecar == hashlib.sha256((folder / name).read_bytes()).hexdigest()


def _member(asset: Path, name: str) -> bytes:
    with tarfile.open(asset) as tf:
        f = tf.extractfile(name)
        assert f is not None
        return f.read()


def test_stage_assets_ship_what_each_stage_added(built: tuple[Path, dict[str, Any]]) -> None:
    ws, _ = built
    rel = next((ws / "releases").rglob("kiln-sdk-media-0.12.0-linux-x86_64.tar.xz"))
    with tarfile.open(rel) as tf:
        names = tf.getnames()
    assert "lib/libpixelbuf.a" in names and "include/pixelbuf/pixelbuf.hpp" in names
    assert "lib/libvecmath.a" not in names, "core's files ship in core's asset only"
    assert "lib/cmake/pixelbuf/pixelbufConfig.cmake" in names
    assert "lib/pkgconfig/pixelbuf.pc" in names
    assert "share/licenses/pixelbuf/LICENSE" in names


def test_caller_flag_variables_do_not_reach_the_build(built: tuple[Path, dict[str, Any]],
                                                      tmp_path: Path) -> None:
    ws, _ = built
    from prebake.inspect import inspect

    for platform, magic in (("linux-x86_64", b"\x7fELF"), ("wasm", b"\0asm")):
        asset = next((ws / "releases").rglob(f"kiln-sdk-core-0.12.0-{platform}.tar.xz"))
        lib = tmp_path / f"{platform}-libvecmath.a"
        lib.write_bytes(_member(asset, "lib/libvecmath.a"))
        facts = inspect(lib)
        assert facts.abi.lto == "none", f"{platform}: objects are {facts.abi.lto}"
        for m in facts.members or []:
            assert m.format != "llvm-bitcode"
        # and the member really is machine code, not bitcode ("BC\xc0\xde")
        subprocess.run(["ar", "x", lib.name], cwd=tmp_path, check=True)
        assert (tmp_path / "vecmath.o").read_bytes()[:4] == magic
        (tmp_path / "vecmath.o").unlink()
    log = (ws / ".prebake" / "logs" / "core--linux-x86_64.log").read_text()
    assert "dropped from the caller's environment: CFLAGS, CXXFLAGS, CPPFLAGS, LDFLAGS" in log
    env_lines = [line for line in log.splitlines() if line.startswith("#   ")]
    assert env_lines and not any("-flto" in line for line in env_lines)


def test_second_run_skips_by_input_hash(built: tuple[Path, dict[str, Any]]) -> None:
    ws, _ = built
    before = assets(ws)
    args = ["--stage", "full", "--platform", "linux-x86_64", "--platform", "wasm"]
    rc, data = build_json(ws, *args)
    assert rc == 0
    for u in data["units"]:
        assert u["state"] == "skipped", u
        assert u["seconds"] < 1.0
    assert assets(ws) == before


def test_dry_run_says_which_units_a_real_run_would_skip(built: tuple[Path, dict[str, Any]]
                                                        ) -> None:
    ws, _ = built
    args = ["--stage", "full", "--platform", "linux-x86_64", "--platform", "wasm", "--dry-run"]
    rc, data = build_json(ws, *args)
    assert rc == 0 and {u["state"] for u in data["units"]} == {"planned"}
    assert {u["reason"] for u in data["units"]} == {
        "dry run: would skip (input hash matches the asset in the store)"}
    rc, data = build_json(ws, *args, "--force")
    assert {u["reason"] for u in data["units"]} == {"dry run: would build (--force)"}


def test_prebake_store_redirects_lookup_and_publish(built: tuple[Path, dict[str, Any]],
                                                   tmp_path: Path) -> None:
    """CI legs set PREBAKE_STORE to a local folder: nothing is skipped from, or published to,
    the workspace's own default store then."""
    ws, _ = built
    before = assets(ws)
    other = tmp_path / "leg-store"
    args = ["--stage", "core", "--platform", "linux-x86_64"]
    rc, data = build_json(ws, *args, env={"PREBAKE_STORE": f"file://{other}"})
    assert rc == 0 and [u["state"] for u in data["units"]] == ["built"]
    assert data["store"] == f"file://{other}"
    assert [p.name for p in other.rglob("*.tar.xz")] == [data["units"][0]["asset"]]
    assert assets(ws) == before
    rc, data = build_json(ws, *args, "--store", f"file://{other}")
    assert rc == 0 and [u["state"] for u in data["units"]] == ["skipped"]


def test_force_rebuild_is_byte_identical(built: tuple[Path, dict[str, Any]]) -> None:
    ws, _ = built
    before = assets(ws)
    args = ["--stage", "full", "--platform", "linux-x86_64", "--platform", "wasm", "--force"]
    rc, data = build_json(ws, *args)
    assert rc == 0 and {u["state"] for u in data["units"]} == {"built"}
    assert assets(ws) == before


CONSUMER_CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(consumer CXX)
find_package(pixelbuf 0.9 CONFIG REQUIRED)
find_package(kiln-sdk-core CONFIG REQUIRED)
add_executable(consumer main.cpp)
target_link_libraries(consumer PRIVATE pixelbuf::pixelbuf)
add_executable(core_only core.cpp)
target_link_libraries(core_only PRIVATE kiln-sdk-core::kiln-sdk-core)
"""
CONSUMER_MAIN = """\
#include <pixelbuf/pixelbuf.hpp>
#include <vecmath/vecmath.hpp>
#include <cstdio>
int main() {
  pixelbuf::Image img(2, 2);
  img.fill({10, 20, 30, 255});
  img.shade({0.0f, 0.0f, 1.0f});
  std::printf("consumer ok %g\\n", (double)vecmath::length(vecmath::parse_vec3("3,4,0")));
  return 0;
}
"""
CORE_MAIN = """\
#include <vecmath/vecmath.hpp>
#include <cstdio>
int main() { std::printf("core %g\\n", (double)vecmath::length(vecmath::parse_vec3("0,0,2"))); }
"""


def test_cmake_consumer_finds_the_host_assets(built: tuple[Path, dict[str, Any]],
                                              tmp_path: Path) -> None:
    ws, _ = built
    prefix = tmp_path / "somewhere else" / "deps"  # relocated, with a space in the path
    prefix.mkdir(parents=True)
    for stage in ("core", "media"):
        asset = next((ws / "releases").rglob(f"kiln-sdk-{stage}-0.12.0-linux-x86_64.tar.xz"))
        with tarfile.open(asset) as tf:
            tf.extractall(prefix, filter="data")
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    (proj / "main.cpp").write_text(CONSUMER_MAIN)
    (proj / "core.cpp").write_text(CORE_MAIN)
    b = proj / "build"
    support.run(["cmake", "-S", str(proj), "-B", str(b), f"-DCMAKE_PREFIX_PATH={prefix}"],
                cwd=proj)
    support.run(["cmake", "--build", str(b)], cwd=proj)
    assert support.run([str(b / "consumer")], cwd=proj).stdout == "consumer ok 5\n"
    assert support.run([str(b / "core_only")], cwd=proj).stdout == "core 2\n"
    # pkg-config finds the same files through ${pcfiledir}
    pc = support.run(["pkg-config", "--libs", "--cflags", "pixelbuf"], cwd=proj,
                     env={"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}).stdout
    assert f"-I{prefix}/include" in pc.replace("\\ ", " ").replace("lib/pkgconfig/../../", "")
    assert pc.index("-lpixelbuf") < pc.index("-lvecmath")


def _variant(tmp_path: Path, recipe: str, old: str, new: str) -> Path:
    ws = copy_workspace(tmp_path / "sdk")
    f = ws / "recipes" / f"{recipe}.py"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new))
    return ws


def test_wasm_library_built_with_legacy_eh_fails_its_unit_and_ships_nothing(
        tmp_path: Path) -> None:
    ws = _variant(tmp_path, "vecmath", '"wasm": "-O2 -fwasm-exceptions',
                  '"wasm": "-O2 -fexceptions')
    rc, data = build_json(ws, "--stage", "full", "--platform", "wasm", "--platform",
                          "linux-x86_64")
    assert rc == 1 and data["ok"] is False
    states = {u["unit"]: u for u in data["units"]}
    assert states["core/wasm"]["state"] == "failed"
    assert "eh" in states["core/wasm"]["message"]
    assert "emscripten-legacy" in states["core/wasm"]["message"]
    # the contract's findings come structured, each file named as it would ship
    eh = states["core/wasm"]["violations"][0]
    assert (eh["rule"], eh["expected"], eh["found"], eh["path"], eh["members"]) == (
        "eh", "wasm", "emscripten-legacy", "lib/libvecmath.a", ["vecmath.o"])
    assert {v["rule"] for v in states["core/wasm"]["violations"]} == {"eh", "features_required"}
    assert states["media/wasm"]["violations"] == [] == states["core/linux-x86_64"]["violations"]
    assert states["media/wasm"]["state"] == "blocked", "dependents of a failed unit stop"
    assert states["core/linux-x86_64"]["state"] == "built", "unrelated units finish"
    assert states["media/linux-x86_64"]["state"] == "built"
    names = set(assets(ws))
    assert not any(n.endswith("-wasm.tar.xz") for n in names)
    assert not list((ws / ".prebake" / "dist").rglob("*-wasm.tar.xz*"))
    # the human output names the failure too and exits 1, never 0
    proc = prebake(ws, "build", "--stage", "core", "--platform", "wasm")
    assert proc.returncode == 1
    assert "core/wasm failed" in proc.stderr
    # the table's detail column shows the first violation, not the message's header line
    row = next(line for line in proc.stdout.splitlines() if "core/wasm" in line)
    assert "lib/libvecmath.a: eh: required wasm, found emscripten-legacy" in row
    assert "contract check failed" not in proc.stdout


def test_a_stage_that_changes_an_earlier_stage_file_fails_naming_it(tmp_path: Path) -> None:
    ws = _variant(
        tmp_path, "pixelbuf",
        '"cmake -E copy_directory {src}/include {prefix}/include",',
        '"cmake -E copy_directory {src}/include {prefix}/include",\n'
        '        "cmake -E copy {src}/LICENSE"\n'
        '        " {prefix}/lib/cmake/vecmath/vecmathConfigVersion.cmake",\n'
        '        "cmake -E rm -f {prefix}/share/licenses/vecmath/LICENSE",')
    rc, data = build_json(ws, "--stage", "full", "--platform", "linux-x86_64")
    assert rc == 1
    media = next(u for u in data["units"] if u["unit"] == "media/linux-x86_64")
    assert media["state"] == "failed"
    assert "changed: lib/cmake/vecmath/vecmathConfigVersion.cmake" in media["message"]
    assert "deleted: share/licenses/vecmath/LICENSE" in media["message"]
    assert not any("media" in n for n in assets(ws))


@pytest.mark.parametrize(("sig", "rc", "said"), [
    ("SIGINT", 130, "interrupted"),  # Ctrl-C
    ("SIGTERM", 143, "terminated"),  # a cancelled CI job, `kill`
])
def test_ctrl_c_or_sigterm_kills_the_build_and_leaves_no_asset(
        tmp_path: Path, sig: str, rc: int, said: str) -> None:
    import signal
    import time

    marker = f"41.{rc}5"  # a sleep nobody else runs, to find leftover processes
    ws = _variant(tmp_path, "vecmath",
                  '"cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",',
                  '"cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",\n'
                  f'        "sleep {marker}",')
    def default_sigint() -> None:
        # a suite started in the background by a shell without job control inherits an
        # ignored SIGINT, which the build would rightly keep ignoring: Ctrl-C reaches a
        # foreground build, so give the child the terminal's default disposition
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "prebake", "-C", str(ws), "build", "--stage", "core",
         "--platform", "linux-x86_64", "--json"],
        env=support.tool_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint)
    log = ws / ".prebake" / "logs" / "core--linux-x86_64.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and f"sleep {marker}" in log.read_text()):
        assert time.monotonic() < deadline, "the build never reached its sleep"
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(getattr(signal, sig))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == rc, err
    assert said in err
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep {marker}" not in ps, "the build's process group was killed"
    assert not assets(ws)
    assert not list((ws / ".prebake").rglob("*.tar.xz*"))
    assert "cancelled" in log.read_text()


def test_a_later_stage_builds_on_the_earlier_stage_asset_from_the_store(tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "sdk")
    rc, _ = build_json(ws, "--stage", "full", "--platform", "linux-x86_64")
    assert rc == 0
    shutil.rmtree(ws / ".prebake")  # another machine: only the store is shared
    src = ws / "src" / "pixelbuf" / "src" / "pixelbuf.cpp"
    src.write_text(src.read_text() + "\n// a change only the media stage sees\n")
    rc, data = build_json(ws, "--stage", "full", "--platform", "linux-x86_64")
    assert rc == 0, data
    states = {u["unit"]: u["state"] for u in data["units"]}
    assert states == {"core/linux-x86_64": "skipped", "media/linux-x86_64": "built"}
    log = (ws / ".prebake" / "logs" / "media--linux-x86_64.log").read_text()
    assert "restoring stage core from kiln-sdk-core-0.12.0-linux-x86_64.tar.xz" in log
    # the vecmath that media linked against came from core's asset, and media ships none of it
    with tarfile.open(next((ws / "releases").rglob("kiln-sdk-media-*linux-x86_64.tar.xz"))) as tf:
        names = tf.getnames()
    assert "lib/libpixelbuf.a" in names and "lib/libvecmath.a" not in names
    assert not any(n.startswith("lib/cmake/kiln-sdk-core") for n in names)


ADDON_RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="vecstats",
    pin="vecstats",
    deps=("vecmath",),
    sources=(LocalSource("../src/vecstats"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {prefix}/lib {prefix}/include",
        "{cxx} -std=c++17 -O2 -fPIC -I{src} -I{deps_prefix}/include -c {src}/vecstats.cpp"
        " -o {build}/vecstats.o",
        "{ar} rcs {prefix}/lib/libvecstats.a {build}/vecstats.o",
        "cmake -E copy {src}/vecstats.hpp {prefix}/include/vecstats.hpp",
        EXTRA
    ))},
    outputs=Outputs(libs={"*": ("lib/libvecstats.a",)}, headers=("include/vecstats.hpp",)),
    kind={"*": "static"},
    link_test=Snippet(code="#include <vecstats.hpp>\\nint main() { return mean_length() > 0; }\\n"),
)
'''


def _with_addon(tmp_path: Path, extra: str) -> Path:
    """The example plus a per-recipe stage whose recipe builds against core's vecmath."""
    ws = copy_workspace(tmp_path / "sdk")
    (ws / "src" / "vecstats").mkdir()
    (ws / "src" / "vecstats" / "vecstats.hpp").write_text("float mean_length();\n")
    (ws / "src" / "vecstats" / "vecstats.cpp").write_text(
        '#include <vecmath/vecmath.hpp>\n#include "vecstats.hpp"\n'
        'float mean_length() { return vecmath::length(vecmath::parse_vec3("3,4,0")); }\n')
    (ws / "recipes" / "vecstats.py").write_text(ADDON_RECIPE.replace("EXTRA", extra))
    toml = (ws / "prebake.toml").read_text()
    toml = toml.replace("[pins]\n", '[pins]\nvecstats = "0.1.0"\n')
    toml = toml.replace("[aliases]", '[stages.addons]\nrecipes = ["vecstats"]\nafter = ["core"]\n'
                        'package = "per-recipe"\n\n[aliases]')
    (ws / "prebake.toml").write_text(toml)
    return ws


def test_per_recipe_stage_builds_against_the_earlier_prefix(tmp_path: Path) -> None:
    ws = _with_addon(tmp_path, "")
    rc, data = build_json(ws, "--stage", "core", "--platform", "linux-x86_64")
    assert rc == 0, data
    rc, data = build_json(ws, "--stage", "addons", "--platform", "linux-x86_64")
    assert rc == 0, data
    (unit,) = data["units"]
    assert unit["unit"] == "vecstats/linux-x86_64" and unit["state"] == "built"
    asset = next((ws / "releases").rglob("vecstats-0.1.0-linux-x86_64.tar.xz"))
    with tarfile.open(asset) as tf:
        names = tf.getnames()
        config = _member(asset, "lib/cmake/vecstats/vecstatsConfig.cmake").decode()
    assert "lib/libvecstats.a" in names and "lib/libvecmath.a" not in names
    assert "find_dependency(vecmath CONFIG" in config and "vecmath::vecmath" in config


def test_per_recipe_unit_that_touches_the_earlier_prefix_fails(tmp_path: Path) -> None:
    ws = _with_addon(tmp_path, '"cmake -E rm -f {deps_prefix}/include/vecmath/vecmath.hpp",')
    rc, _ = build_json(ws, "--stage", "core", "--platform", "linux-x86_64")
    assert rc == 0
    rc, data = build_json(ws, "--stage", "addons", "--platform", "linux-x86_64")
    assert rc == 1
    (unit,) = data["units"]
    assert "deleted: include/vecmath/vecmath.hpp" in unit["message"]
    assert not list((ws / "releases").rglob("vecstats-*"))


def test_the_example_addon_fetches_and_links_what_the_main_job_built(
        built: tuple[Path, dict[str, Any]]) -> None:
    """The README main job's consumer half: the addon fetches both platforms' assets against its
    own contract, then CMake (Prebake.cmake + the assets' package configs) builds and runs it."""
    ws, _ = built
    addon = ws.parent / "addon"
    shutil.copytree(support.ROOT / "examples" / "addon", addon,
                    ignore=shutil.ignore_patterns("build"))
    for stage in ("core", "media"):
        proc = prebake(addon, "fetch", f"kiln-sdk-{stage}==0.12.0", "--platform", "wasm",
                       "--into", str(addon / "build" / "wasm" / stage), "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["asset"] == f"kiln-sdk-{stage}-0.12.0-wasm.tar.xz"
    exe = str(Path(sys.executable).with_name("prebake"))
    host = addon / "build" / "host"
    # the onnxruntime half needs the flagship beside it: test_flagship runs that consumer
    support.run(["cmake", "-S", str(addon), "-B", str(host), f"-DPREBAKE_EXECUTABLE={exe}",
                 "-DKILN_ADDON_ONNXRUNTIME=OFF"], addon)
    support.run(["cmake", "--build", str(host)], addon)
    out = support.run([str(host / "denoise")], addon).stdout
    assert out.startswith("denoise: ok") and "parse_vec3" in out
    lock = json.loads((host / "prebake.lock").read_text())
    assert "kiln-sdk-media" in json.dumps(lock)


def test_a_compiler_launcher_caches_objects_without_changing_assets(
        built: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """CI legs set PREBAKE_COMPILER_LAUNCHER=ccache and CCACHE_DIR: gcc runs through ccache,
    emcc through EM_COMPILER_WRAPPER, and the assets are the very same bytes."""
    if shutil.which("ccache") is None:
        pytest.fail("ccache is not installed (scripts/bootstrap installs it)")
    ref, _ = built
    ws = copy_workspace(tmp_path / "sdk")
    cache = tmp_path / "ccache"
    env = {"PREBAKE_COMPILER_LAUNCHER": "ccache", "CCACHE_DIR": str(cache)}
    args = ["--stage", "core", "--platform", "linux-x86_64", "--platform", "wasm"]
    rc, data = build_json(ws, *args, env=env)
    assert rc == 0, json.dumps(data, indent=2)
    stored = [p for p in cache.rglob("*") if p.is_file() and p.name.endswith(("R", "M"))]
    assert len(stored) >= 2  # one cached result per compiled object, gcc and emcc
    log = next((ws / ".prebake" / "logs").glob("core*wasm*.log")).read_text()
    assert "EM_COMPILER_WRAPPER" in log
    ours, theirs = assets(ws), assets(ref)
    for name, digest in ours.items():
        assert theirs[name] == digest, name


def test_check_a_release_folder_checks_every_asset_in_it(built: tuple[Path, dict[str, Any]]
                                                         ) -> None:
    ws, _ = built
    folder = next((ws / "releases").rglob("kiln-sdk-core-0.12.0-wasm.tar.xz")).parent
    proc = prebake(ws, "check", str(folder), "--platform", "wasm", "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    bad = {v["path"].split("!")[0].rsplit("/", 1)[-1] for v in report["violations"]
           if v["rule"] == "arch"}
    assert bad == {f"kiln-sdk-{s}-0.12.0-linux-x86_64.tar.xz" for s in ("core", "media")}
    assert any(f.endswith("kiln-sdk-core-0.12.0-wasm.tar.xz!lib/libvecmath.a")
               for f in report["files"])
