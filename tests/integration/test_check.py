"""``prebake check`` on real binaries: each violation class fails with exactly that violation,
named per member with its evidence, and a clean build of the same code passes.

Every binary is built here with the real toolchain (cached by ``tests.support.build``).
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.contract import Contract
from prebake.contract.check import CheckReport, check_paths
from prebake.link.order import compute_link_order
from tests import support

SCHEMA = json.loads((support.ROOT / "schemas" / "check.schema.json").read_text())

THROWER = """\
#include <stdexcept>
int may_throw(int x) { if (x < 0) throw std::runtime_error("negative"); return x * 2; }
int safe_call(int x) { try { return may_throw(x); } catch (const std::exception&) { return -1; } }
"""
OTHER = """\
#include <string>
#include <stdexcept>
int other_call(int x) {
  try { if (x) throw std::logic_error("x"); } catch (...) { return 1; }
  return 0;
}
"""
PLAIN_C = "int plain_add(int a, int b) { return a + b; }\n"
THREADED = """\
#include <stdatomic.h>
_Thread_local int tls_counter;
atomic_int shared_counter;
int bump(void) { tls_counter++; return atomic_fetch_add(&shared_counter, 1); }
"""
SIMD = """\
#include <wasm_simd128.h>
v128_t mul_add(v128_t a, v128_t b, v128_t c) { return wasm_f32x4_add(wasm_f32x4_mul(a, b), c); }
"""


def only(report: CheckReport, rule: str) -> None:
    rules = sorted({v.rule for v in report.violations})
    assert rules == [rule], [v.detail for v in report.violations]


def em(name: str, sources: dict[str, str], objs: list[tuple[str, list[str]]]) -> Path:
    """Compile each (source, flags) to an object with em++/emcc and archive them in lib.a."""
    cmds = []
    names = []
    for src, flags in objs:
        tool = "em++" if src.endswith(".cpp") else "emcc"
        obj = src.rsplit(".", 1)[0] + ".o"
        cmds.append([tool, "-O1", *flags, "-c", src, "-o", obj])
        names.append(obj)
    cmds.append(["emar", "rcs", "lib.a", *names])
    return support.build(name, sources, cmds) / "lib.a"


# --- wasm: EH, LTO, features, threads ---------------------------------------------------------


def test_legacy_eh_archive_fails_eh_wasm_and_wasm_eh_passes() -> None:
    legacy = em("chk-legacy", {"thrower.cpp": THROWER}, [("thrower.cpp", ["-fexceptions"])])
    r = check_paths([legacy], Contract(eh="wasm"))
    only(r, "eh")
    v = r.violations[0]
    assert v.found == "emscripten-legacy" and v.members == ["thrower.o"] and v.total == 1
    assert "__resumeException" in v.detail and v.detail.startswith(
        "eh: required wasm, found emscripten-legacy in 1 of 1 member: thrower.o (references ")
    clean = em("chk-wasmeh", {"thrower.cpp": THROWER}, [("thrower.cpp", ["-fwasm-exceptions"])])
    assert check_paths([clean], Contract(eh="wasm")).ok


def test_mixed_eh_members_are_named() -> None:
    lib = em("chk-mixed", {"thrower.cpp": THROWER, "other.cpp": OTHER, "plain.c": PLAIN_C},
             [("thrower.cpp", ["-fexceptions"]), ("other.cpp", ["-fwasm-exceptions"]),
              ("plain.c", [])])
    r = check_paths([lib], Contract(eh="wasm"))
    only(r, "eh")
    assert r.violations[0].members == ["thrower.o"] and r.violations[0].total == 3
    r2 = check_paths([lib], Contract(eh="emscripten-legacy"))
    assert r2.violations[0].members == ["other.o"] and r2.violations[0].found == "wasm"


def test_llvm_bitcode_from_flto_fails_lto_none() -> None:
    lto = em("chk-flto", {"plain.c": PLAIN_C}, [("plain.c", ["-flto"])])
    r = check_paths([lto], Contract(lto="none"))
    only(r, "lto")
    assert r.violations[0].found == "llvm-bitcode" and r.violations[0].members == ["plain.o"]
    clean = em("chk-noflto", {"plain.c": PLAIN_C}, [("plain.c", [])])
    assert check_paths([clean], Contract(lto="none")).ok


def test_relaxed_simd_is_forbidden_per_member() -> None:
    lib = em("chk-relaxed", {"simd.c": SIMD, "plain.c": PLAIN_C},
             [("simd.c", ["-msimd128", "-mrelaxed-simd"]), ("plain.c", ["-msimd128"])])
    c = Contract(features_forbidden=("relaxed-simd",))
    r = check_paths([lib], c)
    only(r, "features_forbidden")
    v = r.violations[0]
    assert v.members == ["simd.o"] and v.found == "relaxed-simd" and "2 members" in v.detail
    clean = em("chk-simd", {"simd.c": SIMD}, [("simd.c", ["-msimd128"])])
    assert check_paths([clean], c).ok
    assert check_paths([clean], Contract(features_required=("simd128",))).ok


def test_missing_atomics_under_threads_gives_the_linker_message() -> None:
    lib = em("chk-nothreads", {"thr.c": THREADED}, [("thr.c", [])])
    r = check_paths([lib], Contract(threads=True))
    only(r, "threads")
    assert ("--shared-memory is disallowed by thr.o because it was not compiled with 'atomics' "
            "or 'bulk-memory' features.") in r.violations[0].detail
    clean = em("chk-threads", {"thr.c": THREADED}, [("thr.c", ["-pthread"])])
    assert check_paths([clean], Contract(threads=True)).ok


# --- native: LTO, glibc, arch, macOS, MSVC, exports, NEEDED ----------------------------------


def test_gcc_lto_fails_lto_none() -> None:
    d = support.build("chk-gcclto", {"plain.c": PLAIN_C},
                      [["gcc", "-O2", "-flto", "-c", "plain.c"],
                       ["gcc-ar", "rcs", "lib.a", "plain.o"]])
    r = check_paths([d / "lib.a"], Contract(lto="none"))
    only(r, "lto")
    assert r.violations[0].found == "gcc-lto"


ISOC23 = """\
/* what glibc >= 2.38 headers emit for strtol under C23: an unversioned reference in the object */
long __isoc23_strtol(const char *, char **, int);
long parse(const char *s) { return __isoc23_strtol(s, 0, 10); }
"""
PLAIN_STRTOL = "#include <stdlib.h>\nlong parse(const char *s) { return strtol(s, 0, 10); }\n"


def test_glibc_too_new_from_an_unversioned_static_member() -> None:
    d = support.build("chk-isoc23", {"new.c": ISOC23, "old.c": PLAIN_STRTOL},
                      [["gcc", "-O1", "-c", "new.c", "old.c"], ["ar", "rcs", "libnew.a", "new.o"],
                       ["ar", "rcs", "libold.a", "old.o"]])
    r = check_paths([d / "libnew.a"], Contract(glibc_max="2.36"))
    only(r, "glibc_max")
    v = r.violations[0]
    assert v.found == "2.38" and v.members == ["new.o"] and "__isoc23_strtol" in v.detail
    assert check_paths([d / "libold.a"], Contract(glibc_max="2.36")).ok


def test_wrong_arch() -> None:
    d = support.build("chk-arch", {"plain.c": PLAIN_C},
                      [[*support.ZIG, "cc", "-target", "aarch64-linux-gnu", "-c", "plain.c",
                        "-o", "arm.o"], ["gcc", "-c", "plain.c", "-o", "x86.o"]])
    r = check_paths([d / "arm.o"], Contract(arch="x86_64"))
    only(r, "arch")
    assert r.violations[0].found == "aarch64"
    assert check_paths([d / "x86.o"], Contract(arch="x86_64")).ok


def test_platform_os_and_arch_are_part_of_its_contract(tmp_path: Path) -> None:
    """A platform's os/arch bind even when its contract table leaves them out: a Linux x86_64
    archive must not pass for windows-x86_64 (same arch), nor for linux-aarch64."""
    from prebake.intake import load_workspace

    ws = load_workspace(support.ROOT / "examples" / "sdk")
    d = support.build("chk-os", {"plain.c": PLAIN_C},
                      [["gcc", "-c", "plain.c", "-o", "x86.o"], ["ar", "rcs", "libx.a", "x86.o"]])
    assert ws.platforms["windows-x86_64"].contract.os == "windows"
    r = check_paths([d / "libx.a"], ws.platforms["windows-x86_64"].contract)
    only(r, "os")
    assert r.violations[0].found == "linux" and r.violations[0].members == ["x86.o"]
    only(check_paths([d / "libx.a"], ws.platforms["linux-aarch64"].contract), "arch")
    linux = ws.platforms["linux-x86_64"]
    assert check_paths([d / "libx.a"], linux.contract,
                       pin=support.producer_pin(linux, ws.pins)).ok


def test_macos_min_too_high_per_object_in_an_archive() -> None:
    d = support.build("chk-macos", {"a.c": PLAIN_C, "b.c": "int b_fn(void) { return 2; }\n"},
                      [[*support.ZIG, "cc", "-target", "aarch64-macos.14.0", "-c", "a.c"],
                       [*support.ZIG, "cc", "-target", "aarch64-macos.13.0", "-c", "b.c"],
                       ["llvm-ar", "--format=darwin", "rcs", "lib.a", "a.o", "b.o"],
                       ["llvm-ar", "--format=darwin", "rcs", "libok.a", "b.o"]])
    r = check_paths([d / "lib.a"], Contract(macos_min="13.3"))
    only(r, "macos_min")
    assert r.violations[0].members == ["a.o"] and r.violations[0].found == "14.0"
    assert check_paths([d / "libok.a"], Contract(macos_min="13.3", os="macos")).ok


def test_msvc_runtime_mismatch() -> None:
    cl = ["clang", "--driver-mode=cl", "/c", "/O2"]
    d = support.build("chk-msvc", {"w.c": PLAIN_C},
                      [[*cl, "/MT", "w.c", "/Fow_mt.obj"], [*cl, "/MD", "w.c", "/Fow_md.obj"],
                       ["llvm-lib", "/out:mt.lib", "w_mt.obj"],
                       ["llvm-lib", "/out:md.lib", "w_md.obj"]])
    r = check_paths([d / "mt.lib"], Contract(msvc_runtime="MD"))
    only(r, "msvc_runtime")
    assert r.violations[0].found == "MT" and r.violations[0].members == ["w_mt.obj"]
    assert check_paths([d / "md.lib"], Contract(msvc_runtime="MD")).ok


BUNDLED = """\
namespace absl { int StrCat(int a) { return a; } }
namespace google { namespace protobuf { int Message(int a) { return a + 1; } } }
extern "C" __attribute__((visibility("default"))) int api_entry(int a) {
  return absl::StrCat(a) + google::protobuf::Message(a);
}
"""
FORBID = ("_ZN4absl*", "google::protobuf::*")


def test_exported_absl_and_protobuf_from_a_shared_library() -> None:
    d = support.build("chk-exports", {"b.cpp": BUNDLED},
                      [["g++", "-O1", "-shared", "-fPIC", "b.cpp", "-o", "libleaky.so"],
                       ["g++", "-O1", "-shared", "-fPIC", "-fvisibility=hidden", "b.cpp",
                        "-o", "libhidden.so"]])
    r = check_paths([d / "libleaky.so"], Contract(forbid_exports=FORBID))
    only(r, "forbid_exports")
    assert "_ZN4absl6StrCatEi" in r.violations[0].detail
    assert "_ZN6google8protobuf7MessageEi" in r.violations[0].detail
    assert check_paths([d / "libhidden.so"], Contract(forbid_exports=FORBID)).ok


def test_needed_library_outside_the_allowed_list() -> None:
    src = "#include <math.h>\ndouble f(double x) { return cos(x); }\n"
    d = support.build("chk-needed", {"m.c": src, "p.c": PLAIN_C},
                      [["gcc", "-shared", "-fPIC", "m.c", "-o", "libm_user.so",
                        "-Wl,--no-as-needed", "-lm"],
                       ["gcc", "-shared", "-fPIC", "p.c", "-o", "libplain.so"]])
    c = Contract(allowed_needed=("libc.so.*",))
    r = check_paths([d / "libm_user.so"], c)
    only(r, "allowed_needed")
    assert r.violations[0].found == "libm.so.6"
    assert check_paths([d / "libplain.so"], c).ok


def test_strong_symbol_in_two_archives_clashes() -> None:
    """Two versions of one function (what two copies of protobuf are): whichever archive the
    linker scans first wins, silently."""
    d = support.build("chk-clash2", {"p.c": PLAIN_C, "q.c": PLAIN_C.replace("a + b", "a - b")},
                      [["gcc", "-c", "p.c", "q.c"], ["ar", "rcs", "libone.a", "p.o"],
                       ["cp", "q.o", "p.o"], ["ar", "rcs", "libtwo.a", "p.o"]])
    r = check_paths([d / "libone.a", d / "libtwo.a"], Contract())
    only(r, "clash")
    jsonschema.validate(r.to_json(), SCHEMA)
    assert "plain_add" in r.violations[0].detail


def test_the_same_member_bytes_in_two_archives_are_no_clash() -> None:
    """FFmpeg compiles libavutil/half2float.c into libavcodec and libswscale: one object,
    byte for byte, in each static archive; the linker takes the same code from either."""
    d = support.build("chk-clash", {"p.c": PLAIN_C},
                      [["gcc", "-c", "p.c"], ["ar", "rcs", "libone.a", "p.o"],
                       ["ar", "rcs", "libtwo.a", "p.o"]])
    assert check_paths([d / "libone.a", d / "libtwo.a"], Contract()).ok


TEMPLATE_STATIC = """\
template <class T> struct Tag { static int dummy; };
template <class T> int Tag<T>::dummy;
int use_NAME() { return Tag<int>::dummy; }
"""


def test_template_statics_in_two_archives_do_not_clash() -> None:
    """g++ emits template static data as STB_GNU_UNIQUE ('u' in nm): merged, not a clash."""
    d = support.build("chk-unique", {"x.cpp": TEMPLATE_STATIC.replace("NAME", "x"),
                                     "y.cpp": TEMPLATE_STATIC.replace("NAME", "y")},
                      [["g++", "-O1", "-c", "x.cpp", "y.cpp"], ["ar", "rcs", "libx.a", "x.o"],
                       ["ar", "rcs", "liby.a", "y.o"]])
    nm = support.run(["nm", "libx.a"], d).stdout
    assert " u _ZN3TagIiE5dummyE" in nm
    assert check_paths([d / "libx.a", d / "liby.a"], Contract()).ok
    assert not compute_link_order([d / "libx.a", d / "liby.a"]).clashes


# --- folders, assets, the CLI -----------------------------------------------------------------


def test_folder_and_asset(tmp_path: Path) -> None:
    legacy = em("chk-legacy", {"thrower.cpp": THROWER}, [("thrower.cpp", ["-fexceptions"])])
    prefix = tmp_path / "prefix"
    (prefix / "lib" / "sub").mkdir(parents=True)
    (prefix / "include").mkdir()
    (prefix / "include" / "x.h").write_text("int x;\n")
    (prefix / "lib" / "sub" / "libthrower.a").write_bytes(legacy.read_bytes())
    (prefix / "lib" / "x.pc").write_text("Name: x\n")
    (prefix / "lib" / "zlink.a").symlink_to("sub/libthrower.a")  # one file, checked once
    r = check_paths([prefix], Contract(eh="wasm"))
    assert r.files == [str(prefix / "lib" / "sub" / "libthrower.a")]
    # the whole folder is walked (not only lib/): the header and the .pc are seen and skipped
    assert r.skipped == [str(prefix / "include" / "x.h"), str(prefix / "lib" / "x.pc")]
    only(r, "eh")
    asset = tmp_path / "thrower-1.0-wasm.tar.xz"
    with tarfile.open(asset, "w:xz") as tf:
        tf.add(prefix / "lib", arcname="lib")
    r2 = check_paths([asset], Contract(eh="wasm"))
    assert r2.violations[0].path == f"{asset}!lib/sub/libthrower.a"


def test_cli_contract_file_json_and_exit_codes(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    legacy = em("chk-legacy", {"thrower.cpp": THROWER}, [("thrower.cpp", ["-fexceptions"])])
    c = tmp_path / "c.toml"
    c.write_text('eh = "wasm"\nlto = "none"\n')
    assert main(["check", str(legacy), "--contract", str(c), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, SCHEMA)
    assert out["schema_version"] == 1 and not out["ok"]
    assert [v["rule"] for v in out["violations"]] == ["eh"]
    assert main(["check", str(legacy), "--contract", str(c)]) == 1
    assert "eh: required wasm, found emscripten-legacy" in capsys.readouterr().out
    c.write_text('eh = "wasm"\nehh = 1\n')
    assert main(["check", str(legacy), "--contract", str(c)]) == 2
    assert "did you mean" in capsys.readouterr().err
    junk = tmp_path / "junk.a"
    junk.write_text("nope")
    assert main(["check", str(junk), "--contract", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_platform_contract_from_the_workspace(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    clean = em("chk-wasmeh", {"thrower.cpp": THROWER}, [("thrower.cpp", ["-fwasm-exceptions"])])
    support.wasm_check_workspace(tmp_path, "chk", 'eh = "wasm"\nlto = "none"\nthreads = true')
    assert main(["-C", str(tmp_path), "check", str(clean), "--platform", "wasm"]) == 1
    out = capsys.readouterr().out
    assert "threads: required true" in out and "eh:" not in out
    assert main(["-C", str(tmp_path), "check", str(clean), "--platform", "nope"]) == 2


# --- the real onnxruntime prebuilts (npm) -----------------------------------------------------


def test_onnxruntime_web_only_the_jspi_build_has_wasm_eh(ort_web: Path) -> None:
    r = check_paths([ort_web / "dist"], Contract(eh="wasm"))
    wasm = sorted(f for f in r.files if f.endswith(".wasm"))
    assert len(wasm) == 4
    failing = sorted(Path(v.path).name for v in r.violations)
    assert failing == ["ort-wasm-simd-threaded.asyncify.wasm", "ort-wasm-simd-threaded.jsep.wasm",
                       "ort-wasm-simd-threaded.wasm"]
    assert {v.rule for v in r.violations} == {"eh"}
    assert {v.found for v in r.violations} == {"emscripten-legacy"}
    assert all("invoke" in v.detail for v in r.violations)  # evidence from the JS glue
    jspi = ort_web / "dist" / "ort-wasm-simd-threaded.jspi.wasm"
    design = Contract(eh="wasm", lto="none", threads=True, arch="wasm32",
                      features_required=("simd128", "exception-handling"),
                      features_forbidden=("relaxed-simd",))  # the example host's wasm contract
    # its feature list is read from every instruction on the default path: whole, so
    # forbidding relaxed SIMD is decided (absent) without --deep, and --deep agrees
    assert check_paths([jspi], design).ok
    assert check_paths([jspi], design, deep=True).ok
    plain = check_paths([ort_web / "dist" / "ort-wasm-simd-threaded.wasm"], design)
    assert sorted(v.rule for v in plain.violations) == ["eh", "features_required"]
    assert not check_paths([jspi], Contract(eh="emscripten-legacy")).ok


def test_onnxruntime_node_linux_x64_against_glibc_and_exports(ort_node: Path) -> None:
    x64 = ort_node / "bin" / "napi-v6" / "linux" / "x64"
    good = Contract(arch="x86_64", os="linux", glibc_max="2.28",
                    forbid_exports=("_ZN4absl*", "_ZN6google8protobuf*"))
    r = check_paths([x64], good)
    assert r.ok, r.render()
    assert sorted(Path(f).name for f in r.files) == ["libonnxruntime.so.1",
                                                     "onnxruntime_binding.node"]
    bad = check_paths([x64 / "libonnxruntime.so.1"], Contract(glibc_max="2.27"))
    only(bad, "glibc_max")
    assert bad.violations[0].found == "2.28" and "fcntl64@GLIBC_2.28" in bad.violations[0].detail
    arm = check_paths([ort_node / "bin" / "napi-v6" / "linux" / "arm64"], Contract(arch="x86_64"))
    only(arm, "arch")
    assert {v.found for v in arm.violations} == {"aarch64"}


def test_onnxruntime_node_windows_and_macos(ort_node: Path) -> None:
    base = ort_node / "bin" / "napi-v6"
    win = check_paths([base / "win32" / "x64" / "onnxruntime.dll"], Contract(msvc_runtime="MT"))
    only(win, "msvc_runtime")
    assert win.violations[0].found == "MD"
    assert check_paths([base / "win32" / "x64" / "onnxruntime.dll"],
                       Contract(msvc_runtime="MD", arch="x86_64")).ok
    other = check_paths([base / "win32" / "x64" / "DirectML.dll"], Contract(eh="wasm"))
    assert not other.ok and not other.violations  # no evidence of any EH model: fails closed
    assert [u.rule for u in other.unknown] == ["eh"]
    opted = check_paths([base / "win32" / "x64" / "DirectML.dll"],
                        Contract(eh="wasm", allow_unknown=("eh",)))
    assert opted.ok and [(u.rule, u.allowed) for u in opted.unknown] == [("eh", True)]
    dylib = base / "darwin" / "arm64" / "libonnxruntime.1.30.0.dylib"
    mac = check_paths([dylib], Contract(macos_min="13.3"))
    only(mac, "macos_min")
    assert mac.violations[0].found == "14.0"
    assert check_paths([dylib], Contract(macos_min="14.0", cxx_stdlib="libc++")).ok


def test_a_minified_module_without_its_loader_fails_closed_on_eh(
        ort_web: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """onnxruntime-web's legacy-EH module, alone, must not pass ``eh = "wasm"``."""
    import shutil

    lone = tmp_path / "ort-wasm-simd-threaded.wasm"
    shutil.copyfile(ort_web / "dist" / "ort-wasm-simd-threaded.wasm", lone)
    c = tmp_path / "c.toml"
    c.write_text('eh = "wasm"\n')
    assert main(["check", "--contract", str(c), str(lone)]) == 1
    out = capsys.readouterr().out
    assert "eh: unknown (import names are minified and there is no JS glue" in out
    assert "fails closed" in out and "1 rule(s) that could not be read" in out
    assert main(["check", "--contract", str(c), str(lone), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    assert data["ok"] is False and data["violations"] == []
    assert [(u["rule"], u["allowed"]) for u in data["unknown"]] == [("eh", False)]
    assert "minified" in data["unknown"][0]["reason"]
    c.write_text('eh = "wasm"\nallow_unknown = ["eh"]\n')  # the explicit, reported opt-out
    assert main(["check", "--contract", str(c), str(lone)]) == 0
    out = capsys.readouterr().out
    assert "eh: unknown" in out and "not checked (allow_unknown)" in out
