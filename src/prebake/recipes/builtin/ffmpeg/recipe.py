"""FFmpeg: its libraries built from source on every platform with the platform's own pinned
toolchain, through FFmpeg's own ``configure`` and ``make``.

Everything a configure script needs that is not FFmpeg's is prebake's (docs/architecture.md,
"configure and make"): the platform's tools by one word each on PATH (``{tools[cc]}``…:
FFmpeg compiles its whole configure line into libavutil, ``avutil_configuration()``, so a tool
named by a path would ship this machine's folders), nasm as a verified host tool, refusers
under the names FFmpeg falls back to (``gcc`` for its host compiler, ``nm``), the build log's
one-line verdict from ``ffbuild/config.log``, import libraries from a DLL's exports. What is
FFmpeg's own is here:

- the configuration (``CONFIGURATION``): FFmpeg's default component set, LGPL 2.1 or later
  (no ``--enable-gpl``/``--enable-nonfree``), without its programs and documentation, and
  ``--disable-autodetect``: FFmpeg otherwise links whatever the build machine has (a Debian 12
  build NEEDs liblzma, libz, libbz2 and libxcb, none of which a consumer is promised). Every
  decoder, encoder, (de)muxer, parser and filter FFmpeg ships itself is in: an SDK of media
  software expects FFmpeg's formats, and a trimmed set would be a different product. The
  numbers it was decided from (7.1.5, zig for linux-x86_64, a 2-core machine at load ~12):
  the default set is ~2 080 C and 142 nasm files, 26 minutes and an 8 MB asset; the set one
  consumer needs (WAV, FLAC, PCM, file, swresample, swscale) ~260 and 22, 3 minutes — an
  hour of a long leg for four platforms, paid once per release and skipped by input hash
  after. A workspace that wants fewer makes its own recipe with
  ``ffmpeg_recipe(components=…)`` (the suite's small build is one);
- the platform words FFmpeg's configure takes (``--target-os``, ``--arch``) per leg, and what
  each leg needs of its own (nasm on x86-64, ``--install-name-dir=@rpath`` on macOS, the wasm
  ABI flags, ``SLIB_INSTALL_EXTRA_SHLIB=`` so FFmpeg's own ``.lib`` does not land in bin/);
- the prefix comes to configure through the environment (``prefix=``: FFmpeg's configure reads
  its lowercase settings from there too), so the recorded configure line names no folder;
- ``--host-cc`` is the platform's own compiler: configure only checks that it compiles C11,
  and a cross build of this configuration builds no host program (FFmpeg's host programs are
  its tests' and the hard-coded tables'), so no compiler the platform does not pin is run;
- one patch (``0001-configure-sysctl-needs-its-header.patch``): zig's glibc 2.28 target
  links ``sysctl`` from 2.28's stubs but has the newest glibc's headers, without
  ``<sys/sysctl.h>``; the check then needs the header too;
- the version proof: each library's ``LIB<NAME>_VERSION_*`` in its installed headers is its
  own version (libavcodec 61.19.101 in 7.1.5), which its ``.pc``, file name and soname (or
  DLL name and version resource) must agree with; the release is the string
  ``FFmpeg version 7.1.5`` every library but libswscale holds;
- the license proof (``LICENSE``): every library holds ``"lib<name> license: <text>"``
  (``avutil_license()``) and the configure line (``avutil_configuration()``); the table is
  configure's own decision (``configure``, "if enabled nonfree … else LGPL version 2.1 or
  later": nonfree, then GPL 3 = gpl + version3, LGPL 3 = version3, GPL 2 = gpl, else LGPL
  2.1), each text with its SPDX expression. Every library's text must be the one its line
  selects; the asset ships all four COPYING files and LICENSE.md, which says which applies;
- the link snippet: a C consumer of the five libraries every configuration builds.

Per platform: wasm is static (``-pthread -msimd128``, no assembly — FFmpeg 7.1 has none for
wasm —, native wasm EH enabled for the target feature the host's contract requires but no EH
code: FFmpeg is C and never calls setjmp); the desktop legs are shared libraries (nasm on
x86-64, NEON on aarch64), Windows' DLLs in ``bin/`` with MinGW's ``.dll.a`` from FFmpeg's
link and MSVC's ``.lib`` written by prebake from each DLL's exports.
"""

from __future__ import annotations

from collections.abc import Sequence

from prebake.recipes import (
    Build,
    HostTool,
    Licensed,
    LicenseString,
    Outputs,
    Recipe,
    Snippet,
    UrlSource,
    VersionCheck,
    VersionString,
)

SOURCE = "https://ffmpeg.org/releases/ffmpeg-{version}.tar.xz"
PATCHES = ("0001-configure-sysctl-needs-its-header.patch",)
# FFmpeg's libraries in its own link order (each links only those after it).
LIBRARIES = ("avdevice", "avfilter", "avformat", "avcodec", "swresample", "swscale", "avutil")
# The libraries holding "FFmpeg version X" (av_*_ffversion[]): all but libswscale.
FFVERSION = ("avdevice", "avfilter", "avformat", "avcodec", "swresample", "avutil")
# No device in a browser: libavdevice's inputs are the OS's (v4l2, dshow, avfoundation).
NO_DEVICES = ("avdevice",)
# The configuration every leg shares (see the module's docstring).
CONFIGURATION = ("--disable-autodetect", "--disable-programs", "--disable-doc",
                 "--disable-debug")
# nasm: FFmpeg's x86 assembly (2.13 or newer); Debian 12 and Ubuntu 24.04 ship 2.16.01.
NASM = HostTool("nasm", "2.16", version_pattern=r"NASM version (\S+)",
                package="Debian's nasm (apt-get install nasm)")
# The licenses FFmpeg's configure can select, in the order it decides them (configure: "if
# enabled nonfree; then license=… elif enabled gplv3 … else LGPL version 2.1 or later", the
# same in 7.1 and 8.1), each with its SPDX expression. "nonfree and unredistributable" is no
# license SPDX lists (it says the combination may not be distributed at all), so it gets a
# LicenseRef-, the SPDX form for a license not on the list; a contract refuses it by
# ``allowed_licenses`` not naming it.
LICENSES = (
    Licensed("nonfree and unredistributable", "LicenseRef-FFmpeg-nonfree",
             when=("--enable-nonfree",)),
    Licensed("GPL version 3 or later", "GPL-3.0-or-later",
             when=("--enable-gpl", "--enable-version3")),
    Licensed("LGPL version 3 or later", "LGPL-3.0-or-later", when=("--enable-version3",)),
    Licensed("GPL version 2 or later", "GPL-2.0-or-later", when=("--enable-gpl",)),
    Licensed("LGPL version 2.1 or later", "LGPL-2.1-or-later"),
)
# "libavutil license: LGPL version 2.1 or later\0" (the marker FFmpeg's <lib>_license() skips),
# and the configure line, which starts with this recipe's first word (configure_line) and ends
# at its NUL: what comes before it is a NUL in ELF and PE but a data segment's size in a wasm
# object (version.o: "\x0b\xed\x03--enable-cross-compile …"); never a space (a line whose
# first word is another holds it later, and is not read as a part of itself)
LICENSE_TEXT = r"lib[a-z0-9_]+ license: ([^\x00]{1,256})\x00"
CONFIGURE_LINE = r"(?<! )(--enable-cross-compile(?: [^\x00]{0,65535})?)(?=\x00)"
# The licence texts FFmpeg ships: LICENSE.md says which applies to which configuration.
LICENSE_FILES = ("LICENSE.md", "COPYING.LGPLv2.1", "COPYING.LGPLv3", "COPYING.GPLv2",
                 "COPYING.GPLv3")
# The wasm ABI of the host (the platform's contract): threads and SIMD128; native wasm EH
# enabled for the exception-handling feature every object must declare, with no EH code.
WASM_FLAGS = "-pthread -msimd128 -fwasm-exceptions"


def configure_line(target_os: str, arch: str, *, shared: bool, x86asm: bool = False,
                   windres: bool = False, extra: Sequence[str] = (),
                   components: Sequence[str] = ()) -> str:
    """FFmpeg's ``configure`` for one leg: the platform's tools by their one word on PATH,
    the leg's own words, the shared configuration and ``components``."""
    tools = ["--cc={tools[cc]}", "--cxx={tools[cxx]}", "--host-cc={tools[cc]}",
             "--ar={tools[ar]}", "--ranlib={tools[ranlib]}", "--nm={tools[nm]}",
             "--pkg-config={tools[pkg_config]}"]
    if shared:  # FFmpeg strips its shared libraries at install (and nasm's objects)
        tools.append("--strip={tools[strip]}")
    if x86asm:
        tools.append("--x86asmexe={tools[nasm]}")
    if windres:
        tools.append("--windres={tools[windres]}")
    kind = ("--enable-shared", "--disable-static") if shared else (
        "--enable-static", "--disable-shared", "--disable-stripping")
    return " ".join(["{src}/configure", "--enable-cross-compile", f"--target-os={target_os}",
                     f"--arch={arch}", *tools, *kind, *CONFIGURATION, *components, *extra])


def leg(line: str, import_libs: dict[str, tuple[str, ...]] | None = None) -> Build:
    """Configure, make, install the libraries, headers and .pc files (not the examples; FFmpeg's
    own ``.lib`` not in bin/), the licence."""
    return Build(
        commands=(
            line,
            "make -j{jobs}",
            "make install-libs install-headers SLIB_INSTALL_EXTRA_SHLIB=",
            "mkdir -p {prefix}/share/licenses/ffmpeg",
            " ".join(["cp", *(f"{{src}}/{f}" for f in LICENSE_FILES),
                      "{prefix}/share/licenses/ffmpeg/"]),
        ),
        # FFmpeg's configure takes its prefix from the environment as from --prefix: the
        # configure line it compiles into libavutil then names no folder of this machine
        env={"prefix": "{prefix}"},
        env_unset=("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS"),
        config_log="{build}/ffbuild/config.log",
        import_libs=import_libs or {},
    )


def platforms(components: Sequence[str], libraries: Sequence[str]) -> dict[str, Build]:
    comp = tuple(components)
    no_devices = tuple(f"--disable-{lib}" for lib in NO_DEVICES if lib in libraries)
    macos = ("--install-name-dir=@rpath",)  # @rpath/libavcodec.61.dylib, not the prefix
    return {
        "wasm": leg(configure_line("none", "wasm32", shared=False, components=comp, extra=(
            "--disable-asm", f"--extra-cflags='{WASM_FLAGS}'", "--extra-ldflags=-pthread",
            *no_devices))),
        "linux-x86_64": leg(configure_line("linux", "x86_64", shared=True, x86asm=True,
                                           components=comp)),
        "linux-aarch64": leg(configure_line("linux", "aarch64", shared=True, components=comp)),
        # MinGW's .dll.a from FFmpeg's link; MSVC's .lib from each DLL's exports
        "windows-x86_64": leg(
            configure_line("mingw32", "x86_64", shared=True, x86asm=True, windres=True,
                           components=comp),
            import_libs={f"bin/{lib}-*.dll": (f"lib/{lib}.lib",) for lib in libraries}),
        # macOS runners only (not runnable here)
        "macos-arm64": leg(configure_line("darwin", "aarch64", shared=True, components=comp,
                                          extra=macos)),
        "macos-x86_64": leg(configure_line("darwin", "x86_64", shared=True, x86asm=True,
                                           components=comp, extra=macos)),
    }


def outputs(libraries: Sequence[str]) -> Outputs:
    everywhere = [lib for lib in libraries if lib not in NO_DEVICES]
    return Outputs(
        libs={
            "wasm": tuple(f"lib/lib{lib}.a" for lib in everywhere),
            "linux-x86_64": tuple(f"lib/lib{lib}.so" for lib in libraries),
            "linux-aarch64": tuple(f"lib/lib{lib}.so" for lib in libraries),
            "macos-arm64": tuple(f"lib/lib{lib}.dylib" for lib in libraries),
            "macos-x86_64": tuple(f"lib/lib{lib}.dylib" for lib in libraries),
            "windows-x86_64": tuple(f for lib in libraries for f in (
                f"bin/{lib}-*.dll", f"lib/lib{lib}.dll.a", f"lib/{lib}.lib")),
        },
        headers=tuple(f"include/lib{lib}/version.h" for lib in everywhere),
        license="LICENSE.md",
    )


def license_check(libraries: Sequence[str]) -> LicenseString:
    """Every library's license string and configure line (libavutil's first: it is
    ``avutil_license()``'s, and the one a refusal names)."""
    return LicenseString(LICENSE_TEXT, CONFIGURE_LINE, LICENSES,
                         tuple(sorted(libraries, key=lambda lib: lib != "avutil")))


def version_checks(libraries: Sequence[str]) -> tuple[VersionCheck | VersionString, ...]:
    """The release in every library's bytes; each library's own version in its headers
    (libavutil keeps all of it in version.h, the others their major in version_major.h)."""
    out: list[VersionCheck | VersionString] = [VersionString(
        r"FFmpeg version ([0-9][0-9.]*)", tuple(lib for lib in libraries if lib in FFVERSION))]
    for lib in libraries:
        headers = tuple(f"include/lib{lib}/{h}" for h in (
            ("version.h",) if lib == "avutil" else ("version_major.h", "version.h")))
        macro = f"LIB{lib.upper()}_VERSION"
        out.append(VersionCheck(headers, (f"{macro}_MAJOR", f"{macro}_MINOR",
                                          f"{macro}_MICRO"), library=lib))
    return tuple(out)


SNIPPET = Snippet(
    code=("#include <libavformat/avformat.h>\n"
          "#include <libavcodec/avcodec.h>\n"
          "#include <libswresample/swresample.h>\n"
          "#include <libswscale/swscale.h>\n"
          "#include <libavutil/avutil.h>\n"
          "int main(void) {\n"
          "  return !(avformat_version() && avcodec_version() && swresample_version()\n"
          "           && swscale_version() && avutil_version() == LIBAVUTIL_VERSION_INT);\n"
          "}\n"),
    lang="c",
    symbols=("avformat_version", "avcodec_version", "swresample_version", "swscale_version",
             "avutil_version"),
)


def ffmpeg_recipe(components: Sequence[str] = (), libraries: Sequence[str] = LIBRARIES,
                  only: Sequence[str] | None = None) -> Recipe:
    """The recipe for a configuration: ``components`` are configure's component switches
    (``--disable-everything --enable-decoder=flac…``) after the shared ones, ``libraries``
    the libraries it builds, in FFmpeg's link order (``--disable-avfilter`` drops one);
    ``only`` keeps those platforms (a workspace's own recipe names only its own)."""
    legs = platforms(components, libraries)
    out = outputs(libraries)
    keep = set(legs if only is None else only)
    return Recipe(
        name="ffmpeg",
        pin="ffmpeg",
        # no license here: the configuration decides it, and the manifest and the SBOM
        # carry the one the libraries proved (license_check)
        description="FFmpeg's libraries (libavformat, libavcodec, libswresample, libswscale, "
                    "libavutil, libavfilter, libavdevice)",
        sources=(UrlSource(SOURCE, patches=PATCHES),),
        files=PATCHES,
        host_tools=(NASM,),
        platforms={k: v for k, v in legs.items() if k in keep},
        outputs=Outputs(libs={k: v for k, v in out.libs.items() if k in keep},
                        headers=out.headers, license=out.license),
        kind={"wasm": "static", "*": "shared"} if "wasm" in keep else {"*": "shared"},
        version_check=version_checks(libraries),
        license_check=license_check(libraries),
        link_test=SNIPPET,
    )


RECIPE = ffmpeg_recipe()
