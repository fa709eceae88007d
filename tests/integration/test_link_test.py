"""link-test reproduces real link failures with real toolchains.

The story of prebake: an archive built with Emscripten's legacy JS exceptions (``-fexceptions``)
linked by a consumer built with ``-fwasm-exceptions -sERROR_ON_UNDEFINED_SYMBOLS=1`` fails, and
the report carries the undefined symbols the toolchain printed; the same library built with
``-fwasm-exceptions`` links.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.contract import Contract
from prebake.link.test import error_lines, link_test, symbols_consumer
from prebake.model.workspace import LinkTest, Platform, Toolchain
from tests import support

SCHEMA = json.loads((support.ROOT / "schemas" / "link-test.schema.json").read_text())
THROWER = """\
#include <stdexcept>
int may_throw(int x) { if (x < 0) throw std::runtime_error("negative"); return x * 2; }
int safe_call(int x) { try { return may_throw(x); } catch (const std::exception&) { return -1; } }
"""
HEADER = "int may_throw(int x);\nint safe_call(int x);\n"
SNIPPET = """\
#include <thrower.h>
#include <cstdio>
int main() {
  try { std::printf("%d %d\\n", safe_call(3), safe_call(-1)); } catch (...) { return 2; }
  return 0;
}
"""


def _em_platform(eh_flag: str, run: tuple[str, ...] | None = None) -> Platform:
    env = support.tool_env()
    return Platform(
        name="wasm", os="emscripten", arch="wasm32",
        toolchain=Toolchain(cc=("emcc",), cxx=("em++",), ar=("emar",)),
        contract=Contract(eh="wasm"),
        link_test=LinkTest(flags=(eh_flag, "-sERROR_ON_UNDEFINED_SYMBOLS=1"), run=run),
        env={k: env[k] for k in ("NODE_PATH", "EM_CACHE")},
    )


def _thrower(flag: str) -> Path:
    tag = flag.lstrip("-")
    return support.build(f"thrower-{tag}", {"thrower.cpp": THROWER, "include/thrower.h": HEADER},
                         [["em++", "-O1", flag, "-c", "thrower.cpp", "-o", f"thrower.{tag}.o"],
                          ["emar", "rcs", "libthrower.a", f"thrower.{tag}.o"]])


@pytest.fixture(scope="module")
def legacy() -> Path:
    return _thrower("-fexceptions")


@pytest.fixture(scope="module")
def wasmeh() -> Path:
    return _thrower("-fwasm-exceptions")


def test_legacy_eh_archive_fails_like_the_real_link(legacy: Path, tmp_path: Path) -> None:
    r = link_test(legacy / "libthrower.a", _em_platform("-fwasm-exceptions"),
                  include_dirs=[legacy / "include"], snippet=SNIPPET, workdir=tmp_path)
    assert not r.ok and r.stage == "link"
    text = "\n".join(r.errors)
    assert ("error: undefined symbol: __resumeException (referenced by top-level compiled C/C++ "
            "code)") in r.errors
    assert any("compiler.js" in e for e in r.errors)  # 3.1.6 reports from its JS compiler step
    assert "undefined symbol: __resumeException" in text
    assert all(line in r.output for line in r.errors)  # verbatim
    assert r.commands[1][0] == "em++" and "-fwasm-exceptions" in r.commands[1]


def test_wasm_eh_archive_links(wasmeh: Path) -> None:
    r = link_test(wasmeh / "libthrower.a", _em_platform("-fwasm-exceptions"),
                  include_dirs=[wasmeh / "include"], snippet=SNIPPET)
    assert r.ok, r.output
    assert r.errors == []


def test_runner_runs_the_linked_consumer(wasmeh: Path) -> None:
    """With a runner (node for 3.1.6 output, docs/toolchains.md) the exception is really caught."""
    r = link_test(wasmeh / "libthrower.a",
                  _em_platform("-fwasm-exceptions", run=("node", "--no-experimental-fetch")),
                  include_dirs=[wasmeh / "include"], snippet=SNIPPET)
    assert r.ok and r.stage == "run", r.output
    assert r.commands[2] == ["node", "--no-experimental-fetch", "./consumer.js"]
    assert "6 -1" in r.output


def test_whole_archive_without_snippet_surfaces_every_member(legacy: Path) -> None:
    r = link_test(legacy / "libthrower.a", _em_platform("-fwasm-exceptions"))
    assert not r.ok
    assert any("__resumeException" in e for e in r.errors)
    clean = link_test(_thrower("-fwasm-exceptions") / "libthrower.a",
                      _em_platform("-fwasm-exceptions"))
    assert clean.ok, clean.output


def test_symbols_consumer_links_natively(tmp_path: Path) -> None:
    d = support.build("lt-native", {"f.c": "int lt_answer(void) { return 42; }\n"},
                      [["gcc", "-c", "f.c"], ["ar", "rcs", "libf.a", "f.o"]])
    plat = Platform(name="linux-x86_64", os="linux", arch="x86_64",
                    toolchain=Toolchain(cc=("gcc",), cxx=("g++",), ar=("ar",)),
                    contract=Contract(), link_test=LinkTest(flags=("-O1",), run=()))
    assert link_test(d / "libf.a", plat, symbols=["lt_answer"]).ok
    bad = link_test(d / "libf.a", plat, symbols=["lt_answer", "lt_missing"])
    assert not bad.ok and any("undefined reference to `lt_missing'" in e for e in bad.errors)


def test_symbols_consumer_source() -> None:
    src = symbols_consumer(["_ZN4absl3FooEv"], "linux")
    assert '__asm__(PREBAKE_PFX "_ZN4absl3FooEv")' in src
    assert '"_ZN4absl3FooEv"' in symbols_consumer(["__ZN4absl3FooEv"], "macos")
    assert error_lines("ok\nwasm-ld: error: x\nerror: x\nwasm-ld: error: x\n") == [
        "wasm-ld: error: x", "error: x"]
    assert error_lines("emcc: warning: linker setting ignored: 'ERROR_ON_UNDEFINED_SYMBOLS'\n"
                       "warning: To disable errors for undefined symbols use …\n") == []


def test_cli_with_a_workspace_platform(legacy: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    env = support.tool_env()
    (tmp_path / "prebake.toml").write_text(support.platform_workspace(
        "lt", "wasm", "emscripten", "wasm32", 'cc = "emcc", cxx = "em++", ar = "emar"',
        'eh = "wasm"', more=(
            'link_test = { flags = ["-fwasm-exceptions", "-sERROR_ON_UNDEFINED_SYMBOLS=1"] }\n'
            f'env = {{ NODE_PATH = "{env["NODE_PATH"]}", EM_CACHE = "{env["EM_CACHE"]}" }}\n')))
    snippet = tmp_path / "snippet.cpp"
    snippet.write_text(SNIPPET)
    rc = main(["-C", str(tmp_path), "link-test", str(legacy / "libthrower.a"), "--platform",
               "wasm", "--snippet", str(snippet), "--include", str(legacy / "include"), "--json"])
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, SCHEMA)
    assert rc == 1 and out["ok"] is False and out["schema_version"] == 1
    assert any("__resumeException" in e for e in out["errors"])


def test_zig_cross_link_finds_a_glibc_symbol_too_new_for_the_target() -> None:
    """An aarch64 archive calling glibc 2.38's ``__isoc23_strtol`` cannot link against 2.28."""
    target = ["-target", "aarch64-linux-gnu.2.28"]
    new = "long __isoc23_strtol(const char *, char **, int);\n" \
          "long parse(const char *s) { return __isoc23_strtol(s, 0, 10); }\n"
    old = "#include <stdlib.h>\nlong parse(const char *s) { return strtol(s, 0, 10); }\n"
    d = support.build("lt-zig-glibc", {"new.c": new, "old.c": old},
                      [[*support.ZIG, "cc", *target, "-c", "new.c"],
                       [*support.ZIG, "cc", *target, "-c", "old.c"],
                       ["llvm-ar", "rcs", "libnew.a", "new.o"],
                       ["llvm-ar", "rcs", "libold.a", "old.o"]])
    env = support.tool_env()
    plat = Platform(
        name="linux-aarch64", os="linux", arch="aarch64",
        toolchain=Toolchain(cc=(*support.ZIG, "cc", *target), cxx=(*support.ZIG, "c++", *target),
                            ar=("llvm-ar",)),
        contract=Contract(glibc_max="2.28"), link_test=LinkTest(flags=("-pthread",)),
        env={k: env[k] for k in ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR")})
    bad = link_test(d / "libnew.a", plat, symbols=["parse"])
    assert not bad.ok and "ld.lld: error: undefined symbol: __isoc23_strtol" in bad.errors
    assert bad.commands[1][3] == "cc"  # a C library links with the C driver (no libc++ build)
    assert link_test(d / "libold.a", plat, symbols=["parse"]).ok


def test_shared_library_with_an_unresolved_dependency() -> None:
    src = "int missing_fn(void);\nint api(void) { return missing_fn(); }\n"
    ok_src = "int api(void) { return 7; }\n"
    d = support.build("lt-shared", {"u.c": src, "ok.c": ok_src},
                      [["gcc", "-shared", "-fPIC", "u.c", "-o", "libuser.so"],
                       ["gcc", "-shared", "-fPIC", "ok.c", "-o", "libok.so"]])
    plat = Platform(name="linux-x86_64", os="linux", arch="x86_64",
                    toolchain=Toolchain(cc=("gcc",), cxx=("g++",), ar=("ar",)),
                    contract=Contract(), link_test=LinkTest(run=("env",)))
    bad = link_test(d / "libuser.so", plat, symbols=["api"])
    assert not bad.ok and any("undefined reference to `missing_fn'" in e for e in bad.errors)
    good = link_test(d / "libok.so", plat, symbols=["api"])
    assert good.ok and good.stage == "run", good.output  # runs: the rpath finds libok.so


def test_bad_inputs_exit_2_with_the_reason(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """An asset, a non-binary or an executable is bad input (exit 2), not a failed link (1)."""
    ws = str(support.ROOT / "examples" / "sdk")
    asset = tmp_path / "x-1.0-linux-x86_64.tar.xz"
    asset.write_bytes(b"\xfd7zXZ\x00")
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    exe = support.build("lt-exe", {"m.c": "int main(void) { return 0; }\n"},
                        [["gcc", "m.c", "-o", "m"]]) / "m"
    for path, why in ((asset, "a release asset"), (text, "not a binary format"),
                      (exe, "executable, not a library")):
        assert main(["-C", ws, "link-test", str(path), "--platform", "linux-x86_64"]) == 2
        err = capsys.readouterr().err
        assert why in err and str(path) in err and len(err.strip().splitlines()) == 1


def test_a_member_another_archive_holds_byte_for_byte_is_proven_in_a_link_of_its_own(
        tmp_path: Path) -> None:
    """FFmpeg's static archives: half2float.o, one object byte for byte, in libavcodec.a and
    libswscale.a. Every member of both links (the second archive in a link of its own, the
    first plain beside it); two different objects under one symbol still fail."""
    from prebake.link.whole import prove_whole_archive

    d = support.build("lt-twins", {
        "p.c": "int twin_helper(int a) { return a + 1; }\n",
        "q.c": "int twin_helper(int a) { return a - 1; }\n",
        "a.c": "int twin_helper(int); int use_a(void) { return twin_helper(1); }\n",
        "b.c": "int twin_helper(int); int use_b(void) { return twin_helper(2); }\n"},
        [["gcc", "-c", "p.c", "q.c", "a.c", "b.c"], ["ar", "rcs", "libone.a", "a.o", "p.o"],
         ["ar", "rcs", "libtwo.a", "b.o", "p.o"], ["mkdir", "-p", "other"],
         ["cp", "q.o", "other/p.o"], ["ar", "rcs", "libthree.a", "b.o", "other/p.o"]])
    plat = Platform(name="linux-x86_64", os="linux", arch="x86_64",
                    toolchain=Toolchain(cc=("gcc",), cxx=("g++",), ar=("ar",)),
                    contract=Contract(), link_test=LinkTest(flags=("-O1",), run=()))
    twins = prove_whole_archive([(d / "libone.a", "libone.a"), (d / "libtwo.a", "libtwo.a")],
                                plat, tmp_path / "twins")
    assert twins.ok, twins.output
    links = [c for c in twins.commands if c[-1] == "whole_archive"]
    assert len(links) == 2  # libone whole with libtwo plain, then libtwo whole
    other = prove_whole_archive([(d / "libone.a", "libone.a"), (d / "libthree.a", "libthree.a")],
                                plat, tmp_path / "other")
    assert not other.ok and "multiple definition of `twin_helper'" in other.output
