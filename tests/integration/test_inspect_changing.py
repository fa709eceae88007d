"""A file truncated or replaced while ``inspect`` reads it is a one-line error naming it.

Shared download caches and build trees change underneath readers. The readers parse bytes
got with plain reads, whole or (archives, ELF) part by part as they need them (a memory map
of the file would end the process with SIGBUS at the first page past a new end), and the
file is checked again when its facts are made. Each test
starts a real ``prebake inspect`` on a copy of a real 16 MB archive, waits until a process
of the run has the copy open, then truncates or replaces it: never a signal, one line naming
the file, exit 2 where it is the only path, the other paths' results kept and in order.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import support

LLVM = Path("/usr/lib/llvm-14/lib")
BIG = LLVM / "libLLVMCodeGen.a"  # ~1 s to read with --symbols: a wide window
SMALL = [LLVM / "libLLVMDemangle.a", LLVM / "libLLVMXCoreInfo.a"]
pytestmark = pytest.mark.skipif(not all(p.is_file() for p in (BIG, *SMALL)),
                                reason="needs Debian's llvm-14-dev")


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the pool's workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(k) for k in kids)
    return out


def _opener(pid: int, target: Path) -> int | None:
    """The process of ``pid``'s tree that has ``target`` open, if one has."""
    for p in _tree(pid):
        try:
            fds = list(Path(f"/proc/{p}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if fd.readlink() == target:
                    return p
            except OSError:
                continue
    return None


def _run_and_change(args: list[str | Path], victim: Path, change: Callable[[Path], None],
                    tmp_path: Path) -> tuple[int, bytes, str]:
    """Run ``prebake inspect ARGS``; the moment a process of it has ``victim`` open, stop the
    run's processes, apply ``change`` and let them go on. Returns (exit status, stdout,
    stderr). (Without the stop this was a race the reader could win: the C loops read the
    16 MB archive in about 0.1 s, less than a loaded machine took to make the change.)"""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "prebake", "inspect", *map(str, args)],
                                stdout=o, stderr=e, env=support.tool_env(None))
        try:
            deadline = time.monotonic() + 60
            while (opener := _opener(proc.pid, victim.resolve())) is None:
                assert proc.poll() is None, "the run ended before it opened the file"
                assert time.monotonic() < deadline, "the file was never opened"
                time.sleep(0.001)
            # the file's size is taken by fstat right after the open, before any read: stopped
            # in between, the run would take the changed file for the one it opened (a
            # truncated archive, not a change while read). One read more than now, by the
            # process that opened it (a worker reading another path counts for nothing), is
            # past it.
            reads = _reads(opener)
            while _reads(opener) <= reads:
                assert proc.poll() is None, "the run ended before it read the file"
                assert time.monotonic() < deadline, "the file was never read"
            stopped = _signal_tree(proc.pid, signal.SIGSTOP)
            try:
                change(victim)
            finally:
                for p in stopped:
                    _signal(p, signal.SIGCONT)
            code = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return code, out.read_bytes(), err.read_text()


def _reads(pid: int) -> int:
    """Read calls made so far by ``pid`` (``syscr`` counts ``pread``); -1 once it ended."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return -1
    return sum(int(line.split()[1]) for line in lines if line.startswith("syscr:"))


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:  # it ended meanwhile
        return False
    return True


def _signal_tree(pid: int, sig: signal.Signals) -> list[int]:
    """``sig`` to ``pid`` and its descendants; the ones that got it."""
    return [p for p in _tree(pid) if _signal(p, sig)]


def _truncate(path: Path) -> None:
    os.truncate(path, 4096)


def _replace(path: Path) -> None:
    spare = path.with_name("spare.a")
    shutil.copyfile(SMALL[0], spare)
    spare.replace(path)


@pytest.mark.parametrize("change", [_truncate, _replace], ids=["truncated", "replaced"])
def test_one_path_changed_while_read_is_one_line_and_exit_2(
        tmp_path: Path, change: Callable[[Path], None]) -> None:
    victim = tmp_path / "big.a"
    shutil.copyfile(BIG, victim)
    code, out, err = _run_and_change(["--symbols", victim], victim, change, tmp_path)
    assert code == 2, (code, err)  # not -7 (SIGBUS), not 135
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"prebake: error: {victim}: ")
    assert "while it was read" in lines[0]
    assert out == b""  # nothing of its facts or symbols


def test_one_path_changed_while_read_gives_whole_json(tmp_path: Path) -> None:
    victim = tmp_path / "big.a"
    shutil.copyfile(BIG, victim)
    code, out, err = _run_and_change(["--json", "--symbols", victim], victim, _truncate,
                                     tmp_path)
    assert code == 2, err
    assert err == ""  # the error is the result's own
    doc = json.loads(out)  # whole, not cut
    [result] = doc["results"]
    assert result["path"] == str(victim)
    assert "changed while it was read" in result["error"]
    assert "members" not in result


@pytest.mark.parametrize("flags", [["--symbols"], ["--json", "--symbols"]],
                         ids=["text", "json"])
def test_several_paths_keep_the_other_results_in_order(tmp_path: Path,
                                                       flags: list[str]) -> None:
    victim = tmp_path / "big.a"
    shutil.copyfile(BIG, victim)
    paths = [SMALL[0], victim, SMALL[1]]
    code, out, err = _run_and_change([*flags, *paths], victim, _truncate, tmp_path)
    assert code == 0, err  # the other paths were read
    # the error: one line on stderr, or (--json) the result's "error"
    lines = err.splitlines()
    if "--json" in flags:
        assert lines == []
    else:
        assert len(lines) == 1 and lines[0].startswith(f"prebake: error: {victim}: "), err
        assert "changed while it was read" in lines[0]
    # the others, complete and in input order: the same bytes as when read alone
    alone = [support.prebake("inspect", *flags, p).stdout for p in (SMALL[0], SMALL[1])]
    if "--json" in flags:
        results = json.loads(out)["results"]
        assert [r["path"] for r in results] == [str(p) for p in paths]
        assert "changed while it was read" in results[1]["error"]
        assert [results[0], results[2]] == [json.loads(a)["results"][0] for a in alone]
    else:
        assert out.decode() == alone[0] + alone[1]
