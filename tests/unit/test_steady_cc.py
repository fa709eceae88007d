"""``prebake.toolchain.steady_cc``: what a compile looks like once the unit's work folder is at
one path, and how its outputs go back. The namespace itself is exercised by the real builds
of ``tests/integration/test_reproducible.py``; here, the rewriting that decides whether two
folders give the compiler the same strings."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.toolchain import steady, steady_cc
from prebake.toolchain.steady_cc import INNER, OUT, TARGET, Translator, plan

CMAKE_OBJECT = "CMakeFiles/ort.dir{root}/onnxruntime/src/core/cumsum.cc.o"


def _compile(root: str) -> list[str]:
    """A compile line as CMake's Makefiles give it for a source outside the build tree (the
    object's name holds the source's whole path) with Emscripten's prefix map."""
    obj = CMAKE_OBJECT.format(root=root)
    return ["/usr/bin/clang++", f"-I{root}/onnxruntime/src/include", "-isystem",
            f"{root}/deps/eigen", f"-ffile-prefix-map={root}=.", "--sysroot=/var/cache/sys",
            "-O3", "-MD", "-MT", obj, "-MF", obj + ".d", "-o", obj, "-c",
            f"{root}/onnxruntime/src/core/cumsum.cc"]


def test_two_folders_give_the_compiler_the_same_strings() -> None:
    a, b = "/work/a/.prebake/work/wasm/ort", "/tmp/x/deeper/and/longer/.prebake/work/wasm/ort"
    pa = plan(_compile(a), a + "/onnxruntime/build/Release", a)
    pb = plan(_compile(b), b + "/onnxruntime/build/Release", b)
    assert pa is not None and pb is not None
    assert pa.argv == pb.argv and pa.cwd == pb.cwd == INNER + "/onnxruntime/build/Release"
    assert not any(a in x or a.lstrip("/") in x for x in pa.argv)
    assert f"-I{INNER}/onnxruntime/src/include" in pa.argv
    assert pa.argv[pa.argv.index("-o") + 1] == f"{OUT}/out.o"
    assert pa.argv[pa.argv.index("-MT") + 1] == TARGET
    # the outputs go back where the build asked, through the bound folder
    real = f"{INNER}/onnxruntime/build/Release/" + CMAKE_OBJECT.format(root=a)
    assert pa.copies == [(f"{OUT}/out.o", real)]
    assert pa.depfile == (f"{OUT}/dep.d", real + ".d")
    assert pa.targets == [CMAKE_OBJECT.format(root=a)]


def test_only_paths_are_rewritten() -> None:
    root = "/w/unit"
    tr = Translator(root)
    assert tr(f"-I{root}/inc") == f"-I{INNER}/inc"
    assert tr(f"-isystem{root}/inc") == f"-isystem{INNER}/inc"
    assert tr(f"-DDIR=\"{root}\"") == f"-DDIR=\"{INNER}\""
    assert tr(f"{root}:{root}/b") == f"{INNER}:{INNER}/b"
    assert tr("/w/unitx/inc") == "/w/unitx/inc"  # another folder that starts alike
    assert tr(f"dir{root}/x.o") == f"dir{root}/x.o"  # a relative path that holds it


def test_a_folder_reached_through_a_symlink_gives_one_prefix_map(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    root = str(tmp_path / "link")
    args = [f"-ffile-prefix-map={root}=.", f"-ffile-prefix-map={real}=.", "-c", f"{root}/a.c",
            "-o", f"{root}/a.o"]
    p = plan(args, root, root)
    assert p is not None
    assert p.argv.count(f"-ffile-prefix-map={INNER}=.") == 1


def test_what_is_not_a_compile_in_the_folder_is_left_alone() -> None:
    root = "/w/unit"
    assert plan(["-E", "-c", f"{root}/a.c"], root, root) is None  # preprocessing only
    assert plan(["--version"], root, root) is None
    assert plan(["-c", f"{root}/a.c", "-o", "a.o"], "/elsewhere", root) is None
    assert plan(["-c", f"{root}/a.c", "-o", "-"], root, root) is None  # stdout
    assert plan(["-c", f"{root}/a.c", "-o", "/tmp/a.o"], root, root) is None  # outside


def test_the_dependency_file_names_the_real_target_and_folder(tmp_path: Path) -> None:
    root = "/w/unit"
    inner_dep, real_dep = tmp_path / "dep.d", tmp_path / "real.d"
    inner_obj, real_obj = tmp_path / "out.o", tmp_path / "real.o"
    inner_dep.write_text(f"{TARGET}: {INNER}/src/a.c \\\n  {INNER}/include/a.h /usr/include/b.h\n")
    inner_obj.write_bytes(b"\0asm")
    p = steady_cc.Plan(argv=[], cwd=str(tmp_path), copies=[(str(inner_obj), str(real_obj))],
                       depfile=(str(inner_dep), str(real_dep)),
                       targets=[f"CMakeFiles/a.dir{root}/src/a.c.o"])
    steady_cc.finish(p, root)
    assert real_obj.read_bytes() == b"\0asm"
    assert real_dep.read_text() == (f"CMakeFiles/a.dir{root}/src/a.c.o: {root}/src/a.c \\\n"
                                    f"  {root}/include/a.h /usr/include/b.h\n")


def test_messages_name_the_real_folder() -> None:
    said = steady_cc.back(f"{INNER}/src/a.c:3:1: error: x", "/w/unit")
    assert said == "/w/unit/src/a.c:3:1: error: x"
    assert steady_cc.back(f"{INNER}x/y", "/w/unit") == f"{INNER}x/y"


def test_a_cache_runs_inside_the_wrapper_for_emscripten_only(tmp_path: Path) -> None:
    env = steady.compile_env(("emcc",), tmp_path, "/usr/bin/ccache")
    assert env == {"EM_COMPILER_WRAPPER": str(steady.wrapper_path(tmp_path)),
                   steady_cc.ROOT_VARIABLE: str(tmp_path),
                   steady_cc.LAUNCHER_VARIABLE: "/usr/bin/ccache"}
    assert steady_cc.LAUNCHER_VARIABLE not in steady.compile_env(("emcc",), tmp_path, None)
    assert steady.compile_env(("gcc",), tmp_path, "/usr/bin/ccache") == {}
    assert steady.install(("gcc",), tmp_path, in_environment=False) is None
    path = steady.install(("em++",), tmp_path, in_environment=True)
    assert path is not None and path.read_text().startswith("#!/usr/bin/python3 -IS\n")
    assert path.stat().st_mode & 0o111


def test_ccache_runs_the_compile_the_wrapper_meant(tmp_path: Path) -> None:
    """ccache runs its compiler with the arguments reordered and ``-fcolor-diagnostics`` added
    (the control below): a longer, reordered list is another heap, and for LLVM's wasm
    backend another object (the flagship's archive differed in 5 of 713 members through
    ccache). Through the wrapper, ccache's run is the wrapper's own list — the object records
    its command line (``-frecord-command-line``), so any other list is other bytes — and a
    second compile is ccache's hit with the same bytes."""
    ccache, clang = shutil.which("ccache"), shutil.which("clang-14")
    if ccache is None or clang is None:
        pytest.skip("needs ccache and clang-14 (Debian packages)")
    if os.geteuid() != 0:
        pytest.skip("the wrapper's private mount namespace needs root")
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "t.c").write_text("int triple(int x) { return 3 * x; }\n")
    wrapper = steady.install(("em++",), root, in_environment=False)
    assert wrapper is not None
    cache = tmp_path / "ccache"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CCACHE_DIR": str(cache),
           steady_cc.ROOT_VARIABLE: str(root)}

    def compile_(name: str, launcher: list[str]) -> bytes:
        argv = [*launcher, clang, "-frecord-command-line", "-O2", "-c", str(root / "src" / "t.c"),
                "-o", str(root / name), "-MD", "-MF", str(root / f"{name}.d"), "-DX=1"]
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return (root / name).read_bytes()

    alone = compile_("alone.o", [str(wrapper)])
    assert b"-frecord-command-line" in alone
    # the control: ccache's own list is another (so this test can fail)
    assert b"-fcolor-diagnostics" in compile_("control.o", [ccache])
    env[steady_cc.LAUNCHER_VARIABLE] = ccache
    through = compile_("through.o", [str(wrapper)])
    again = compile_("again.o", [str(wrapper)])
    assert through == alone and again == alone
    stats = subprocess.run([ccache, "--print-stats"], env=env, capture_output=True, text=True,
                           check=True).stdout
    counts = dict(line.split("\t", 1) for line in stats.splitlines() if "\t" in line)
    assert int(counts["direct_cache_hit"]) >= 1  # the second compile came from the cache
    assert not (wrapper.parent / "steady-cc.noted").exists()  # nothing to say


def test_a_folder_make_must_read_is_escaped_as_the_compiler_would(tmp_path: Path) -> None:
    """The compiler escaped what it saw (``/mnt/w/…``); the folder put back in its place is
    escaped the same way (GCC's and clang's rules), and a ``-MQ`` target is quoted, a
    ``-MT`` one written as given."""
    (tmp_path / "a b$c#d").mkdir()
    root = str(tmp_path / "a b$c#d")
    args = ["-c", f"{root}/x.c", "-o", f"{root}/x y.o", "-MD", "-MF", f"{root}/x.d",
            "-MQ", f"{root}/x y.o", "-MT", "plain target"]
    p = plan(args, root, root)
    assert p is not None
    quoted = root.replace(" ", "\\ ").replace("$", "$$").replace("#", "\\#")
    assert p.targets == [f"{quoted}/x\\ y.o", "plain target"]
    inner_dep = tmp_path / "dep.d"
    inner_dep.write_text(f"{TARGET} {TARGET}: {INNER}/x.c {INNER}/sub\\ dir/h.h\n")
    p.depfile = (str(inner_dep), str(tmp_path / "real.d"))
    p.copies = []
    steady_cc.finish(p, root)
    assert (tmp_path / "real.d").read_text() == (
        f"{quoted}/x\\ y.o plain target: {quoted}/x.c {quoted}/sub\\ dir/h.h\n")
    assert steady_cc.make_quoted("a\\ b") == "a\\\\\\ b"  # N backslashes before a space: 2N+1
