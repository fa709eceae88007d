"""Invalid workspace files: each gives one clear block naming the key (and line), exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.errors import ConfigError
from prebake.intake import load_workspace

DATA = Path(__file__).resolve().parent.parent / "data" / "workspaces"

# file -> (key the message must name, text it must contain, line or None)
CASES: dict[str, tuple[str, str, int | None]] = {
    "unknown_key": ("platforms.linux-x86_64.tolchain", "did you mean 'toolchain'", 11),
    "unknown_recipe": ("stages.core.recipes[0]", "unknown recipe 'tiney' (did you mean 'tiny'?)",
                       14),
    "after_cycle": ("after", "cycle in after: core -> media -> core", None),
    "missing_pin": ("pins.zlib", "recipe 'readszlib' (stage 'core') reads this pin", 5),
    "missing_toolchain_pin": ("pins.emsdk", "platform 'wasm' toolchain reads this pin", 5),
    "unknown_os": ("platforms.linux-x86_64.os", "did you mean 'linux'", 9),
    "unknown_arch": ("platforms.linux-x86_64.arch", "prebake calls it 'x86_64'", 10),
    "templated_url_with_sha256": ("recipes/urltemplated.py:8: RECIPE.sources[0].sha256",
                                  "takes its sha256 from prebake.sources.lock", None),
    "duplicate_platform": ("platforms.linux-x86_64",
                           "duplicate platform name 'linux-x86_64': declared again here, "
                           "first at line 8", 18),
    "bad_types": ("stages.core.recipes", "must be a list of strings; got a string", 14),
    "extra_in_full": ("aliases.full", "'extra' must never be part of 'full'", 23),
    "bad_contract": ("platforms.linux-x86_64.contract.eh", "got 'wsam'", 14),
    "two_default_stores": ("stores", "more than one store has default = true: a, b", 16),
    "bad_placeholder": ("recipes/badplaceholder.py:8: RECIPE.platforms['*'].commands[0]",
                        "unknown placeholder {sorce} (did you mean 'src'?)", None),
    "syntax_error": ("(TOML syntax)", "Expected ']'", 8),
}


def _workspace(tmp_path: Path, name: str) -> Path:
    shutil.copy(DATA / f"{name}.toml", tmp_path / "prebake.toml")
    shutil.copytree(DATA / "recipes", tmp_path / "recipes")
    return tmp_path


def test_every_data_file_has_a_case() -> None:
    files = {p.stem for p in DATA.glob("*.toml")}
    assert files == set(CASES) | {"multiple_problems"}
    assert len(CASES) >= 8


@pytest.mark.parametrize("name", sorted(CASES))
def test_invalid_workspace_names_the_key(tmp_path: Path, name: str) -> None:
    key, text, line = CASES[name]
    with pytest.raises(ConfigError) as info:
        load_workspace(_workspace(tmp_path, name))
    matching = [p for p in info.value.problems if p.key.endswith(key) or p.key == key]
    assert matching, f"no problem names {key!r}: {info.value}"
    assert any(text in p.message for p in matching), str(info.value)
    if line is not None:
        assert any(p.line == line for p in matching), str(info.value)


def test_cycle_names_both_stages(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workspace(_workspace(tmp_path, "after_cycle"))
    [problem] = info.value.problems
    assert problem.key in ("stages.core.after", "stages.media.after")


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workspace(_workspace(tmp_path, "multiple_problems"))
    keys = [p.key for p in info.value.problems]
    assert keys == ["stages.core.packge", "stages.core.after[0]", "stages.media.recipes[0]"]
    assert "did you mean 'package'" in info.value.problems[0].message


@pytest.mark.parametrize("name", [*sorted(CASES), "multiple_problems"])
def test_cli_exit_2_one_block_no_traceback(tmp_path: Path, name: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path, name)
    assert main(["-C", str(ws), "plan"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    assert err.startswith(f"prebake: error: {ws / 'prebake.toml'}:")
    key = CASES.get(name, ("stages.core.packge",))[0]
    assert key in err
    first = err.splitlines()[0]
    if not first.endswith(" problems"):  # one problem is one line: file:line: key: message
        [line] = err.splitlines()
        at = CASES[name][2]
        assert at is None or f"prebake.toml:{at}: " in line or ".py:" in line, line


def test_recipe_file_error_is_located(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "unknown_recipe")
    (ws / "prebake.toml").write_text((ws / "prebake.toml").read_text().replace("tiney", "oops"))
    (ws / "recipes" / "oops.py").write_text("x = 1\nRECIPE = undefined_name\n")
    with pytest.raises(ConfigError) as info:
        load_workspace(ws)
    [problem] = info.value.problems
    assert problem.key.endswith("oops.py:2")
    assert "NameError" in problem.message


def test_recipe_without_recipe_variable(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "unknown_recipe")
    (ws / "prebake.toml").write_text((ws / "prebake.toml").read_text().replace("tiney", "empty"))
    (ws / "recipes" / "empty.py").write_text("NAME = 'empty'\n")
    with pytest.raises(ConfigError, match=r"must define RECIPE = prebake.recipes.Recipe"):
        load_workspace(ws)
