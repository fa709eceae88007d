"""Small real workspaces for the release loop (pin, lock, diff, CI): a host-only C library
built with gcc, written into a folder so a test can edit, commit and clone it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import support

# A tiny SDK: one C library for the host, built by the release-loop tests; C only, so the
# build clears no CXXFLAGS, and no store is configured (the default one).
TOML = support.gcc_workspace("demo-sdk", 'hello = "1.0.0"  # the library\'s version', "core",
                             '["hello"]', env_unset=("CFLAGS", "CPPFLAGS", "LDFLAGS"), more="",
                             tail='\n[ci]\ninstall = "python -m pip install prebake==0.1.0"')

RECIPE = '''\
"""hello: a C library with one public function (declared in its header) and one internal."""

from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="hello",
    pin="hello",
    sources=(LocalSource("../src/hello"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cc} -O1 -fPIC -I{src}/include -c {src}/hello.c -o {build}/obj/hello.o",
        "{ar} rcs {prefix}/lib/libhello.a {build}/obj/hello.o",
        "cmake -E copy {src}/include/hello.h {prefix}/include/hello.h",
    ))},
    outputs=Outputs(libs={"*": ("lib/libhello.a",)}, headers=("include/hello.h",),
                    license="LICENSE"),
    kind={"*": "static"},
    link_test=Snippet(code="#include <hello.h>\\n"
                           "int main(void) { return hello_answer() != 42; }\\n",
                      lang="c", symbols=("hello_answer",)),
)
'''

HEADER = "#pragma once\nint hello_answer(void);\n{extra}"
SOURCE = "#include <hello.h>\nint hello_answer(void) {{ return 42; }}\n{extra}"


def write_hello(ws: Path, *, header_extra: str = "", source_extra: str = "") -> None:
    """(Re)write the hello library's source: ``*_extra`` add declarations / definitions."""
    src = ws / "src" / "hello"
    (src / "include").mkdir(parents=True, exist_ok=True)
    (src / "include" / "hello.h").write_text(HEADER.format(extra=header_extra))
    (src / "hello.c").write_text(SOURCE.format(extra=source_extra))
    (src / "LICENSE").write_text("Public domain.\n")


def hello_workspace(ws: Path) -> Path:
    """The tiny workspace in ``ws`` (created), with no store configured (the default one)."""
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(TOML)
    (ws / "recipes" / "hello.py").write_text(RECIPE)
    write_hello(ws)
    return ws


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                               "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.invalid",
                               "PATH": "/usr/bin:/bin", "HOME": str(repo)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
