"""``.drectve`` rules on directive strings that MSVC writes but clang-cl here does not (BOM,
upper-case names, quoted values, STL mismatch pairs). The strings follow docs/binary-formats.md
§6.1 and Microsoft's linker documentation; the cases clang-cl can produce are tested on real
objects in ``test_inspect_pe.py``.
"""

from __future__ import annotations

import pytest

from prebake.inspect.coff import parse_directives, runtime_from_directives
from prebake.inspect.facts import Facts


def runtime(text: str) -> tuple[str | None, list[str]]:
    facts = Facts(path="x.obj")
    runtime_from_directives(facts, parse_directives(text))
    return facts.abi.msvc_runtime, facts.evidence.get("msvc_runtime", [])


@pytest.mark.parametrize(("text", "expected"), [
    (" /DEFAULTLIB:msvcrt.lib /DEFAULTLIB:oldnames.lib", "MD"),
    ("\ufeff /DEFAULTLIB:\"LIBCMT\" /DEFAULTLIB:\"OLDNAMES\"", "MT"),  # MSVC: BOM, quotes, caps
    ("/defaultlib:msvcrtd", "MDd"),
    ("-defaultlib:libcmtd.lib", "MTd"),  # GNU-style spelling
    (" /DEFAULTLIB:msvcprt.lib /DEFAULTLIB:msvcrt.lib", "MD"),  # C++ STL import lib agrees
    (" /DEFAULTLIB:advapi32.lib /EXPORT:f", None),  # /Zl: no CRT named
])
def test_defaultlib_runtime(text: str, expected: str | None) -> None:
    assert runtime(text)[0] == expected


def test_failifmismatch_is_preferred_and_quoted() -> None:
    text = (' /FAILIFMISMATCH:"_MSC_VER=1900" /FAILIFMISMATCH:"_ITERATOR_DEBUG_LEVEL=2"'
            ' /FAILIFMISMATCH:"RuntimeLibrary=MDd_DynamicDebug" /DEFAULTLIB:"msvcprtd"'
            ' /DEFAULTLIB:"MSVCRTD" /DEFAULTLIB:"OLDNAMES"')
    d = parse_directives(text)
    assert d.mismatch == {"_MSC_VER": "1900", "_ITERATOR_DEBUG_LEVEL": "2",
                          "RuntimeLibrary": "MDd_DynamicDebug"}
    assert runtime(text) == ("MDd", ['.drectve /FAILIFMISMATCH:"RuntimeLibrary=MDd_DynamicDebug"'])


def test_conflicting_defaultlibs_give_no_value_but_say_why() -> None:
    value, evidence = runtime(" /DEFAULTLIB:msvcrt.lib /DEFAULTLIB:libcmt.lib")
    assert value is None
    assert evidence and "conflicting" in evidence[0] and "libcmt.lib" in evidence[0]


def test_gnu_and_msvc_styles_are_told_apart() -> None:
    gnu = parse_directives(' -export:"wfunc" -export:"_Z5greetv"')
    assert gnu.gnu_style and not gnu.msvc_style
    assert gnu.exports == ["wfunc", "_Z5greetv"]
    msvc = parse_directives(" /EXPORT:wfunc")
    assert msvc.msvc_style and not msvc.gnu_style
