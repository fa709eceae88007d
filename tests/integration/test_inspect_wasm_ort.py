"""The four real onnxruntime-web 1.30.0 builds: the facts of docs/binary-formats.md §3.8.

Plain, asyncify and jsep use Emscripten's legacy JS exceptions (visible only in their minified
``.mjs`` glue), jspi uses native wasm EH with the exnref encoding; asyncify/jsep carry the
Asyncify runtime, only jspi's glue uses JSPI. All four are threaded SIMD builds without relaxed
SIMD (the last needs the full decode, which must also consume every body exactly).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts

BUILDS = {
    # name: (eh, async, functions, imports, exports)
    "ort-wasm-simd-threaded.wasm": ("emscripten-legacy", "none", 17288, 101, 49),
    "ort-wasm-simd-threaded.asyncify.wasm": ("emscripten-legacy", "asyncify", 15571, 169, 171),
    "ort-wasm-simd-threaded.jsep.wasm": ("emscripten-legacy", "asyncify", 18222, 128, 143),
    "ort-wasm-simd-threaded.jspi.wasm": ("wasm", "jspi", 15843, 121, 80),
}


def _dist(ort_web: Path) -> Path:
    return ort_web / "dist"


@pytest.fixture(scope="module")
def cheap(ort_web: Path) -> dict[str, Facts]:
    return {name: inspect(_dist(ort_web) / name) for name in BUILDS}


@pytest.fixture(scope="module")
def deep(ort_web: Path) -> dict[str, Facts]:
    return {name: inspect(_dist(ort_web) / name, ParseOptions(deep=True)) for name in BUILDS}


@pytest.mark.parametrize("name", list(BUILDS))
def test_cheap_facts(cheap: dict[str, Facts], name: str) -> None:
    eh, async_, functions, imports, exports = BUILDS[name]
    f = cheap[name]
    assert (f.format, f.kind, f.os, f.arch) == ("wasm", "module", "emscripten", "wasm32")
    assert f.abi.threads is True
    assert f.abi.simd128 is True
    # every instruction decoded on the default path: no relaxed SIMD in any build (§3.8)
    assert f.abi.relaxed_simd is False and f.abi.wasm_features_complete is True
    assert f.abi.eh == eh, f.evidence.get("eh")
    # JS exceptions hold no native EH instruction; the JSPI build is all exnref (§3.6)
    want = "exnref" if name.endswith("jspi.wasm") else "none"
    assert f.abi.wasm_eh_encoding == want, f.evidence.get("wasm_eh_encoding")
    assert f.abi.async_ == async_, f.evidence.get("async")
    assert (f.details["functions"], f.details["imports"], f.details["exports"]) == (
        functions, imports, exports)
    assert f.abi.lto == "none"
    assert "Custom" not in f.details["sections"] and f.details["producers"] is None


def test_legacy_builds_read_from_glue(cheap: dict[str, Facts]) -> None:
    for name, (eh, *_) in BUILDS.items():
        f = cheap[name]
        if eh != "emscripten-legacy":
            continue
        assert f.details["import_names_minified"] is True
        assert f.details["glue"]["invoke_wrappers"] >= 37
        assert "no exception to throw" in " ".join(f.evidence["eh"])


def test_jspi_build(cheap: dict[str, Facts]) -> None:
    f = cheap["ort-wasm-simd-threaded.jspi.wasm"]
    assert f.details["tags"] == 1 and f.abi.wasm_eh_encoding == "exnref"
    assert f.details["glue"]["jspi"] == ["WebAssembly.Suspending", "WebAssembly.promising"]
    assert f.details["import_names_minified"] is False


def test_asyncify_runtime_identified(cheap: dict[str, Facts]) -> None:
    a = cheap["ort-wasm-simd-threaded.asyncify.wasm"].details["asyncify"]
    assert (a["state_global"], a["data_global"]) == (11, 12)
    assert a["functions"] == ["nf", "pf"]  # start_unwind, start_rewind (minified exports)
    assert a["state_checks"] is None  # counted only by the deep pass
    j = cheap["ort-wasm-simd-threaded.jsep.wasm"].details["asyncify"]
    assert j["functions"] == ["Zd", "$d"]


def test_without_glue_jspi_is_unknown(ort_web: Path, tmp_path: Path) -> None:
    for name in ("ort-wasm-simd-threaded.jspi.wasm", "ort-wasm-simd-threaded.asyncify.wasm"):
        (tmp_path / name).symlink_to(_dist(ort_web) / name)
    assert inspect(tmp_path / "ort-wasm-simd-threaded.jspi.wasm").abi.async_ is None
    assert inspect(tmp_path / "ort-wasm-simd-threaded.asyncify.wasm").abi.async_ == "asyncify"
    assert inspect(tmp_path / "ort-wasm-simd-threaded.asyncify.wasm").abi.eh is None


# Instruction counts from §3.8, verified there with an independent decoder.
DEEP_COUNTS = {
    "ort-wasm-simd-threaded.wasm": {"atomics": 13532, "simd": 129092, "sat_trunc": 1896,
                                    "sign_ext": 1259, "bulk_memory": 10441},
    "ort-wasm-simd-threaded.asyncify.wasm": {"atomics": 11750, "simd": 97989},
    "ort-wasm-simd-threaded.jsep.wasm": {"atomics": 14094, "simd": 137408},
    "ort-wasm-simd-threaded.jspi.wasm": {"atomics": 11608, "simd": 96353, "eh_throw": 2,
                                         "eh_exnref": 92226 + 59955},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUILDS))
def test_deep_decode(deep: dict[str, Facts], name: str) -> None:
    f = deep[name]
    ops = f.details["opcodes"]
    assert f.details["decoded_functions"] == BUILDS[name][2]  # every body consumed exactly
    for family, n in DEEP_COUNTS[name].items():
        assert ops.get(family) == n, family
    assert f.abi.simd128 is True and f.abi.relaxed_simd is False
    assert ops.get("relaxed_simd", 0) == 0 and ops.get("eh_legacy", 0) == 0
    assert {"atomics", "bulk-memory", "nontrapping-fptoint", "sign-ext", "simd128"} <= set(
        f.abi.wasm_features or [])
    assert f.abi.wasm_eh_encoding == ("exnref" if name.endswith("jspi.wasm") else "none")
    if BUILDS[name][1] == "asyncify":  # §3.7: `23 0b 41 02 46` occurs 91k–99k times
        assert 90_000 < f.details["asyncify"]["state_checks"] < 100_000


def _objdump_x(path: Path) -> dict[str, object] | None:
    """Import/export names, function count and memory of ``wasm-objdump -x`` (None: unreadable)."""
    proc = subprocess.run(["wasm-objdump", "-x", str(path)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return None
    out = proc.stdout
    nfunc = re.search(r"^Function\[(\d+)\]", out, re.M)
    assert nfunc is not None
    return {
        "imports": re.findall(r"^ - \w+\[\d+\].* <- [^.\s]+\.(\S+)$", out, re.M),
        "exports": re.findall(r'^ - \w+\[\d+\].* -> "([^"]*)"$', out, re.M),
        "functions": int(nfunc.group(1)),
        "shared": bool(re.search(r"^ - memory\[0\] .* shared <- ", out, re.M)),
    }


@pytest.mark.skipif(shutil.which("wasm-objdump") is None, reason="needs wabt")
@pytest.mark.parametrize("name", list(BUILDS))
def test_cross_check_wasm_objdump(ort_web: Path, name: str) -> None:
    path = _dist(ort_web) / name
    ref = _objdump_x(path)
    if ref is None:
        # wabt 1.0.32 cannot read exnref (docs/binary-formats.md §3.6); only the jspi build may fail
        assert name.endswith("jspi.wasm")
        return
    f = inspect(path, ParseOptions(symbols=True))
    assert f.symbols is not None
    assert f.symbols.undefined == ref["imports"]
    assert f.symbols.exports == ref["exports"]
    assert f.details["functions"] == ref["functions"]
    assert f.abi.threads is ref["shared"] is True
