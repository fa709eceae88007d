"""``lib/pkgconfig/<name>.pc`` for an asset, relocatable through pkg-config's ``${pcfiledir}``."""

from __future__ import annotations

from collections.abc import Sequence

from prebake.package import windows
from prebake.package.libs import Library, ordered


def _flag(lib: Library) -> str:
    if lib.implibs:  # a DLL: linked through its import library, -lavcodec finding
        # lib/libavcodec.dll.a (GNU ld's search order) or lib/avcodec.lib (pkgconf --msvc-syntax)
        mingw, msvc = lib.mingw_implib, lib.msvc_implib
        if (mingw is None or mingw == f"lib/lib{lib.stem}.dll.a") and (
                msvc is None or msvc == f"lib/{lib.stem}.lib"):
            return f"-l{lib.stem}"
        return "${prefix}/" + lib.link_path
    fname = lib.path.rsplit("/", 1)[-1]
    if lib.path.startswith("lib/") and "/" not in lib.path[4:] and fname.startswith("lib") and (
        fname.endswith((".a", ".so", ".dylib")) or ".so." in fname
    ):
        return f"-l{lib.stem}" if fname.endswith((".a", ".so", ".dylib")) else f"-l:{fname}"
    return "${prefix}/" + lib.path


GROUPING_OSES = ("linux", "windows")  # GNU ld (and mingw's): one pass over archives


def pc_file(name: str, version: str, libs: Sequence[Library],
            link_order: Sequence[Sequence[str]] = (), *, description: str = "",
            extra_libs: Sequence[str] = (), requires: Sequence[str] = (),
            os: str | None = None) -> str:
    """The ``.pc`` text; libraries in link order.

    A cyclic group becomes ``-Wl,--start-group … -Wl,--end-group`` for GNU ld: listing it twice
    does not work because pkg-config drops repeated flags. ld64 and lld (macOS, wasm) resolve
    backward references within the archives they were given, so the group is plain there.
    """
    flags: list[str] = []
    for group in ordered(libs, link_order):
        g = [_flag(lib) for lib in group]
        if len(group) > 1 and os in GROUPING_OSES:
            g = ["-Wl,--start-group", *g, "-Wl,--end-group"]
        flags += g
    dlls = any(lib.path.startswith(f"{windows.BIN}/") for lib in libs)
    return "\n".join([
        "prefix=${pcfiledir}/../..",
        # where a Windows program finds the DLLs at run time (PATH, or copied next to it)
        *([f"bindir=${{prefix}}/{windows.BIN}"] if dlls else []),
        "libdir=${prefix}/lib",
        "includedir=${prefix}/include",
        "",
        f"Name: {name}",
        f"Description: {description or name + ' (packaged by prebake)'}",
        f"Version: {version}",
        *([f"Requires: {', '.join(requires)}"] if requires else []),
        f"Libs: -L${{libdir}} {' '.join(flags)}".rstrip(),
        *([f"Libs.private: {' '.join(extra_libs)}"] if extra_libs else []),
        "Cflags: -I${includedir}",
        "",
    ])


def generated_files(name: str, version: str, libs: Sequence[Library],
                    link_order: Sequence[Sequence[str]] = (), *,
                    requires: Sequence[str] = (), os: str | None = None,
                    extra_libs: Sequence[str] = ()) -> dict[str, bytes]:
    text = pc_file(name, version, libs, link_order, requires=requires, os=os,
                   extra_libs=extra_libs)
    return {f"lib/pkgconfig/{name}.pc": text.encode()}
