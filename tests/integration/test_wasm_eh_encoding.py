"""The two encodings of native wasm exceptions, with Debian sid's Emscripten 6.0.5 (clang 21):
what ``inspect`` reads, what an engine without exnref does with a mixed module, and how a
contract refuses the archive before anything links (docs/binary-formats.md §3.6).

The failure this guards against: a consumer that chose the legacy encoding (plain
``-fwasm-exceptions``, to reach engines without exnref) links an exnref archive
(``-sWASM_LEGACY_EXCEPTIONS=0``) without a word from wasm-ld, and ships a module holding both
encodings that such engines refuse at instantiation. Every fact is compared with LLVM 21's own
disassembler (``llvm-objdump -d`` in the sid root; Debian's wabt 1.0.32 cannot read exnref).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.inspect import ParseOptions, inspect
from prebake.store import open_store
from tests import toolchains
from tests.servers.assets import make_asset

LIB_CPP = """\
#include <stdexcept>
#include <string>
int thrower(int x) { if (x > 3) throw std::runtime_error("big " + std::to_string(x)); return x; }
int catcher(int x) {
  try { return thrower(x); } catch (const std::exception&) { return -1; }
}
"""
PLAIN_C = "int add(int a, int b) { return a + b; }\n"
MAIN_CPP = """\
#include <cstdio>
int catcher(int x);
extern "C" int add(int a, int b);
int main() {
  int r = 0;
  try { r = catcher(5) + catcher(1) + add(1, 2); } catch (...) { r = 99; }
  std::printf("result %d\\n", r);
  return 0;
}
"""
EXNREF = ["-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0"]
LEGACY = ["-fwasm-exceptions"]
LINK = ["-O2", "-sERROR_ON_UNDEFINED_SYMBOLS=1"]
COMMANDS = (
    ["em++", "-O2", *EXNREF, "-c", "lib.cpp", "-o", "lib_exnref.o"],
    ["em++", "-O2", *LEGACY, "-c", "lib.cpp", "-o", "lib_legacy.o"],
    ["emcc", "-O2", "-c", "plain.c", "-o", "plain.o"],
    ["emar", "rcs", "libexn.a", "lib_exnref.o", "plain.o"],
    ["emar", "rcs", "libleg.a", "lib_legacy.o", "plain.o"],
    ["emar", "rcs", "libmix.a", "lib_exnref.o", "lib_legacy.o", "plain.o"],
    # the failure: a legacy consumer links the exnref archive, and wasm-ld says nothing
    ["em++", *LINK, *LEGACY, "main.cpp", "libexn.a", "-o", "both.js"],
    ["em++", *LINK, *LEGACY, "main.cpp", "libleg.a", "-o", "legacy.js"],
    ["em++", *LINK, *EXNREF, "main.cpp", "libexn.a", "-o", "exnref.js"],
)
OUTPUTS = ("lib_exnref.o", "lib_legacy.o", "plain.o", "libexn.a", "libleg.a", "libmix.a",
           "both.js", "both.wasm", "legacy.js", "legacy.wasm", "exnref.js", "exnref.wasm")
LEGACY_OPS = {"try", "catch", "catch_all", "delegate", "rethrow"}
EXNREF_OPS = {"try_table", "throw_ref"}
NODE20 = Path("/usr/bin/node")


@pytest.fixture(scope="module")
def sid_bin() -> Path:
    return toolchains.sid_emscripten()


@pytest.fixture(scope="module")
def built(sid_bin: Path) -> Path:
    """The objects, archives and modules above, compiled once and cached by their inputs."""
    return toolchains.sid_build("eh-encoding", {"lib.cpp": LIB_CPP, "plain.c": PLAIN_C,
                                                "main.cpp": MAIN_CPP}, COMMANDS, OUTPUTS)


def _llvm_objdump_ops(sid_bin: Path, path: Path) -> Counter[str]:
    """EH mnemonics of LLVM 21's own disassembly, run inside the sid root."""
    with toolchains.trixie_workdir("objdump", root=toolchains.SID) as work:
        shutil.copy2(path, work / path.name)
        proc = subprocess.run(
            ["chroot", str(toolchains.SID), "/usr/bin/llvm-objdump-21", "-d",
             str(work / path.name)], capture_output=True, text=True, check=True)
    ops: Counter[str] = Counter()
    for m in re.finditer(r"^\s+[0-9a-f]+:(?:\s[0-9a-f]{2})+\s*\t(\S+)", proc.stdout, re.M):
        if m.group(1) in LEGACY_OPS | EXNREF_OPS:
            ops[m.group(1)] += 1
    return ops


def _encoding_of(ops: Counter[str]) -> str:
    legacy = any(ops[o] for o in LEGACY_OPS)
    exnref = any(ops[o] for o in EXNREF_OPS)
    return "both" if legacy and exnref else "legacy" if legacy else \
        "exnref" if exnref else "none"


@pytest.mark.parametrize(("name", "encoding"), [
    ("lib_exnref.o", "exnref"), ("lib_legacy.o", "legacy"), ("plain.o", "none"),
    ("both.wasm", "both"), ("legacy.wasm", "legacy"), ("exnref.wasm", "exnref"),
])
def test_each_object_and_module_says_its_encoding_as_llvm_objdump_does(
        built: Path, sid_bin: Path, name: str, encoding: str) -> None:
    f = inspect(built / name)
    assert f.abi.wasm_eh_encoding == encoding, f.evidence.get("wasm_eh_encoding")
    ops = _llvm_objdump_ops(sid_bin, built / name)
    assert _encoding_of(ops) == encoding, ops
    said = " ".join(f.evidence["wasm_eh_encoding"])
    legacy, exnref = sum(ops[o] for o in LEGACY_OPS), sum(ops[o] for o in EXNREF_OPS)
    if legacy:
        assert f"{legacy} legacy instructions" in said
    if exnref:
        assert f"{exnref} exnref instructions" in said
    # the deep decode agrees with the default path
    assert inspect(built / name, ParseOptions(deep=True)).abi.wasm_eh_encoding == encoding


def test_an_archive_whose_members_disagree_names_them(built: Path) -> None:
    mix = inspect(built / "libmix.a")
    assert mix.abi.wasm_eh_encoding == "both"
    assert mix.counts["wasm_eh_encoding"] == {"exnref": 1, "legacy": 1, "none": 1}
    said = mix.evidence["wasm_eh_encoding"]
    assert "exnref: lib_exnref.o" in said and "legacy: lib_legacy.o" in said
    assert inspect(built / "libexn.a").abi.wasm_eh_encoding == "exnref"  # none: either way
    assert inspect(built / "libleg.a").abi.wasm_eh_encoding == "legacy"


def _node(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_mixed_module_is_refused_by_an_engine_without_exnref(built: Path,
                                                                 sid_bin: Path) -> None:
    """Node 24 runs all three; Node 24 with exnref turned off, and Node 20, refuse the module
    holding both encodings at instantiation and run the all-legacy one."""
    node24 = [str(sid_bin / "node")]
    with toolchains.trixie_workdir("eh-run", root=toolchains.SID) as work:
        for name in OUTPUTS:
            if name.endswith((".js", ".wasm")):
                shutil.copy2(built / name, work / name)
        for js in ("both.js", "legacy.js", "exnref.js"):
            proc = _node([*node24, js], work)
            assert proc.returncode == 0 and "result 3" in proc.stdout, proc.stderr[-2000:]
        off = _node([*node24, "--no-experimental-wasm-exnref", "both.js"], work)
        assert off.returncode != 0 and "CompileError" in off.stderr, off.stderr[-2000:]
        assert "result" not in off.stdout
        ok = _node([*node24, "--no-experimental-wasm-exnref", "legacy.js"], work)
        assert ok.returncode == 0 and "result 3" in ok.stdout, ok.stderr[-2000:]
        if NODE20.is_file():
            old = _node([str(NODE20), "both.js"], work)
            assert old.returncode != 0 and "CompileError" in old.stderr, old.stderr[-2000:]
            assert _node([str(NODE20), "legacy.js"], work).returncode == 0


def _contract(tmp_path: Path, encoding: str, *extra: str) -> Path:
    c = tmp_path / f"{encoding}.toml"
    c.write_text(f'os = "emscripten"\nwasm_eh_encoding = "{encoding}"\n' + "".join(extra))
    return c


def test_check_refuses_the_archive_before_the_link(built: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The legacy consumer's contract refuses the exnref archive, naming its member."""
    legacy = _contract(tmp_path, "legacy", 'allow_unknown = ["os"]\n')
    assert main(["check", str(built / "libexn.a"), "--contract", str(legacy), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (v,) = report["violations"]
    assert (v["rule"], v["expected"], v["found"], v["members"]) == (
        "wasm_eh_encoding", "legacy", "exnref", ["lib_exnref.o"])
    assert main(["check", str(built / "libleg.a"), "--contract", str(legacy)]) == 0
    exnref = _contract(tmp_path, "exnref", 'allow_unknown = ["os"]\n')
    assert main(["check", str(built / "libexn.a"), "--contract", str(exnref)]) == 0
    capsys.readouterr()
    assert main(["check", str(built / "libmix.a"), "--contract", str(exnref)]) == 1
    said = capsys.readouterr()
    assert "wasm_eh_encoding" in said.out and "lib_legacy.o" in said.out


def test_fetch_refuses_the_asset_and_installs_nothing(built: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PREBAKE_STORE", raising=False)
    url = (tmp_path / "store").as_uri()
    lib = (built / "libexn.a").read_bytes()
    open_store(url).publish(make_asset(tmp_path / "out", "thrower", "1.0.0", "wasm",
                                       files={"lib/libthrower.a": lib}))
    into = tmp_path / "prefix"
    args = ["fetch", "thrower==1.0.0", "--platform", "wasm", "--store", url, "--into",
            str(into), "--lock", str(tmp_path / "prebake.lock"), "--contract"]
    legacy = _contract(tmp_path, "legacy", 'allow_unknown = ["os"]\n')
    assert main([*args, str(legacy)]) == 1
    err = capsys.readouterr().err
    assert "wasm_eh_encoding" in err and "lib_exnref.o" in err and "exnref" in err
    assert not into.exists() and not (tmp_path / "prebake.lock").exists()
    exnref = _contract(tmp_path, "exnref", 'allow_unknown = ["os"]\n')
    assert main([*args, str(exnref)]) == 0
    assert (into / "lib" / "libthrower.a").read_bytes() == lib


ORT = {"ort-wasm-simd-threaded.jspi.wasm": "exnref", "ort-wasm-simd-threaded.wasm": "none"}


@pytest.mark.slow  # LLVM's disassembly of 15 MB modules: minutes on a shared machine
@pytest.mark.parametrize(("name", "encoding"), list(ORT.items()))
def test_check_judges_upstream_onnxruntime_web(ort_web: Path, sid_bin: Path, tmp_path: Path,
                                               name: str, encoding: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Microsoft's own JSPI build is exnref (a legacy consumer's contract refuses it); the
    plain build throws with JS exceptions and holds no native EH instruction at all, as LLVM
    21's disassembler says too."""
    path = ort_web / "dist" / name
    ops = _llvm_objdump_ops(sid_bin, path)
    assert _encoding_of(ops) == encoding, ops
    f = inspect(path)
    assert f.abi.wasm_eh_encoding == encoding
    if ops:
        said = " ".join(f.evidence["wasm_eh_encoding"])
        assert f"{sum(ops[o] for o in EXNREF_OPS)} exnref instructions" in said
    legacy = _contract(tmp_path, "legacy")
    rc = main(["check", str(path), "--contract", str(legacy), "--json"])
    report = json.loads(capsys.readouterr().out)
    if encoding == "exnref":
        assert rc == 1
        (v,) = report["violations"]
        assert (v["rule"], v["found"]) == ("wasm_eh_encoding", "exnref")
    else:
        assert rc == 0, report
    assert main(["check", str(path), "--contract", str(_contract(tmp_path, "exnref"))]) == 0
    if encoding == "exnref":  # Microsoft's JSPI build is the ABI the JSPI preset describes
        for preset, rc in (("emscripten-jspi-exnref-pthread-simd", 0),
                           ("emscripten-wasm-eh-legacy-pthread-simd", 1)):
            c = tmp_path / f"{preset}.toml"
            # the presets hold producers to a platform's verified compiler, which a bare
            # --contract cannot name: Microsoft's compiler is outside this test's question
            c.write_text(f'extends = "{preset}"\nallow_unknown = ["producer"]\n')
            assert main(["check", "--deep", str(path), "--contract", str(c)]) == rc, preset
