"""A unit's progress: the build tool's own count read from real ninja, CMake-Makefile and make
output, the estimate from the last build (written, read back, refused when it is not one), and
the plain text a CI log gets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.bake.progress import (
    Count,
    Mark,
    Status,
    Timing,
    Tracker,
    read_timing,
    tool_count,
    write_timing,
)
from prebake.printable import printable

needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None
                                 or shutil.which("make") is None, reason="needs cmake, ninja, make")

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(counted C)
add_library(counted STATIC a.c b.c c.c d.c e.c)
add_executable(tool main.c)
target_link_libraries(tool counted)
"""


def project(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    for n in "abcde":
        (src / f"{n}.c").write_text(f"int {n}(void) {{ return 1; }}\n")
    (src / "main.c").write_text("int a(void);\nint main(void) { return a() - 1; }\n")
    return src


def output(cmd: list[str], cwd: Path) -> list[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, "CLICOLOR_FORCE": "0"})
    return proc.stdout.splitlines()


@needs_cmake
def test_ninjas_count_from_a_real_build(tmp_path: Path) -> None:
    src = project(tmp_path)
    output(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b")], tmp_path)
    lines = output(["cmake", "--build", str(tmp_path / "b"), "-j", "1"], tmp_path)
    counts = [c for c in map(tool_count, lines) if c is not None]
    assert counts, lines
    total = counts[0].total
    assert total >= 8  # five objects, the archive, main.o, the link
    assert [c.done for c in counts] == list(range(1, total + 1))
    assert all(c.total == total and not c.percent_only for c in counts)
    assert counts[-1].fraction == 1.0 and counts[-1].text() == f"[{total}/{total}]"


@needs_cmake
def test_cmakes_makefile_percentages_from_a_real_build(tmp_path: Path) -> None:
    src = project(tmp_path)
    output(["cmake", "-G", "Unix Makefiles", "-S", str(src), "-B", str(tmp_path / "b")],
           tmp_path)
    lines = output(["cmake", "--build", str(tmp_path / "b"), "-j", "1"], tmp_path)
    counts = [c for c in map(tool_count, lines) if c is not None]
    assert len(counts) >= 8, lines
    assert all(c.percent_only and c.total == 100 for c in counts)
    done = [c.done for c in counts]
    assert done == sorted(done) and done[-1] == 100 and done[0] < 50
    assert counts[-1].text() == "[100%]"


def test_make_without_a_count_is_counted_by_lines(tmp_path: Path) -> None:
    """FFmpeg's make prints ``CC libavcodec/…`` lines and no count: the fraction is the
    line count against the last build's."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    (tmp_path / "Makefile").write_text(
        "OBJS = a.o b.o c.o d.o\n"
        "all: $(OBJS)\n"
        "$(OBJS):\n\t@echo 'CC\tlibavcodec/$@'\n\t@touch $@\n")
    lines = output(["make", "-j1"], tmp_path)
    assert lines == [f"CC\tlibavcodec/{n}.o" for n in "abcd"]
    assert all(tool_count(line) is None for line in lines)
    now = [0.0]
    last = Timing(100.0, 8, (Mark(2, 10.0), Mark(8, 90.0)))
    tracker = Tracker(last, clock=lambda: now[0], t0=0.0)
    for i, line in enumerate(lines, 1):
        now[0] = i * 10.0
        tracker.line(line)
    status = tracker.status()
    assert status.count is None
    assert status.fraction == 0.5  # 4 of the last build's 8 lines
    assert status.text(now[0]).startswith("50 %")


def test_the_estimate_follows_the_last_build_at_this_builds_speed() -> None:
    last = Timing(2000.0, 100, tuple(Mark(n, n * 18.0) for n in range(10, 101, 10)))
    now = [0.0]
    seen: list[Status] = []
    tracker = Tracker(last, seen.append, clock=lambda: now[0], t0=0.0)
    for n in range(1, 51):  # the first half of the lines, twice as fast as last time
        now[0] = n * 9.0
        tracker.line(f"[{n}/100] CXX obj{n}.o")
    status = tracker.status()
    assert status.count == Count(50, 100)
    # last time: line 50 at 900 s of 2000 s; this build got there in 450 s: half of 1100 s
    assert status.left == pytest.approx(550.0)
    assert status.text(now[0]) == "[50/100] 50 % ~9 min left"
    assert status.left_now(now[0] + 300) == pytest.approx(250.0)
    assert status.text(now[0] + 300) == "[50/100] 50 % ~4 min left"
    assert status.text(now[0] + 600) == "[50/100] 50 % <1 min left"
    assert len(seen) == 50 and seen[-1] == status


def test_a_warm_rebuild_after_a_cold_build_is_estimated_at_its_own_pace() -> None:
    """The last build was cold (an hour); this one reaches the same lines 30 times sooner."""
    last = Timing(3600.0, 1000, tuple(Mark(n, n * 3.4) for n in range(50, 1001, 50)))
    now = [0.0]
    tracker = Tracker(last, clock=lambda: now[0], t0=0.0)
    for n in range(1, 501):
        now[0] = n * 3.4 / 30
        tracker.line(f"[{n}/1000] CXX obj{n}.o")
    # the last build had 1900 s to go from line 500; at this pace that is 63 s
    assert tracker.status().left == pytest.approx(1900 / 30)
    assert tracker.status().text(now[0]) == "[500/1000] 50 % ~1 min left"


def test_without_a_last_build_the_count_s_rate_says_how_long() -> None:
    now = [0.0]
    tracker = Tracker(None, clock=lambda: now[0], t0=0.0)
    now[0] = 60.0
    tracker.line("-- Configuring done")  # before the count: not part of its rate
    for n in range(1, 21):
        now[0] = 60.0 + n * 3.0
        tracker.line(f"[{n:3d}%] Building CXX object x{n}.o")
    status = tracker.status()
    assert status.count == Count(20, 100, percent_only=True)
    # the count started at 63 s; 20 % in 57 s: 228 s more
    assert status.left == pytest.approx(57.0 * 4)
    assert status.text(now[0]) == "[ 20%] ~4 min left"


def test_the_timing_is_written_and_read_back(tmp_path: Path) -> None:
    now = [0.0]
    tracker, why = Tracker.for_unit(tmp_path / "u.timing.json", None, 0.0)
    assert why == "" and tracker.last is None
    tracker._clock = lambda: now[0]  # the same clock the tracker was started on
    for n in range(1, 1001):
        now[0] = n * 0.5
        tracker.line(f"line {n}")
    now[0] = 530.0  # guards, packaging: after the last line
    tracker.save()
    back, why = read_timing(tmp_path / "u.timing.json")
    assert why == "" and back is not None
    assert back.seconds == 530.0 and back.lines == 1000
    assert 200 <= len(back.marks) <= 201 and back.marks[-1] == Mark(1000, 500.0)
    assert back.seconds_at(500) == pytest.approx(250.0, abs=1.0)
    assert back.seconds_at(5000) == 530.0
    again, _ = Tracker.for_unit(tmp_path / "u.timing.json", None, 0.0)
    assert again.last == back


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"seconds": -1, "lines": 3, "marks": []}',
                                     b'{"seconds": 1, "lines": 3}', b"x" * (2 << 20)])
def test_a_record_that_is_not_a_timing_gives_no_estimate_and_says_why(
        tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "u.timing.json"
    path.write_bytes(content)
    timing, why = read_timing(path)
    assert timing is None
    assert why.startswith(f"{path}: ") and "no estimate this time" in why
    assert "\n" not in why


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "u.timing.json"
    os.mkfifo(path)
    timing, why = read_timing(path)  # returns: never blocks on the FIFO
    assert timing is None and "FIFO" in why


def test_plain_text_has_no_control_characters() -> None:
    # tab and newline stay; a bare CR becomes a newline (it would overwrite the line)
    assert printable("\x1b[1m\x1b[31merror:\x1b[0m bad\tthing\r\x07\x9b") == "error: bad\tthing\n"
    line = "[ 12%] \x1b[32mBuilding CXX object a.o\x1b[0m"
    assert tool_count(line) == Count(12, 100, percent_only=True)
    status = Status(0.0, Count(3, 4), 0.75, 400.0)
    assert status.text(0.0) == "[3/4] 75 % ~7 min left"
    assert all(ch >= " " for ch in status.text(0.0))


def test_what_is_not_a_count() -> None:
    for line in ("[5/3] more done than total", "[0/0] nothing", "[ 120%] over",
                 "  [1/2] indented", "x [1/2] inside", "[12 %] spaced", "[1/2]no space"):
        assert tool_count(line) is None, line
    assert tool_count("[1/2] CXX a.o") == Count(1, 2)
    assert json.loads(json.dumps(Timing(1.0, 0, ()).to_json())) == {
        "seconds": 1.0, "lines": 0, "marks": []}
    write_timing  # noqa: B018 (imported for the round trip above through Tracker.save)
