"""The same asset bytes from any folder, for code whose compiler output follows pointer values.

LLVM 21's WebAssembly backend nests two ``try_table`` blocks that start at one instruction in
an order taken from a hash map keyed by pointers (llvm/llvm-project#204883): the flagship's
wasm archive differed from another folder's in 6 of 713 members. ``SOURCE`` is that shape,
cut down by ``llvm-reduce`` from onnxruntime 1.21.0's ``CumSum<int>::Compute`` (as compiled
by Debian sid's Emscripten 6.0.5) and repeated ``COPIES`` times, each copy one more chance to
come out the other way.

* the control: the same compile three times in one folder, as a plain ``em++`` runs it, gives
  more than one object (this toolchain's output does follow pointer values, so the test below
  can fail);
* ``prebake build`` of a unit made of it, in two folders of different depth with two ``HOME``
  folders, gives one asset sha256 and the same bytes in every member
  (``prebake.toolchain.steady_cc``: address-space randomisation off, the work folder at one
  path).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from prebake.inspect.archive import read_archive
from tests import support, toolchains

COPIES = 16
ASSET = "steady-1.0.0-wasm.tar.xz"
FLAGS = "-O2 -fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0 -pthread -msimd128"

HEAD = """\
target datalayout = "e-m:e-p:32:32-p10:8:8-p20:8:8-i64:64-i128:128-f128:64-n32:64-S128-ni:1:10:20"
target triple = "wasm32-unknown-emscripten"

declare i32 @__gxx_wasm_personality_v0(...)
declare void @__cxa_throw(ptr, ptr, ptr)
declare ptr @steady_error(ptr, ptr, ptr, ptr)
declare ptr @steady_output(ptr, i32, ptr)
declare void @steady_log(i32, ptr, ptr, ptr, i32)
declare ptr @steady_shape(ptr returned)
"""
# one copy: a call that unwinds to the caller's cleanup, then two that unwind to a cleanup
# unwinding to it, around the construction of an exception (its own cleanup in between)
COPY = """
define ptr @steady_compute_N(ptr %0, i1 %1) personality ptr @__gxx_wasm_personality_v0 {
  br i1 %1, label %3, label %4

3:
  store volatile i32 N, ptr null, align 4
  unreachable

4:
  %5 = call ptr @steady_shape(ptr %0)
  %6 = invoke ptr @steady_output(ptr null, i32 N, ptr %0)
          to label %7 unwind label %16

7:
  invoke void @steady_log(i32 N, ptr null, ptr null, ptr null, i32 0)
          to label %8 unwind label %13

8:
  %9 = invoke ptr @steady_error(ptr null, ptr null, ptr null, ptr null)
          to label %12 unwind label %10

10:
  %11 = cleanuppad within none []
  store volatile i32 N, ptr null, align 4
  unreachable

12:
  invoke void @__cxa_throw(ptr null, ptr null, ptr null)
          to label %18 unwind label %13

13:
  %14 = cleanuppad within none []
  %15 = load volatile ptr, ptr null, align 4
  cleanupret from %14 unwind label %16

16:
  %17 = cleanuppad within none []
  ret ptr null

18:
  unreachable
}
"""
SOURCE = HEAD + "".join(COPY.replace("N", str(i)) for i in range(COPIES))
STUBS = """\
void *steady_error(void *a, void *b, void *c, void *d) { return a; }
void *steady_output(void *a, int n, void *b) { return b; }
void steady_log(int n, void *a, void *b, void *c, int m) {}
void *steady_shape(void *a) { return a; }
"""
HEADER = "void *steady_compute_0(void *shape, _Bool bad);\n"

RECIPE = f'''\
"""steady: one object whose try_table order follows the compiler's pointers."""

from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="steady",
    pin="steady",
    sources=(LocalSource("../src/steady"),),
    platforms={{"wasm": Build(commands=(
        "cmake -E make_directory {{build}}/obj {{prefix}}/lib {{prefix}}/include",
        "{{cc}} {FLAGS} -c {{src}}/steady.ll -o {{build}}/obj/steady.o",
        "{{cc}} {FLAGS} -c {{src}}/stubs.c -o {{build}}/obj/stubs.o",
        "{{ar}} rcs {{prefix}}/lib/libsteady.a {{build}}/obj/steady.o {{build}}/obj/stubs.o",
        "cmake -E copy {{src}}/steady.h {{prefix}}/include/steady.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libsteady.a",)}}, headers=("include/steady.h",),
                    license="LICENSE"),
    kind={{"*": "static"}},
    link_test=Snippet(code=("#include <steady.h>\\n"
                            "int main() {{ return steady_compute_0(0, 0) != 0; }}\\n"),
                      lang="c", symbols=("steady_compute_0",)),
)
'''

WORKSPACE = """\
[project]
name = "steady"
version = "1.0.0"

[pins]
steady = "1.0.0"
emsdk = "6.0.5"

[platforms.wasm]
os = "emscripten"
arch = "wasm32"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS"]

[platforms.wasm.toolchain]
environment = "debian-sid-emscripten"
cc = "emcc"
cxx = "em++"
ar = "emar"
pin = "emsdk"

[platforms.wasm.contract]
extends = "emscripten-jspi-exnref-pthread-simd"
# steady.o is compiled from hand-written IR, which names no producer (no llvm.ident)
allow_unknown = ["os", "producer"]  # "os": the preset's own

[platforms.wasm.link_test]
flags = ["-sJSPI", "-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0", "-pthread", "-msimd128",
         "-sERROR_ON_UNDEFINED_SYMBOLS=1"]

[stages.deps]
recipes = ["steady"]
package = "per-recipe"

[stores.local]
url = "file://releases"
default = true
"""

FILES = {"prebake.toml": WORKSPACE, "recipes/steady.py": RECIPE,
         "src/steady/steady.ll": SOURCE, "src/steady/stubs.c": STUBS,
         "src/steady/steady.h": HEADER, "src/steady/LICENSE": "steady: test data, no rights\n"}


@pytest.fixture(scope="module")
def sid() -> Path:
    """The tests' Debian sid root (Emscripten 6.0.5, clang 21), made once; skips where it
    cannot be (not root, no mmdebstrap, no mirror)."""
    return toolchains.sid_emscripten()


def test_this_compiler_orders_the_blocks_by_its_pointers(sid: Path) -> None:
    """The control: a plain ``em++``, three times in one folder, gives more than one object."""
    objects = set()
    with toolchains.trixie_workdir("steady-control", root=toolchains.SID) as work:
        (work / "steady.ll").write_text(SOURCE)
        for i in range(3):
            proc = subprocess.run([str(sid / "em++"), *FLAGS.split(), "-c", "steady.ll",
                                   "-o", f"{i}.o"], cwd=work, capture_output=True, text=True,
                                  env=support.tool_env(), timeout=300)
            assert proc.returncode == 0, proc.stderr
            objects.add(hashlib.sha256((work / f"{i}.o").read_bytes()).hexdigest())
    assert len(objects) > 1


def _build(ws: Path, home: Path, *, ccache: bool = False) -> Path:
    """The workspace built in ``ws`` with ``home`` as ``HOME``, both under /tmp, which the
    toolchain environment binds whole (of a folder under /var, such as the suite's cache,
    only a command's own folder is bound inside the root); with ``ccache``, through the
    environment's ccache (what CI legs and the long leg run), its cache in ``home``."""
    for name, text in FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    home.mkdir(parents=True, exist_ok=True)
    env = {"PREBAKE_TOOLCHAINS": str(toolchains.TOOLCHAINS), "HOME": str(home),
           "PREBAKE_CACHE": str(home / "cache")}
    if ccache:
        env |= {"PREBAKE_COMPILER_LAUNCHER": "ccache", "CCACHE_DIR": str(home / "ccache")}
    proc = support.prebake("-C", ws, "build", "--platform", "wasm", "--json", timeout=1800,
                           env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return next((ws / "releases").rglob(ASSET))


def _members(asset: Path) -> dict[str, bytes]:
    """Every file of the asset, and every member of its static library, by name."""
    out: dict[str, bytes] = {}
    with tarfile.open(asset) as tf:
        for m in tf.getmembers():
            if m.isfile():
                data = tf.extractfile(m).read()  # type: ignore[union-attr]
                out[m.name] = data
                if m.name.endswith(".a"):
                    for mem in read_archive(data).members:
                        out[f"{m.name}({mem.name})"] = data[mem.data_off:mem.data_off + mem.size]
    return out


def test_two_folders_and_two_homes_give_one_asset(sid: Path,
                                                  tmp_path_factory: pytest.TempPathFactory
                                                  ) -> None:
    top = tmp_path_factory.mktemp("steady")
    a = _build(top / "ws", top / "home-one")
    b = _build(top / "a" / "much" / "deeper" / "folder" / "than" / "the" / "first" / "ws",
               top / "home-of-a-second-user")
    # through the environment's ccache, as CI legs build: the same bytes again (that ccache's
    # run is the wrapper's own argument list, which made 5 of the flagship's 713 members
    # differ before, is shown by tests/unit/test_steady_cc.py: this unit's `.ll` compile is one
    # ccache does not cache, so it does not tell the two apart)
    c = _build(top / "cached" / "ws", top / "home-three", ccache=True)
    ma, mb, mc = _members(a), _members(b), _members(c)
    assert "lib/libsteady.a(steady.o)" in ma
    assert [k for k in ma if ma[k] != mb.get(k)] == []
    assert [k for k in ma if ma[k] != mc.get(k)] == []
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(c.read_bytes()).hexdigest()
    # an entry is a file named by its hash (ccache 4.14: no R/M suffix any more)
    assert any(re.fullmatch(r"[0-9a-f]{20,}[RM]?", f.name)
               for f in (top / "home-three" / "ccache").rglob("*")), "ccache stored nothing"
    assert os.fsencode(str(a.parents[2])) not in ma["lib/libsteady.a"]
