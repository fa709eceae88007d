"""The toolchain family table and the consumer-compatibility rules, as data."""

from __future__ import annotations

from typing import Any

import pytest

from prebake.model.families import (
    BY_NAME,
    family_of_argv,
    family_of_banner,
    pin_matches,
)
from prebake.toolchain.compat import RULES, compare


@pytest.mark.parametrize(("argv", "family"), [
    (["emcc"], "emscripten"), (["/opt/emsdk/upstream/emscripten/em++"], "emscripten"),
    (["/usr/bin/python3", "-m", "ziglang", "cc", "-target", "x86_64-macos"], "zig"),
    (["zig", "c++"], "zig"), (["x86_64-w64-mingw32-g++"], "mingw"),
    (["clang-15"], "clang"), (["clang++"], "clang"), (["gcc-11"], "gcc"),
    (["aarch64-linux-gnu-gcc"], "gcc"), (["cc"], None), (["c++"], None),
    (["xcrun", "clang++"], "appleclang"),
])
def test_families_are_recognised_from_the_command_line(argv: list[str], family: str | None
                                                       ) -> None:
    fam = family_of_argv(argv)
    assert (fam.name if fam else None) == family


@pytest.mark.parametrize(("banner", "family", "version"), [
    ("Debian clang version 14.0.6", "clang", "14.0.6"),
    ("Debian clang version 13.0.1-11+b2", "clang", "13.0.1"),
    # Xcode's clang is its own family: Apple's release numbers are not LLVM's
    ("Apple clang version 15.0.0 (clang-1500.3.9.4)", "appleclang", "15.0.0"),
    ("cc (Debian 12.2.0-14+deb12u1) 12.2.0", "gcc", "12.2.0"),
    ("gcc-11 (Debian 11.3.0-12) 11.3.0", "gcc", "11.3.0"),
    ("x86_64-w64-mingw32-gcc (GCC) 12-win32", "mingw", "12"),
    ("emcc (Emscripten gcc/clang-like replacement + linker emulating GNU ld) 3.1.69 ()",
     "emscripten", "3.1.69"),
])
def test_a_plain_cc_is_recognised_by_its_banner(banner: str, family: str, version: str) -> None:
    fam = family_of_banner(banner)
    assert fam is not None and fam.name == family
    assert fam.parse_version(banner) == version


@pytest.mark.parametrize(("pin", "reported", "ok"), [
    ("3.1.6", "3.1.6", True), ("3.1.6", "3.1.69", False), ("3.1", "3.1.69", True),
    ("14", "14.0.6", True), ("14", "15.0.6", False), ("12", "12", True),
    ("5.0.5", "3.1.6", False), ("0.17.1", "0.17.1", True), ("", "1.0", False),
])
def test_a_pin_is_compared_number_by_number(pin: str, reported: str, ok: bool) -> None:
    assert pin_matches(pin, reported) is ok


def _manifest(family: str, version: str, llvm: str | None, lto: str = "none") -> dict[str, Any]:
    return {"toolchain": {"verified": {"family": family, "version": version, "llvm": llvm}},
            "facts": [{"path": "lib/libx.a", "format": "archive", "abi": {"lto": lto}}]}


def test_bitcode_from_a_newer_llvm_is_refused_and_an_older_one_is_not() -> None:
    consumer = {"family": "emscripten", "version": "3.1.6", "llvm": "14.0.6"}
    (finding,) = compare(_manifest("emscripten", "3.1.69", "19.1.7", "llvm-bitcode"), consumer)
    assert finding.rule == "bitcode-producer" and finding.level == "refuse"
    assert "LLVM 19.1.7" in finding.message and "14.0.6" in finding.message
    newer = {"family": "emscripten", "version": "3.1.69", "llvm": "19.1.7"}
    assert compare(_manifest("emscripten", "3.1.6", "14.0.6", "llvm-bitcode"), newer) == []
    # no bitcode: nothing to refuse (wasm objects link across these releases)
    assert compare(_manifest("emscripten", "3.1.69", "19.1.7"), consumer) == []


def test_bitcode_without_a_recorded_producer_cannot_be_decided_and_fails_closed() -> None:
    manifest = {"facts": [{"path": "a.o", "format": "llvm-bitcode", "abi": {}}]}
    findings = compare(manifest, {"family": "clang", "version": "14.0.6", "llvm": "14.0.6"})
    assert [(f.rule, f.level) for f in findings] == [("bitcode-producer", "refuse")]
    assert "cannot decide" in findings[0].message


def test_emscripten_major_minor_drift_is_reported_not_refused() -> None:
    consumer = {"family": "emscripten", "version": "3.1.69", "llvm": "19.1.7"}
    (finding,) = compare(_manifest("emscripten", "4.0.10", "21.0.0"), consumer)
    assert finding.rule == "emscripten-drift" and finding.level == "report"
    assert compare(_manifest("emscripten", "3.1.6", "14.0.6"), consumer) == []  # same 3.1
    # not an Emscripten pair: the rule does not apply
    assert compare(_manifest("gcc", "12.2.0", None), {"family": "gcc", "version": "11.3.0",
                                                      "llvm": None}) == []


def test_the_rules_and_families_are_data() -> None:
    assert {r.name for r in RULES} == {"bitcode-producer", "emscripten-drift"}
    assert {f.name for f in BY_NAME.values()} >= {"emscripten", "zig", "mingw", "clang", "gcc"}
    assert {f.provision for f in BY_NAME.values()} <= {"emsdk", "pypi", "apt", "xcode", "none"}
