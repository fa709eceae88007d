"""onnxruntime: built from source where the host's ABI demands it, repackaged where upstream fits.

- wasm: a *static* library with native wasm exceptions (``--enable_wasm_jspi`` selects
  ``-fwasm-exceptions``); the public wasm prebuilts use Emscripten's legacy EH and leave
  ``__resumeException`` undefined in a ``-fwasm-exceptions`` link. Exported CFLAGS & co are
  removed: they leak ``-flto`` or ``-mrelaxed-simd`` into the archive.
- linux-aarch64, macos-arm64: one *shared* library that keeps its bundled protobuf/abseil
  inside (no symbol clash with the host's own copies), with XNNPACK (and CoreML on Apple).
- linux-x86_64, macos-x86_64, windows-x86_64: the upstream release archive is already
  well tuned, so it is repackaged. Its digest per version lives in the workspace's
  ``prebake.sources.lock``: ``prebake pin onnxruntime 1.27.0`` downloads each archive once and
  records it (and compares with the digest GitHub's API publishes).
"""

from prebake.recipes import (
    Build,
    Component,
    GitSource,
    HostTool,
    MinToolchain,
    Outputs,
    Recipe,
    Repackage,
    Snippet,
)

RELEASES = "https://github.com/microsoft/onnxruntime/releases/download/v{version}"
BUILD_PY = "python3 {src}/tools/ci_build/build.py --config Release --build_dir {build}" \
    " --parallel {jobs} --skip_tests --skip_submodule_sync" \
    " --cmake_extra_defines onnxruntime_BUILD_UNIT_TESTS=OFF"
NO_FLAGS = ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS")
SESSION_HEADERS = "{src}/include/onnxruntime/core/session"

# onnxruntime's build.py installs and activates ``--emsdk_version`` inside cmake/external/emsdk
# (its own submodule); pointing that checkout at the SDK's pinned emsdk tag first makes the
# emsdk that knows the pinned version the one that installs it, and submodule sync is skipped
# so build.py does not move it back.
EMSDK_DIR = "{src}/cmake/external/emsdk"
WASM = Build(
    commands=(
        "git -C " + EMSDK_DIR + " fetch --depth 1 https://github.com/emscripten-core/emsdk"
        " refs/tags/{pins[emsdk]}",
        "git -C " + EMSDK_DIR + " checkout --detach FETCH_HEAD",
        "bash {src}/build.sh --config Release --build_dir {build} --parallel {jobs}"
        " --build_wasm_static_lib --enable_wasm_simd --enable_wasm_threads --enable_wasm_jspi"
        " --skip_tests --skip_submodule_sync --emsdk_version {pins[emsdk]}"
        " --cmake_extra_defines onnxruntime_BUILD_UNIT_TESTS=OFF",
        "cmake -E make_directory {prefix}/lib {prefix}/include",
        "cmake -E copy {build}/Release/libonnxruntime_webassembly.a {prefix}/lib/libonnxruntime.a",
        "cmake -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
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
# kernels, KleidiAI and NEON NCHWc are on. No --enable_lto: the cross archiver would drop it.
# build.py refuses root (containers, CI) without --allow_running_as_root; a new compiler's
# warnings must not fail the build (--compile_no_warning_as_error).
LINUX_AARCH64 = Build(
    commands=(
        BUILD_PY + " onnxruntime_USE_ARM_NEON_NCHWC=ON CMAKE_TOOLCHAIN_FILE={cmake_toolchain}"
        " ONNX_CUSTOM_PROTOC_EXECUTABLE={host_tools[protoc]}"
        " --allow_running_as_root --compile_no_warning_as_error"
        " --build_shared_lib --use_xnnpack --path_to_protoc_exe {host_tools[protoc]}",
        "cmake --install {build}/Release --prefix {prefix}",
        "cmake -E make_directory {prefix}/include",
        "cmake -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
    ),
    env_unset=NO_FLAGS,
)

# Built on the macOS runner with AppleClang (Xcode's SDK holds CoreML and the Apple frameworks):
# CMake picks Xcode's clang itself and prebake verifies that it is the pinned AppleClang; any
# other compiler family (zig) refuses the leg. The deployment target is the contract's
# macos_min. No --allow_running_as_root: macOS runners do not build as root.
MACOS_ARM64 = Build(
    commands=(
        BUILD_PY + " CMAKE_OSX_DEPLOYMENT_TARGET={macos_min}"
        " --compile_no_warning_as_error --build_shared_lib --use_coreml --use_xnnpack"
        " --osx_arch arm64 --apple_deploy_target {macos_min}",
        "cmake --install {build}/Release --prefix {prefix}",
        "cmake -E make_directory {prefix}/include",
        "cmake -E copy_directory " + SESSION_HEADERS + " {prefix}/include",
    ),
    env_unset=(*NO_FLAGS, "MACOSX_DEPLOYMENT_TARGET"),
    toolchain_family="appleclang",
    toolchain_reason="CoreML and the Apple frameworks come with Xcode's macOS SDK",
)

LAYOUT = {"*/include/*": "include", "*/lib/*": "lib", "*/LICENSE": "share/licenses/onnxruntime"}


def repackage(asset: str, mirrors: tuple[str, ...] = ()) -> Repackage:
    """The upstream release archive ``asset``; ``mirrors`` are base URLs tried in order. Its
    sha256 comes from ``prebake.sources.lock`` (the URL follows the pin, a digest here could
    not)."""
    return Repackage(url=f"{RELEASES}/{asset}", layout=LAYOUT,
                     mirrors=tuple(f"{m.rstrip('/')}/{asset}" for m in mirrors))


RECIPE = Recipe(
    name="onnxruntime",
    pin="onnxruntime",
    description="ONNX Runtime inference library (C/C++ API)",
    sources=(GitSource("https://github.com/microsoft/onnxruntime", ref="v{version}",
                       submodules=True, shallow=True),),
    host_tools=(PROTOC,),
    platforms={
        "wasm": WASM,
        "linux-aarch64": LINUX_AARCH64,
        "macos-arm64": MACOS_ARM64,
        "linux-x86_64": repackage("onnxruntime-linux-x64-{version}.tgz"),
        # Upstream ships macOS x86_64 inside the universal2 archive.
        "macos-x86_64": repackage("onnxruntime-osx-universal2-{version}.tgz"),
        "windows-x86_64": repackage("onnxruntime-win-x64-{version}.zip"),
    },
    outputs=Outputs(
        libs={
            "wasm": ("lib/libonnxruntime.a",),
            "linux-x86_64": ("lib/libonnxruntime.so",),
            "linux-aarch64": ("lib/libonnxruntime.so",),
            "macos-arm64": ("lib/libonnxruntime.dylib",),
            "macos-x86_64": ("lib/libonnxruntime.dylib",),
            "windows-x86_64": ("lib/onnxruntime.dll", "lib/onnxruntime.lib"),
        },
        headers=("include/onnxruntime_c_api.h", "include/onnxruntime_cxx_api.h"),
        license="LICENSE",
    ),
    kind={"wasm": "static", "*": "shared"},
    # --enable_wasm_jspi links with -sJSPI: Emscripten 3.1.59 added the setting and 3.1.61
    # moved it to the browsers' current JSPI API (Emscripten's ChangeLog). An older emcc
    # (Debian 12's 3.1.6) is refused before the checkout, not after an hour of build.
    toolchain_min=(MinToolchain("emscripten", "3.1.61",
                                "--enable_wasm_jspi links with -sJSPI"),),
    # A C consumer: the C API is the ABI every binding (and the host's addons) link against.
    link_test=Snippet(
        code=("#include <onnxruntime_c_api.h>\n"
              "int main(void) {\n"
              "  const OrtApiBase* base = OrtGetApiBase();\n"
              "  return base == 0 || base->GetVersionString == 0;\n"
              "}\n"),
        lang="c",
        symbols=("OrtGetApiBase",),
    ),
    # Third-party code compiled into the library (cmake/deps.txt); the shared builds must not
    # export it (the platform contracts' forbid_exports). Versions as of the deps.txt read when
    # this recipe was written: re-check them against the pinned tag when bumping.
    bundled=(
        Component("abseil-cpp", "20240722.0"),
        Component("protobuf", "21.12"),
        Component("onnx", "1.16.1"),
        Component("re2", "2024-07-02"),
        Component("flatbuffers", "23.5.26"),
        Component("date", "3.0.1"),
        Component("microsoft-gsl", "4.0.0"),
        Component("safeint", "3.0.28"),
        Component("boost-mp11", "1.82.0"),
        Component("nlohmann-json", "3.10.5"),
    ),
)
