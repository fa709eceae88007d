"""``steady_cc`` with real compiles: its dependency files in a folder with a space (real ninja
and make read them back), and its mount namespace on a shared mount (systemd's default
propagation), in a chroot and not, with compiles running side by side.

The wrapper runs any compiler it is given (``steady-cc gcc -c …``); gcc here, since what is
checked is the wrapper's own work: the depfile it writes back, and the mounts it makes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prebake.toolchain import steady, steady_cc

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the wrapper's mount namespace needs root"),
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]
HEADER = "#define ANSWER 42\n"
SOURCE = '#include "answer.h"\nint answer(void) { return ANSWER; }\n'


def _unit(base: Path) -> tuple[Path, Path]:
    """A unit's work folder (its wrapper installed) with a source and a header."""
    root = base / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "answer.h").write_text(HEADER)
    (root / "src" / "answer.c").write_text(SOURCE)
    (root / "build").mkdir()
    wrapper = steady.install(("emcc",), root, in_environment=False)
    assert wrapper is not None
    return root, wrapper


def _env(root: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(root), steady_cc.ROOT_VARIABLE: str(root)}


def _ninja_escaped(path: Path) -> str:
    return str(path).replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja")
def test_ninja_in_a_folder_with_a_space_recompiles_nothing_the_second_time(tmp_path: Path
                                                                           ) -> None:
    root, wrapper = _unit(tmp_path / "with space")
    build = root / "build"
    (build / "build.ninja").write_text(
        f"rule cc\n  command = '{wrapper}' gcc -MD -MF $out.d -c $in -o $out\n"
        "  depfile = $out.d\n  deps = gcc\n"
        f"build answer.o: cc {_ninja_escaped(root / 'src' / 'answer.c')}\n")
    env = _env(root)
    first = subprocess.run(["ninja"], cwd=build, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (build / "answer.o").is_file()
    again = subprocess.run(["ninja", "-d", "explain"], cwd=build, env=env, capture_output=True,
                           text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "no work to do" in again.stdout, again.stdout + again.stderr
    # and a change to the header is seen: the dependency is recorded under its real name
    (root / "src" / "answer.h").write_text("#define ANSWER 43\n")
    third = subprocess.run(["ninja"], cwd=build, env=env, capture_output=True, text=True)
    assert "[1/1]" in third.stdout, third.stdout


def _make_escaped(path: Path) -> str:
    """A path as a make prerequisite."""
    return str(path).replace("$", "$$").replace(" ", "\\ ").replace("#", "\\#")


def _in_recipe(path: Path) -> str:
    """A path as a word of a make recipe's shell line."""
    return "'" + str(path).replace("$", "$$") + "'"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("folder", ["with space", "dollar$and#hash"])
@pytest.mark.parametrize("target", ["", "-MT $@", "-MQ $@"])
def test_make_in_an_odd_folder_finds_its_rules(tmp_path: Path, folder: str, target: str
                                               ) -> None:
    """The issue's: make stopped with ``No rule to make target`` (the folder cut at its
    space). A ``$`` and a ``#`` in the folder too; the target from ``-o``, ``-MT`` and
    ``-MQ``."""
    root, wrapper = _unit(tmp_path / folder)
    build = root / "build"
    source = root / "src" / "answer.c"
    (build / "Makefile").write_text(
        f"answer.o: {_make_escaped(source)}\n"
        f"\t{_in_recipe(wrapper)} gcc -MD -MF answer.d {target} -c {_in_recipe(source)} -o $@\n"
        "-include answer.d\n")
    env = _env(root)
    first = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    again = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is up to date" in again.stdout, again.stdout + again.stderr
    (root / "src" / "answer.h").write_text("#define ANSWER 43\n")
    third = subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True)
    assert third.returncode == 0 and "gcc" in third.stdout, third.stdout + third.stderr


# ---- the namespace on a shared mount --------------------------------------------------------

# Run under `unshare --mount --propagation private` (the test's own namespace, so nothing it
# mounts reaches the machine): the test folder is bound on itself and made shared, as systemd
# makes every mount; a root to chroot into is made in it from the machine's own /usr, /lib…;
# two compiles through the wrapper run side by side in that chroot (a compiler that sleeps a
# second first, so that they overlap), and the namespace's mounts are listed before and after.
SCENARIO = r"""
import json, os, shutil, subprocess, sys, time
top, chrooted = sys.argv[1], sys.argv[2] == "chroot"
def sh(*a):
    subprocess.run(a, check=True)
sh("mount", "--bind", top, top)
sh("mount", "--make-shared", top)
root = top + "/root" if chrooted else top
if chrooted:
    for d in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"):
        if os.path.islink("/" + d):
            os.symlink(os.readlink("/" + d), f"{root}/{d}")
        elif os.path.isdir("/" + d):
            os.makedirs(f"{root}/{d}", exist_ok=True)
            sh("mount", "--rbind", "/" + d, f"{root}/{d}")
    os.makedirs(root + "/mnt", exist_ok=True)
    os.makedirs(root + "/tmp", exist_ok=True)
work = "/work" if chrooted else root + "/work"
def mounts():
    with open("/proc/self/mountinfo") as fh:
        return sorted(" ".join(line.split()[4:5] + line.split(" - ")[1].split()[:1])
                      for line in fh)
before = mounts()
env = {"PATH": "/usr/bin:/bin", "PREBAKE_STEADY_ROOT": work, "HOME": "/tmp"}
procs = []
for i in (1, 2):
    line = (f"cd {work} && exec {work}/toolchain/bin/steady-cc {work}/slowcc -O1 -c "
            f"{work}/src/answer{i}.c -o {work}/answer{i}.o")
    argv = ([shutil.which("chroot"), root] if chrooted else []) + ["/bin/sh", "-c", line]
    procs.append(subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True))
    time.sleep(0.3)
done = [(p.wait(), p.stderr.read()) for p in procs]
print(json.dumps({"before": before, "after": mounts(), "compiles": done}))
"""


def _shared_mount_compiles(tmp_path: Path, chrooted: bool) -> dict[str, object]:
    import json

    top = tmp_path / "shared"
    work = (top / "root" / "work") if chrooted else (top / "work")
    (work / "src").mkdir(parents=True)
    for i in (1, 2):
        (work / "src" / f"answer{i}.c").write_text(f"int answer{i}(void) {{ return {i}; }}\n")
    slow = work / "slowcc"
    slow.write_text('#!/bin/sh\nsleep 1\nexec gcc "$@"\n')
    slow.chmod(0o755)
    # in the chroot, the root's own python runs it (the machine's /usr, bound there)
    assert steady.install(("emcc",), work, in_environment=chrooted) is not None
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                           "-c", SCENARIO, str(top), "chroot" if chrooted else "plain"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    # each object is its own compile's: it defines its own function (a shared /mnt/o would
    # hand one compile the other's out.o)
    result["objects"] = [(work / f"answer{i}.o").is_file() and f"T answer{i}" in subprocess.run(
        ["nm", str(work / f"answer{i}.o")], capture_output=True, text=True).stdout
        for i in (1, 2)]
    return result


@pytest.mark.skipif(shutil.which("unshare") is None or not Path("/mnt").is_dir()
                    or not Path("/usr/bin/python3").is_file(),
                    reason="needs unshare, /mnt and /usr/bin/python3")
@pytest.mark.parametrize("chrooted", [True, False], ids=["chroot", "no-chroot"])
def test_compiles_on_a_shared_mount_leak_no_mount_and_share_none(tmp_path: Path,
                                                                 chrooted: bool) -> None:
    """The issue's: in a chroot on a shared mount each compile left two mounts (its tmpfs and
    its bind) in the caller's namespace, and of two overlapping compiles one lost its object
    with exit status 0. Both compiles must use their own private namespace (no note that
    they ran without), write their objects, and leave the caller's mounts as they were."""
    result = _shared_mount_compiles(tmp_path, chrooted)
    compiles = result["compiles"]
    assert isinstance(compiles, list)
    for rc, err in compiles:
        assert rc == 0, err
        assert "no private mount namespace" not in err, err
    assert result["objects"] == [True, True], result
    assert result["after"] == result["before"], (sorted(set(result["after"]) -  # type: ignore
                                                        set(result["before"])))  # type: ignore
