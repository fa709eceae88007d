"""A built-in recipe that configures with CMake and installs with ``cmake --install … --prefix
{prefix}`` configures with that prefix too.

``--install --prefix`` moves the files but not what configure wrote into them: onnxruntime's
``libonnxruntime.pc`` (``prefix=@CMAKE_INSTALL_PREFIX@``) came out as ``prefix=/usr/local``, and
packaging refuses a ``.pc`` naming a folder outside the asset — found only 35 minutes into the
linux-aarch64 long leg. This reads every shipped recipe, so a new leg that forgets it fails here.
"""

from __future__ import annotations

import pytest

from prebake.recipes import Build
from prebake.recipes.loader import builtin_names, find_recipe, load_recipe_file


def _legs() -> list[tuple[str, str, list[str]]]:
    out = []
    for name in builtin_names():
        path = find_recipe(name)
        assert path is not None
        recipe = load_recipe_file(path)
        for platform, how in recipe.platforms.items():
            if isinstance(how, Build):
                out.append((name, platform, [c if isinstance(c, str) else " ".join(c)
                                             for c in how.commands]))
    return out


def _installs(command: str) -> bool:
    """``cmake --install … --prefix {prefix}`` (not a configure flag such as FFmpeg's macOS
    ``--install-name-dir``)."""
    return " --install " in f" {command} " and "--prefix {prefix}" in command


LEGS = _legs()
INSTALLING = [(n, p, cmds) for n, p, cmds in LEGS if any(_installs(c) for c in cmds)]


def test_the_shipped_recipes_have_such_legs() -> None:
    # onnxruntime's linux-aarch64 and macos-arm64: the check below is not vacuous
    assert {(n, p) for n, p, _ in INSTALLING} >= {("onnxruntime", "linux-aarch64"),
                                                   ("onnxruntime", "macos-arm64")}


@pytest.mark.parametrize(("name", "platform", "commands"), INSTALLING,
                         ids=[f"{n}-{p}" for n, p, _ in INSTALLING])
def test_a_leg_installing_with_a_prefix_configured_with_it(name: str, platform: str,
                                                           commands: list[str]) -> None:
    install = next(i for i, c in enumerate(commands) if _installs(c))
    configured = [c for c in commands[:install] if "CMAKE_INSTALL_PREFIX={prefix}" in c]
    assert configured, f"{name}/{platform} installs into {{prefix}} but configures without it"
