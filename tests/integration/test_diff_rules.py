"""The diff's matching and classification rules, table-driven (the data the diff acts on)."""

from __future__ import annotations

import pytest

from prebake.diff import classify_fact, library_key, version_key


@pytest.mark.parametrize(("name", "key"), [
    ("libfoo.so.1.2", "libfoo.so"),
    ("libfoo.so.1.3", "libfoo.so"),
    ("libfoo.so.1", "libfoo.so"),
    ("libfoo.so", "libfoo.so"),
    ("libfoo.1.2.3.dylib", "libfoo.dylib"),
    ("libfoo.dylib", "libfoo.dylib"),
    ("libgcc_s_seh-1.dll", "libgcc_s_seh.dll"),
    ("onnxruntime-1.27.0.a", "onnxruntime.a"),
    ("libfoo.a", "libfoo.a"),
    ("libabsl_base.a", "libabsl_base.a"),
    ("libfoo2.a", "libfoo2.a"),
    ("foo.wasm", "foo.wasm"),
])
def test_library_key(name: str, key: str) -> None:
    assert library_key(name) == key


@pytest.mark.parametrize(("older", "newer"), [
    ("1.9.0", "1.10.0"), ("1.27.0", "1.28.0"), ("1.28.0rc1", "1.28.0"), ("1.0", "1.0.1"),
    ("2.0.0-beta", "2.0.0"), ("0.9", "1.0"),
])
def test_version_order(older: str, newer: str) -> None:
    assert version_key(older) < version_key(newer)


@pytest.mark.parametrize(("fact", "old", "new", "breaking"), [
    ("glibc_max", "2.17", "2.38", True),
    ("glibc_max", "2.38", "2.17", False),
    ("glibc_max", None, "2.28", True),
    ("glibc_max", "2.28", None, False),
    ("glibc_max", "2.9", "2.10", True),  # numeric, not string, comparison
    ("glibcxx_max", "3.4.21", "3.4.30", True),
    ("macos_min", "11.0", "13.3", True),
    ("macos_min", "13.3", "11.0", False),
    ("eh", "emscripten-legacy", "wasm", True),
    ("eh", None, "none", False),  # unknown before: not evidence of a change
    ("threads", False, True, True),
    ("lto", "none", "llvm-bitcode", True),
    ("arch", "x86_64", "aarch64", True),
    ("msvc_runtime", "MD", "MT", True),
    ("needed", ["libc.so.6"], ["libc.so.6", "libm.so.6"], True),
    ("needed", ["libc.so.6", "libm.so.6"], ["libc.so.6"], False),
    ("delay_needed", [], ["DirectML.dll"], True),  # must be there on first call
    ("delay_needed", ["NODE.EXE"], [], False),
    ("wasm_features", ["simd128"], ["exception-handling", "simd128"], True),
    ("wasm_features", ["exception-handling", "simd128"], ["simd128"], False),
])
def test_fact_rules(fact: str, old: object, new: object, breaking: bool) -> None:
    verdict = classify_fact(fact, old, new)
    assert verdict is not None and verdict[0] is breaking


@pytest.mark.parametrize(("fact", "value"), [
    ("glibc_max", "2.28"), ("eh", "wasm"), ("needed", ["libc.so.6"]), ("glibc_max", None)])
def test_unchanged_facts_are_not_changes(fact: str, value: object) -> None:
    assert classify_fact(fact, value, value) is None
    if isinstance(value, list):
        assert classify_fact(fact, value, list(reversed(value))) is None


def test_fact_changes_spell_booleans_like_contracts() -> None:
    from prebake.diff.markdown import _value

    assert "true" in _value(True) and "True" not in _value(True)
    assert "false" in _value(False) and "0" not in _value(False)
