"""LLVM bitcode members report the EH model and target features their bitcode records, so an
LTO archive can pass a feature or EH rule on evidence instead of being refused as unknown.

Real LTO objects and archives from emcc (``-flto`` with JS EH, wasm EH and emcc's default)
and clang (native x86-64 and a bare wasm32 target), each labelled by ``llvm-dis``: the
``target-features`` attribute of its functions and the personality they name.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.inspect import ParseOptions, inspect
from tests import support

pytestmark = pytest.mark.skipif(shutil.which("em++") is None, reason="needs emscripten")

THROWER = """\
#include <stdexcept>
int may_throw(int x) { if (x < 0) throw std::runtime_error("neg"); return x * 2; }
int safe_call(int x) { try { return may_throw(x); } catch (const std::exception&) { return -1; } }
"""
PLAIN = "int add(int a, int b) { return a + b; }\n"
LLVM_DIS = shutil.which("llvm-dis-14") or shutil.which("llvm-dis") or "llvm-dis"


@pytest.fixture(scope="module")
def lto() -> Path:
    env = {"EM_CACHE": str(support.em_cache())}
    return support.build("bitcode-abi", {"t.cpp": THROWER, "p.c": PLAIN}, [
        ["em++", "-O2", "-flto", "-c", "-fexceptions", "t.cpp", "-o", "legacy.o"],
        ["em++", "-O2", "-flto", "-c", "-fwasm-exceptions", "-msimd128", "t.cpp", "-o",
         "wasmeh.o"],
        ["em++", "-O2", "-flto", "-c", "t.cpp", "-o", "default.o"],
        ["emcc", "-O2", "-flto", "-c", "-msimd128", "-mrelaxed-simd", "p.c", "-o",
         "relaxed.o"],
        ["emcc", "-O2", "-flto", "-c", "-pthread", "p.c", "-o", "pthread.o"],
        ["emar", "rcs", "liblegacy_lto.a", "legacy.o"],
        ["emar", "rcs", "libwasmeh_lto.a", "wasmeh.o"],
        ["emar", "rcs", "libmixed_lto.a", "wasmeh.o", "relaxed.o"],
        ["clang++", "-O2", "-flto", "-c", "t.cpp", "-o", "native.o"],
        ["clang", "--target=wasm32-unknown-unknown", "-O2", "-flto", "-mbulk-memory",
         "-msign-ext", "-c", "p.c", "-o", "bare.o"],
        ["llvm-ar", "rcs", "libnative_lto.a", "native.o"],
    ], env=env)


def _llvm_dis(path: Path) -> tuple[set[str], set[str]]:
    """(enabled target features, personalities) as llvm-dis prints the module."""
    text = subprocess.run([LLVM_DIS, str(path), "-o", "-"], capture_output=True, text=True,
                          check=True).stdout
    feats = {f[1:] for v in re.findall(r'"target-features"="([^"]*)"', text)
             for f in v.split(",") if f.startswith("+")}
    personalities = set(re.findall(r"personality [^@]*@(\w+)", text))
    return feats, personalities


@pytest.mark.parametrize(("obj", "eh"), [
    ("legacy.o", "emscripten-legacy"), ("wasmeh.o", "wasm"), ("default.o", "none"),
    ("relaxed.o", "none"), ("pthread.o", "none"), ("native.o", "native"), ("bare.o", "none")])
def test_bitcode_facts_match_llvm_dis(lto: Path, obj: str, eh: str) -> None:
    f = inspect(lto / obj, ParseOptions(symbols=True))
    assert f.format == "llvm-bitcode" and f.abi.lto == "llvm-bitcode"
    feats, personalities = _llvm_dis(lto / obj)
    assert f.details["target_features"] == sorted(feats)
    assert f.abi.eh == eh, f.evidence
    if personalities:
        assert any(p in " ".join(f.evidence["eh"]) for p in personalities), f.evidence
    if f.arch == "wasm32":
        assert f.abi.wasm_features == sorted(feats) and f.abi.wasm_features_complete is True
        assert f.abi.simd128 == ("simd128" in feats)
        assert f.abi.relaxed_simd == ("relaxed-simd" in feats)
        assert f.abi.threads == ({"atomics", "bulk-memory"} <= feats)
    else:
        assert f.arch == "x86_64" and f.abi.wasm_features is None


def test_the_labels_are_what_the_flags_asked_for(lto: Path) -> None:
    """The other tool's reading is the right one (so the test above could fail)."""
    assert _llvm_dis(lto / "wasmeh.o") == ({"exception-handling", "simd128"},
                                           {"__gxx_wasm_personality_v0"})
    assert _llvm_dis(lto / "legacy.o")[1] == {"__gxx_personality_v0"}
    assert _llvm_dis(lto / "relaxed.o")[0] == {"simd128", "relaxed-simd"}
    assert {"bulk-memory", "sign-ext"} <= _llvm_dis(lto / "bare.o")[0]
    assert {"atomics", "bulk-memory"} <= _llvm_dis(lto / "pthread.o")[0]


def _check(tmp_path: Path, archive: Path, contract: str) -> tuple[int, dict[str, object]]:
    c = tmp_path / "c.toml"
    c.write_text(contract)
    proc = support.prebake("check", "--json", archive, "--contract", c)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_an_lto_archive_passes_a_feature_and_eh_rule_on_evidence(tmp_path: Path,
                                                                 lto: Path) -> None:
    contract = 'eh = "wasm"\nfeatures_forbidden = ["relaxed-simd"]\n'
    rc, out = _check(tmp_path, lto / "libwasmeh_lto.a", contract)
    assert rc == 0 and out["ok"] and not out["unknown"], out
    rc, out = _check(tmp_path, lto / "liblegacy_lto.a", contract)
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    assert [v["rule"] for v in violations] == ["eh"], out
    assert "__gxx_personality_v0" in violations[0]["detail"]
    rc, out = _check(tmp_path, lto / "libmixed_lto.a", contract)
    assert rc == 1
    violations = out["violations"]
    assert isinstance(violations, list)
    [v] = [v for v in violations if v["rule"] == "features_forbidden"]
    assert v["members"] == ["relaxed.o"], v


def test_a_native_lto_archive_reports_native_eh(lto: Path) -> None:
    f = inspect(lto / "libnative_lto.a")
    assert f.abi.eh == "native" and f.abi.lto == "llvm-bitcode"
    assert f.members is not None and f.members[0].details["target_features"]
