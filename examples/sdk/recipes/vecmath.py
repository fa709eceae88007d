"""vecmath: the core stage's C++ math library (throws, so the EH contract is exercised)."""

from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

# Per-platform compile flags: the wasm build must match the host's ABI (native wasm EH,
# threads, SIMD128); native builds are position-independent so shared addons can link them.
FLAGS = {
    "wasm": "-O2 -fwasm-exceptions -pthread -msimd128",
    "windows-x86_64": "-O2",
    "*": "-O2 -fPIC",
}


def build(flags: str) -> Build:
    return Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cxx} -std=c++17 " + flags + " -I{src}/include -c {src}/src/vecmath.cpp"
        " -o {build}/obj/vecmath.o",
        "{ar} rcs {prefix}/lib/libvecmath.a {build}/obj/vecmath.o",
        "cmake -E copy_directory {src}/include {prefix}/include",
    ))


RECIPE = Recipe(
    name="vecmath",
    pin="vecmath",
    sources=(LocalSource("../src/vecmath"),),
    platforms={platform: build(flags) for platform, flags in FLAGS.items()},
    outputs=Outputs(libs={"*": ("lib/libvecmath.a",)}, headers=("include/vecmath/vecmath.hpp",),
                    license="LICENSE"),
    kind={"*": "static"},
    link_test=Snippet(
        code=(
            "#include <vecmath/vecmath.hpp>\n"
            "int main() {\n"
            "  try { vecmath::parse_vec3(\"1,2\"); } catch (const vecmath::parse_error&) {\n"
            "    return vecmath::length(vecmath::parse_vec3(\"3,4,0\")) == 5.0f ? 0 : 2;\n"
            "  }\n"
            "  return 1;\n"
            "}\n"
        ),
        lang="c++",
        symbols=("vecmath::parse_vec3", "vecmath::length"),
    ),
)
