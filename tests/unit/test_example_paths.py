"""The examples name each other by relative paths (a store ``file://../sdk/releases``, a
consumer ``add_subdirectory(../flagship/consumer …)``); a renamed example left the addon's
at ``../onnxruntime``, which only the README's main job found, from a fresh clone. Each such
path must reach an example of this repository (the ``releases`` folder itself is made by the
first build, so its parent is what must exist)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKSPACES = sorted(p.parent for p in EXAMPLES.glob("*/prebake.toml"))


def _file_stores(ws: Path) -> list[str]:
    doc = tomllib.loads((ws / "prebake.toml").read_text())
    return [s["url"].removeprefix("file://") for s in doc.get("stores", {}).values()
            if s.get("url", "").startswith("file://")]


def test_there_are_examples_that_name_each_other() -> None:
    assert {"addon", "flagship", "sdk"} <= {ws.name for ws in WORKSPACES}
    assert any(".." in url for ws in WORKSPACES for url in _file_stores(ws))


@pytest.mark.parametrize("ws", WORKSPACES, ids=lambda p: p.name)
def test_every_file_store_is_an_example_of_this_repository(ws: Path) -> None:
    for url in _file_stores(ws):
        store = (ws / url).resolve()
        owner = store.parent if store.name == "releases" else store
        assert (owner / "prebake.toml").is_file(), \
            f"{ws.name}: store {url} is not beside a workspace"


@pytest.mark.parametrize("ws", WORKSPACES, ids=lambda p: p.name)
def test_every_cmake_subdirectory_exists(ws: Path) -> None:
    for lists in ws.rglob("CMakeLists.txt"):
        if ".prebake" in lists.parts or "releases" in lists.parts:
            continue
        for m in re.finditer(r"^\s*add_subdirectory\(\s*([^\s)]+)", lists.read_text(), re.M):
            if "$" in m.group(1):
                continue
            assert (lists.parent / m.group(1) / "CMakeLists.txt").is_file(), \
                f"{lists.relative_to(EXAMPLES)}: add_subdirectory({m.group(1)}) does not exist"
