"""The whole-archive proof: every member of every shipped archive links, not only the
snippet's.

The reproducer: ``libthrower.a``'s ``helper.o`` calls ``thrower_backend_init``, which nothing
defines; the snippet only uses ``thrower::parse``. Before, the snippet linked, the guard passed
and the asset was published; now the unit fails naming the member and the symbol, for wasm
(Debian's em++ / wasm-ld) and linux (gcc / GNU ld) alike, and nothing is published.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from prebake.package.manifest_builder import schema_path
from tests.integration import guard_workspace as gw

PLATFORMS = ("wasm", "linux-x86_64")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_member_with_an_undefined_symbol_fails_the_unit_and_publishes_nothing(
        tmp_path: Path, platform: str) -> None:
    ws = gw.make(tmp_path / "ws")
    rc, data, _ = gw.build_json(ws, "--platform", platform)
    assert rc == 1, data
    (unit,) = data["units"]
    assert unit["state"] == "failed"
    assert "whole-archive link failed" in unit["message"]
    assert "lib/libthrower.a(helper.o): undefined symbol thrower_backend_init" in unit["message"]
    assert "thrower.o" not in unit["message"].split("whole-archive", 1)[1]
    assert gw.assets(ws) == []
    assert not list((ws / ".prebake" / "dist").rglob("*.tar.xz"))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_allow_undefined_lets_the_consumer_provide_it_and_the_manifest_says_so(
        tmp_path: Path, platform: str) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra='allow_undefined=("thrower_backend_*",),')
    rc, data, _ = gw.build_json(ws, "--platform", platform)
    assert rc == 0, data
    m = gw.manifest(ws, platform)
    jsonschema.validate(m, __import__("json").loads(schema_path().read_text()))
    lt = m["guards"]["link_test"]
    assert lt["allow_undefined"] == {"thrower_backend_*": ["thrower_backend_init"]}
    assert "whole archive lib/libthrower.a" in lt["linked"] and "snippet" in lt["linked"]
    # the stand-in exists only in the proof's link: the shipped archive still needs it
    assert m["facts"][0]["path"] == "lib/libthrower.a"


def test_an_allowance_for_another_name_does_not_hide_the_real_one(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra='allow_undefined=("other_backend_*",),')
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    (unit,) = data["units"]
    assert "helper.o): undefined symbol thrower_backend_init" in unit["message"]
    assert gw.assets(ws) == []
