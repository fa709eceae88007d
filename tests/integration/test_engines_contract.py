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
