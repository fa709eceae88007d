"""The Meson build family's parts that need no build: the machine file's quoting (read back by
Meson's own parser), the recipe checks that keep a build from downloading, the pinned meson and
ninja that ``{meson_cross}`` brings (found beside prebake's interpreter first, another release
refused in one line), and the pins in pyproject.toml held to the ones verified."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from mesonbuild import mparser

from prebake.meson.quote import meson_array, meson_string
from prebake.model.recipe import MESON_TOOLS, host_tools_used
from prebake.recipes import Build, HostTool, Recipe, validate_recipe
from prebake.toolchain.hosttools import measure
from tests import support

SETUP = "{host_tools[meson]} setup {build} {src} {meson_cross} --prefix={prefix}"


def _read_back(expr: str) -> object:
    """What Meson's own parser reads ``expr`` as (a string or a list of strings)."""
    node = mparser.Parser(f"x = {expr}\n", "machine.ini").parse().lines[0].value
    if isinstance(node, mparser.ArrayNode):
        return [a.value for a in node.args.arguments]  # type: ignore[attr-defined]
    return node.value  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["plain", "it's", "back\\slash", "two\nlines", "tab\there",
                                   "-ffile-prefix-map=/a b/c=.", "@at@", "'", "\\'", ""])
def test_a_meson_string_reads_back_as_exactly_its_value(value: str) -> None:
    assert _read_back(meson_string(value)) == value
    assert _read_back(meson_array([value, "x"])) == [value, "x"]


def _recipe(*commands: str, host_tools: tuple[HostTool, ...] = ()) -> Recipe:
    return Recipe(name="m", pin="m", platforms={"*": Build(commands=commands)},
                  host_tools=host_tools)


@pytest.mark.parametrize(("command", "named"), [
    (SETUP + " --wrap-mode=default", "--wrap-mode=default"),
    (SETUP + " --wrap-mode forcefallback", "--wrap-mode forcefallback"),
    (SETUP + " -Dwrap_mode=default", "-Dwrap_mode=default"),
    ("{host_tools[meson]} subprojects download", "subprojects download"),
    ("meson wrap install zlib", "wrap install"),
])
def test_a_command_that_would_download_is_refused_at_load_naming_it(command: str,
                                                                    named: str) -> None:
    problems = validate_recipe(_recipe(SETUP, command))
    assert [p.message for p in problems if "never downloads" in p.message] == [
        f"runs `{named}`: a build never downloads ({{meson_cross}} sets "
        "--wrap-mode=nodownload); give the subproject's source as one of the recipe's "
        "sources instead"]


def test_meson_cross_brings_the_pinned_meson_and_ninja() -> None:
    plain = _recipe(SETUP, "{host_tools[ninja]} -C {build}", SETUP + " --wrap-mode=nodownload")
    assert validate_recipe(plain) == []
    assert host_tools_used(plain, "linux-x86_64") == MESON_TOOLS
    # without {meson_cross}, {host_tools[meson]} names no host tool of the recipe
    bare = _recipe("{host_tools[meson]} setup {build} {src}")
    assert any("names no host tool" in p.message for p in validate_recipe(bare))
    assert host_tools_used(bare, "linux-x86_64") == ()
    # a recipe that pins its own meson keeps it
    own = HostTool("meson", "1.9.1")
    assert host_tools_used(_recipe(SETUP, host_tools=(own,)), "x") == (own, MESON_TOOLS[1])


def test_the_pinned_tools_are_found_beside_prebakes_interpreter_first(tmp_path: Path) -> None:
    """Another meson first on the build's PATH is not the one verified: the one installed
    with prebake (its own dependency) is; at another release, one line names the pin."""
    decoy = tmp_path / "bin"
    decoy.mkdir()
    (decoy / "meson").write_text("#!/bin/sh\necho 0.64.1\n")
    (decoy / "meson").chmod(0o755)
    path = f"{decoy}:/usr/bin:/bin"
    for tool in MESON_TOOLS:
        found = measure(tool, path)
        assert found.ok, found.error
        assert found.path == str((Path(sys.executable).parent / tool.name).resolve())
    wanted = HostTool("meson", "9.1", with_prebake=True, package=MESON_TOOLS[0].package)
    error = measure(wanted, path).error or ""
    assert "\n" not in error and error.startswith("host tool meson: the recipe needs 9.1; ")
    assert "pip install meson==1.12.1 ninja==1.13.2" in error
    # a tool not installed with prebake is looked for on the build's PATH only
    other = measure(HostTool("meson", "1.12.1"), path)
    assert other.path == str(decoy / "meson") and not other.ok


def test_pyproject_pins_the_releases_prebake_verifies() -> None:
    meta = tomllib.loads((support.ROOT / "pyproject.toml").read_text())
    pins = [d for d in meta["project"]["dependencies"] if d.startswith(("meson", "ninja"))]
    assert pins == [f"{t.name}=={t.version}" for t in MESON_TOOLS]
