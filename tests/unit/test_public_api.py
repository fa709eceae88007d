"""Which removed exports are API: header identifiers (C names, C++ through demangling) and
the recipe's ``public_symbols`` globs; nothing known means everything counts."""

from __future__ import annotations

from pathlib import Path

from prebake.diff.public import PublicApi, header_identifiers
from prebake.inspect.demangle import demangle


def test_header_identifiers_skip_comments_and_strings(tmp_path: Path) -> None:
    h = tmp_path / "api.h"
    h.write_text('/* see ZSTD_customMalloc */\n// ZSTD_internal\nint ZSTD_compress(void);\n'
                 'const char* s = "ZSTD_inString";\n'
                 'namespace ns { struct Img { void shade(); }; }\n')
    names = header_identifiers([h])
    assert {"ZSTD_compress", "ns", "Img", "shade"} <= names
    assert not {"ZSTD_customMalloc", "ZSTD_internal", "ZSTD_inString"} & names


def test_c_and_cxx_names_against_the_headers() -> None:
    api = PublicApi(frozenset({"ZSTD_compress", "pixelbuf", "Image", "shade", "Vec3"}))
    assert api.is_public("ZSTD_compress", None)
    assert api.is_public("_ZSTD_compress", None)  # Mach-O's leading underscore
    assert not api.is_public("ZSTD_customMalloc", None)
    shade = "_ZN8pixelbuf5Image5shadeERKN7vecmath4Vec3E"
    assert api.is_public(shade, demangle(shade))
    hidden = "_ZN8pixelbuf6detail4blurEv"  # pixelbuf::detail::blur(): 'detail' not declared
    assert not api.is_public(hidden, demangle(hidden))
    vtable = "_ZTVN8pixelbuf5ImageE"
    assert api.is_public(vtable, demangle(vtable))


def test_globs_and_fail_closed() -> None:
    assert PublicApi(None).is_public("anything", None)  # nothing known: every export counts
    globs = PublicApi(None, ("ZSTD_*",))
    assert globs.is_public("ZSTD_customMalloc", None) and not globs.is_public("XXH64", None)
    cxx = PublicApi(frozenset(), ("pixelbuf::*",))
    name = "_ZN8pixelbuf6detail4blurEv"
    assert cxx.is_public(name, demangle(name))
