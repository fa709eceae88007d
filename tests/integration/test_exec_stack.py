"""The ELF executable-stack fact and its contract key (``exec_stack``), on binaries gcc builds:
a shared library linked with ``-z execstack`` asks for an executable stack, the default one
does not; an object assembled with ``--execstack`` marks its ``.note.GNU-stack`` executable,
and an assembly object without the note cannot say (a contract that forbids an executable
stack fails closed on it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.contract import Contract
from prebake.contract.check import check_paths
from prebake.inspect import ParseOptions, inspect
from tests import support

C = "int answer(void) { return 42; }\n"
# a hand-written assembly file that says nothing about the stack (no .note.GNU-stack)
ASM = ".text\n.globl bare\nbare:\n  ret\n"


@pytest.fixture(scope="module")
def built() -> Path:
    return support.build("exec-stack", {"a.c": C, "bare.s": ASM}, [
        ["gcc", "-O1", "-fPIC", "-c", "a.c", "-o", "plain.o"],
        ["gcc", "-O1", "-fPIC", "-Wa,--execstack", "-c", "a.c", "-o", "exec.o"],
        ["gcc", "-c", "bare.s", "-o", "bare.o"],
        ["gcc", "-shared", "plain.o", "-o", "libplain.so"],
        ["gcc", "-shared", "-z", "execstack", "plain.o", "-o", "libexec.so"],
        ["ar", "rcs", "libmixed.a", "plain.o", "exec.o"],
    ])


def test_the_fact_is_read_from_the_program_header_and_the_note(built: Path) -> None:
    facts = {name: inspect(built / name, ParseOptions()) for name in
             ("libplain.so", "libexec.so", "plain.o", "exec.o", "bare.o", "libmixed.a")}
    assert {n: f.abi.exec_stack for n, f in facts.items()} == {
        "libplain.so": False, "libexec.so": True, "plain.o": False, "exec.o": True,
        "bare.o": None, "libmixed.a": True}
    assert facts["libexec.so"].evidence["exec_stack"] == ["PT_GNU_STACK is RWE (executable)"]
    assert "no .note.GNU-stack section" in facts["bare.o"].evidence["exec_stack"][0]
    assert facts["libmixed.a"].counts["exec_stack"] == {"False": 1, "True": 1}


def test_a_contract_that_forbids_it_names_the_library_and_the_member(built: Path) -> None:
    contract = Contract(exec_stack=False)
    assert check_paths([built / "libplain.so"], contract).ok
    report = check_paths([built / "libexec.so", built / "libmixed.a"], contract)
    assert sorted((v.rule, Path(v.path).name, v.found) for v in report.violations) == [
        ("exec_stack", "libexec.so", "true"), ("exec_stack", "libmixed.a", "true")]
    mixed = next(v for v in report.violations if v.path.endswith("libmixed.a"))
    assert mixed.members == ["exec.o"] and "1 of 2 members" in mixed.detail


def test_an_object_that_cannot_say_fails_closed_unless_allowed(built: Path) -> None:
    report = check_paths([built / "bare.o"], Contract(exec_stack=False))
    assert not report.ok and [u.rule for u in report.unknown] == ["exec_stack"]
    assert "no .note.GNU-stack" in report.unknown[0].reason
    assert check_paths([built / "bare.o"],
                       Contract(exec_stack=False, allow_unknown=("exec_stack",))).ok


def test_the_cli_reads_the_key_from_a_contract_file(built: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    c = tmp_path / "c.toml"
    c.write_text('exec_stack = false\n')
    assert main(["check", str(built / "libexec.so"), "--contract", str(c), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [v["rule"] for v in out["violations"]] == ["exec_stack"]
    assert main(["check", str(built / "libplain.so"), "--contract", str(c)]) == 0
    c.write_text('os = "wasi"\nexec_stack = false\n')  # an ELF-only key on a wasm contract
    assert main(["check", str(built / "libplain.so"), "--contract", str(c)]) == 2
