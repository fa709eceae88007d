"""Errors at load time, with the key path: before any source is fetched or command runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.errors import ConfigError
from prebake.intake import load_workspace
from prebake.intake.lines import LineIndex
from tests import support

EXAMPLES = support.ROOT / "examples"
# The zstd recipe a user wrote when porting it: `libs` holds a string where a tuple is expected.
ZSTD = '''\
from prebake.recipes import Build, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    sources=(UrlSource("debian:pool/main/libz/libzstd/"
                       "libzstd_{version}+dfsg.orig.tar.xz", sha256="0" * 64),),
    platforms={"*": Build(commands=("make -C {src}/lib -j{jobs} libzstd.a CC={cc}",
                                    "make -C {src}/lib install-static PREFIX={prefix}"))},
    outputs=Outputs(libs={"*": "lib/libzstd.a"},
                    headers=("include/zstd.h",)),
)
'''


def _sdk(tmp: Path, zstd: str | None = None) -> Path:
    """A copy of the example SDK; with ``zstd``, that recipe text is added to its core stage
    (pinned to 1.5.7)."""
    ws = tmp / "sdk"
    shutil.copytree(EXAMPLES / "sdk", ws, ignore=shutil.ignore_patterns("releases", ".prebake"))
    if zstd is not None:
        (ws / "recipes" / "zstd.py").write_text(zstd)
        text = (ws / "prebake.toml").read_text()
        text = text.replace('vecmath = "1.4.0"', 'vecmath = "1.4.0"\nzstd = "1.5.7"')
        (ws / "prebake.toml").write_text(text.replace('recipes = ["vecmath"]',
                                                      'recipes = ["vecmath", "zstd"]'))
    return ws


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.err + cap.out


def test_a_string_where_a_tuple_is_expected_names_field_and_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _sdk(tmp_path, zstd=ZSTD)
    rc, out = _run(capsys, "-C", str(ws), "build", "--stage", "core", "--platform",
                   "linux-x86_64")
    assert rc == 2
    assert "recipes/zstd.py:10: RECIPE.outputs.libs['*']" in out
    assert "must be a tuple of strings; got a string ('lib/libzstd.a')" in out
    assert "Traceback" not in out
    assert not (ws / "releases").exists() and not (ws / ".prebake").exists()  # nothing ran


def test_every_shipped_recipe_passes_the_type_check() -> None:
    for root in (EXAMPLES / "sdk", EXAMPLES / "addon"):
        load_workspace(root)  # the example and built-in recipes (onnxruntime) load cleanly


@pytest.mark.parametrize(("os", "arch", "key", "value", "applies"), [
    ("emscripten", "wasm32", "glibc_max", '"2.28"', "linux"),
    ("linux", "x86_64", "macos_min", '"13.3"', "macos"),
    ("linux", "x86_64", "msvc_runtime", '"MD"', "windows"),
    ("macos", "aarch64", "glibcxx_max", '"3.4.30"', "linux"),
    ("windows", "x86_64", "threads", "true", "emscripten, wasi"),
])
def test_a_contract_key_for_another_os_is_an_error(tmp_path: Path, os: str, arch: str,
                                                   key: str, value: str, applies: str) -> None:
    (tmp_path / "prebake.toml").write_text(support.platform_workspace(
        "demo", "p", os, arch, 'cc = "cc", cxx = "c++"', f'lto = "none"\n{key} = {value}',
        version="1.0.0"))
    with pytest.raises(ConfigError) as info:
        load_workspace(tmp_path)
    [problem] = info.value.problems
    assert problem.key == f"platforms.p.contract.{key}" and problem.line == 12
    assert problem.message == (f"applies only to os {applies}; platform 'p' has os {os!r}")


@pytest.mark.parametrize(("argv", "wanted"), [
    (["plan", "--platform", "linux-x86-64"], "unknown platform 'linux-x86-64' "
                                             "(did you mean 'linux-x86_64'?)"),
    (["build", "--stage", "cor"], "unknown stage or alias 'cor' (did you mean 'core'?)"),
    (["build", "--platform", "wasm", "--platform", "wams"], "did you mean 'wasm'?"),
    (["plan", "--stage", "ful"], "did you mean 'full'?"),
    (["ci", "leg", "--stage", "core", "--platform", "nope"], "unknown platform 'nope'"),
])
def test_names_on_the_command_line_are_checked_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        wanted: str) -> None:
    ws = _sdk(tmp_path)
    rc, out = _run(capsys, "-C", str(ws), *argv)
    assert rc == 2 and wanted in out, out
    assert not (ws / "releases").exists() and not (ws / ".prebake").exists()


def test_fetch_for_a_platform_the_workspace_lacks_fails_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    addon = tmp_path / "addon"
    shutil.copytree(EXAMPLES / "addon", addon, ignore=shutil.ignore_patterns("build"))
    # a store nobody listens on: reaching it would be a different error
    rc, out = _run(capsys, "-C", str(addon), "fetch", "kiln-sdk-core==0.12.0", "--platform",
                   "nope", "--store", "http://127.0.0.1:9/releases")
    assert rc == 2
    assert "unknown platform 'nope' (known: wasm, linux-x86_64)" in out
    assert "127.0.0.1" not in out
    rc, out = _run(capsys, "-C", str(addon), "fetch", "kiln-sdk-core==0.12.0", "--platform",
                   "wsam", "--store", "http://127.0.0.1:9/releases")
    assert rc == 2 and "did you mean 'wasm'?" in out
    assert not (addon / "prebake_deps").exists() and not (addon / "prebake.lock").exists()


def test_a_contract_file_naming_its_os_gets_the_per_os_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract = tmp_path / "wasm.toml"
    contract.write_text('extends = "emscripten-wasm-eh"\nglibc_max = "2.28"\n')
    binary = tmp_path / "x.o"
    binary.write_bytes(b"\0asm\1\0\0\0")
    rc, out = _run(capsys, "check", "--contract", str(contract), str(binary))
    assert rc == 2
    assert ("(top level).glibc_max: applies only to os linux; the contract's os is "
            "'emscripten'") in out


def test_a_quoted_stage_name_is_located_on_its_own_line() -> None:
    idx = LineIndex('[stages.core]\nrecipes = []\n\n[stages."../evil"]\nrecipes = []\n'
                    '"a.b" = 1\n')
    assert idx.line_of('stages."../evil"') == 4
    assert idx.line_of('stages."../evil".recipes') == 5
    assert idx.line_of('stages."../evil"."a.b"') == 6
    assert idx.line_of("stages.core.recipes") == 2


ZSTD_CMAKE = '''\
from prebake.recipes import Build, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    sources=(UrlSource("debian:pool/main/libz/libzstd/"
                       "libzstd_{version}+dfsg.orig.tar.xz"),),
    platforms={"*": Build(commands=(
        "cmake -S {src}/build/cmake -B {build} -DCMAKE_C_COMPILER={cc} -DCMAKE_CXX_COMPILER={cxx}",
        "cmake --build {build}"))},
    outputs=Outputs(libs={"*": ("lib/libzstd.a",)}, headers=("include/zstd.h",)),
)
'''


def test_a_recipe_naming_the_compiler_for_cmake_is_refused_with_what_to_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``-DCMAKE_C_COMPILER={cc}`` fails at CMake's project() ({cc} is several words: the prefix
    map, a launcher, zig's -target) or builds with an unverified compiler: refused at load."""
    ws = _sdk(tmp_path, zstd=ZSTD_CMAKE)
    rc, out = _run(capsys, "-C", str(ws), "plan")
    assert rc == 2 and "Traceback" not in out
    lines = [line for line in out.splitlines() if "CMAKE_C_COMPILER" in line]
    assert len(lines) == 1, out
    assert "recipes/zstd.py:9: RECIPE.platforms['*'].commands[0]" in lines[0]
    assert "use -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain} instead" in lines[0]
    assert not (ws / ".prebake").exists()


def test_a_missing_cmake_toolchain_extra_file_is_a_load_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _sdk(tmp_path)
    text = (ws / "prebake.toml").read_text()
    (ws / "prebake.toml").write_text(text.replace(
        'ar = "x86_64-w64-mingw32-ar"\n',
        'ar = "x86_64-w64-mingw32-ar"\ncmake_toolchain = "cmake/extra.cmake"\n'))
    rc, out = _run(capsys, "-C", str(ws), "plan")
    assert rc == 2 and "platforms.windows-x86_64.toolchain.cmake_toolchain" in out
    assert "no such file" in out and "Traceback" not in out


def test_a_recipe_may_be_a_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    ws = _sdk(tmp_path)
    rc, before = _run(capsys, "-C", str(ws), "plan", "--json")
    assert rc == 0, before
    folder = ws / "recipes" / "vecmath"
    folder.mkdir()
    text = (ws / "recipes" / "vecmath.py").read_text()
    (ws / "recipes" / "vecmath.py").unlink()
    # a local source is found from the recipe's own folder, one level deeper now
    (folder / "recipe.py").write_text(text.replace('"../src/vecmath"', '"../../src/vecmath"'))
    rc, after = _run(capsys, "-C", str(ws), "plan", "--json")
    assert rc == 0, after
    ids = [u["id"] for u in json.loads(before)["units"]]
    assert [u["id"] for u in json.loads(after)["units"]] == ids and "core/wasm" in ids


def test_a_recipe_in_both_shapes_or_a_misnamed_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _sdk(tmp_path)
    folder = ws / "recipes" / "vecmath"
    folder.mkdir()
    shutil.copy(ws / "recipes" / "vecmath.py", folder / "recipe.py")
    rc, out = _run(capsys, "-C", str(ws), "plan")
    assert rc == 2
    assert "recipe 'vecmath' is both vecmath.py and vecmath/recipe.py: keep one" in out
    (ws / "recipes" / "vecmath.py").unlink()
    folder.rename(ws / "recipes" / "vecmath2")
    text = (ws / "prebake.toml").read_text().replace('"vecmath"', '"vecmath2"')
    (ws / "prebake.toml").write_text(text.replace("vecmath = ", "vecmath2 = "))
    rc, out = _run(capsys, "-C", str(ws), "plan")
    assert rc == 2
    assert "RECIPE.name: is 'vecmath' but its folder is named 'vecmath2'" in out
