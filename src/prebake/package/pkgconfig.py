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


def pc_file(name: str, version: str, libs: Sequence[Library],
            link_order: Sequence[Sequence[str]] = (), *, description: str = "",
            extra_libs: Sequence[str] = (), requires: Sequence[str] = ()) -> str:
    """The ``.pc`` text; libraries in link order, a cyclic group listed twice."""
    flags: list[str] = []
    for group in ordered(libs, link_order):
        g = [_flag(lib) for lib in group]
        flags += g + (g if len(group) > 1 else [])
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
                    requires: Sequence[str] = ()) -> dict[str, bytes]:
    text = pc_file(name, version, libs, link_order, requires=requires)
    return {f"lib/pkgconfig/{name}.pc": text.encode()}
