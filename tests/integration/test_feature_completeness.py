"""Facts say how complete they are: a wasm module's feature list read without its code says it
is partial, and a contract rule forbidding features fails closed on it unless ``--deep`` reads
the whole list.

The module is real Emscripten output: ``-msign-ext`` code whose only trace of ``sign-ext`` is
the ``i32.extend8_s``/``i32.extend16_s`` instructions in its code (final emcc output has no
``target_features`` section), checked against ``wasm-objdump -d``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import support

pytestmark = pytest.mark.skipif(shutil.which("emcc") is None, reason="needs emscripten")

SIGN_EXT = """\
#include <emscripten.h>
EMSCRIPTEN_KEEPALIVE int narrow(int x) { return (signed char)x + (short)(x >> 3); }
int main(void) { return 0; }
"""
SIMD = ("#include <wasm_simd128.h>\n"
        "v128_t add(v128_t a, v128_t b) { return wasm_i32x4_add(a, b); }\n")


@pytest.fixture(scope="module")
def built() -> Path:
    env = {"EM_CACHE": str(support.em_cache())}
    return support.build("feature-completeness", {"se.c": SIGN_EXT, "simd.c": SIMD}, [
        ["emcc", "-O1", "-msign-ext", "se.c", "-o", "se.js"],
        ["emcc", "-O2", "-msimd128", "-c", "simd.c", "-o", "simd.o"],
    ], env=env)


def _facts(path: Path, *flags: str) -> dict[str, object]:
    proc = support.prebake("inspect", "--json", *flags, path)
    assert proc.returncode == 0, proc.stderr
    [res] = json.loads(proc.stdout)["results"]
    return res  # type: ignore[no-any-return]


def test_the_module_shows_sign_ext_only_in_its_code(built: Path) -> None:
    """The other tool's reading: sign-extension instructions in the code, no custom section."""
    dis = subprocess.run(["wasm-objdump", "-d", str(built / "se.wasm")], capture_output=True,
                         text=True, check=True).stdout
    assert "i32.extend8_s" in dis or "i32.extend16_s" in dis
    headers = subprocess.run(["wasm-objdump", "-h", str(built / "se.wasm")],
                             capture_output=True, text=True, check=True).stdout
    assert "target_features" not in headers


def test_a_feature_list_read_without_the_code_says_it_is_partial(built: Path) -> None:
    shallow = _facts(built / "se.wasm")
    abi = shallow["abi"]
    assert isinstance(abi, dict)
    assert "sign-ext" not in abi["wasm_features"] and abi["wasm_features_complete"] is False
    evidence = shallow["evidence"]
    assert isinstance(evidence, dict)
    assert evidence["wasm_features"][0].startswith("partial:")
    deep = _facts(built / "se.wasm", "--deep")
    abi = deep["abi"]
    assert isinstance(abi, dict)
    assert "sign-ext" in abi["wasm_features"] and abi["wasm_features_complete"] is True


def test_an_objects_target_features_are_the_whole_list(built: Path) -> None:
    abi = _facts(built / "simd.o")["abi"]
    assert isinstance(abi, dict)
    assert abi["wasm_features"] == ["simd128"] and abi["wasm_features_complete"] is True


def _check(tmp_path: Path, path: Path, contract: str, *flags: str) -> tuple[int, dict[str, object]]:
    c = tmp_path / "c.toml"
    c.write_text(contract)
    proc = support.prebake("check", "--json", *flags, path, "--contract", c)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_forbidding_a_feature_fails_closed_on_a_partial_list(tmp_path: Path, built: Path) -> None:
    module = built / "se.wasm"
    # sign-ext is there, but only the code shows it: without --deep the rule cannot pass
    rc, out = _check(tmp_path, module, 'features_forbidden = ["sign-ext"]\n')
    assert rc == 1 and not out["ok"], out
    unknown = out["unknown"]
    assert isinstance(unknown, list)
    [u] = unknown
    assert u["rule"] == "features_forbidden" and "partial" in u["reason"], u
    rc, out = _check(tmp_path, module, 'features_forbidden = ["sign-ext"]\n', "--deep")
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    assert [v["rule"] for v in violations] == ["features_forbidden"]
    assert violations[0]["found"] == "sign-ext"
    # a feature the module does not use: unknown without --deep, proven absent with it
    rc, out = _check(tmp_path, module, 'features_forbidden = ["relaxed-simd"]\n')
    assert rc == 1 and out["unknown"], out
    rc, out = _check(tmp_path, module, 'features_forbidden = ["relaxed-simd"]\n', "--deep")
    assert rc == 0 and out["ok"], out
    # a whole list (an object's target_features) needs no deep read
    rc, out = _check(tmp_path, built / "simd.o", 'features_forbidden = ["relaxed-simd"]\n')
    assert rc == 0, out


def test_requiring_a_feature_a_partial_list_lacks_says_the_list_is_partial(
        tmp_path: Path, built: Path) -> None:
    rc, out = _check(tmp_path, built / "se.wasm", 'features_required = ["sign-ext"]\n')
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    [v] = violations
    assert v["rule"] == "features_required" and "partial" in v["detail"], v
    rc, out = _check(tmp_path, built / "se.wasm", 'features_required = ["sign-ext"]\n', "--deep")
    assert rc == 0, out
