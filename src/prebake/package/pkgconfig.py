"""``lib/pkgconfig/<name>.pc`` for an asset, relocatable through pkg-config's ``${pcfiledir}``."""

from __future__ import annotations

from collections.abc import Sequence

from prebake.package.libs import Library, ordered


def _flag(lib: Library) -> str:
    fname = lib.path.rsplit("/", 1)[-1]
    if lib.path.startswith("lib/") and "/" not in lib.path[4:] and fname.startswith("lib") and (
        fname.endswith((".a", ".so", ".dylib")) or ".so." in fname
    ):
        return f"-l{lib.stem}" if fname.endswith((".a", ".so", ".dylib")) else f"-l:{fname}"
    return "${prefix}/" + (lib.implib or lib.path)


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
    return "\n".join([
        "prefix=${pcfiledir}/../..",
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
                    requires: Sequence[str] = (), os: str | None = None) -> dict[str, bytes]:
    text = pc_file(name, version, libs, link_order, requires=requires, os=os)
    return {f"lib/pkgconfig/{name}.pc": text.encode()}
