"""The contract key ``engines`` and ``prebake inspect``'s prediction, on real binaries: an
archive built by Debian's Emscripten with one member that uses relaxed SIMD, and modules
assembled by wasm-tools with one feature a named engine lacks. ``check`` refuses each naming
the member, the feature and the engine (``relaxed SIMD: Safari 18.4 lacks it``), passes
what every named engine runs, fails closed on what the facts cannot rule out (JSPI of a module
without its loader), and a contract that names an engine wrongly is one line, exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.contract import Contract
from prebake.contract.check import check_paths
from tests import support
from tests.integration.test_check import SIMD, em

INSPECT_SCHEMA = json.loads((support.ROOT / "schemas" / "inspect.schema.json").read_text())
RELAXED = """\
typedef float f4 __attribute__((vector_size(16)));
f4 fma4(f4 a, f4 b, f4 c) { return __builtin_wasm_fma_f32x4(a, b, c); }
"""
# a linked module using relaxed SIMD, with no JS loader beside it
RELAXED_WAT = """(module (func (export "f") (param v128 v128 v128) (result v128)
  (f32x4.relaxed_madd (local.get 0) (local.get 1) (local.get 2))))"""


@pytest.fixture(scope="module")
def relaxed_archive() -> Path:
    return em("eng-relaxed", {"relaxed.c": RELAXED, "simd.c": SIMD},
              [("relaxed.c", ["-msimd128", "-mrelaxed-simd"]), ("simd.c", ["-msimd128"])])


def _assemble(folder: Path, name: str, wat: str) -> Path:
    tool = shutil.which("wasm-tools") or str(support.ROOT / ".venv" / "bin" / "wasm-tools")
    (folder / f"{name}.wat").write_text(wat)
    subprocess.run([tool, "parse", str(folder / f"{name}.wat"), "-o",
                    str(folder / f"{name}.wasm")], check=True)
    return folder / f"{name}.wasm"


def test_the_member_the_feature_and_the_engine_are_named(relaxed_archive: Path) -> None:
    r = check_paths([relaxed_archive], Contract(engines=("chrome>=137", "safari>=18.4")))
    (v,) = r.violations
    assert v.rule == "engines" and v.members == ["relaxed.o"]
    assert v.found == "relaxed SIMD: Safari 18.4 lacks it (no release has it)"
    assert v.detail.startswith("engines: required runs in chrome>=137, safari>=18.4, found "
                               "relaxed SIMD: Safari 18.4 lacks it (no release has it) in 1 of "
                               "2 members: relaxed.o (")
    assert "relaxed-simd: " in v.detail  # the evidence: where the member uses it
    # every engine named runs it from that release: no violation
    assert check_paths([relaxed_archive], Contract(engines=("chrome>=114", "firefox>=146"))).ok
    (older,) = check_paths([relaxed_archive], Contract(engines=("firefox>=140",))).violations
    assert older.found == "relaxed SIMD: Firefox 140 lacks it (from 146)"


def test_check_says_it_on_the_command_line(relaxed_archive: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    contract = tmp_path / "c.toml"
    contract.write_text('engines = ["chrome>=137", "firefox>=131", "safari>=18.4", "node>=24"]\n'
                        'allow_unknown = ["os"]\n')
    assert main(["check", str(relaxed_archive), "--contract", str(contract), "--json"]) == 1
    (v,) = json.loads(capsys.readouterr().out)["violations"]
    assert v["rule"] == "engines" and v["members"] == ["relaxed.o"]
    assert v["found"] == ("relaxed SIMD: Firefox 131 lacks it (from 146); relaxed SIMD: Safari "
                          "18.4 lacks it (no release has it)")


def test_a_module_without_its_loader_cannot_rule_out_jspi(tmp_path: Path) -> None:
    module = _assemble(tmp_path, "relaxed", RELAXED_WAT)
    (v,) = check_paths([module], Contract(engines=("firefox>=131",))).violations
    assert v.found == ("relaxed SIMD: Firefox 131 lacks it (from 146); JSPI: cannot tell whether "
                       "it needs it (no JS loader beside the module says whether it suspends "
                       "(JSPI)) and Firefox 131 lacks it (from 153)")
    # Chrome 137 has both: whatever the loader does, it runs
    assert check_paths([module], Contract(engines=("chrome>=137",))).ok


def test_inspect_predicts_the_engines(relaxed_archive: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", str(relaxed_archive)]) == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, INSPECT_SCHEMA)
    (result,) = out["results"]
    engines = result["engines"]
    assert "relaxed-simd" in engines["needs"] and "simd" in engines["needs"]
    assert engines["runs"] == {"chrome": "114", "firefox": "146", "node": "21.0", "deno": "1.33"}
    assert engines["lacks"] == {"safari": ["relaxed-simd"]}
    assert all("engines" not in m for m in result["members"])  # the file's, not each member's
    assert main(["inspect", str(relaxed_archive)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.strip().startswith("engines"))
    assert ("chrome>=114, firefox>=146, node>=21.0, deno>=1.33; not safari (relaxed SIMD); "
            "undecided: bun") in line


@pytest.mark.parametrize(("entry", "said"), [
    ('"firefx>=131"', "contract.engines[0]: 'firefx>=131': unknown engine 'firefx' (did you "
                      "mean 'firefox'?)"),
    ('"chrome"', "contract.engines[0]: 'chrome' is not ENGINE>=RELEASE (e.g. \"chrome>=137\")"),
    ('"node>=20", "node>=24"', "contract.engines[1]: node is named twice"),
])
def test_a_wrongly_named_engine_is_one_line(tmp_path: Path, entry: str, said: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    module = _assemble(tmp_path, "m", "(module)")
    contract = tmp_path / "c.toml"
    contract.write_text(f"[contract]\nengines = [{entry}]\n")
    assert main(["check", str(module), "--contract", str(contract)]) == 2
    err = capsys.readouterr().err
    assert said in err and str(contract) in err
    assert len(err.strip().splitlines()) == 1, err


# programs each linked by Emscripten 6.0.5 with one feature beyond what every engine has had for
# years, their JS loaders beside them (so JSPI is read, not unsure)
CRAFTED = {
    "exn.cpp": """\
#include <cstdio>
#include <stdexcept>
__attribute__((noinline)) int f(int x) { if (x > 0) throw std::runtime_error("boom"); return x; }
int main(int argc, char**) {
  try { f(argc); } catch (const std::exception& e) { std::puts(e.what()); }
  return 0;
}
""",
    "jspi.c": """\
#include <stdio.h>
#include <emscripten.h>
EM_ASYNC_JS(int, later, (int x), { await new Promise((r) => setTimeout(r, 1)); return x + 1; });
int main(void) { printf("%d\\n", later(1)); return 0; }
""",
    "tail.c": """\
#include <stdio.h>
typedef int (*fn)(int, int);
int step(int n, int acc);
fn volatile next = step;  /* through a pointer: the optimiser cannot make it a loop */
int step(int n, int acc) {
  if (n == 0) return acc;
  fn f = next;
  [[clang::musttail]] return f(n - 1, acc + 1);
}
int main(int argc, char** argv) { printf("%d\\n", step(argc * 100000, 0)); return 0; }
""",
    "thr.c": """\
#include <pthread.h>
#include <stdio.h>
static void* run(void* p) { return p; }
int main(void) { pthread_t t; pthread_create(&t, 0, run, 0); pthread_join(t, 0); return 0; }
""",
    "relaxed.c": """\
#include <stdio.h>
typedef float f4 __attribute__((vector_size(16)));
__attribute__((noinline)) f4 fma4(f4 a, f4 b, f4 c) {
  return __builtin_wasm_relaxed_madd_f32x4(a, b, c);
}
int main(int argc, char** argv) { f4 a = {argc, 2, 3, 4}; printf("%g\\n", fma4(a, a, a)[0]); }
""",
}
CRAFT = (
    ["em++", "-O2", "-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0", "exn.cpp", "-o", "exn.js"],
    ["emcc", "-O2", "-sJSPI", "jspi.c", "-o", "jspi.js"],
    ["emcc", "-O2", "-mtail-call", "tail.c", "-o", "tail.js"],
    ["emcc", "-O2", "-pthread", "thr.c", "-o", "thr.js"],
    ["emcc", "-O2", "-msimd128", "-mrelaxed-simd", "relaxed.c", "-o", "relaxed.js"],
)
MEMORY64_WAT = """(module (memory i64 1)
  (func (export "f") (param i64) (result i32) (i32.load (local.get 0))))"""


@pytest.fixture(scope="module")
def crafted() -> Path:
    from tests import toolchains

    return toolchains.sid_build("engines-crafted", CRAFTED, CRAFT,
                                [f"{n}.{e}" for n in ("exn", "jspi", "tail", "thr", "relaxed")
                                 for e in ("js", "wasm")])


@pytest.mark.parametrize(("module", "refused", "found", "passes"), [
    ("exn", "node>=20", "exnref exceptions: Node.js 20 lacks it (from 24.15)", "node>=24.15"),
    ("jspi", "firefox>=140", "JSPI: Firefox 140 lacks it (from 153)", "firefox>=153"),
    ("tail", "safari>=18", "tail calls: Safari 18 lacks it (from 18.2)", "safari>=18.2"),
    ("thr", "safari>=15.1", "threads: Safari 15.1 lacks it (from 15.2)", "safari>=15.2"),
    ("relaxed", "safari>=27", "relaxed SIMD: Safari 27 lacks it (no release has it)",
     "chrome>=114"),
    ("memory64", "safari>=27", "memory64: Safari 27 lacks it (no release has it)",
     "chrome>=137"),
])
def test_a_crafted_module_with_one_feature_an_engine_lacks(
        crafted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], module: str,
        refused: str, found: str, passes: str) -> None:
    """``prebake check --contract`` on each: the one feature, the engine and its release named,
    exit 1; the first release the table says has it passes."""
    path = (_assemble(tmp_path, module, MEMORY64_WAT) if module == "memory64"
            else crafted / f"{module}.wasm")
    for floor, rc in ((refused, 1), (passes, 0)):
        contract = tmp_path / "c.toml"
        contract.write_text(f'engines = ["{floor}"]\nallow_unknown = ["os"]\n')
        assert main(["check", str(path), "--contract", str(contract), "--json"]) == rc, floor
        report = json.loads(capsys.readouterr().out)
        if rc:
            (v,) = report["violations"]
            assert (v["rule"], v["found"]) == ("engines", found)
        else:
            assert report["violations"] == []
