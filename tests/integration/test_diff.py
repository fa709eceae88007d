"""``prebake diff`` on real builds: a breaking bump (export removed, glibc floor raised to 2.38),
a compatible one (a function added), as prefixes, assets, single binaries and against a store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prebake.cli import main
from prebake.diff.compare import version_tuple
from prebake.diff.markdown import markdown
from tests import support
from tests.integration.diff_fixtures import EVIL, build_version, prefix, write_demo_asset

SCHEMA = json.loads((support.ROOT / "schemas" / "diff.schema.json").read_text())


def run_diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["diff", *argv, "--json"])
    out = capsys.readouterr().out
    payload = json.loads(out)
    jsonschema.validate(payload, SCHEMA)
    return code, payload


def changes(payload: dict[str, Any], *, breaking: bool, category: str | None = None
            ) -> set[tuple[str | None, str]]:
    return {(c["library"], c["subject"]) for c in payload["changes"]
            if c["breaking"] == breaking and (category is None or c["category"] == category)}


@pytest.fixture(scope="module")
def prefixes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("prefixes")
    return {v: prefix(out, v) for v in ("1", "2", "3")}


def test_breaking_bump_between_prefixes(prefixes: dict[str, Path],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, d = run_diff(capsys, str(prefixes["1"]), str(prefixes["2"]))
    assert code == 1
    assert d["breaking"] is True
    # libdemo.so.1.0.0 and libdemo.so.2.0.0 are one library; symlinks are not libraries.
    assert {r["key"] for r in d["libraries"]} == {"libdemo.a", "libdemo.so"}
    assert changes(d, breaking=True, category="export") == {
        ("libdemo.a", "gone"), ("libdemo.so", "gone")}
    so_floor = next(c for c in d["changes"]
                    if c["subject"] == "glibc_max" and c["library"] == "libdemo.so")
    assert so_floor["breaking"] and so_floor["new"] == "2.38"
    assert version_tuple(so_floor["old"]) < (2, 38)  # zig's 2.17 target: strtol@GLIBC_2.2.5
    a_floor = next(c for c in d["changes"]
                   if c["subject"] == "glibc_max" and c["library"] == "libdemo.a")
    assert a_floor["breaking"] and a_floor["new"] == "2.38"
    # the header lost a prototype: reported, by content hash
    assert ("include/demo.h" in {c["subject"] for c in d["changes"] if c["category"] == "header"})
    # nothing compatible is mislabelled: the only export changes are the removals
    assert changes(d, breaking=False, category="export") == set()
    sizes = {r["key"]: r for r in d["libraries"]}
    assert sizes["libdemo.so"]["old_size"] > 0 and sizes["libdemo.so"]["new_size"] > 0


def test_allow_breaking_exits_zero_but_still_reports(prefixes: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, d = run_diff(capsys, str(prefixes["1"]), str(prefixes["2"]), "--allow-breaking")
    assert code == 0
    assert d["breaking"] is True and d["allow_breaking"] is True


def test_compatible_bump_exits_zero(prefixes: dict[str, Path],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, d = run_diff(capsys, str(prefixes["1"]), str(prefixes["3"]))
    assert code == 0
    assert d["breaking"] is False and d["counts"]["breaking"] == 0
    assert changes(d, breaking=False, category="export") == {
        ("libdemo.a", "added"), ("libdemo.so", "added")}
    assert not any(c["subject"] == "glibc_max" for c in d["changes"])


def test_same_release_has_no_changes(prefixes: dict[str, Path],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, d = run_diff(capsys, str(prefixes["2"]), str(prefixes["2"]))
    assert code == 0 and d["changes"] == [] and d["counts"] == {"breaking": 0, "compatible": 0}


def test_single_binaries_pair_whatever_their_names(capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2, v3 = (build_version(v) for v in ("1", "2", "3"))
    code, d = run_diff(capsys, str(v1 / "libdemo.so.1.0.0"), str(v2 / "libdemo.so.2.0.0"))
    assert code == 1
    assert changes(d, breaking=True) >= {("libdemo.so", "gone"), ("libdemo.so", "glibc_max")}
    code, d = run_diff(capsys, str(v1 / "libdemo.a"), str(v3 / "libdemo.a"))
    assert code == 0 and changes(d, breaking=False, category="export") == {
        ("libdemo.a", "added")}


def test_assets_from_the_real_packager(prefixes: dict[str, Path], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    a1 = write_demo_asset(prefixes["1"], "demo", "1.0.0", "linux-x86_64", tmp_path)
    a2 = write_demo_asset(prefixes["2"], "demo", "2.0.0", "linux-x86_64", tmp_path)
    a3 = write_demo_asset(prefixes["3"], "demo", "1.1.0", "linux-x86_64", tmp_path)
    code, d = run_diff(capsys, str(a1), str(a2))
    assert code == 1
    assert (d["old"]["kind"], d["old"]["version"], d["new"]["version"]) == (
        "asset", "1.0.0", "2.0.0")
    assert d["old"]["size"] == a1.stat().st_size
    assert d["link_order"]["old_source"] == "manifest"
    assert ("libdemo.so", "gone") in changes(d, breaking=True)
    code, d = run_diff(capsys, str(a1), str(a3))
    assert code == 0 and not d["breaking"]
    # an asset against an unpacked prefix of the same release: nothing consumers can see
    code, d = run_diff(capsys, str(a1), str(prefixes["1"]))
    assert code == 0
    assert [c for c in d["changes"] if c["category"] != "size"] == []


def test_new_archive_new_needed_and_link_order(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """v4 adds libextra.a (needs libdemo.a) and links libm: a new required archive and a new
    NEEDED library are breaking; v5 turns the dependency round (link order changes)."""
    srcs = {"demo.c": "int foo(int x) { return x + 1; }\n",
            "extra.c": "int foo(int);\nint extra(int x) { return foo(x) * 2; }\n",
            "demo5.c": "int extra(int);\nint foo(int x) { return extra(x) + 1; }\n",
            "extra5.c": "int extra(int x) { return x * 2; }\n",
            "m.c": "#include <math.h>\ndouble wave(double x) { return cos(x); }\n"
                   "int foo(int x) { return x + 1; }\n"}
    cmds = [["gcc", "-O2", "-fPIC", "-c", f"{n}.c", "-o", f"{n}.o"]
            for n in ("demo", "extra", "demo5", "extra5", "m")]
    cmds += [["ar", "rcs", "v1/lib/libdemo.a", "demo.o"],
             ["ar", "rcs", "v4/lib/libdemo.a", "demo.o"],
             ["ar", "rcs", "v4/lib/libextra.a", "extra.o"],
             ["ar", "rcs", "v5/lib/libdemo.a", "demo5.o"],
             ["ar", "rcs", "v5/lib/libextra.a", "extra5.o"],
             ["gcc", "-shared", "-o", "v1/lib/libdemo.so", "demo.o"],
             ["gcc", "-shared", "-o", "v4/lib/libdemo.so", "m.o", "-Wl,--no-as-needed", "-lm"],
             ["cp", "v4/lib/libdemo.so", "v5/lib/libdemo.so"]]
    for d in ("v1", "v4", "v5"):
        srcs[f"{d}/lib/.keep"] = ""
    built = support.build("diff-archives", srcs, cmds)
    code, d = run_diff(capsys, str(built / "v1"), str(built / "v4"))
    assert code == 1
    new_lib = next(c for c in d["changes"] if c["category"] == "library")
    assert (new_lib["subject"], new_lib["breaking"]) == ("libextra.a", True)
    assert "archive" in new_lib["reason"]
    needed = next(c for c in d["changes"] if c["subject"] == "needed")
    assert needed["breaking"] and "libm.so.6" in needed["new"]
    assert d["link_order"]["new_source"] == "computed"
    assert d["link_order"]["new"] == [["lib/libextra.a"], ["lib/libdemo.a"]]
    code, d = run_diff(capsys, str(built / "v4"), str(built / "v5"), "--allow-breaking")
    assert code == 0
    assert d["link_order"]["changed"] is True
    assert d["link_order"]["new"] == [["lib/libdemo.a"], ["lib/libextra.a"]]
    order = next(c for c in d["changes"] if c["category"] == "link-order")
    assert order["old"] == "libextra.a libdemo.a" and order["new"] == "libdemo.a libextra.a"


def test_markdown_summary_escapes_symbol_names(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    evil = build_version("1", evil=True)
    plain = build_version("1")
    code = main(["diff", str(evil / "libdemo.a"), str(plain / "libdemo.a")])
    md = capsys.readouterr().out
    assert code == 1
    assert md.startswith("### prebake diff:")
    assert "evil&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "<script" not in md and EVIL not in md
    assert "#### Breaking" in md and "export removed" in md


def test_demangled_names_in_diff(capsys: pytest.CaptureFixture[str]) -> None:
    built = support.build("diff-cxx", {
        "a.cc": "namespace demo { int area(int w, int h) { return w * h; } }\n"
                "int keep() { return 1; }\n",
        "b.cc": "int keep() { return 1; }\n"},
        [["g++", "-O2", "-c", "a.cc", "-o", "a.o"], ["g++", "-O2", "-c", "b.cc", "-o", "b.o"]])
    code, d = run_diff(capsys, str(built / "a.o"), str(built / "b.o"))
    assert code == 1
    removed = next(c for c in d["changes"] if c["category"] == "export")
    assert removed["subject"] == "_ZN4demo4areaEii"
    assert removed["demangled"] == "demo::area(int, int)"


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    assert main(["diff", str(tmp_path / "missing"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.txt").write_text("no binaries here\n")
    assert main(["diff", str(tmp_path / "docs"), str(tmp_path / "docs")]) == 2
    assert "holds no binaries or headers" in capsys.readouterr().err
    bad = tmp_path / "demo-1.0.0-linux-x86_64.tar.xz"
    bad.write_bytes(b"not an xz stream")
    assert main(["diff", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err


def test_diff_against_store(prefixes: dict[str, Path], tmp_path: Path) -> None:
    from prebake.diff import diff_against_store, previous_in_store
    from prebake.package.naming import asset_id
    from prebake.store import open_store

    store = open_store(f"file://{tmp_path / 'store'}")
    dist = tmp_path / "dist"
    a1 = write_demo_asset(prefixes["1"], "demo", "1.0.0", "linux-x86_64", dist)
    a2 = write_demo_asset(prefixes["2"], "demo", "2.0.0", "linux-x86_64", dist)
    assert diff_against_store(a1, store) is None  # a first release: nothing to compare
    store.publish(a1)
    # another platform and another dependency never count as the previous release
    other = tmp_path / "other"
    shutil.copytree(prefixes["3"], other, symlinks=True)
    store.publish(write_demo_asset(other, "demo", "1.1.0", "linux-aarch64", tmp_path / "d2"))
    store.publish(write_demo_asset(other, "notdemo", "1.5.0", "linux-x86_64", tmp_path / "d3"))
    assert previous_in_store(store, asset_id("demo", "2.0.0", "linux-x86_64")) == (
        asset_id("demo", "1.0.0", "linux-x86_64"), "continuous")
    result = diff_against_store(a2, store)
    assert result is not None and result.breaking
    assert result.old["version"] == "1.0.0" and result.new["version"] == "2.0.0"
    assert "gone" in {c.subject for c in result.of(breaking=True, category="export")}
    assert "### prebake diff" in markdown(result)
    # a rebuild of the version the store has compares against that very asset
    store.publish(a2)
    again = diff_against_store(a2, store)
    assert again is not None and again.changes == []


def test_build_summary_for_a_first_and_a_later_release(prefixes: dict[str, Path],
                                                       tmp_path: Path) -> None:
    from prebake.diff import build_summary
    from prebake.store import open_store

    store = open_store(f"file://{tmp_path / 'store'}")
    a1 = write_demo_asset(prefixes["1"], "demo", "1.0.0", "linux-x86_64", tmp_path / "d1")
    a3 = write_demo_asset(prefixes["3"], "demo", "1.1.0", "linux-x86_64", tmp_path / "d3")
    result, md = build_summary(a1, store)
    assert result is None and "First release" in md and "demo on linux-x86_64" in md
    store.publish(a1)
    result, md = build_summary(a3, store)
    assert result is not None and not result.breaking
    assert "export added <code>added</code>" in md


def test_onnxruntime_web_legacy_eh_vs_jspi_build(ort_web: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The story's trap as a diff: the public legacy-EH build vs the JSPI build of the same
    onnxruntime-web release — EH model, async model and wasm features all break consumers."""
    dist = ort_web / "dist"
    code, d = run_diff(capsys, str(dist / "ort-wasm-simd-threaded.wasm"),
                       str(dist / "ort-wasm-simd-threaded.jspi.wasm"))
    assert code == 1
    facts = {c["subject"]: c for c in d["changes"] if c["category"] == "fact"}
    assert (facts["eh"]["old"], facts["eh"]["new"], facts["eh"]["breaking"]) == (
        "emscripten-legacy", "wasm", True)
    assert (facts["async"]["new"], facts["async"]["breaking"]) == ("jspi", True)
    assert facts["wasm_features"]["breaking"]
    assert "exception-handling" in facts["wasm_features"]["new"]
    assert "exception-handling" not in facts["wasm_features"]["old"]
    assert d["size"]["change_pct"] is not None and d["size"]["change_pct"] > 0


def test_macos_deployment_target_raised(capsys: pytest.CaptureFixture[str]) -> None:
    """zig stamps the triple's macOS version into LC_BUILD_VERSION: 11.0 -> 13.0 breaks."""
    cmds = [[*support.ZIG, "cc", "-target", f"aarch64-macos.{v}", "-O2", "-shared",
             "-Wl,-install_name,@rpath/libdemo.dylib", "-o", f"v{v}/libdemo.dylib", "demo.c"]
            for v in ("11.0", "13.0")]
    built = support.build("diff-macos", {"demo.c": "int foo(int x) { return x + 1; }\n",
                                         "v11.0/.keep": "", "v13.0/.keep": ""}, cmds)
    code, d = run_diff(capsys, str(built / "v11.0"), str(built / "v13.0"))
    assert code == 1
    facts = [(c["subject"], c["old"], c["new"], c["breaking"]) for c in d["changes"]
             if c["category"] == "fact"]
    assert facts == [("macos_min", "11.0", "13.0", True)]
    code, d = run_diff(capsys, str(built / "v13.0"), str(built / "v11.0"))
    assert code == 0  # lowering the floor is compatible


VERSIONED = {  # a library whose major bump moves every export to a new version node
    "1": ("int counter = 1;\nint foo(int x) { return x + counter; }\n"
          "int gone(void) { return 7; }\n", "counter; foo; gone;"),
    "2": ("int counter = 2;\nint foo(int x) { return x + counter; }\n"
          "int added(void) { return 8; }\n", "counter; foo; added;"),
}


def _versioned(v: str) -> Path:
    src, names = VERSIONED[v]
    built = support.build(f"diff-versioned-{v}", {
        "v.c": src, "v.map": f"DEMO_{v} {{ global: {names} local: *; }};\n"},
        [["gcc", "-O2", "-fPIC", "-shared", f"-Wl,-soname,libvdemo.so.{v}",
          "-Wl,--version-script=v.map", "-s", "-o", f"libvdemo.so.{v}", "v.c"]])
    return built / f"libvdemo.so.{v}"


@pytest.mark.skipif(shutil.which("abidiff") is None, reason="needs abigail-tools")
def test_a_major_bump_moves_every_export_to_a_new_version_node_as_abidiff_sees_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A symbol is its name and its version node: the exports both releases have moved from
    DEMO_1 to DEMO_2 (breaking: an old consumer's reference names DEMO_1), one function went,
    one came; functions and variables apart. abidiff on the same files says the same."""
    from tests.integration.abidiff import abidiff, prebake_view

    old, new = _versioned("1"), _versioned("2")
    code, d = run_diff(capsys, str(old), str(new))
    assert code == 1
    (key,) = {r["key"] for r in d["libraries"]}
    soname = next(c for c in d["changes"] if c["subject"] == "soname")
    assert (soname["old"], soname["new"], soname["breaking"]) == (
        "libvdemo.so.1", "libvdemo.so.2", True)
    moved = {(c["subject"], c["kind"], c["old"], c["new"]) for c in d["changes"]
             if c["category"] == "symbol-version"}
    assert moved == {("counter", "variable", "DEMO_1", "DEMO_2"),
                     ("foo", "function", "DEMO_1", "DEMO_2")}
    mine = prebake_view(d, key)
    assert mine == {("Removed", "function"): {("gone", "DEMO_1"), ("foo", "DEMO_1")},
                    ("Removed", "variable"): {("counter", "DEMO_1")},
                    ("Added", "function"): {("added", "DEMO_2")}}
    theirs = abidiff(old, new)
    assert theirs.soname == ("libvdemo.so.1", "libvdemo.so.2")
    assert {k: v for k, v in theirs.symbols.items() if v} == mine, theirs.text
    # the markdown keeps one row per library and node pair, not one per export
    main(["diff", str(old), str(new)])
    text = capsys.readouterr().out
    assert "2 export(s) moved to another version node: <code>DEMO_1</code> → " \
           "<code>DEMO_2</code>" in text
    assert "function removed <code>gone</code>" in text
