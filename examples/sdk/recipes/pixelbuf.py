"""pixelbuf: the media stage's image library, built against vecmath from the core stage."""

from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

FLAGS = {
    "wasm": "-O2 -fwasm-exceptions -pthread -msimd128",
    "windows-x86_64": "-O2",
    "*": "-O2 -fPIC",
}


def build(flags: str) -> Build:
    return Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cxx} -std=c++17 " + flags + " -I{src}/include -I{deps_prefix}/include"
        " -c {src}/src/pixelbuf.cpp -o {build}/obj/pixelbuf.o",
        "{ar} rcs {prefix}/lib/libpixelbuf.a {build}/obj/pixelbuf.o",
        "cmake -E copy_directory {src}/include {prefix}/include",
    ))


RECIPE = Recipe(
    name="pixelbuf",
    pin="pixelbuf",
    deps=("vecmath",),
    sources=(LocalSource("../src/pixelbuf"),),
    platforms={platform: build(flags) for platform, flags in FLAGS.items()},
    outputs=Outputs(libs={"*": ("lib/libpixelbuf.a",)},
                    headers=("include/pixelbuf/pixelbuf.hpp",), license="LICENSE"),
    kind={"*": "static"},
    link_test=Snippet(
        code=(
            "#include <pixelbuf/pixelbuf.hpp>\n"
            "#include <stdexcept>\n"
            "int main() {\n"
            "  pixelbuf::Image img(4, 4);\n"
            "  img.fill({200, 100, 50, 255});\n"
            "  img.shade({0.0f, 0.0f, 1.0f});\n"
            "  try { img.at(9, 9); } catch (const std::out_of_range&) { return 0; }\n"
            "  return 1;\n"
            "}\n"
        ),
        lang="c++",
        symbols=("pixelbuf::Image::shade",),
    ),
)
