"""Every shipped library is guarded and easy to declare: ``Outputs.libs`` takes globs, a binary
the recipe's build installs without listing it is inspected, checked and linked whole all the
same, and a snippet carries its own flags."""

from __future__ import annotations

from pathlib import Path

from tests.integration import guard_workspace as gw

ALLOW = 'allow_undefined=("thrower_backend_*",),'
EXTRA_SRC = {"extra.cpp": ('extern "C" int extra_missing_fn(void);\n'
                           "int extra_entry() { return extra_missing_fn(); }\n")}


def test_a_glob_names_the_libraries(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, libs='("lib/libthr*.a",)')
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 0, data
    m = gw.manifest(ws, "linux-x86_64")
    assert [f["path"] for f in m["facts"]] == ["lib/libthrower.a"]
    assert "whole archive lib/libthrower.a" in m["guards"]["link_test"]["linked"]


def test_a_glob_that_matches_nothing_is_a_missing_output(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, libs='("lib/libnope*.a",)')
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    assert "declared outputs missing from the prefix: lib/libnope*.a" in data["units"][0][
        "message"]


def test_an_unlisted_archive_is_linked_whole_too(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, sources=EXTRA_SRC, extra_commands=(
        '"{cxx} -O2 -fPIC -c {src}/extra.cpp -o {build}/obj/extra.o",\n'
        '        "{ar} rcs {prefix}/lib/libextra.a {build}/obj/extra.o",'))
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1, data
    msg = data["units"][0]["message"]
    assert "lib/libextra.a(extra.o): undefined symbol extra_missing_fn" in msg
    assert gw.assets(ws) == []


def test_an_unlisted_lto_archive_in_lib64_fails_the_contract(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW, sources=EXTRA_SRC, extra_commands=(
        '"cmake -E make_directory {prefix}/lib64",\n'
        '        "{cxx} -O2 -fPIC -flto -c {src}/extra.cpp -o {build}/obj/extra.o",\n'
        '        "gcc-ar rcs {prefix}/lib64/libextra.a {build}/obj/extra.o",'))
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1, data
    msg = data["units"][0]["message"]
    assert "lib64/libextra.a" in msg and "lto: required none, found gcc-lto" in msg
    assert gw.assets(ws) == []


def test_a_snippet_carries_its_own_flags(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW + '\n        flags=("-std=c++20",),')
    recipe = ws / "recipes" / "thrower.py"
    text = recipe.read_text()
    include = r'"#include <thrower.hpp>\n"'
    assert include in text and "== 2 ?" in text
    recipe.write_text(text.replace(include, r'"#include <thrower.hpp>\nconsteval int two() '
                                            r'{ return 2; }\n"').replace("== 2 ?", "== two() ?"))
    rc, data, _ = gw.build_json(ws, "--platform", "wasm", "--platform", "linux-x86_64")
    assert rc == 0, data
    m = gw.manifest(ws, "linux-x86_64")
    assert m["guards"]["link_test"]["flags"] == ["-pthread"]  # the platform's, unchanged
    # without its flag the same snippet does not compile (consteval is C++20)
    recipe.write_text(recipe.read_text().replace('flags=("-std=c++20",),', ""))
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    assert "link test failed" in data["units"][0]["message"]
