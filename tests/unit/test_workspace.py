"""Loading the example workspace: the data others build on (platforms, stages, recipes)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from prebake.errors import ConfigError, PrebakeError
from prebake.recipes import Build, LocalSource, Repackage, load_recipe_file
from prebake.recipes.loader import BUILTIN_DIR
from prebake.workspace import load_workspace
from prebake.workspace.lines import LineIndex

SDK = Path(__file__).resolve().parent.parent.parent / "examples" / "sdk"


def test_example_workspace_loads() -> None:
    ws = load_workspace(SDK)
    assert ws.root == SDK.resolve()
    assert ws.project.name == "kiln-sdk"
    assert ws.pins["onnxruntime"] == "1.27.0" and ws.pins["emsdk"] == "3.1.6"
    assert list(ws.platforms) == ["wasm", "linux-x86_64", "linux-aarch64", "macos-arm64",
                                  "macos-x86_64", "windows-x86_64"]
    assert ws.stage_order() == ("core", "media", "extra")
    assert ws.stage_names("full") == ("core", "media")
    assert "extra" not in ws.aliases["full"]
    assert ws.stages["extra"].package == "per-recipe"
    assert set(ws.recipes) == {"vecmath", "pixelbuf", "onnxruntime", "ffmpeg", "dav1d"}
    assert ws.recipes["onnxruntime"].path == BUILTIN_DIR / "onnxruntime" / "recipe.py"
    assert ws.recipes["ffmpeg"].path == BUILTIN_DIR / "ffmpeg" / "recipe.py"
    assert ws.stages["extra"].recipes == ("onnxruntime", "ffmpeg", "dav1d")
    assert ws.default_store == "file://" + str(SDK.resolve() / "releases")


def test_platform_profiles() -> None:
    ws = load_workspace(SDK)
    wasm = ws.platforms["wasm"]
    assert wasm.toolchain.cxx == ("em++",) and wasm.toolchain.pin == "emsdk"
    assert wasm.contract.eh == "wasm" and wasm.contract.threads is True
    assert wasm.contract.features_forbidden == ("relaxed-simd",)
    assert wasm.contract.arch == "wasm32"  # filled from the platform
    assert "-sJSPI" not in wasm.link_test.flags  # Debian's emscripten 3.1.6 lacks it
    assert wasm.link_test.run is None  # 3.1.6 mis-runs -fwasm-exceptions with -pthread
    arm = ws.platforms["linux-aarch64"]
    assert arm.toolchain.cc[0] == sys.executable  # {python} expanded for running
    assert arm.toolchain.spec["cc"].startswith("{python} -m ziglang cc")  # kept for hashing
    assert arm.contract.glibc_max == "2.28"
    assert ws.platforms["linux-x86_64"].contract.forbid_exports == ("_ZN6google8protobuf*",
                                                                      "_ZN4absl*")
    assert ws.platforms["macos-arm64"].runner == "macos-14"


def test_onnxruntime_recipe_strategies() -> None:
    r = load_recipe_file(BUILTIN_DIR / "onnxruntime" / "recipe.py")
    for p in ("wasm", "linux-aarch64", "macos-arm64"):
        assert isinstance(r.strategy_for(p), Build)
    for p in ("linux-x86_64", "macos-x86_64", "windows-x86_64"):
        strat = r.strategy_for(p)
        assert isinstance(strat, Repackage)
        assert strat.url.startswith("https://github.com/microsoft/onnxruntime/releases/")
    wasm = r.strategy_for("wasm")
    assert isinstance(wasm, Build)
    [line] = [c for c in wasm.commands if isinstance(c, str) and "build.py" in c]
    for flag in ("--build_wasm_static_lib", "--enable_wasm_simd", "--enable_wasm_threads",
                 "{release[wasm_eh]}", "--skip_tests", "--skip_submodule_sync",
                 "--allow_running_as_root", "--emsdk_version {pins[emsdk]}"):
        assert flag in line
    assert "CFLAGS" in wasm.env_unset
    assert r.pins_read("wasm") == ("onnxruntime", "emsdk")
    assert r.pins_read("linux-x86_64") == ("onnxruntime",)
    assert r.kind_for("wasm") == "static" and r.kind_for("macos-arm64") == "shared"


def test_workspace_recipe_overrides_builtin(tmp_path: Path) -> None:
    ws_dir = tmp_path / "sdk"
    shutil.copytree(SDK, ws_dir, ignore=shutil.ignore_patterns("releases"))
    # the recipe is one folder: its data (dependency table, patches) goes with it
    shutil.copytree(BUILTIN_DIR / "onnxruntime", ws_dir / "recipes" / "onnxruntime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ws = load_workspace(ws_dir)
    own = (ws_dir / "recipes" / "onnxruntime" / "recipe.py").resolve()
    assert ws.recipes["onnxruntime"].path == own
    assert ws.recipes["onnxruntime"].folder == own.parent


def test_local_sources_resolve_next_to_the_recipe() -> None:
    ws = load_workspace(SDK)
    vecmath = ws.recipes["vecmath"]
    [src] = vecmath.sources
    assert isinstance(src, LocalSource)
    assert (vecmath.folder / src.path / "src" / "vecmath.cpp").is_file()
    assert ws.recipes["pixelbuf"].deps == ("vecmath",)


def test_unknown_selectors() -> None:
    ws = load_workspace(SDK)
    with pytest.raises(PrebakeError, match="unknown stage or alias 'cor'"):
        ws.stage_names("cor")
    with pytest.raises(PrebakeError, match="unknown platform 'wasm64'"):
        ws.platform_names("wasm64")


def test_missing_workspace_file(tmp_path: Path) -> None:
    with pytest.raises(PrebakeError, match="no such file"):
        load_workspace(tmp_path)


def test_line_index() -> None:
    text = (
        "[project]\nname = \"x\"\n\n[platforms.wasm]\nos = \"emscripten\"\n"
        "toolchain = { cc = \"emcc\", cxx = \"em++\" }\n\n[platforms.wasm.contract]\n"
        "eh = \"wasm\"\nfeatures_required = [\n  \"simd128\",\n]\n"
    )
    idx = LineIndex(text)
    assert idx.line_of("project.name") == 2
    assert idx.line_of("platforms.wasm") == 4
    assert idx.line_of("platforms") == 4
    assert idx.line_of("platforms.wasm.toolchain.cxx") == 6
    assert idx.line_of("platforms.wasm.contract.eh") == 9
    assert idx.line_of("platforms.wasm.contract.features_required[0]") == 10
    assert idx.line_of("platforms.wasm.contract.nothing") == 8
    assert idx.line_of("stages.core") is None


def test_builtin_recipe_needs_only_the_pins_of_the_platforms_built(tmp_path: Path) -> None:
    ws_dir = tmp_path / "linux-only"
    ws_dir.mkdir()
    (ws_dir / "prebake.toml").write_text(
        '[project]\nname = "x"\nversion = "1.0"\n\n[pins]\nonnxruntime = "1.27.0"\n\n'
        '[platforms.linux-x86_64]\nos = "linux"\narch = "x86_64"\n'
        'toolchain = { cc = "gcc", cxx = "g++" }\n\n'
        '[stages.extra]\nrecipes = ["onnxruntime"]\npackage = "per-recipe"\n')
    ws = load_workspace(ws_dir)  # no emsdk pin needed: no wasm platform here
    assert set(ws.recipes) == {"onnxruntime"}
    toml = ws_dir / "prebake.toml"
    toml.write_text(toml.read_text() + '\n[platforms.wasm]\nos = "emscripten"\narch = "wasm32"\n'
                    'toolchain = { cc = "emcc", cxx = "em++" }\n')
    with pytest.raises(ConfigError, match=r"pins\.emsdk.*recipe 'onnxruntime'"):
        load_workspace(ws_dir)


def test_recipe_field_lines(tmp_path: Path) -> None:
    from prebake.recipes.locate import field_line

    recipe = tmp_path / "r.py"
    recipe.write_text(
        "from prebake.recipes import Build, Recipe, UrlSource\n"
        "SOURCES = (\n"
        "    UrlSource('https://x/y.tgz',\n"
        "              sha256='bad'),\n"
        ")\n"
        "def build(flags):\n"
        "    return Build(commands=(flags,))\n"
        "RECIPE = Recipe(\n"
        "    name='r', pin='r',\n"
        "    sources=SOURCES,\n"
        "    platforms={'wasm': Build(commands=('a', 'b')),\n"
        "               '*': build('c')},\n"
        ")\n")
    assert field_line(recipe, ".sources[0].sha256") == 4  # followed through the constant
    assert field_line(recipe, ".platforms['wasm'].commands[1]") == 11
    assert field_line(recipe, ".platforms['*'].commands[0]") == 12  # computed: the call's line
    assert field_line(recipe, ".pin") == 9
    assert field_line(recipe, ".nothing") == 8
