"""wasm objects, archives and linked modules built with the real Emscripten 3.1.6 / clang 14.

Each fact is asserted against the compiler flag that should produce it (docs/binary-formats.md
§3.3–§3.5) and, where wabt can read the file, against ``wasm-objdump -x``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts
from tests import support

pytestmark = pytest.mark.skipif(shutil.which("em++") is None, reason="needs emscripten")

SOURCES = {
    "thrower.cpp": """#include <stdexcept>
int may_throw(int x) { if (x < 0) throw std::runtime_error("neg"); return x * 2; }
int safe_call(int x) { try { return may_throw(x); } catch (const std::exception&) { return -1; } }
""",
    # only a destructor on the unwind path: the cleanup-only case of §3.4
    "raii.cpp": """struct Guard { ~Guard(); };
void work(int);
int run(int x) { Guard g; work(x); return x; }
""",
    "sj.c": """#include <setjmp.h>
static jmp_buf env;
__attribute__((noinline)) void jump(void) { longjmp(env, 1); }
int try_jump(void) { if (setjmp(env)) return 1; jump(); return 0; }
""",
    "thr.c": """#include <string.h>
_Thread_local int tls_var;
int counter;
int bump(char *dst, const char *src, int n) {
  memcpy(dst, src, n);
  tls_var += n;
  return __atomic_fetch_add(&counter, n, __ATOMIC_SEQ_CST);
}
""",
    "simd.c": """#include <wasm_simd128.h>
void add4(float *out, const float *a, const float *b) {
  wasm_v128_store(out, wasm_f32x4_add(wasm_v128_load(a), wasm_v128_load(b)));
}
""",
    "relaxed.c": """typedef float f4 __attribute__((vector_size(16)));
f4 fma4(f4 a, f4 b, f4 c) { return __builtin_wasm_fma_f32x4(a, b, c); }
""",
    "plain.c": "int plain_fn(int x) { return x + 1; }\n",
    # a -mrelaxed-simd leak into a linked program (the story in docs/architecture.md): only a
    # decode shows it
    "rmain.c": """typedef float f4 __attribute__((vector_size(16)));
__attribute__((noinline)) f4 fma4(f4 a, f4 b, f4 c) { return __builtin_wasm_fma_f32x4(a, b, c); }
int main(int argc, char **argv) { f4 x = {argc, 1, 2, 3}; x = fma4(x, x, x); return (int)x[0]; }
""",
    "main.cpp": """#include <cstdio>
int safe_call(int x);
int main() { std::printf("%d %d\\n", safe_call(3), safe_call(-1)); return 0; }
""",
    "sleep.c": """#include <emscripten.h>
#include <stdio.h>
int main(void) { puts("a"); emscripten_sleep(1); puts("b"); return 0; }
""",
}

OBJECTS = [
    ["em++", "-O1", "-c", "-fexceptions", "thrower.cpp", "-o", "thrower.legacy.o"],
    ["em++", "-O1", "-c", "-fwasm-exceptions", "thrower.cpp", "-o", "thrower.wasmeh.o"],
    ["em++", "-O1", "-c", "thrower.cpp", "-o", "thrower.default.o"],
    ["em++", "-O1", "-c", "-fexceptions", "raii.cpp", "-o", "raii.legacy.o"],
    ["em++", "-O1", "-c", "-fwasm-exceptions", "raii.cpp", "-o", "raii.wasmeh.o"],
    ["em++", "-O1", "-c", "-fno-exceptions", "raii.cpp", "-o", "raii.noexc.o"],
    ["em++", "-O1", "-c", "raii.cpp", "-o", "raii.default.o"],
    ["emcc", "-O1", "-c", "sj.c", "-o", "sj.o"],
    ["emcc", "-O2", "-c", "-pthread", "thr.c", "-o", "thr.pthread.o"],
    ["emcc", "-O2", "-c", "thr.c", "-o", "thr.nopthread.o"],
    ["emcc", "-O2", "-c", "-msimd128", "simd.c", "-o", "simd.o"],
    ["emcc", "-O2", "-c", "-msimd128", "-mrelaxed-simd", "relaxed.c", "-o", "relaxed.o"],
    ["clang", "--target=wasm64", "-O2", "-c", "plain.c", "-o", "plain.wasm64.o"],
    ["emar", "rcs", "liblegacy.a", "thrower.legacy.o", "raii.legacy.o"],
    ["emar", "rcs", "libmixed.a", "thrower.legacy.o", "thrower.wasmeh.o", "raii.noexc.o"],
]

MODULES = [
    ["em++", "-O1", "-fexceptions", "main.cpp", "thrower.legacy.o", "-o", "legacy.js"],
    ["em++", "-O3", "-fexceptions", "main.cpp", "thrower.legacy.o", "-o", "legacy_min.js"],
    ["em++", "-O1", "-fwasm-exceptions", "main.cpp", "thrower.wasmeh.o", "-o", "wasmeh.js"],
    ["emcc", "-O2", "-sASYNCIFY", "sleep.c", "-o", "asyncify.js"],
    ["emcc", "-O1", "-pthread", "sleep.c", "-o", "threads.js"],
    ["emcc", "-O1", "-sSIDE_MODULE=1", "plain.c", "-o", "side.wasm"],
    ["emcc", "-O2", "-msimd128", "-mrelaxed-simd", "rmain.c", "-o", "relaxed.js"],
]


@pytest.fixture(scope="module")
def built() -> Path:
    return support.build("wasm-inspect", SOURCES, OBJECTS + MODULES)


def facts(path: Path, **kw: bool) -> Facts:
    return inspect(path, ParseOptions(symbols=True, **kw))


# --- relocatable objects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "eh"),
    [
        ("thrower.legacy.o", "emscripten-legacy"),
        ("raii.legacy.o", "emscripten-legacy"),
        ("thrower.wasmeh.o", "wasm"),
        ("raii.wasmeh.o", "wasm"),  # cleanup-only: no __cpp_exception, only the feature
        ("thrower.default.o", "none"),  # emcc's default: throw kept, catching dropped
        ("raii.noexc.o", "none"),
        ("raii.default.o", "none"),
        ("sj.o", "none"),  # invoke_*/__THREW__ from JS setjmp/longjmp, not C++ EH
    ],
)
def test_object_eh(built: Path, obj: str, eh: str) -> None:
    f = facts(built / obj)
    assert (f.format, f.kind, f.arch, f.abi.lto) == ("wasm", "object", "wasm32", "none")
    assert f.abi.eh == eh, f.evidence
    assert f.evidence["eh"]


def test_legacy_evidence_names_the_markers(built: Path) -> None:
    f = facts(built / "thrower.legacy.o")
    why = " ".join(f.evidence["eh"])
    assert "__resumeException" in why and "invoke_iii" in why
    assert f.os == "emscripten"
    assert f.symbols is not None
    for name in ("__resumeException", "__cxa_find_matching_catch_2", "llvm_eh_typeid_for",
                 "invoke_iii", "__cxa_throw"):
        assert name in f.symbols.undefined
    assert set(f.symbols.defined) == {"_Z9may_throwi", "_Z9safe_calli"}


def test_setjmp_is_not_cxx_eh(built: Path) -> None:
    f = facts(built / "sj.o")
    assert f.symbols is not None
    assert any(n.startswith("invoke_") for n in f.symbols.undefined)
    assert "saveSetjmp" in f.symbols.undefined
    assert f.abi.eh == "none"
    assert "setjmp" in " ".join(f.evidence["eh"])


def test_cxx_stdlib_is_emscriptens_libcxx_for_cxx_objects_only(built: Path) -> None:
    d = support.build("wasm-libcxx", {"s.cpp": """#include <string>
std::string greet(const std::string& who) { return "hi " + who; }
"""}, [["em++", "-O1", "-c", "s.cpp", "-o", "s.o"]])
    f = facts(d / "s.o")  # std::string is libc++'s std::__2::basic_string in Emscripten 3.1.6
    assert f.abi.cxx_stdlib == "libc++"
    assert "St3__" in " ".join(f.evidence["cxx_stdlib"])
    assert facts(built / "sj.o").abi.cxx_stdlib == "none"  # plain C


def test_wasm_eh_symbols(built: Path) -> None:
    f = facts(built / "thrower.wasmeh.o")
    assert f.symbols is not None
    assert "__cpp_exception" in f.symbols.weak
    assert "__wasm_lpad_context" in f.symbols.undefined
    assert f.abi.wasm_features == ["exception-handling"]
    assert f.details["tags"] == 1


def test_deep_decode_counts_eh_opcodes(built: Path) -> None:
    f = facts(built / "thrower.wasmeh.o", deep=True)
    ops = f.details["opcodes"]
    assert ops["eh_legacy"] > 0  # try / catch / catch_all / delegate / rethrow
    assert "EH instructions" in " ".join(f.evidence["eh"])


def test_threads(built: Path) -> None:
    thr = facts(built / "thr.pthread.o")
    assert thr.abi.threads is True
    assert {"atomics", "bulk-memory"} <= set(thr.abi.wasm_features or [])
    no = facts(built / "thr.nopthread.o")
    assert no.abi.threads is False
    assert no.details["disallowed_features"] == ["shared-mem"]
    assert ("--shared-memory is disallowed by thr.nopthread.o because it was not compiled with "
            "'atomics' or 'bulk-memory' features") in no.details["threads_reason"]
    plain = facts(built / "raii.noexc.o")
    assert plain.abi.threads is False and plain.abi.wasm_features == []


def test_tls_symbol_flag(built: Path) -> None:
    f = facts(built / "thr.pthread.o")
    assert f.symbols is not None
    assert "tls_var" in f.symbols.defined and "counter" in f.symbols.defined
    # memcpy became memory.copy (bulk memory), so nothing but TLS/stack globals stays undefined
    assert "memcpy" not in f.symbols.undefined


def test_simd_and_relaxed(built: Path) -> None:
    simd = facts(built / "simd.o")
    assert (simd.abi.simd128, simd.abi.relaxed_simd) == (True, False)
    relaxed = facts(built / "relaxed.o")
    assert (relaxed.abi.simd128, relaxed.abi.relaxed_simd) == (True, True)
    assert relaxed.abi.wasm_features == ["relaxed-simd", "simd128"]
    deep = facts(built / "relaxed.o", deep=True)
    assert deep.details["opcodes"]["relaxed_simd"] >= 1  # LLVM 14's pre-standard FD AF 01


def test_wasm64(built: Path) -> None:
    f = facts(built / "plain.wasm64.o")
    assert f.arch == "wasm64"
    assert "memory64" in (f.abi.wasm_features or [])
    assert f.os is None  # nothing in a bare clang object says which OS


def _objdump_symbols(path: Path) -> tuple[set[str], set[str]]:
    """Defined and undefined non-local symbol names per ``wasm-objdump -x``'s linking dump."""
    out = subprocess.run(["wasm-objdump", "-x", str(path)], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for m in re.finditer(r"^\s+- \d+: [FDGET] <([^>]+)> .*\[ (.*) \]$", out, re.M):
        name, attrs = m.group(1), m.group(2)
        if "binding=local" in attrs:
            continue
        if "undefined" in attrs:
            # wabt shows an import's symbol as module.field unless it has an explicit name
            undefined.add(name.split(".", 1)[1] if name.startswith("env.") else name)
        else:
            defined.add(name)
    return defined, undefined


@pytest.mark.parametrize("obj", ["thrower.legacy.o", "thrower.wasmeh.o", "sj.o", "thr.pthread.o"])
def test_symbols_match_wasm_objdump(built: Path, obj: str) -> None:
    f = facts(built / obj)
    assert f.symbols is not None
    defined, undefined = _objdump_symbols(built / obj)
    assert set(f.symbols.defined) == defined
    assert set(f.symbols.undefined) == undefined


# --- archives (members dispatched by the archive reader) ----------------------------------------


def test_archive_of_legacy_members(built: Path) -> None:
    f = facts(built / "liblegacy.a")
    assert f.format == "archive"
    assert f.members is not None and len(f.members) == 2
    assert {m.abi.eh for m in f.members} == {"emscripten-legacy"}
    assert f.abi.eh == "emscripten-legacy"


def test_archive_of_mixed_members(built: Path) -> None:
    f = facts(built / "libmixed.a")
    assert f.members is not None
    by_name = {m.path.rsplit("(", 1)[-1].rstrip(")"): m.abi.eh for m in f.members}
    assert by_name == {"thrower.legacy.o": "emscripten-legacy", "thrower.wasmeh.o": "wasm",
                       "raii.noexc.o": "none"}
    assert f.abi.eh == "mixed"
    assert f.counts["eh"] == {"emscripten-legacy": 1, "wasm": 1, "none": 1}


# --- linked modules ----------------------------------------------------------------------------


def test_module_legacy_unminified(built: Path) -> None:
    f = facts(built / "legacy.wasm")
    assert (f.kind, f.os, f.arch) == ("module", "emscripten", "wasm32")
    assert f.abi.eh == "emscripten-legacy"
    assert "__resumeException" in " ".join(f.evidence["eh"])
    assert f.abi.threads is False
    assert f.abi.async_ == "none"  # glue present, no Asyncify bodies, no JSPI
    assert f.details["tags"] == 0


def test_module_legacy_minified_needs_glue(built: Path, tmp_path: Path) -> None:
    f = facts(built / "legacy_min.wasm")
    assert f.details["import_names_minified"] is True
    assert f.abi.eh == "emscripten-legacy"
    assert "JS glue" in " ".join(f.evidence["eh"])
    lonely = tmp_path / "legacy_min.wasm"
    shutil.copy(built / "legacy_min.wasm", lonely)
    g = facts(lonely)
    assert g.abi.eh is None and g.abi.async_ is None  # no glue: unknown, never guessed
    assert "no JS glue" in " ".join(g.evidence["eh"])


def test_module_wasm_eh_has_a_tag(built: Path) -> None:
    f = facts(built / "wasmeh.wasm")
    assert f.abi.eh == "wasm"
    assert f.details["tags"] == 1
    assert "exception-handling" in (f.abi.wasm_features or [])
    assert f.abi.wasm_eh_encoding == "legacy"  # clang 14: try/catch/delegate, not try_table
    deep = facts(built / "wasmeh.wasm", deep=True)
    assert deep.abi.wasm_eh_encoding == "legacy"


def test_module_asyncify(built: Path, tmp_path: Path) -> None:
    f = facts(built / "asyncify.wasm")
    assert f.abi.async_ == "asyncify"
    assert set(f.details["asyncify"]["functions"]) == {"asyncify_start_unwind",
                                                       "asyncify_start_rewind"}
    lonely = tmp_path / "asyncify.wasm"
    shutil.copy(built / "asyncify.wasm", lonely)
    assert facts(lonely).abi.async_ == "asyncify"  # from the wasm bytes alone


def test_module_threads_from_shared_memory(built: Path) -> None:
    f = facts(built / "threads.wasm")
    assert f.abi.threads is True
    assert "shared" in " ".join(f.evidence["threads"])
    assert "atomics" in (f.abi.wasm_features or [])
    deep = facts(built / "threads.wasm", deep=True)
    assert deep.details["opcodes"]["atomics"] > 0


def test_module_relaxed_simd_is_read_from_the_code(built: Path) -> None:
    """LLVM 14's pre-standard relaxed-SIMD opcodes, decoded on the default path."""
    f = facts(built / "relaxed.wasm")
    assert f.abi.simd128 is True and f.abi.relaxed_simd is True
    assert "relaxed-simd" in (f.abi.wasm_features or []) and f.abi.wasm_features_complete
    assert facts(built / "relaxed.wasm", deep=True).abi.relaxed_simd is True


def test_side_module_is_a_shared_library(built: Path) -> None:
    f = facts(built / "side.wasm")
    assert (f.format, f.kind, f.arch) == ("wasm", "shared-library", "wasm32")
    assert f.symbols is not None and "plain_fn" in f.symbols.exports
    assert "dylink" in " ".join(f.evidence["kind"])


def _objdump_headers(path: Path) -> tuple[dict[str, int], list[str]]:
    out = subprocess.run(["wasm-objdump", "-h", "--enable-threads", str(path)],
                         capture_output=True, text=True, check=False).stdout
    if "Sections:" not in out:  # older wabt without --enable-threads
        out = subprocess.run(["wasm-objdump", "-h", str(path)], capture_output=True, text=True,
                             check=True).stdout
    counts = {m.group(1): int(m.group(2))
              for m in re.finditer(r"^\s*(\w+) start=.*count: (\d+)$", out, re.M)}
    return counts, re.findall(r"^\s*(\w+) start=", out, re.M)


@pytest.mark.parametrize("mod", ["legacy.wasm", "wasmeh.wasm", "asyncify.wasm", "threads.wasm"])
def test_module_counts_match_wasm_objdump(built: Path, mod: str) -> None:
    f = facts(built / mod)
    counts, sections = _objdump_headers(built / mod)
    assert f.details["imports"] == counts.get("Import", 0)
    assert f.details["exports"] == counts.get("Export", 0)
    assert f.details["functions"] == counts.get("Function", 0)
    assert f.details["globals"] == counts.get("Global", 0)
    assert f.details["tags"] == counts.get("Tag", 0)
    assert f.details["sections"] == sections
    assert f.symbols is not None and len(f.symbols.exports) == f.details["exports"]


def test_truncated_module_is_a_clean_error(built: Path, tmp_path: Path) -> None:
    data = (built / "legacy.wasm").read_bytes()
    for cut in (9, len(data) // 3, len(data) - 1):
        bad = tmp_path / f"cut{cut}.wasm"
        bad.write_bytes(data[:cut])
        with pytest.raises(FormatError, match=re.escape(str(bad))):
            inspect(bad)


# --- the CLI's --json output validates against the committed schema ------------------------------


def test_cli_json_validates(built: Path, ort_web: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = json.loads((support.ROOT / "schemas/inspect.schema.json").read_text())
    paths = [built / "thrower.legacy.o", built / "libmixed.a", built / "wasmeh.wasm",
             ort_web / "dist" / "ort-wasm-simd-threaded.jspi.wasm"]
    rc = main(["inspect", "--json", "--symbols", *map(str, paths)])
    payload = json.loads(capsys.readouterr().out)
    jsonschema.validate(payload, schema)
    assert rc == 0
    by_path = {r["path"]: r for r in payload["results"]}
    assert by_path[str(paths[0])]["abi"]["eh"] == "emscripten-legacy"
    assert by_path[str(paths[1])]["abi"]["eh"] == "mixed"
    assert by_path[str(paths[3])]["abi"]["async"] == "jspi"
    assert "OrtRun" in {e["name"] for e in by_path[str(paths[3])]["exports"]}
