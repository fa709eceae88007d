"""Static archives from GNU ar, llvm-ar (gnu/bsd/darwin/thin/SYM64), zig lib and llvm-dlltool.

The symbol index is cross-checked against ``llvm-nm --print-armap``, member symbols against
``llvm-nm``, and the archive summary against the members it summarises. The CLI's JSON is
validated against the committed schema.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from prebake.cli import main
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.archive import read_index
from tests import support

SCHEMA = json.loads((support.ROOT / "schemas/inspect.schema.json").read_text())
SYMS = ParseOptions(symbols=True)

SOURCES = {
    "a.c": "int alpha(void) { return 1; }\nint shared_name;\nextern int beta(void);\n"
           "int call_beta(void) { return beta(); }\n",
    "a_very_long_member_name_for_gnu.c": "int beta(void) { return 2; }\n",
    "odd.c": "int odd_fn(int x) { return x ^ 7; }\n",
    "dup.c": "int alpha_dup(void) { return 3; }\n",
    "c23.c": "extern long __isoc23_strtol(const char *, char **, int);\n"
             "long parse23(const char *s) { return __isoc23_strtol(s, 0, 0); }\n",
    "x.cpp": "#include <stdexcept>\nint thrower(int x) { if (x) throw std::runtime_error(\"x\");"
             " return 0; }\n",
    "nx.cpp": "int quiet(int x) { return x + 1; }\n",
    "w.c": "int wfunc(int x) { return x + 1; }\nint wdata = 3;\n",
    "w2.c": "int w2(int x) { return x * 2; }\n",
    "foo.def": "LIBRARY foo.dll\nEXPORTS\nfoo_fn\nfoo_data DATA\n",
    "note.txt": "hello",
}
LONG = "a_very_long_member_name_for_gnu"


@pytest.fixture(scope="module")
def libs() -> Path:
    objs = ["a.o", f"{LONG}.o", "odd.o"]
    cmds = [
        ["gcc", "-O2", "-c", "a.c", f"{LONG}.c", "odd.c", "c23.c"],
        ["mkdir", "-p", "dup"],
        ["gcc", "-O2", "-c", "dup.c", "-o", "dup/a.o"],
        ["g++", "-O2", "-c", "x.cpp", "nx.cpp"],
        ["gcc", "-O2", "-flto", "-c", "odd.c", "-o", "odd_lto.o"],
        ["clang", "-O2", "-flto", "-c", "odd.c", "-o", "odd_bc.o"],
        ["llvm-ar", "rcs", "libbc.a", "odd_bc.o", "a.o"],
        ["ar", "rcs", "libgnu.a", *objs],
        ["ar", "q", "libgnu.a", "note.txt"],
        ["ar", "q", "libgnu.a", "odd.o"],
        ["ar", "s", "libgnu.a"],
        ["ar", "qs", "libdup.a", "a.o", "dup/a.o"],
        ["ar", "rcsT", "libthin.a", "a.o", f"{LONG}.o"],
        ["llvm-ar", "--format=gnu", "rcs", "libllvm_gnu.a", *objs],
        ["llvm-ar", "--format=bsd", "rcs", "libbsd.a", *objs],
        ["llvm-ar", "--format=darwin", "rcs", "libdarwin.a", *objs],
        ["env", "SYM64_THRESHOLD=0", "llvm-ar", "--format=gnu", "rcs", "libsym64.a", *objs],
        ["env", "SYM64_THRESHOLD=0", "llvm-ar", "--format=darwin", "rcs", "libdarwin64.a", *objs],
        ["ar", "rcs", "libeh.a", "x.o", "nx.o"],
        ["gcc-ar", "rcs", "liblto.a", "odd_lto.o", "a.o"],
        ["ar", "rcs", "libc23.a", "a.o", "c23.o"],
        ["clang", "--target=x86_64-pc-windows-msvc", "-c", "w.c", "-o", "w.obj"],
        ["clang", "--target=x86_64-pc-windows-msvc", "-c", "w2.c", "-o", "w2.obj"],
        [*support.ZIG, "lib", "/out:libw.lib", "w.obj", "w2.obj"],
        ["llvm-dlltool", "-m", "i386:x86-64", "-d", "foo.def", "-l", "foo.lib"],
    ]
    return support.build("archives", SOURCES, cmds)


def _armap(path: Path) -> list[tuple[str, str]]:
    out = subprocess.run(["llvm-nm", "--print-armap", str(path)], capture_output=True, text=True,
                         check=True).stdout
    pairs = []
    for line in out.split("\n\n", 1)[0].splitlines():
        m = re.match(r"^(\S+) in (\S+)$", line)
        if m:
            pairs.append((m.group(1), m.group(2)))
    return pairs


@pytest.mark.parametrize(
    ("lib", "kind"),
    [("libgnu.a", "gnu"), ("libllvm_gnu.a", "gnu"), ("libbsd.a", "bsd"),
     ("libdarwin.a", "bsd"), ("libsym64.a", "gnu64"), ("libdarwin64.a", "bsd64"),
     ("libthin.a", "gnu")],
)
def test_index_matches_llvm_nm_armap(libs: Path, lib: str, kind: str) -> None:
    f = inspect(libs / lib)
    assert f.details["index"]["kind"] == kind
    ours = read_index(libs / lib)
    assert sorted(ours) == sorted(_armap(libs / lib))


@pytest.mark.parametrize("lib", ["libgnu.a", "libllvm_gnu.a", "libbsd.a", "libdarwin.a",
                                 "libsym64.a", "libdarwin64.a", "libthin.a", "libdup.a"])
def test_member_symbols_match_llvm_nm(libs: Path, lib: str) -> None:
    f = inspect(libs / lib, SYMS)
    ours = {(n, m.details["member"]) for m in f.members or [] if m.symbols
            for n in m.symbols.defined}
    out = subprocess.run(["llvm-nm", "--extern-only", "--defined-only", "-A", str(libs / lib)],
                         capture_output=True, text=True).stdout
    theirs = set()
    for line in out.splitlines():
        where, _, rest = line.partition(": ")
        member = where.rsplit("(", 1)[-1].rstrip(")") if "(" in where else where.rsplit(":", 1)[-1]
        theirs.add((rest.split()[-1], member))
    assert {n for n, _ in ours} == {n for n, _ in theirs}
    assert f.symbols is not None
    assert set(f.symbols.defined) >= {"alpha"}


def test_gnu_archive_members_duplicates_and_odd_sizes(libs: Path) -> None:
    f = inspect(libs / "libgnu.a")
    names = [m.details["member"] for m in f.members or []]
    assert names == ["a.o", f"{LONG}.o", "odd.o", "note.txt", "odd.o"]
    note = (f.members or [])[3]
    assert note.error is not None and note.size == 5
    assert (f.format, f.kind, f.arch, f.os) == ("archive", "static-library", "x86_64", "linux")
    offsets = [m.details["offset"] for m in f.members or []]
    assert len(set(offsets)) == len(offsets)
    assert sorted(n for n, m in read_index(libs / "libgnu.a") if n == "odd_fn") == ["odd_fn"] * 2


def test_duplicate_member_names_keep_their_own_symbols(libs: Path) -> None:
    f = inspect(libs / "libdup.a", SYMS)
    a1, a2 = f.members or []
    assert a1.details["member"] == a2.details["member"] == "a.o"
    assert a1.symbols is not None and a2.symbols is not None
    assert "alpha" in a1.symbols.defined and "alpha_dup" in a2.symbols.defined
    assert ("alpha_dup", "a.o") in read_index(libs / "libdup.a")


def test_thin_archive_reads_external_members(libs: Path) -> None:
    f = inspect(libs / "libthin.a", SYMS)
    assert f.details["thin"] is True
    assert [m.details["member"] for m in f.members or []] == ["a.o", f"{LONG}.o"]
    assert all(m.error is None and m.format == "elf" for m in f.members or [])
    assert f.symbols is not None and "beta" in f.symbols.defined
    assert f.symbols.undefined == []  # beta, used by a.o, is defined by the other member


def test_summary_eh_ignores_eh_free_members_but_counts_them(libs: Path) -> None:
    f = inspect(libs / "libeh.a")
    assert f.abi.eh == "native"  # nx.o has no EH: it links with any model
    assert f.counts["eh"] == {"native": 1, "none": 1}
    assert any(e.startswith("native: x.o") for e in f.evidence["eh"])


def test_summary_mixed_lto(libs: Path) -> None:
    f = inspect(libs / "liblto.a")
    assert f.abi.lto == "mixed"
    assert f.counts["lto"] == {"gcc-lto": 1, "none": 1}
    fmts = {m.details["member"]: m.format for m in f.members or []}
    assert fmts == {"odd_lto.o": "gcc-lto", "a.o": "elf"}


def test_summary_mixed_llvm_bitcode_and_elf(libs: Path) -> None:
    f = inspect(libs / "libbc.a")
    assert f.abi.lto == "mixed"
    assert f.counts["lto"] == {"llvm-bitcode": 1, "none": 1}
    assert f.details["member_formats"] == {"llvm-bitcode": 1, "elf": 1}
    assert {n for n, _ in read_index(libs / "libbc.a")} >= {"odd_fn", "alpha"}


def test_schema_enums_match_the_facts_model() -> None:
    from prebake.inspect import facts

    props = SCHEMA["$defs"]["facts"]["properties"]
    abi = SCHEMA["$defs"]["abi"]["properties"]
    for key, values in (("format", facts.FORMATS), ("kind", facts.KINDS), ("os", facts.OSES),
                        ("arch", facts.ARCHES)):
        assert props[key]["enum"] == [*values, None], key
    assert abi["eh"]["enum"] == [*facts.EH_MODELS, None]
    assert abi["lto"]["enum"] == [*facts.LTO_KINDS, None]
    assert set(abi) == set(facts.Abi().to_json())


def test_isoc23_member_sets_archive_glibc_floor(libs: Path) -> None:
    f = inspect(libs / "libc23.a")
    assert f.abi.glibc_max == "2.38"
    assert any("c23.o" in e for e in f.evidence["glibc_max"])
    by = {m.details["member"]: m.abi.glibc_max for m in f.members or []}
    assert by == {"a.o": None, "c23.o": "2.38"}


def test_coff_lib_with_two_linker_members_and_import_library(libs: Path) -> None:
    w = inspect(libs / "libw.lib")
    assert w.details["coff_linker_members"] == 2
    assert {n for n, _ in read_index(libs / "libw.lib")} >= {"wfunc", "w2"}
    assert all(m.error is None for m in w.members or [])
    assert (w.arch, w.os) == ("x86_64", "windows")
    imp = inspect(libs / "foo.lib")
    assert imp.kind == "import-library"
    assert {m.details["member"] for m in imp.members or []} == {"foo.dll"}
    names = {n for n, _ in read_index(libs / "foo.lib")}
    assert {"foo_fn", "__imp_foo_fn", "__imp_foo_data"} <= names
    assert "\x7ffoo_NULL_THUNK_DATA" in names


# ---------------------------------------------------------------------------- the command


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = main(["inspect", "--json", *args])
    out = capsys.readouterr().out
    payload = json.loads(out)
    jsonschema.validate(payload, SCHEMA)
    return rc, payload


def test_cli_json_validates_against_schema(libs: Path, capsys: pytest.CaptureFixture[str],
                                           ort_node: Path) -> None:
    so = ort_node / "bin/napi-v6/linux/x64/libonnxruntime.so.1"
    rc, payload = _cli(capsys, "--symbols", str(libs / "libgnu.a"), str(libs / "libeh.a"),
                       str(libs / "libw.lib"), str(so))
    assert rc == 0
    assert payload["schema_version"] == 1
    gnu = payload["results"][0]
    assert gnu["format"] == "archive" and len(gnu["members"]) == 5
    assert {"name": "alpha", "demangled": None} in gnu["members"][0]["defined"]
    eh = payload["results"][1]
    thrower = next(d for m in eh["members"] for d in m["defined"] if d["name"] == "_Z7throweri")
    assert thrower["demangled"] == "thrower(int)"


def test_cli_errors_per_path_and_exit_codes(libs: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    rc, payload = _cli(capsys, str(bad), str(tmp_path / "missing"))
    assert rc == 2
    assert [r["path"] for r in payload["results"]] == [str(bad), str(tmp_path / "missing")]
    assert all(r["error"] for r in payload["results"])
    rc, payload = _cli(capsys, str(bad), str(libs / "a.o"))
    assert rc == 0  # one good path is enough
    assert "error" in payload["results"][0] and "error" not in payload["results"][1]
    assert main(["inspect", str(bad)]) == 2
    assert f"{bad}:" in capsys.readouterr().err


def test_cli_inspects_asset_lib_folder(libs: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    asset = tmp_path / "demo-1.0-linux-x86_64.tar.xz"
    with tarfile.open(asset, "w:xz") as tf:
        tf.add(libs / "libc23.a", "lib/libdemo.a")
        tf.add(libs / "note.txt", "include/demo.h")
        tf.add(libs / "note.txt", "lib/pkgconfig/demo.pc")
    rc, payload = _cli(capsys, str(asset))
    assert rc == 0
    [res] = payload["results"]
    assert res["path"] == f"{asset}!lib/libdemo.a"
    assert res["abi"]["glibc_max"] == "2.38"
    assert res["members"][1]["path"] == f"{asset}!lib/libdemo.a(c23.o)"
    assert not list(Path(tmp_path).glob("prebake-inspect-*"))


def test_cli_human_output(libs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(libs / "libeh.a")]) == 0
    out = capsys.readouterr().out
    assert "native" in out and "x.o" in out and "nx.o" in out


@pytest.mark.skipif(shutil.which("llvm-nm") is None, reason="needs llvm-nm")
def test_index_only_read_is_independent_of_members(libs: Path, tmp_path: Path) -> None:
    """read_index must not parse members: an archive of garbage members still lists its index."""
    data = bytearray((libs / "libgnu.a").read_bytes())
    f = inspect(libs / "libgnu.a")
    for m in f.members or []:
        start = m.details["offset"] + 60
        data[start : start + 4] = b"JUNK"
    junk = tmp_path / "libjunk.a"
    junk.write_bytes(bytes(data))
    assert read_index(junk) == read_index(libs / "libgnu.a")
    assert all(m.error for m in inspect(junk).members or [])


def test_cli_json_of_every_format_validates(ort_node: Path, ort_web: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The committed schema holds for every reader's output (ELF, Mach-O, PE, wasm)."""
    wasm = [str(p) for p in sorted(ort_web.glob("dist/*.wasm"))]
    rc, payload = _cli(capsys, str(ort_node / "bin"), *wasm)
    assert rc == 0
    formats = {r["format"] for r in payload["results"]}
    assert {"elf", "macho", "pe", "wasm"} <= formats
    assert not [r["path"] for r in payload["results"] if "error" in r]


# --------------------------------------------------------------------------------------------
# the facts summary (no --symbols) takes shortcuts; it must say what the full symbol pass says

PROBE_SOURCES = {
    # clang shares string-table tails: the undefined "stat" lives inside "xstat"
    "tail.c": "extern int stat(const char *, void *);\n"
              "int xstat(const char *p) { return stat(p, 0); }\n",
    "tail_def.c": "int xstat(const char *p) { return p[0]; }\n",
    "c23.c": "extern long __isoc23_strtol(const char *, char **, int);\n"
             "long parse23(const char *s) { return __isoc23_strtol(s, 0, 0); }\n",
    "eh.cpp": "#include <stdexcept>\nint thrower(int x) { if (x) throw std::runtime_error(\"x\");"
              " return 0; }\n",
    "plain.c": "int plain(int x) { return x + 1; }\n",
    # seven glibc 2.33 references: the evidence names five, the same five in every process
    "many.c": "extern int stat(const char *, void *); extern int fstat(int, void *);\n"
              "extern int lstat(const char *, void *); extern int stat64(const char *, void *);\n"
              "extern int fstat64(int, void *); extern int lstat64(const char *, void *);\n"
              "extern int mknod(const char *, int, int);\n"
              "int many(const char *p) { return stat(p, 0) + fstat(0, 0) + lstat(p, 0) +\n"
              "  stat64(p, 0) + fstat64(0, 0) + lstat64(p, 0) + mknod(p, 0, 0); }\n",
}


@pytest.fixture(scope="module")
def probe_libs() -> Path:
    cmds = [
        ["clang", "-O2", "-c", "tail.c", "tail_def.c", "plain.c"],
        [*support.ZIG, "cc", "-target", "x86_64-linux-gnu.2.38", "-O2", "-std=c2x", "-c",
         "c23.c", "-o", "c23_zig.o"],
        ["clang++", "-O2", "-c", "eh.cpp", "-o", "eh_clang.o"],
        ["gcc", "-O2", "-c", "many.c"],
        ["ar", "rcs", "libprobe.a", "tail.o", "tail_def.o", "plain.o", "c23_zig.o", "eh_clang.o",
         "many.o"],
    ]
    return support.build("archives-probe", PROBE_SOURCES, cmds)


def _summary_and_full(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return inspect(path).to_json(), inspect(path, SYMS).to_json()


def test_summary_shortcuts_on_shared_tails_and_new_glibc(probe_libs: Path) -> None:
    summary, full = _summary_and_full(probe_libs / "libprobe.a")
    assert summary == full
    by = {m["details"]["member"]: m["abi"] for m in summary["members"]}
    assert by["tail.o"]["glibc_max"] == "2.33"  # stat: found inside xstat
    assert by["tail_def.o"]["glibc_max"] is None  # xstat alone references nothing
    assert by["c23_zig.o"]["glibc_max"] == "2.38"
    assert by["eh_clang.o"]["eh"] == "native"
    assert by["plain.o"]["eh"] == "none"
    assert summary["abi"]["glibc_max"] == "2.38"
    many = next(m for m in summary["members"] if m["details"]["member"] == "many.o")
    assert many["evidence"]["glibc_max"] == [
        f"references {n} (glibc 2.33)" for n in ("fstat", "fstat64", "lstat", "lstat64", "mknod")
    ]


REAL_ARCHIVES = [
    "/usr/lib/llvm-14/lib/libLLVM*.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/libsupc++.a",
    "/usr/lib/x86_64-linux-gnu/libc.a",
    "/usr/lib/x86_64-linux-gnu/libabsl_*.a",
]


@pytest.mark.parametrize("pattern", REAL_ARCHIVES)
def test_summary_facts_equal_the_full_symbol_pass_on_real_archives(pattern: str) -> None:
    """Every member's facts and evidence, and every archive's summary, as with --symbols."""
    where = Path(pattern)
    paths = sorted(where.parent.glob(where.name))
    if not paths:
        pytest.skip(f"{pattern}: not installed (scripts/bootstrap installs it)")
    for path in paths:
        summary, full = _summary_and_full(path)
        if summary != full:
            diff = [
                m["path"] for m, n in zip(summary.get("members", []), full.get("members", []),
                                          strict=True) if m != n
            ]
            pytest.fail(f"{path}: summary differs from the full pass in {diff[:5] or 'archive'}")
