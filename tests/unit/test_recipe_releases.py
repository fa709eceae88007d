"""A recipe's per-release arguments (``releases``, ``{release[NAME]}``): the newest entry not
newer than the pin, expanded as whole argv (none for an empty entry), and validated so that no
pin can leave a command without its arguments."""

from __future__ import annotations

import dataclasses

import pytest

from prebake.bake.process import Context, expand
from prebake.recipes import Build, Recipe, Since, validate_recipe
from prebake.recipes.loader import BUILTIN_DIR, load_recipe_file

TABLE = {"eh": (Since("1.24", ("--enable_wasm_jspi",)),
                Since("0", ("--disable_wasm_exception_catching", "-DX=a b")))}


def _recipe(**kw: object) -> Recipe:
    base = Recipe(name="r", pin="r", platforms={"wasm": Build(commands=(
        "tool --first {release[eh]} --last",))}, releases=TABLE)
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("version", "want"), [
    ("1.21.0", ("--disable_wasm_exception_catching", "-DX=a b")),
    ("1.23.9", ("--disable_wasm_exception_catching", "-DX=a b")),
    ("1.24", ("--enable_wasm_jspi",)),
    ("1.24.0", ("--enable_wasm_jspi",)),
    ("1.27.0", ("--enable_wasm_jspi",)),
    ("2.0.0", ("--enable_wasm_jspi",)),
])
def test_the_newest_entry_not_newer_than_the_pin(version: str, want: tuple[str, ...]) -> None:
    assert _recipe().release_argv(version)["eh"] == want


def test_a_bare_placeholder_is_whole_argv_and_inside_a_token_is_joined() -> None:
    ctx = Context(values={}, pins={}, release=_recipe().release_argv("1.21.0"))
    assert expand("tool --first {release[eh]} --last", ctx, "t") == [
        "tool", "--first", "--disable_wasm_exception_catching", "-DX=a b", "--last"]
    assert expand("tool F={release[eh]}", ctx, "t") == [
        "tool", "F=--disable_wasm_exception_catching '-DX=a b'"]
    empty = Context(values={}, pins={}, release={"eh": ()})
    assert expand("tool {release[eh]} --last", empty, "t") == ["tool", "--last"]


def test_a_table_without_a_floor_or_an_unknown_table_is_refused() -> None:
    no_floor = _recipe(releases={"eh": (Since("1.24", ("--x",)),)})
    assert any("has no Since(\"0\"" in p.message for p in validate_recipe(no_floor))
    unknown = _recipe(platforms={"wasm": Build(commands=("tool {release[nope]}",))})
    assert any("{release[nope]} names no table" in p.message for p in validate_recipe(unknown))
    bad = _recipe(releases={"eh": (Since("one", ()), Since("0"))})
    assert any("Since('one'" in p.message for p in validate_recipe(bad))
    bare = _recipe(platforms={"wasm": Build(commands=("tool {release}",))})
    assert any("write release as {release[NAME]}" in p.message for p in validate_recipe(bare))
    assert validate_recipe(_recipe()) == []


def test_onnxruntime_asks_each_release_for_exnref_its_own_way() -> None:
    recipe = load_recipe_file(BUILTIN_DIR / "onnxruntime" / "recipe.py")
    old, new = recipe.release_argv("1.21.0"), recipe.release_argv("1.27.0")
    exnref = "-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0"
    assert old["wasm_eh"] == ("--disable_wasm_exception_catching",)
    assert old["wasm_eh_defines"] == (f"CMAKE_C_FLAGS={exnref}", f"CMAKE_CXX_FLAGS={exnref}")
    assert new == {"wasm_eh": ("--enable_wasm_jspi",), "wasm_eh_defines": ()}
