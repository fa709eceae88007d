"""The direct ``__cxa_demangle`` binding answers exactly what ``cxxfilt`` answers."""

from __future__ import annotations

from pathlib import Path

import cxxfilt
import pytest

from prebake.inspect import ParseOptions, inspect
from prebake.inspect import demangle as dm

SUPPORT = Path("/usr/lib/llvm-14/lib/libLLVMSupport.a")
ODD = ["_Z", "_Zfoo", "_Z3fooi", "__Z3fooi", "_ZN4llvm4errsEv", "main", "?x@@YAHXZ",
       "_Z" + "N" * 5000, "_ZZ4mainE1x", "_ZTV3Foo",
       "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEED1Ev"]


def _reference(name: str) -> str | None:
    raw = name[1:] if name.startswith("__Z") else name
    if not raw.startswith("_Z") or len(raw) > dm.MAX_NAME:
        return None
    try:
        out = cxxfilt.demangle(raw)
    except Exception:
        return None
    return out if out != raw else None


def _names() -> list[str]:
    names = list(ODD)
    if SUPPORT.is_file():
        for m in inspect(SUPPORT, ParseOptions(symbols=True)).members or []:
            if m.symbols is not None:
                names += m.symbols.defined + m.symbols.undefined
    return list(dict.fromkeys(names))


def test_direct_binding_is_loaded() -> None:
    assert isinstance(dm._impl(), dm._Direct)


@pytest.mark.parametrize("chunk", range(4))
def test_same_answers_as_cxxfilt(chunk: int) -> None:
    names = _names()[chunk::4]
    dm.demangle.cache_clear()
    assert [dm.demangle(n) for n in names] == [_reference(n) for n in names]


HOSTILE = ["_Z3f\x00oi", "_Z3f\udcffi", "_Z1\u00e9v", "__Z", "__Zfoo", "_", "", "__Z3fooi",
           "_Z" + "1a" * 2047, "_Z" + "1a" * 2048, "__Z" + "1a" * 2047, "_ZNK3Foo3barEv"]


def _fill(cache: dict[str, str | None], names: list[str], limit: int) -> None:
    """What the renderers call: the C loop with the runtime's demangler address."""
    from prebake.inspect import hotloops

    assert dm.address(), "the C++ runtime's demangler is loadable here"
    hotloops.scan.fill_demangled(cache, names, dm.address(), limit)


@pytest.mark.parametrize("chunk", range(2))
def test_fill_answers_what_demangle_once_answers(chunk: int) -> None:
    """``fill``'s C loop (one call per list) against the per-name ctypes binding: real
    names, and NULs, lone surrogates, non-ASCII, names on both sides of MAX_NAME."""
    names = (_names() + HOSTILE)[chunk::2]
    cache: dict[str, str | None] = {}
    _fill(cache, names, 1 << 20)
    assert cache == {n: dm.demangle_once(n) for n in names}
    assert any(v is not None for v in cache.values()) and None in cache.values()


def test_fill_keeps_what_it_has_and_stays_bounded() -> None:
    cache: dict[str, str | None] = {"_Z3fooi": "kept"}
    _fill(cache, ["_Z3fooi", "_Z3bari"], 10)
    assert cache == {"_Z3fooi": "kept", "_Z3bari": "bar(int)"}
    names = [f"_Z4n{i:03d}v" for i in range(25)]
    _fill(cache, names, 10)
    assert len(cache) <= 10 and cache[names[-1]] == "n024()"
