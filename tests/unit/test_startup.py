"""Start-up stays lazy: a command imports only what its input needs.

``prebake link-order`` on ELF archives is judged against one g++ link (benchmarks/
bench_link_order.py), so interpreter start-up counts: the wasm, Mach-O, PE/COFF and bitcode
readers and rich must not load for it. Checked in a fresh interpreter through ``sys.modules``.
The registry's cheap pre-checks must never change which reader claims a file.
"""

from __future__ import annotations

import contextlib
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from prebake.inspect import archive, bitcode, coff, elf, macho, registry, wasm
from tests import support

NOT_FOR_ELF = ("prebake.inspect.wasm", "prebake.inspect.wasm_code", "prebake.inspect.emscripten",
               "prebake.inspect.macho", "prebake.inspect.pe", "prebake.inspect.coff",
               "prebake.inspect.bitcode", "rich", "tempfile", "pkgutil", "zipfile")


def _modules_after(code: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\n"
                               "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"],
        capture_output=True, text=True, check=True, env=support.tool_env(None))
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def elf_archive() -> Path:
    d = support.build("startup-elf-archive", {"a.c": "int a(void) { return 1; }\n"},
                      [["gcc", "-O1", "-c", "a.c"], ["ar", "rcs", "liba.a", "a.o"]])
    return d / "liba.a"


def test_importing_the_cli_loads_no_reader_and_no_rich() -> None:
    mods = _modules_after("import prebake.cli")
    assert not {m for m in mods if m.startswith(("prebake.inspect", "rich"))}
    assert not {m for m in mods if m.startswith("prebake.commands.")}


def test_link_order_on_elf_loads_only_archive_and_elf(elf_archive: Path) -> None:
    mods = _modules_after(
        "import contextlib, io, prebake.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert prebake.cli.main(['link-order', {str(elf_archive)!r}]) == 0\n")
    assert {"prebake.inspect.archive", "prebake.inspect.elf"} <= mods  # it really parsed
    assert not {m for m in mods if m.startswith(NOT_FOR_ELF)}


def _heads() -> list[bytes]:
    """Every format's magic (from the readers' own constants), COFF-like headers, noise."""
    rng = random.Random(20261130)
    magics = [archive.AR_MAGIC, archive.THIN_MAGIC, elf.MAGIC, wasm.MAGIC, bitcode.RAW_MAGIC,
              bitcode.WRAPPER_MAGIC, coff.ANON_SIG, b"MZ"]
    for m in (macho.MH_MAGIC, macho.MH_MAGIC_64, macho.FAT_MAGIC, macho.FAT_MAGIC_64):
        magics += [struct.pack("<I", m), struct.pack(">I", m)]
    heads = [b"", b"\0" * 64]
    for m in magics:
        heads += [m, m + b"\0" * (64 - len(m)), m + rng.randbytes(64 - len(m)), m[:-1]]
    for machine in coff.MACHINE_ARCH:
        for nsec, symptr in ((1, 0), (3, 200), (0, 0), (2, 7)):
            heads.append(struct.pack("<HHIIIHH", machine, nsec, 0, symptr, 4, 0, 0) + bytes(44))
    heads += [rng.randbytes(rng.randrange(0, 65)) for _ in range(2000)]
    return heads


def test_registry_sniff_picks_the_reader_a_full_scan_picks() -> None:
    everyone = registry.readers()
    for head in _heads():
        expected = next((r for r in everyone if r.sniff(head)), None)
        assert registry.sniff(head) is expected, head.hex(" ")


def test_a_command_imports_and_parses_only_itself(elf_archive: Path) -> None:
    """``prebake inspect`` builds its own sub-parser, not every command's (their modules and
    parsers were a third of its start-up); ``--version`` builds none."""
    mods = _modules_after(
        "import contextlib, io, prebake.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert prebake.cli.main(['-C', '/tmp', 'inspect', {str(elf_archive)!r}]) == 0\n")
    commands = {m for m in mods if m.startswith("prebake.commands.")}
    assert commands <= {"prebake.commands.inspect", "prebake.commands._common"}, commands
    mods = _modules_after(
        "import contextlib, io, prebake.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    prebake.cli.main(['--version'])\n")
    assert not {m for m in mods if m.startswith("prebake.commands.")}


@pytest.mark.parametrize("argv", [["--help"], ["inspec"], ["-C", "inspect"], []])
def test_help_and_misspelt_commands_still_list_every_command(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from prebake.cli import main

    with contextlib.suppress(SystemExit):
        main(argv)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "link-order" in text and "fetch" in text, text
