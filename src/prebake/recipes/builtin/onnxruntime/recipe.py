"""onnxruntime: built from source where the host's ABI demands it, repackaged where upstream fits.

- wasm: a *static* library with native wasm exceptions in the exnref encoding for a ``-sJSPI
  -fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0 -pthread -msimd128`` consumer; the public wasm
  prebuilts use Emscripten's JS exceptions and leave ``__resumeException`` undefined in such a
  link, and a legacy-encoded archive links into a module that engines without the legacy
  encoding refuse. Built by onnxruntime's own ``build.py`` with the
  platform's pinned Emscripten (a stand-in ``cmake/external/emsdk``, never a downloaded one),
  every third-party dependency from a verified archive (``onnxruntime/deps.toml``), and
  onnxruntime's ``-flto`` for Emscripten release builds cancelled by ``-fno-lto`` (the guards
  prove no member is bitcode).
- linux-aarch64, macos-arm64: one *shared* library that keeps its bundled protobuf/abseil
  inside (no symbol clash with the host's own copies), with XNNPACK (and CoreML on Apple).
- linux-x86_64, macos-x86_64, windows-x86_64: Microsoft's own build is already well tuned, so
  it is repackaged: upstream's release archive, or the same release's PyPI wheel where the
  workspace says that provides it ([sources.provided]); the headers come from the same
  release's source archive, Windows import libraries from the DLL's own exports.
"""

from pathlib import Path

from prebake.recipes import (
    Build,
    Component,
    HostTool,
    MinToolchain,
    OtherCompiler,
    Outputs,
    Recipe,
    Repackage,
    Since,
    Snippet,
    UrlSource,
    VersionCheck,
)
from prebake.recipes.builtin.onnxruntime.fetchcontent import load_table

RELEASES = "https://github.com/microsoft/onnxruntime/releases/download/v{version}"
SOURCE = "https://github.com/microsoft/onnxruntime/archive/refs/tags/v{version}.tar.gz"
# Not unpacked: the CUDA kernels, 206 of the 1.21.0 archive's 319 MB. Only the CUDA (and ROCm,
# kernel explorer) CMake files read them; the CPU and wasm builds glob them into variables
# nothing of theirs uses, and no other source includes them (tests/integration/test_flagship.py).
NOT_BUILT = ("onnxruntime/contrib_ops/cuda",)
HERE = Path(__file__).parent
DEPS = "deps.toml"
# Ends in --cmake_extra_defines: a leg's own defines follow it directly (a second
# --cmake_extra_defines would replace the list, not extend it), then its other flags.
BUILD_PY = "python3 {src}/tools/ci_build/build.py --config Release --build_dir {build}" \
    " --parallel {jobs} --skip_tests --skip_submodule_sync --compile_no_warning_as_error" \
    " --cmake_extra_defines onnxruntime_BUILD_UNIT_TESTS=OFF"
# build.py refuses root (containers, CI, these machines) without it; macOS runners are not root
AS_ROOT = " --allow_running_as_root"
NO_FLAGS = ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS")
SESSION_HEADERS = "{src}/include/onnxruntime/core/session"
SUPPLY_DEPS = ("{python}", "-m", "prebake.recipes.builtin.onnxruntime.fetchcontent",
               "{recipe_dir}/" + DEPS,
               "{version}", "{src}/cmake/deps.txt", "{work}/deps", "{work}/deps/supplied.cmake")


def dependency_sources() -> tuple[UrlSource, ...]:
    """One source per (release, dependency) of ``deps.toml``: fetched only for that release."""
    out = []
    for version, deps in load_table(HERE / "deps.toml").items():
        for dep in (d for d in deps if d.fetched):
            out.append(UrlSource(dep.url, dest=f"deps/{dep.name}", unpack=dep.take != "archive",
                                 versions=(version,),
                                 patches=tuple(dep.patches), members=dep.members))
    return tuple(out)


def bundled_components() -> tuple[Component, ...]:
    """The third-party code compiled into the library, per release: the ``component`` of
    each ``deps.toml`` entry (the version upstream's deps.txt pins, what Microsoft's own builds
    compile in), from that entry's URL. The shared builds must not export it (the platform
    contracts' forbid_exports). Where the workspace provides a dependency with another
    archive (Debian's date 3.0.3, Eigen 3.4.0, Boost 1.83 here), the SBOM names that archive
    instead of this version."""
    return tuple(Component(d.component[0], d.component[1], source=d.url, versions=(version,),
                           when=d.when)
                 for version, deps in load_table(HERE / "deps.toml").items()
                 for d in deps if d.component is not None)


# Native wasm exceptions in the exnref encoding (try_table/throw_ref), threads, SIMD128, a static
# library: the ABI of a host that links with -sJSPI -fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0.
# Releases whose build.py has --enable_wasm_jspi (1.24 on, onnxruntime PR #26095) map it to
# those flags themselves; earlier ones get them explicitly, with build.py's own exception choice
# (Emscripten's JS one, DISABLE_EXCEPTION_CATCHING=0) switched off (EH_BY_RELEASE below).
# onnxruntime appends -flto to every non-Debug Emscripten build
# (cmake/adjust_global_compile_flags.cmake); CMAKE_<LANG>_FLAGS_RELEASE comes after it on each
# compile line, so -fno-lto there wins. CMake's configure checks (try_compile) take
# CMAKE_<LANG>_FLAGS but no _RELEASE flags, so each check linked with LTO against Emscripten's
# bitcode system libraries; -fno-lto in CMAKE_EXE_LINKER_FLAGS comes after it on every link line
# (no executable is built beyond the checks): the same check results in half the configure time
# (docs/flagship.md). CMake 4 (the sid environment's) refuses projects that declare a minimum
# below 3.5 (nlohmann-json 3.11.3 says 3.1): CMAKE_POLICY_VERSION_MINIMUM lets them configure
# with 3.5's behaviour, and CMake 3.x ignores it.
EXNREF = "-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0"
EH_BY_RELEASE = {
    # directly after --cmake_extra_defines: the compile flags that choose the EH encoding
    "wasm_eh_defines": (
        Since("1.24"),
        Since("0", (f"CMAKE_C_FLAGS={EXNREF}", f"CMAKE_CXX_FLAGS={EXNREF}")),
    ),
    "wasm_eh": (
        Since("1.24", ("--enable_wasm_jspi",)),
        Since("0", ("--disable_wasm_exception_catching",)),
    ),
}
WASM = Build(
    commands=(
        SUPPLY_DEPS,
        "{python} -m prebake.recipes.builtin.onnxruntime.emsdk_standin {src}/cmake/external/emsdk",
        BUILD_PY + " CMAKE_PROJECT_INCLUDE_BEFORE={work}/deps/supplied.cmake"
        " {release[wasm_eh_defines]}"
        " 'CMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG -fno-lto'"
        " 'CMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG -fno-lto' CMAKE_EXE_LINKER_FLAGS=-fno-lto"
        " CMAKE_POLICY_VERSION_MINIMUM=3.5"
        + AS_ROOT + " --build_wasm_static_lib --enable_wasm_simd --enable_wasm_threads"
        " {release[wasm_eh]} --emsdk_version {pins[emsdk]}"
        # the environment's protoc: Debian's protobuf-compiler 3.21.12 = deps.txt's protobuf
        " --path_to_protoc_exe /usr/bin/protoc",
        "cmake -E make_directory {prefix}/lib {prefix}/include {prefix}/share/licenses/onnxruntime",
        # upstream's bundle adds libprotobuf-lite twice (bundle.py): made again, once each
        "{python} -m prebake.recipes.builtin.onnxruntime.bundle"
        " {build}/Release/onnxruntime_webassembly.ar {prefix}/lib/libonnxruntime.a emar",
        "cmake -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
        "cmake -E copy {src}/ThirdPartyNotices.txt {prefix}/share/licenses/onnxruntime/",
    ),
    env_unset=NO_FLAGS,
)

# onnxruntime 1.21's protobuf is 21.12: its protoc reports "libprotoc 3.21.12" (Debian's
# protobuf-compiler 3.21.12 in Debian 12 and 13). A cross build must run this host protoc; left
# to itself CMake builds protoc for the target and then runs it here.
PROTOC = HostTool("protoc", "3.21.12", version_pattern=r"libprotoc (\S+)",
                  package="Debian's protobuf-compiler 3.21.12 (apt-get install protobuf-compiler)")

# Cross-built with the platform's generated CMake toolchain file (system name and processor, the
# zig compilers with their glibc target, zig's ar/ranlib, find roots): MLAS picks its aarch64
# kernels (dotprod, i8mm, bf16, fp16; zig reads GCC's per-file -march through prebake's
# wrapper). 1.21 has neither NEON NCHWc (onnxruntime_USE_ARM_NEON_NCHWC came later) nor
# KleidiAI in MLAS; XNNPACK's KleidiAI is off (deps.toml: no archive). The manifest records
# what CMake configured (``record``). No --enable_lto: the cross archiver would drop it. onnxruntime
# 1.21 needs CMake >= 3.28 (Debian 12 has 3.25): the pinned host CMake configures, installs and
# copies. build.py refuses root (containers, CI) without --allow_running_as_root; a new
# compiler's warnings must not fail the build (--compile_no_warning_as_error).
CMAKE = HostTool("cmake", "3.31.6", version_pattern=r"cmake version (\S+)",
                 package="PyPI's cmake 3.31.6 (pip install cmake==3.31.6)")
LINUX_AARCH64 = Build(
    commands=(
        SUPPLY_DEPS,
        BUILD_PY + " CMAKE_PROJECT_INCLUDE_BEFORE={work}/deps/supplied.cmake"
        # upstream's libonnxruntime.pc is written at configure time with this prefix (else
        # /usr/local, which `--install --prefix` does not change and packaging refuses)
        " CMAKE_INSTALL_PREFIX={prefix}"
        # zig's compiles carry debug info (the first run's library: 458 MB, 11 MB of it code);
        # the shipped library is linked without it
        " CMAKE_SHARED_LINKER_FLAGS=-Wl,--strip-debug"
        " CMAKE_TOOLCHAIN_FILE={cmake_toolchain}"
        " ONNX_CUSTOM_PROTOC_EXECUTABLE={host_tools[protoc]}"
        + AS_ROOT + " --build_shared_lib --use_xnnpack --path_to_protoc_exe {host_tools[protoc]}"
        " --cmake_path {host_tools[cmake]} --cmake_generator Ninja",
        "{host_tools[cmake]} --install {build}/Release --prefix {prefix}",
        # the loader of shared-library EPs (CUDA, TensorRT…): none is built, and the stub has
        # no mark of its OS for the contract to read
        "{host_tools[cmake]} -E rm {prefix}/lib/libonnxruntime_providers_shared.so",
        "{host_tools[cmake]} -E make_directory {prefix}/include"
        " {prefix}/share/licenses/onnxruntime",
        "{host_tools[cmake]} -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
        "{host_tools[cmake]} -E copy {src}/ThirdPartyNotices.txt"
        " {prefix}/share/licenses/onnxruntime/",
    ),
    env_unset=NO_FLAGS,
    cmake_cache="{build}/Release/CMakeCache.txt",
    record=("onnxruntime_BUILD_SHARED_LIB", "onnxruntime_USE_XNNPACK", "onnxruntime_ENABLE_CPUINFO",
            "HAS_ARM64_BFLOAT16", "HAS_ARM64_FLOAT16", "XNNPACK_ENABLE_ASSEMBLY",
            "XNNPACK_ENABLE_ARM_DOTPROD", "XNNPACK_ENABLE_ARM_I8MM", "XNNPACK_ENABLE_ARM_BF16",
            "XNNPACK_ENABLE_ARM_FP16_VECTOR", "XNNPACK_ENABLE_KLEIDIAI"),
)

# Built on the macOS runner with AppleClang (Xcode's SDK holds CoreML and the Apple frameworks):
# CMake picks Xcode's clang itself and prebake verifies that it is the pinned AppleClang; any
# other compiler family (zig) refuses the leg. The deployment target is the contract's
# macos_min. No --allow_running_as_root: macOS runners do not build as root.
MACOS_ARM64 = Build(
    commands=(
        BUILD_PY + " CMAKE_OSX_DEPLOYMENT_TARGET={macos_min} CMAKE_INSTALL_PREFIX={prefix}"
        " --build_shared_lib --use_coreml --use_xnnpack"
        " --osx_arch arm64 --apple_deploy_target {macos_min}",
        "cmake --install {build}/Release --prefix {prefix}",
        "cmake -E make_directory {prefix}/include",
        "cmake -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
    ),
    env_unset=(*NO_FLAGS, "MACOSX_DEPLOYMENT_TARGET"),
    toolchain_family="appleclang",
    toolchain_reason="CoreML and the Apple frameworks come with Xcode's macOS SDK",
)

# Upstream's release archive (include/ and lib/ under one folder) or the same release's PyPI
# wheel (the library under onnxruntime/capi/, no headers): patterns with one destination are
# alternatives, and a destination that neither the archive nor the source fills fails the unit.
# Headers and licences also come from the release's own source archive.
LAYOUT = {"*/lib/*": "lib", "*/include/*": "include", "*/LICENSE": "share/licenses/onnxruntime",
          "onnxruntime/capi/libonnxruntime.so.*": "lib",
          "onnxruntime/capi/libonnxruntime.*.dylib": "lib"}
# Windows: the DLL in bin/ (prebake.package.windows), from the archive's lib/ or the wheel;
# upstream's onnxruntime_providers_shared.dll (the loader of GPU providers, none built) and
# its .lib stay out, the import libraries are written from the DLL's exports.
WINDOWS_LAYOUT = {"*/lib/onnxruntime.dll": "bin", "onnxruntime/capi/onnxruntime.dll": "bin",
                  "*/include/*": "include", "*/LICENSE": "share/licenses/onnxruntime"}
FROM_SOURCE = {"src/include/onnxruntime/core/session/*.h": "include",
               "src/LICENSE": "share/licenses/onnxruntime",
               "src/ThirdPartyNotices.txt": "share/licenses/onnxruntime"}


def repackage(asset: str, *, layout: dict[str, str] | None = None,
              links: dict[str, str] | None = None,
              import_libs: dict[str, tuple[str, ...]] | None = None) -> Repackage:
    """Upstream's release archive ``asset``; its sha256 (or that of the archive the workspace
    says provides it) comes from ``prebake.sources.lock``."""
    return Repackage(url=f"{RELEASES}/{asset}", layout=layout or LAYOUT,
                     source_layout=FROM_SOURCE, links=links or {},
                     import_libs=import_libs or {})


RECIPE = Recipe(
    name="onnxruntime",
    pin="onnxruntime",
    description="ONNX Runtime inference library (C/C++ API)",
    sources=(UrlSource(SOURCE, skip=NOT_BUILT), *dependency_sources()),
    files=(DEPS,),
    host_tools=(PROTOC, CMAKE),
    releases=EH_BY_RELEASE,
    platforms={
        "wasm": WASM,
        "linux-aarch64": LINUX_AARCH64,
        "macos-arm64": MACOS_ARM64,
        # the soname chain upstream's archive has (a wheel holds only the versioned file)
        "linux-x86_64": repackage("onnxruntime-linux-x64-{version}.tgz", links={
            "lib/libonnxruntime.so.1": "libonnxruntime.so.{version}",
            "lib/libonnxruntime.so": "libonnxruntime.so.1"}),
        # Upstream ships macOS x86_64 inside the universal2 archive (kept universal2).
        "macos-x86_64": repackage("onnxruntime-osx-universal2-{version}.tgz", links={
            "lib/libonnxruntime.dylib": "libonnxruntime.{version}.dylib"}),
        # the DLL in bin/; MSVC and MinGW import libraries in lib/, generated from the DLL's
        # own export table
        "windows-x86_64": repackage(
            "onnxruntime-win-x64-{version}.zip", layout=WINDOWS_LAYOUT, import_libs={
                "bin/onnxruntime.dll": ("lib/onnxruntime.lib", "lib/libonnxruntime.dll.a")}),
    },
    outputs=Outputs(
        libs={
            "wasm": ("lib/libonnxruntime.a",),
            "linux-x86_64": ("lib/libonnxruntime.so",),
            "linux-aarch64": ("lib/libonnxruntime.so",),
            "macos-arm64": ("lib/libonnxruntime.dylib",),
            "macos-x86_64": ("lib/libonnxruntime.dylib",),
            "windows-x86_64": ("bin/onnxruntime.dll", "lib/onnxruntime.lib",
                               "lib/libonnxruntime.dll.a"),
        },
        headers=("include/onnxruntime_c_api.h", "include/onnxruntime_cxx_api.h"),
        license="LICENSE",
    ),
    kind={"wasm": "static", "*": "shared"},
    # The exnref encoding is what -sWASM_LEGACY_EXCEPTIONS=0 makes clang emit from Emscripten
    # 4.0 on; 3.1.x (Debian 13's 3.1.69) emits only the legacy one, and its consumers link with
    # -sJSPI (3.1.61 on). An older emcc is refused before the build, not after an hour of it.
    toolchain_min=(MinToolchain("emscripten", "4.0",
                                "exnref exceptions (-sWASM_LEGACY_EXCEPTIONS=0) for a -sJSPI "
                                "consumer"),),
    # ORT_API_VERSION is the release's minor number (21 for 1.21.x): a header of another
    # release over this library is refused.
    version_check=VersionCheck("include/onnxruntime_c_api.h", ("ORT_API_VERSION",),
                               component=1),
    # A C consumer: the C API is the ABI every binding (and the host's addons) link against.
    link_test=Snippet(
        # A Windows consumer includes <windows.h> first: 1.21's header uses SAL's
        # _Return_type_success_ without defining it for non-MSVC compilers, so MinGW needs
        # the definitions MinGW's sal.h (through windows.h) brings (upstream issue #9332).
        code=("#ifdef _WIN32\n#include <windows.h>\n#endif\n"
              "#include <onnxruntime_c_api.h>\n"
              "int main(void) {\n"
              "  const OrtApiBase* base = OrtGetApiBase();\n"
              "  return base == 0 || base->GetVersionString == 0;\n"
              "}\n"),
        lang="c",
        symbols=("OrtGetApiBase",),
    ),
    bundled=bundled_components(),
    # The repackaged legs ship Microsoft's own builds, not the platform's toolchain's: the
    # contract's producer rule holds each to what it is instead (the build says so, and the
    # manifest's guards.producer records it).
    other_compilers=(
        OtherCompiler(("lib/libonnxruntime.so*",), ("gcc *",),
                      "Microsoft's own manylinux build (Red Hat's gcc-toolset), repackaged",
                      platforms=("linux-x86_64",)),
        OtherCompiler(("lib/libonnxruntime*.dylib",), ("none", "clang *", "swift *"),
                      "Microsoft's own universal2 build (Xcode; its LC_BUILD_VERSION names "
                      "only ld), repackaged", platforms=("macos-x86_64",)),
        OtherCompiler(("bin/onnxruntime.dll",), ("msvc *",),
                      "Microsoft's own MSVC build, repackaged", platforms=("windows-x86_64",)),
    ),
)
