"""``inspect`` forks its workers before parsing when the command line names several paths;
whatever the command line turns out to be, no worker outlives the command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prebake.commands._early import scan as _scan

LIB = Path("/usr/lib/llvm-14/lib/libLLVMDemangle.a")


@pytest.mark.parametrize(("argv", "paths", "symbols"), [
    (["inspect", "a"], 1, False),
    (["inspect", "--json", "a", "b"], 2, False),
    (["-C", "ws", "inspect", "--symbols", "a", "b", "c"], 3, True),
    (["inspect", "--allowed-signers", "keys", "a"], 1, False),
    (["inspect", "-C", "dir", "a", "--", "-odd", "b"], 3, False),
    (["--debug", "inspect"], 0, False),
    (["-C", "inspect", "inspect", "a", "b"], 2, False),  # a folder named like the command
    (["--workspace=inspect", "inspect", "inspect"], 1, False),  # a binary named so
])
def test_the_scan_counts_paths_not_option_values(argv: list[str], paths: int,
                                                 symbols: bool) -> None:
    """What ``prestart`` is given: the arguments after the command the CLI found."""
    from prebake.cli import _command_name

    name, args_at = _command_name(argv)
    assert name == "inspect"
    assert _scan(argv[args_at:]) == (paths, symbols)


def test_other_commands_are_named_where_they_stand() -> None:
    from prebake.cli import _command_name

    assert _command_name(["plan"]) == ("plan", 1)
    assert _command_name(["-C", "inspect", "plan", "x"]) == ("plan", 3)
    assert _command_name(["--bogus", "inspect"]) == (None, 0)
    assert _command_name(["-C", "ws"]) == (None, 0)


def _workers_of(marker: str) -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and b"prebake" in cmd:
                out.append(proc.name)
    return out


@pytest.mark.skipif(sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2,
                    reason="the early pool forks on Linux with two cores")
@pytest.mark.parametrize("bad", [["--no-such-option"], ["--help"]])
def test_a_command_line_that_ends_before_run_leaves_no_worker(tmp_path: Path,
                                                              bad: list[str]) -> None:
    marker = f"prestart-{os.getpid()}-{bad[0].strip('-')}"
    a, b = tmp_path / f"{marker}-a.a", tmp_path / f"{marker}-b.a"
    proc = subprocess.run([sys.executable, "-m", "prebake", "inspect", *bad, str(a), str(b)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == (0 if bad == ["--help"] else 2), proc.stderr
    deadline = time.monotonic() + 5
    while _workers_of(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _workers_of(marker) == []


@pytest.mark.skipif(not LIB.is_file(), reason="needs llvm-14-dev")
def test_the_fast_exit_flushes_everything_through_a_pipe() -> None:
    many = [str(LIB)] * 40
    proc = subprocess.run([sys.executable, "-m", "prebake", "inspect", "--symbols", *many],
                          capture_output=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    one = subprocess.run([sys.executable, "-m", "prebake", "inspect", "--symbols", str(LIB)],
                         capture_output=True, check=True, timeout=120).stdout
    assert proc.stdout == one * 40
