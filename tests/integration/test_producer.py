"""The compiler of every object, read from its bytes (``abi.producer``), and the contract key
``producer`` that holds it to the platform's verified toolchain, on binaries real compilers
make: Debian's gcc-12, gcc-11, clang-13…16, em++ (3.1.6), zig from PyPI, mingw-w64, clang's
bitcode, and zig's Mach-O. Each read is compared with what the compiler says of itself
(``--version``) and with binutils' reading of the same section where binutils reads one
(``readelf -p .comment``); linked images are judged with the toolchain's own runtime measured
(``cc -print-file-name=crtbeginS.o``), never assumed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.contract.check import check_paths
from prebake.contract.producer_rule import ProducerPin
from prebake.contract.terms import parse_contract
from prebake.inspect import ParseOptions, inspect
from prebake.intake.loader import load_platforms
from tests import support

C = "int tiny(int x) { return x * 3 + 1; }\n"
CXX = "#include <string>\nstd::string tiny_s(int x) { return std::to_string(x); }\n"
TOOLCHAIN = parse_contract({"producer": ["toolchain"]})[0]
ELF_COMPILERS = ("gcc-12", "gcc-11", "clang-13", "clang-14", "clang-15", "clang-16")


def _version(cc: str) -> str:
    """The release the compiler's own ``--version`` first line states (its last dotted number
    for GCC, the one after ``clang version`` for clang), read here without prebake."""
    line = subprocess.run([cc, "--version"], capture_output=True, text=True,
                          check=True).stdout.splitlines()[0]
    m = re.search(r"clang version (\d+\.\d+\.\d+)", line) or re.search(
        r"\) (\d+\.\d+\.\d+)$", line)
    assert m is not None, line
    return m.group(1)


def _readelf_comment(path: Path) -> list[str]:
    out = subprocess.run(["readelf", "-p", ".comment", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return [m.group(1) for m in re.finditer(r"^\s*\[\s*[0-9a-f]+\]\s+(.*)$", out, re.M)]


def _pin(ws: Path, platform: str) -> ProducerPin:
    p = load_platforms(ws)[platform]
    pin = support.producer_pin(p, {"clang": "14"})
    assert pin is not None
    return pin  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def elf() -> Path:
    cmds: list[list[str]] = []
    for cc in ELF_COMPILERS:
        cmds += [[cc, "-O2", "-fPIC", "-c", "t.c", "-o", f"{cc}.o"],
                 [cc, "-O2", "-fPIC", "-shared", "t.c", "-o", f"lib{cc}.so"]]
    cmds += [["ar", "rcs", "libmixed.a", "clang-14.o", "gcc-12.o"],
             ["clang-14", "-O2", "-flto", "-c", "t.c", "-o", "full.bc.o"],
             ["clang-16", "-O2", "-flto=thin", "-c", "t.c", "-o", "thin.bc.o"],
             ["clang-14", "-O2", "-fPIC", "-shared", "-fuse-ld=lld", "t.c", "-o", "liblld.so"],
             ["gcc-12", "-O2", "-flto", "-c", "t.c", "-o", "gcclto.o"],
             ["gcc-12", "-c", "bare.s", "-o", "bare.o"]]
    return support.build("producer-elf", {"t.c": C, "bare.s": ".text\n.globl b\nb: ret\n"},
                         cmds)


@pytest.mark.parametrize("cc", ELF_COMPILERS)
def test_an_elf_object_names_the_compiler_that_built_it(elf: Path, cc: str) -> None:
    facts = inspect(elf / f"{cc}.o", ParseOptions())
    tool = "gcc" if cc.startswith("gcc") else "clang"
    assert facts.abi.producer == [f"{tool} {_version(cc)}"]
    (text,) = _readelf_comment(elf / f"{cc}.o")
    assert facts.evidence["producer"] == [f".comment {text!r}"]


def test_a_linked_library_also_names_the_runtime_its_linker_pulled_in(elf: Path) -> None:
    """clang links the GCC installation's crtbeginS.o/crtendS.o: its .comment holds both."""
    gcc = _version("gcc-12")
    assert inspect(elf / "libclang-14.so", ParseOptions()).abi.producer == [
        f"clang {_version('clang-14')}", f"gcc {gcc}"]
    assert inspect(elf / "libgcc-12.so", ParseOptions()).abi.producer == [f"gcc {gcc}"]
    lld = inspect(elf / "liblld.so", ParseOptions())
    assert lld.abi.producer == ["clang 14.0.6", f"gcc {gcc}"]  # lld's own line is a linker's
    assert lld.details["linkers"] == ["lld 14.0.6"]
    assert _readelf_comment(elf / "liblld.so")[1] == "Linker: Debian LLD 14.0.6"


def test_bitcode_and_gcc_lto_objects_name_their_writer(elf: Path) -> None:
    assert inspect(elf / "full.bc.o", ParseOptions()).abi.producer == ["llvm 14.0.6"]
    thin = inspect(elf / "thin.bc.o", ParseOptions())
    assert thin.abi.producer == [f"llvm {_version('clang-16')}"]
    assert thin.evidence["producer"] == [f"IDENTIFICATION 'LLVM{_version('clang-16')}'"]
    assert inspect(elf / "gcclto.o", ParseOptions()).abi.producer == [f"gcc {_version('gcc')}"]


def test_an_assembled_object_names_none_and_says_why(elf: Path) -> None:
    facts = inspect(elf / "bare.o", ParseOptions())
    assert facts.abi.producer is None
    assert "no .comment section" in facts.evidence["producer"][0]


def test_an_archive_lists_its_members_producers(elf: Path) -> None:
    facts = inspect(elf / "libmixed.a", ParseOptions())
    assert facts.abi.producer == ["clang 14.0.6", f"gcc {_version('gcc-12')}"]
    assert facts.counts["producer"] == {"clang 14.0.6": 1, f"gcc {_version('gcc-12')}": 1}
    assert [m.abi.producer for m in facts.members or []] == [
        ["clang 14.0.6"], [f"gcc {_version('gcc-12')}"]]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Platforms pinned to clang 14, gcc-12 (unpinned), mingw, zig and Debian's emcc."""
    root = tmp_path_factory.mktemp("producer-ws")
    (root / "prebake.toml").write_text(
        '[project]\nname = "p"\nversion = "1.0.0"\n\n[pins]\nclang = "14"\n\n'
        '[platforms.clang14]\nos = "linux"\narch = "x86_64"\ntoolchain = { cc = "clang-14",'
        ' cxx = "clang++-14", ar = "llvm-ar-14", pin = "clang" }\n\n'
        '[platforms.gcc12]\nos = "linux"\narch = "x86_64"\n'
        'toolchain = { cc = "gcc-12", cxx = "g++-12", ar = "ar" }\n\n'
        + support.MINGW_PLATFORM)
    return root


def test_the_pin_is_the_verified_compiler_and_its_measured_runtime(ws: Path) -> None:
    pin = _pin(ws, "clang14")
    gcc = _version("gcc-12")
    assert (pin.toolchain, pin.own, pin.runtime) == ("clang 14.0.6",
                                                     ("clang 14.0.6", "llvm 14.0.6"),
                                                     (f"gcc {gcc}",))
    crt = subprocess.run(["clang-14", "-print-file-name=crtbeginS.o"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert pin.runtime_from[0] == f"crtbeginS.o: .comment {_readelf_comment(Path(crt))[0]!r}"
    mingw = _pin(ws, "windows-x86_64")
    assert mingw.own == ("gcc 12",) and "dllcrt2.o: .rdata$zzz 'GCC: (GNU) 12" in \
        mingw.runtime_from[0]


def test_objects_and_images_are_held_to_the_pinned_compiler(elf: Path, ws: Path) -> None:
    pin = _pin(ws, "clang14")
    ok = check_paths([elf / "clang-14.o", elf / "libclang-14.so", elf / "full.bc.o"],
                     TOOLCHAIN, pin=pin)
    assert ok.ok, ok.render()
    gcc = _version("gcc-12")
    report = check_paths([elf / "libmixed.a", elf / "libgcc-12.so", elf / "libclang-16.so",
                          elf / "gcc-11.o"], TOOLCHAIN, pin=pin)
    found = {Path(v.path).name: (v.found, v.members) for v in report.violations}
    assert found == {
        # an archive: the one member another compiler built, named with what it says
        "libmixed.a": (f"gcc {gcc}", ["gcc-12.o"]),
        # a GCC-built library carries only what clang's runtime carries too: none of its
        # own code names clang 14
        "libgcc-12.so": (f"only its runtime's gcc {gcc}", []),
        "libclang-16.so": ("clang 16.0.6", []), "gcc-11.o": ("gcc 11.3.0", [])}
    mixed = next(v for v in report.violations if v.path.endswith("libmixed.a"))
    (text,) = _readelf_comment(elf / "gcc-12.o")
    assert mixed.detail == (
        "producer: required clang 14.0.6 (the platform's verified compiler; gcc "
        f"{gcc} from its runtime in a linked image), found gcc {gcc} in 1 of 2 members: "
        f"gcc-12.o (.comment {text!r})")
    # the runtime's producer is accepted in a linked image only: an object is its own code
    gcc12 = check_paths([elf / "gcc-12.o"], TOOLCHAIN, pin=pin)
    assert [v.found for v in gcc12.violations] == [f"gcc {gcc}"]


def test_an_object_without_a_producer_fails_closed_unless_allowed(elf: Path, ws: Path) -> None:
    pin = _pin(ws, "gcc12")
    report = check_paths([elf / "bare.o"], TOOLCHAIN, pin=pin)
    assert not report.ok and [u.rule for u in report.unknown] == ["producer"]
    assert "no .comment section" in report.unknown[0].reason
    allowed, _ = parse_contract({"producer": ["toolchain"], "allow_unknown": ["producer"]})
    assert check_paths([elf / "bare.o"], allowed, pin=pin).ok


def test_check_platform_verifies_the_compiler_and_a_contract_file_cannot(
        elf: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = (ws / "prebake.toml").read_text()
    (ws / "prebake.toml").write_text(toml.replace(
        'ar = "llvm-ar-14", pin = "clang" }\n',
        'ar = "llvm-ar-14", pin = "clang" }\ncontract = { producer = ["toolchain"] }\n', 1))
    try:
        assert main(["-C", str(ws), "check", "--platform", "clang14", "--json",
                     str(elf / "libmixed.a")]) == 1
        out = json.loads(capsys.readouterr().out)
        assert [(v["rule"], v["members"]) for v in out["violations"]] == [
            ("producer", ["gcc-12.o"])]
        assert main(["-C", str(ws), "check", "--platform", "clang14",
                     str(elf / "libclang-14.so")]) == 0
    finally:
        (ws / "prebake.toml").write_text(toml)
    c = ws / "c.toml"
    c.write_text('producer = ["toolchain"]\n')
    assert main(["check", "--contract", str(c), str(elf / "clang-14.o")]) == 1
    assert "--contract names no platform whose compiler" in capsys.readouterr().out
    c.write_text('producer = ["clang 14.*"]\n')  # a contract file names the compiler itself
    assert main(["check", "--contract", str(c), str(elf / "clang-14.o")]) == 0
    c.write_text('producer = ["toolchian"]\n')
    assert main(["check", "--contract", str(c), str(elf / "clang-14.o")]) == 2
    assert "did you mean 'toolchain'?" in capsys.readouterr().err


# --- wasm, COFF/PE, Mach-O ---------------------------------------------------------------------


def _em_clang() -> str:
    out = subprocess.run(["emcc", "-v"], capture_output=True, text=True,
                         env=support.tool_env()).stderr
    m = re.search(r"clang version (\d+\.\d+\.\d+)", out)
    assert m is not None, out
    return m.group(1)


def test_a_wasm_object_names_emscriptens_clang_and_a_linked_module_none() -> None:
    d = support.build("producer-wasm", {"t.c": C, "t.cpp": CXX}, [
        ["emcc", "-O2", "-c", "t.c", "-o", "t.o"], ["em++", "-O2", "-c", "t.cpp", "-o", "x.o"],
        ["emar", "rcs", "lib.a", "t.o", "x.o"],
        ["emcc", "-O2", "-sSIDE_MODULE", "t.c", "-o", "side.wasm"]])
    want = [f"clang {_em_clang()}"]
    lib = inspect(d / "lib.a", ParseOptions())
    assert lib.abi.producer == want and [m.abi.producer for m in lib.members or []] == [want] * 2
    assert lib.members is not None and lib.members[0].evidence["producer"] == [
        f"producers 'processed-by: Debian clang {_em_clang()}'"]
    side = inspect(d / "side.wasm", ParseOptions())
    assert side.abi.producer is None
    assert "Emscripten drops it" in side.evidence["producer"][0]


ZIG_ENV = {"ZIG_GLOBAL_CACHE_DIR": str(support.CACHE / "zig")}


def _zig_clang() -> str:
    out = subprocess.run([*support.ZIG, "cc", "--version"], capture_output=True, text=True,
                         env=support.tool_env(ZIG_ENV), check=True).stdout
    m = re.search(r"clang version (\d+\.\d+\.\d+)", out)
    assert m is not None, out
    return m.group(1)


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_coff_objects_and_pe_images_name_their_compiler() -> None:
    mingw = "x86_64-w64-mingw32-gcc"
    d = support.build("producer-coff", {"t.c": C}, [
        [mingw, "-O2", "-c", "t.c", "-o", "mingw.obj"],
        [mingw, "-O2", "-shared", "t.c", "-o", "mingw.dll"],
        [*support.ZIG, "cc", "-target", "x86_64-windows-gnu", "-O2", "-c", "t.c", "-o",
         "zig.obj"],
        ["clang-14", "--target=x86_64-w64-mingw32", "-O2", "-c", "t.c", "-o", "clang.obj"]],
        env=ZIG_ENV)
    release = re.search(r"\) (\d+)", subprocess.run(
        [mingw, "--version"], capture_output=True, text=True, check=True).stdout)
    assert release is not None
    obj = inspect(d / "mingw.obj", ParseOptions())
    assert obj.abi.producer == [f"gcc {release.group(1)}"]
    assert obj.evidence["producer"][0].startswith(".rdata$zzz 'GCC: (GNU) ")
    dll = inspect(d / "mingw.dll", ParseOptions())
    # GNU ld keeps every object's ident at the end of .rdata: the mingw-w64 CRT's among them
    assert dll.abi.producer == [f"gcc {release.group(1)}"]
    assert {e.split(" ", 2)[2] for e in dll.evidence["producer"]} >= {
        "'GCC: (GNU) 12-win32'", "'GCC: (GNU) 12 20220819'"}
    zig = inspect(d / "zig.obj", ParseOptions())  # zig compiles with CodeView: S_COMPILE3
    assert zig.abi.producer == [f"clang {_zig_clang()}"]
    assert zig.evidence["producer"] == [f"S_COMPILE3 'clang version {_zig_clang()}'"]
    clang = inspect(d / "clang.obj", ParseOptions())  # LLVM without CodeView writes none
    assert clang.abi.producer is None and "-gcodeview" in clang.evidence["producer"][0]


def test_macho_names_only_what_load_commands_record() -> None:
    d = support.build("producer-macho", {"t.c": C}, [
        [*support.ZIG, "cc", "-target", "aarch64-macos.11.0", "-O2", "-c", "t.c", "-o", "t.o"],
        [*support.ZIG, "cc", "-target", "aarch64-macos.11.0", "-shared", "t.c", "-o",
         "libt.dylib"]], env=ZIG_ENV)
    obj = inspect(d / "t.o", ParseOptions())
    assert obj.abi.producer is None
    assert obj.evidence["producer"] == [
        "LC_BUILD_VERSION names no tool (clang records none in an object)"]
    dylib = inspect(d / "libt.dylib", ParseOptions())
    assert dylib.abi.producer is None  # zig's linker records itself as tool 5, version 0.0
    assert "tool 5" in dylib.evidence["producer"][0]


def test_inspect_json_reports_the_producer_per_member(elf: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["inspect", "--json", str(elf / "libmixed.a")]) == 0
    (out,) = json.loads(capsys.readouterr().out)["results"]
    assert out["abi"]["producer"] == ["clang 14.0.6", f"gcc {_version('gcc-12')}"]
    assert [m["abi"]["producer"] for m in out["members"]] == [
        ["clang 14.0.6"], [f"gcc {_version('gcc-12')}"]]
    assert main(["inspect", str(elf / "libmixed.a")]) == 0
    table = capsys.readouterr().out
    assert "producer" in table and f"gcc {_version('gcc-12')}" in table


@pytest.mark.parametrize("root", ["trixie", "sid"])
def test_current_emscriptens_objects_name_their_clang_and_modules_only_when_asked(
        root: str) -> None:
    """Debian 13's Emscripten 3.1.69 (clang 19) and sid's 6.0.5 (clang 21), in their chroots:
    ``processed-by`` names the clang that ``emcc -v`` reports; the linked module carries no
    producers section unless ``-sEMIT_PRODUCERS_SECTION``, and then also the languages."""
    from tests import toolchains

    chroot = toolchains.TRIXIE if root == "trixie" else toolchains.SID
    bin_dir = toolchains.trixie_emscripten() if root == "trixie" else \
        toolchains.sid_emscripten()
    env = {"PATH": f"{bin_dir}:{support.tool_env()['PATH']}"}
    with toolchains.trixie_workdir("producer", root=chroot) as work:
        (work / "t.cpp").write_text(CXX + "int main() { return tiny_s(1).size(); }\n")
        for cmd in (["em++", "-O2", "-c", "t.cpp", "-o", "t.o"],
                    ["em++", "-O2", "t.cpp", "-o", "plain.js"],
                    ["em++", "-O2", "-sEMIT_PRODUCERS_SECTION", "t.cpp", "-o", "kept.js"]):
            support.run(cmd, work, env)
        version = support.run(["emcc", "-v"], work, env)
        clang = re.search(r"clang version (\d+\.\d+\.\d+)", version.stdout + version.stderr)
        assert clang is not None
        want = [f"clang {clang.group(1)}"]
        obj = inspect(work / "t.o", ParseOptions())
        assert obj.abi.producer == want
        assert obj.evidence["producer"][0].startswith(
            f"producers 'processed-by: Debian clang {clang.group(1)}")
        assert inspect(work / "plain.wasm", ParseOptions()).abi.producer is None
        kept = inspect(work / "kept.wasm", ParseOptions())
        assert kept.abi.producer == want
        assert "producers 'language: C_plus_plus_14' (a source language)" in \
            kept.evidence["producer"]
