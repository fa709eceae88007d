"""``steady_cc`` with real compiles: its dependency files in a folder with a space (real ninja
and make read them back), and its mount namespace on a shared mount (systemd's default
propagation), in a chroot and not, with compiles running side by side.

The wrapper runs any compiler it is given (``steady-cc gcc -c …``); gcc here, since what is
checked is the wrapper's own work: the depfile it writes back, and the mounts it makes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.toolchain import steady, steady_cc

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the wrapper's mount namespace needs root"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]
HEADER = "#define ANSWER 42\n"
SOURCE = '#include "answer.h"\nint answer(void) { return ANSWER; }\n'


def _unit(base: Path) -> tuple[Path, Path]:
    """A unit's work folder (its wrapper installed) with a source and a header."""
    root = base / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "answer.h").write_text(HEADER)
    (root / "src" / "answer.c").write_text(SOURCE)
    (root / "build").mkdir()
    wrapper = steady.install(("emcc",), root, in_environment=False)
    assert wrapper is not None
    return root, wrapper


def _env(root: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(root), steady_cc.ROOT_VARIABLE: str(root)}


def _ninja_escaped(path: Path) -> str:
    return str(path).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja")
def test_ninja_in_a_folder_with_a_space_recompiles_nothing_the_second_time(tmp_path: Path
                                                                           ) -> None:
    root, wrapper = _unit(tmp_path / "with space")
    build = root / "build"
    (build / "build.ninja").write_text(
        f"rule cc\n  command = '{wrapper}' gcc -MD -MF $out.d -c $in -o $out\n"
        "  depfile = $out.d\n  deps = gcc\n"
        f"build answer.o: cc {_ninja_escaped(root / 'src' / 'answer.c')}\n")
    env = _env(root)
    first = subprocess.run(["ninja"], cwd=build, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (build / "answer.o").is_file()
    again = subprocess.run(["ninja", "-d", "explain"], cwd=build, env=env, capture_output=True,
                           text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no work to do" in again.stdout, again.stdout + again.stderr
    # and a change to the header is seen: the dependency is recorded under its real name
    (root / "src" / "answer.h").write_text("#define ANSWER 43\n")
    third = subprocess.run(["ninja"], cwd=build, env=env, capture_output=True, text=True)
    assert "[1/1]" in third.stdout, third.stdout


def _make_escaped(path: Path) -> str:
    """A path as a make prerequisite."""
    return str(path).replace("$", "$$").replace(" ", "\\ ").replace("#", "\\#")


def _in_recipe(path: Path) -> str:
    """A path as a word of a make recipe's shell line."""
    return "'" + str(path).replace("$", "$$") + "'"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("folder", ["with space", "dollar$and#hash"])
@pytest.mark.parametrize("target", ["", "-MT $@", "-MQ $@"])
def test_make_in_an_odd_folder_finds_its_rules(tmp_path: Path, folder: str, target: str
                                               ) -> None:
    """The issue's: make stopped with ``No rule to make target`` (the folder cut at its
    space). A ``$`` and a ``#`` in the folder too; the target from ``-o``, ``-MT`` and
    ``-MQ``."""
    root, wrapper = _unit(tmp_path / folder)
    build = root / "build"
    source = root / "src" / "answer.c"
    (build / "Makefile").write_text(
        f"answer.o: {_make_escaped(source)}\n"
        f"\t{_in_recipe(wrapper)} gcc -MD -MF answer.d {target} -c {_in_recipe(source)} -o $@\n"
        "-include answer.d\n")
    env = _env(root)
    first = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    again = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is up to date" in again.stdout, again.stdout + again.stderr
    (root / "src" / "answer.h").write_text("#define ANSWER 43\n")
    third = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert third.returncode == 0 and "gcc" in third.stdout, third.stdout + third.stderr
