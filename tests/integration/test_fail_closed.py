"""Fail closed in the build guards and in ``fetch``: a contract rule whose fact cannot be read
fails (and says why) unless the contract opts the key out with ``allow_unknown``, which every
report and manifest still lists. A wasm object does not record its OS (emscripten or wasi), so
``os = "emscripten"`` written in a contract cannot be decided for ``helper.o``."""

from __future__ import annotations

from pathlib import Path

from tests import support
from tests.integration import guard_workspace as gw

ALLOW = 'allow_undefined=("thrower_backend_*",),'


def test_the_build_guard_fails_closed_on_an_unreadable_fact(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, contract_extra='os = "emscripten"')
    rc, data, _ = gw.build_json(ws, "--platform", "wasm")
    assert rc == 1, data
    (unit,) = data["units"]
    assert "contract check failed" in unit["message"]
    assert "os: unknown for" in unit["message"] and "helper.o" in unit["message"]
    assert "fails closed" in unit["message"]
    assert gw.assets(ws) == []


def test_an_opted_out_key_builds_and_the_manifest_lists_it(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW,
                 contract_extra='os = "emscripten"\nallow_unknown = ["os"]')
    rc, data, _ = gw.build_json(ws, "--platform", "wasm")
    assert rc == 0, data
    check = gw.manifest(ws, "wasm")["guards"]["check"]
    assert check["contract"]["allow_unknown"] == ["os", "arch"]  # arch: implied by the platform
    assert "os: lib/libthrower.a" in check["undecided"]


def test_fetch_fails_closed_on_an_unreadable_fact_and_installs_nothing(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW)
    rc, data, _ = gw.build_json(ws, "--platform", "wasm")
    assert rc == 0, data
    # the platform's implied os rule is listed, not silently passed
    assert gw.manifest(ws, "wasm")["guards"]["check"]["contract"]["allow_unknown"] == [
        "arch", "os"]
    contract = tmp_path / "consumer.toml"
    contract.write_text('os = "emscripten"\neh = "wasm"\n')
    into = tmp_path / "into"
    store = f"file://{ws / 'releases'}"
    proc = support.prebake("fetch", "guarded-core==1.0.0", "--platform", "wasm", "--store", store,
                           "--into", into, "--contract", contract, "--lock", tmp_path / "l.lock")
    assert proc.returncode == 1, proc.stderr
    assert "os: unknown for" in proc.stderr and "fails closed" in proc.stderr
    assert not into.exists() or not any(into.iterdir())
    contract.write_text('os = "emscripten"\neh = "wasm"\nallow_unknown = ["os"]\n')
    proc = support.prebake("fetch", "guarded-core==1.0.0", "--platform", "wasm", "--store", store,
                           "--into", into, "--contract", contract, "--lock", tmp_path / "l.lock")
    assert proc.returncode == 0, proc.stderr
    assert (into / "lib" / "libthrower.a").is_file()


def test_allowed_licenses_fails_closed_on_a_recipe_that_proves_no_license(tmp_path: Path
                                                                          ) -> None:
    """``thrower`` has no ``license_check``: a contract naming the licenses it may have cannot
    judge it, in the build and at fetch, unless ``allow_unknown`` says so; the asset then
    states no license anywhere (nothing was read)."""
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, contract_extra='allowed_licenses = ["MIT"]')
    rc, data, _ = gw.build_json(ws, "--platform", "wasm")
    assert rc == 1, data
    (unit,) = data["units"]
    assert ("thrower/wasm: the contract's allowed_licenses (MIT) cannot judge thrower: its "
            "recipe proves no license (Recipe.license_check); fails closed") in unit["message"]
    assert gw.assets(ws) == []
    ws = gw.make(tmp_path / "opted", snippet_extra=ALLOW,
                 contract_extra='allowed_licenses = ["MIT"]\nallow_unknown = ["allowed_licenses"]')
    rc, data, _ = gw.build_json(ws, "--platform", "wasm")
    assert rc == 0, data
    manifest = gw.manifest(ws, "wasm")
    assert "allowed_licenses: thrower" in manifest["guards"]["check"]["undecided"]
    assert "license" not in manifest["recipes"][0] and "license" not in manifest["guards"]
    contract = tmp_path / "consumer.toml"
    contract.write_text('allowed_licenses = ["MIT"]\n')
    into = tmp_path / "into"
    proc = support.prebake("fetch", "guarded-core==1.0.0", "--platform", "wasm", "--store",
                           f"file://{ws / 'releases'}", "--into", into, "--contract", contract,
                           "--lock", tmp_path / "l.lock")
    assert proc.returncode == 1, proc.stderr
    assert "states no proven license for thrower" in proc.stderr
    assert not into.exists() or not any(into.iterdir())
