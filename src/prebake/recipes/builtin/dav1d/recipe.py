"""dav1d: VideoLAN's AV1 decoder, built from Debian's copy of the release tarball on every
platform with the platform's own pinned toolchain, through dav1d's own Meson build.

Everything Meson needs that is not dav1d's is prebake's (docs/architecture.md, the Meson
family): ``{meson_cross}`` is the platform's machine file (its pinned compilers, ar, strip,
windres, the ABI flags, ``--wrap-mode=nodownload``: dav1d's one wrap, checkasm, belongs to
its tests, which are off), meson and ninja are prebake's pinned host tools. What is dav1d's
own is here:

- the source: ``debian:pool/main/d/dav1d/dav1d_{version}.orig.tar.xz``, Debian's copy of the
  signed release tarball (dav1d 1.5.4's: 1 038 852 bytes), so ``prebake pin dav1d 1.5.4`` locks
  it from the machine's Debian mirror and no ``[sources.provided]`` line is needed;
- the configuration (``OPTIONS``): the library only (``-Denable_tools=false
  -Denable_tests=false``), Meson's release build type, ``--libdir=lib`` (Meson's default on a
  Debian build machine is ``lib/x86_64-linux-gnu``); every bit depth dav1d has (8 and 16);
- per leg: wasm is a static library without assembly (``-Denable_asm=false``: dav1d has none
  for wasm; the platform's ABI flags come from its machine file, ``-pthread -msimd128`` for
  the flagship's wasm; C only, so ``abi.wasm_eh_encoding`` is ``none``); the desktop legs are
  shared libraries, nasm (a verified host tool, found by Meson on PATH, ``NASM`` for a native
  build) assembling the x86-64 kernels, dav1d's own NEON on aarch64; Windows' DLL in
  ``bin/`` (``libdav1d.dll``: dav1d gives a DLL no soversion) with MinGW's ``.dll.a`` from
  the link and MSVC's ``.lib`` written by prebake from the DLL's exports; macOS (built by the
  generated workflow's macOS runners only) names itself ``@rpath/libdav1d.7.dylib`` (Meson's
  install name);
- the version proof: ``include/dav1d/version.h`` spells the ABI (``DAV1D_API_VERSION_*``,
  7.0.0 in 1.5.x), which the library's file name (``libdav1d.so.7.0.0``), soname
  (``libdav1d.so.7``), DLL version resource (FileVersion) and Mach-O current version state;
  the release (the pin) is stated by ``dav1d.pc`` (``Version: 1.5.4``) and the DLL's
  ProductVersion (``VersionCheck(abi=True)``);
- the license: ``COPYING``, shipped as ``share/licenses/dav1d/COPYING`` and proven to be the
  BSD-2-Clause text (``LicenseText``: a clause added or changed is refused);
- the link snippet: a C consumer calling ``dav1d_version()`` and checking the ABI it reports.
"""

from __future__ import annotations

from prebake.recipes import (
    Build,
    HostTool,
    LicenseText,
    Outputs,
    Recipe,
    Snippet,
    UrlSource,
    VersionCheck,
)

SOURCE = "debian:pool/main/d/dav1d/dav1d_{version}.orig.tar.xz"
# nasm: dav1d's x86 assembly (it requires 2.14 or newer); Debian 12 and Ubuntu 24.04 ship 2.16.01
NASM = HostTool("nasm", "2.16", version_pattern=r"NASM version (\S+)",
                package="Debian's nasm (apt-get install nasm)")
# the library only, every bit depth, Meson's release build
OPTIONS = ("--prefix={prefix}", "--libdir=lib", "--buildtype=release",
           "-Denable_tools=false", "-Denable_tests=false", "-Denable_examples=false")


def leg(kind: str, extra: tuple[str, ...] = (), *, nasm: bool = False,
        import_libs: dict[str, tuple[str, ...]] | None = None) -> Build:
    """Meson setup with the platform's machine file, ninja, meson install."""
    return Build(
        commands=(
            " ".join(["{host_tools[meson]} setup {build} {src} {meson_cross}", *OPTIONS,
                      f"--default-library={kind}", *extra]),
            "{host_tools[ninja]} -C {build} -j {jobs}",
            "{host_tools[meson]} install -C {build}",
        ),
        # a native build's Meson takes nasm from NASM; a cross one finds it on PATH
        env={"NASM": "{host_tools[nasm]}"} if nasm else {},
        env_unset=("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS"),
        import_libs=import_libs or {},
    )


PLATFORMS = {
    "wasm": leg("static", ("-Denable_asm=false",)),
    "linux-x86_64": leg("shared", nasm=True),
    "linux-aarch64": leg("shared"),
    # MinGW's .dll.a from dav1d's link; MSVC's .lib from the DLL's exports
    "windows-x86_64": leg("shared", nasm=True,
                          import_libs={"bin/libdav1d.dll": ("lib/dav1d.lib",)}),
    # macOS runners only (not runnable here)
    "macos-arm64": leg("shared"),
    "macos-x86_64": leg("shared", nasm=True),
}

SNIPPET = Snippet(
    code=("#include <dav1d/dav1d.h>\n"
          "int main(void) {\n"
          "  return !(dav1d_version()[0] && DAV1D_API_MAJOR(dav1d_version_api())\n"
          "           == DAV1D_API_VERSION_MAJOR);\n"
          "}\n"),
    lang="c",
    symbols=("dav1d_version", "dav1d_version_api", "dav1d_open", "dav1d_send_data",
             "dav1d_get_picture", "dav1d_close"),
)

RECIPE = Recipe(
    name="dav1d",
    pin="dav1d",
    description="dav1d, VideoLAN's AV1 decoder library (libdav1d)",
    sources=(UrlSource(SOURCE),),
    host_tools=(NASM,),
    platforms=PLATFORMS,
    outputs=Outputs(
        libs={
            "wasm": ("lib/libdav1d.a",),
            "linux-x86_64": ("lib/libdav1d.so",),
            "linux-aarch64": ("lib/libdav1d.so",),
            "macos-arm64": ("lib/libdav1d.dylib",),
            "macos-x86_64": ("lib/libdav1d.dylib",),
            "windows-x86_64": ("bin/libdav1d.dll", "lib/libdav1d.dll.a", "lib/dav1d.lib"),
        },
        headers=tuple(f"include/dav1d/{h}.h" for h in (
            "dav1d", "common", "data", "headers", "picture", "version")),
        license="COPYING",
        public_symbols=("dav1d_*",),
    ),
    kind={"wasm": "static", "*": "shared"},
    version_check=VersionCheck("include/dav1d/version.h", (
        "DAV1D_API_VERSION_MAJOR", "DAV1D_API_VERSION_MINOR", "DAV1D_API_VERSION_PATCH"),
        library="dav1d", abi=True),
    license_check=LicenseText("BSD-2-Clause"),
    link_test=SNIPPET,
)
