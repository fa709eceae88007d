"""A two-platform workspace (wasm via Debian's em++, linux-x86_64 via gcc) holding one small
recipe, for the build guards' reproducers: ``thrower``, whose ``helper.o`` may call a symbol
nobody defines while the snippet only uses ``thrower::parse``. The workspace is
``tests/data/workspaces/templates/guarded.toml``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests import support

RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

FLAGS = {"wasm": "-O2 -fwasm-exceptions -pthread -msimd128", "*": "-O2 -fPIC"}


def build(flags):
    return Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cxx} -std=c++17 " + flags + " -I{src} -c {src}/thrower.cpp -o {build}/obj/thrower.o",
        "{cxx} -std=c++17 " + flags + " -I{src} -c {src}/helper.cpp -o {build}/obj/helper.o",
        "{ar} rcs {prefix}/lib/libthrower.a {build}/obj/thrower.o {build}/obj/helper.o",
        "cmake -E copy {src}/thrower.hpp {prefix}/include/thrower.hpp",
        EXTRA_COMMANDS
    ))


RECIPE = Recipe(
    name="thrower",
    pin="thrower",
    sources=(LocalSource("../src/thrower"),),
    platforms={p: build(f) for p, f in FLAGS.items()},
    outputs=Outputs(libs={"*": LIBS}, headers=("include/thrower.hpp",)),
    kind={"*": "static"},
    link_test=Snippet(
        code=("#include <thrower.hpp>\\n"
              "int main() { return thrower::parse(\\"ab\\") == 2 ? 0 : 1; }\\n"),
        SNIPPET_EXTRA
    ),
)
'''

SOURCES = {
    "thrower.hpp": ("#pragma once\n#include <string>\n"
                    "namespace thrower { int parse(const std::string&); }\n"),
    "thrower.cpp": ('#include "thrower.hpp"\n#include <stdexcept>\n'
                    "namespace thrower { int parse(const std::string& s) {\n"
                    '  if (s.empty()) throw std::runtime_error("empty");\n'
                    "  return static_cast<int>(s.size()); } }\n"),
    # a member the snippet never pulls: it calls a backend nobody in the archive defines
    "helper.cpp": ('extern "C" int thrower_backend_init(void);\n'
                   "namespace thrower { int helper() { return thrower_backend_init() + 1; } }\n"),
}


def make(ws: Path, *, snippet_extra: str = "", extra_commands: str = "",
         libs: str = '("lib/libthrower.a",)', contract_extra: str = "",
         sources: Mapping[str, str] | None = None) -> Path:
    (ws / "recipes").mkdir(parents=True)
    src = ws / "src" / "thrower"
    src.mkdir(parents=True)
    for name, text in {**SOURCES, **(sources or {})}.items():
        (src / name).write_text(text)
    (ws / "prebake.toml").write_text(support.workspace_text("guarded",
                                                            contract_extra=contract_extra))
    (ws / "recipes" / "thrower.py").write_text(
        RECIPE.replace("SNIPPET_EXTRA", snippet_extra).replace("EXTRA_COMMANDS", extra_commands)
        .replace("LIBS", libs))
    return ws


Proc = subprocess.CompletedProcess[str]


def build_json(ws: Path, *args: str) -> tuple[int, dict[str, Any], Proc]:
    proc = support.prebake("-C", ws, "build", *args, "--json")
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
                             ) from None
    return proc.returncode, data, proc


def assets(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "releases").rglob("*.tar.xz"))


def manifest(ws: Path, platform: str) -> dict[str, Any]:
    side = next((ws / "releases").rglob(f"guarded-core-1.0.0-{platform}.tar.xz.json"))
    data: dict[str, Any] = json.loads(side.read_text())
    return data
