"""The shipped EH presets on real em++ objects, through ``prebake check --contract FILE``."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.cli import main
from tests.integration.test_check import THROWER, em


def _contract(tmp: Path, text: str) -> Path:
    p = tmp / "contract.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("flag", "passes", "fails"), [
    ("-fexceptions", "emscripten-legacy-eh", "emscripten-wasm-eh"),
    ("-fwasm-exceptions", "emscripten-wasm-eh", "emscripten-legacy-eh"),
])
def test_each_eh_preset_takes_its_model_and_refuses_the_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, passes: str,
        fails: str) -> None:
    name = "chk-legacy" if flag == "-fexceptions" else "chk-wasmeh"
    lib = em(name, {"thrower.cpp": THROWER}, [("thrower.cpp", [flag])])
    # a standalone contract names no platform whose compiler could be verified: it names the
    # compiler itself (the presets' producer = ["toolchain"] would be undecided)
    ok = _contract(tmp_path, f'extends = "{passes}"\nproducer = ["clang 14.*"]\n')
    assert main(["check", "--contract", str(ok), str(lib)]) == 0
    bad = _contract(tmp_path, f'[contract]\nextends = "{fails}"\n')
    assert main(["check", "--contract", str(bad), str(lib)]) == 1
    assert "eh: required" in capsys.readouterr().out
    # an override wins over the preset: the same file, told the other model, passes
    model = "emscripten-legacy" if flag == "-fexceptions" else "wasm"
    over = _contract(tmp_path, f'[contract]\nextends = "{fails}"\neh = "{model}"\n'
                     'features_forbidden = []\nfeatures_required = []\nproducer = ["clang 14.*"]\n')
    assert main(["check", "--contract", str(over), str(lib)]) == 0
