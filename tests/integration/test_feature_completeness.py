"""Facts say how complete they are: a wasm module's feature list is read from its code on the
default path, and whole; a list whose code could not be read says it is partial, and a contract
rule forbidding features fails closed on it.

The module is real Emscripten output: ``-msign-ext`` code whose only trace of ``sign-ext`` is
the ``i32.extend8_s``/``i32.extend16_s`` instructions in its code (final emcc output has no
``target_features`` section), checked against ``wasm-objdump -d``. The partial list is the same
module with one instruction of one body overwritten by an opcode outside WebAssembly 3.0.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
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


def test_the_feature_list_is_read_from_the_code_on_the_default_path(built: Path) -> None:
    res = _facts(built / "se.wasm")
    abi = res["abi"]
    assert isinstance(abi, dict)
    assert "sign-ext" in abi["wasm_features"] and abi["wasm_features_complete"] is True
    evidence = res["evidence"]
    assert isinstance(evidence, dict)
    assert any(e.startswith("sign-ext: ") and "sign-extension instructions (code)" in e
               for e in evidence["wasm_features"]), evidence["wasm_features"]


@pytest.fixture(scope="module")
def partial(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """se.wasm with the first instruction of its last body made 0xE0 (stack switching's
    cont.new, after 3.0): the body no longer decodes, every size still fits."""
    from prebake.inspect import wasm, wasm_code
    from prebake.inspect.binreader import Reader

    data = bytearray((built / "se.wasm").read_bytes())
    m = wasm.parse_container(Reader(bytes(data)))
    assert m.code is not None
    scan = wasm_code.scan_locals(bytes(data), *m.code, keep_bodies=True)
    start, end = scan.bodies[-1]
    first = wasm_code.decode_locals(bytes(data), start, end, Counter())
    data[first] = 0xE0
    out = tmp_path_factory.mktemp("partial") / "se.wasm"
    out.write_bytes(bytes(data))
    return out


def test_a_feature_list_whose_code_cannot_be_read_says_it_is_partial(partial: Path) -> None:
    res = _facts(partial)
    abi = res["abi"]
    assert isinstance(abi, dict)
    assert abi["wasm_features_complete"] is False
    assert abi["wasm_eh_encoding"] is None and abi["simd128"] is None
    evidence = res["evidence"]
    assert isinstance(evidence, dict)
    said = " ".join(evidence["wasm_features"])
    assert "partial: a function body could not be decoded: unknown opcode 0xe0 at offset" in said


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


def test_forbidding_a_feature_is_judged_on_the_default_path(tmp_path: Path,
                                                            built: Path) -> None:
    module = built / "se.wasm"
    rc, out = _check(tmp_path, module, 'features_forbidden = ["sign-ext"]\n')
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    assert [v["rule"] for v in violations] == ["features_forbidden"]
    assert violations[0]["found"] == "sign-ext"
    # a feature the module does not use: proven absent by the decode
    rc, out = _check(tmp_path, module, 'features_forbidden = ["relaxed-simd"]\n')
    assert rc == 0 and out["ok"], out
    rc, out = _check(tmp_path, built / "simd.o", 'features_forbidden = ["relaxed-simd"]\n')
    assert rc == 0, out


def test_forbidding_a_feature_fails_closed_on_a_partial_list(tmp_path: Path,
                                                             partial: Path) -> None:
    rc, out = _check(tmp_path, partial, 'features_forbidden = ["relaxed-simd"]\n')
    assert rc == 1 and not out["ok"], out
    unknown = out["unknown"]
    assert isinstance(unknown, list)
    [u] = unknown
    assert u["rule"] == "features_forbidden" and "partial" in u["reason"], u


def test_requiring_a_feature_a_partial_list_lacks_says_the_list_is_partial(
        tmp_path: Path, partial: Path, built: Path) -> None:
    rc, out = _check(tmp_path, partial, 'features_required = ["sign-ext"]\n')
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    [v] = violations
    assert v["rule"] == "features_required" and "partial" in v["detail"], v
    rc, out = _check(tmp_path, built / "se.wasm", 'features_required = ["sign-ext"]\n')
    assert rc == 0, out
