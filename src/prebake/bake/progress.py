"""How far a unit's build is: the build tool's own count, and an estimate from its last build.

A from-source unit runs for minutes (the flagship's wasm leg: 16 cold); its live line said
only what step it was in. Every line its commands print passes through :meth:`Tracker.line`:

- the build tool's count, where it prints one: ninja's ``[N/M]``, the ``[ x%]`` of CMake's
  Makefile generator (both are what the tool itself says; a later command's count replaces an
  earlier one's);
- an estimate from the last successful build of the same unit (:class:`Timing`, kept beside its
  log: ``.prebake/logs/<unit>.timing.json``): when it reached each output line and how long it
  took in all. The time left is the last build's remaining time from the line reached now,
  scaled by how fast this build got there (a warm rebuild after a cold build reaches its
  compile lines far sooner: the estimate shrinks with it). A tool without a count (FFmpeg's
  make prints ``CC libavcodec/…`` lines) gets its fraction from the last build's line count;
- with no last build, the time left of the current command from its own count's rate.

:class:`Status` is what a display shows; its :meth:`Status.text` is the plain line
(``[1234/2051] 60 % ~6 min left``) that also goes to a CI log, free of control characters.
What a command wrote is shown only through ``prebake.printable``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from prebake.bounded import read_bounded_or_none
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_text
from prebake.records import Record, checker, load, problem, rule

# ninja's default status (NINJA_STATUS "[%f/%t] "), and CMake's Makefile generator's progress
NINJA = re.compile(r"\[(\d{1,9})/(\d{1,9})\] ")
CMAKE_MAKE = re.compile(r"\[\s{0,2}(\d{1,3})%\] ")
MARKS = 200  # at most this many (lines, seconds) points kept of a build
MARK_EVERY = 1.0  # seconds between two points while the build runs
MIN_BASE = 5.0  # seconds of the last build before its speed is compared with this one's
MIN_FRACTION = 0.02  # of a count, before its rate says anything
_MAX_RECORD = 1 << 20
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")  # a compiler's colours before a count


@dataclass(frozen=True)
class Count:
    """A build tool's own count: ``done`` of ``total`` (``total`` 100 for a percentage)."""

    done: int
    total: int
    percent_only: bool = False

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        return f"[{self.done:3d}%]" if self.percent_only else f"[{self.done}/{self.total}]"


def tool_count(line: str) -> Count | None:
    """The count a build tool's status line starts with, or ``None``."""
    line = _ANSI.sub("", line)
    if (m := NINJA.match(line)) is not None:
        done, total = int(m[1]), int(m[2])
        return Count(done, total) if total > 0 and done <= total else None
    if (m := CMAKE_MAKE.match(line)) is not None and int(m[1]) <= 100:
        return Count(int(m[1]), 100, percent_only=True)
    return None


@dataclass(frozen=True)
class Mark(Record):
    """The last build had printed ``lines`` lines ``seconds`` after it started."""

    lines: int = field(metadata=rule(minimum=0))
    seconds: float = field(metadata=rule(minimum=0))


@dataclass(frozen=True)
class Timing(Record):
    """A unit's last successful build: how long it took, how many lines its commands printed,
    and when it had printed how many."""

    seconds: float = field(metadata=rule("the unit's build, start to published", minimum=0))
    lines: int = field(metadata=rule("lines its commands printed", minimum=0))
    marks: tuple[Mark, ...] = field(metadata=rule(maxItems=MARKS + 1))

    def seconds_at(self, lines: int) -> float:
        """When the last build had printed ``lines`` lines (interpolated between marks)."""
        before = Mark(0, 0.0)
        for m in self.marks:
            if m.lines >= lines:
                span = m.lines - before.lines
                part = (lines - before.lines) / span if span else 1.0
                return before.seconds + part * (m.seconds - before.seconds)
            before = m
        return before.seconds if lines <= self.lines else self.seconds


def read_timing(path: Path) -> tuple[Timing | None, str]:
    """The record at ``path`` (``None`` when there is none), and why it was not read when it
    exists but is not a timing record: the estimate is then left out, never guessed."""
    try:
        raw = read_bounded_or_none(path, _MAX_RECORD, "timing record")
        if raw is None:
            return None, ""
        data = json.loads(raw)
    except (PrebakeError, OSError, ValueError) as exc:
        return None, f"{path}: not read ({exc}); no estimate this time"
    wrong = problem(checker(Timing), data)
    if wrong is not None:
        return None, f"{path}: {wrong}; no estimate this time"
    return load(Timing, data), ""


def write_timing(path: Path, timing: Timing) -> None:
    atomic_write_text(path, json.dumps(timing.to_json()) + "\n")


@dataclass(frozen=True)
class Status:
    """What the display shows of a running unit at ``at`` (``time.monotonic``)."""

    at: float
    count: Count | None  # the build tool's, from the current command
    fraction: float | None  # how far, 0..1: the count's, else the last build's lines
    left: float | None  # seconds, as estimated at ``at``

    def left_now(self, now: float) -> float | None:
        return None if self.left is None else max(0.0, self.left - (now - self.at))

    def text(self, now: float | None = None) -> str:
        """``[1234/2051] 60 % ~6 min left``: the parts there are, plain text."""
        parts = []
        if self.count is not None:
            parts.append(self.count.text())
        if self.fraction is not None and (self.count is None or not self.count.percent_only):
            parts.append(f"{self.fraction * 100:.0f} %")
        left = self.left_now(time.monotonic() if now is None else now)
        if left is not None:
            parts.append(_duration(left))
        return " ".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return "<1 min left"
    if seconds < 3600:
        return f"~{seconds / 60:.0f} min left"
    return f"~{seconds / 3600:.1f} h left"


Sink = Callable[[Status], None]


class Tracker:
    """One unit's progress: fed every output line of its commands (from the thread that
    reads them), reporting each line's :class:`Status` to ``sink`` (a display keeps the
    latest and shows it at its own pace)."""

    def __init__(self, last: Timing | None, sink: Sink | None = None, *, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.last = last
        self._sink = sink
        self._clock = clock
        self._t0 = clock() if t0 is None else t0
        self._lock = threading.Lock()
        self.lines = 0
        self._marks: list[Mark] = []
        self._count: Count | None = None
        self._count_since = 0.0
        self._status = Status(self._t0, None, None, None)
        self._last_t = 0.0  # when the last line came, from the start
        self.path: Path | None = None  # where :meth:`save` writes the record

    @classmethod
    def for_unit(cls, path: Path, sink: Sink | None, t0: float) -> tuple[Tracker, str]:
        """The tracker of a unit whose timing record is ``path`` (read now, written by
        :meth:`save`), and why an existing record was not read (``""``: it was, or none)."""
        last, why = read_timing(path)
        tracker = cls(last, sink, t0=t0)
        tracker.path = path
        return tracker, why

    def save(self) -> None:
        """Keep this build's timing for the next build of the unit (a successful build's
        that ran commands: ``--guards-only`` and a repackage leave the last one)."""
        if self.path is not None and self.lines:
            write_timing(self.path, self.timing())

    def line(self, text: str) -> None:
        now = self._clock()
        with self._lock:
            self.lines += 1
            t = now - self._t0
            self._last_t = t
            if not self._marks or t - self._marks[-1].seconds >= MARK_EVERY:
                self._marks.append(Mark(self.lines, round(t, 2)))
            count = tool_count(text)
            if count is not None:
                if self._count is None or count.fraction < self._count.fraction - 0.5:
                    self._count_since = t  # a new count (the next command's)
                self._count = count
            status = self._status = self._estimate(now, t, text)
        if self._sink is not None:
            self._sink(status)

    def _estimate(self, now: float, t: float, text: str) -> Status:
        count, last = self._count, self.last
        fraction = count.fraction if count is not None else None
        left = None
        if last is not None and last.seconds > 0:
            tau = last.seconds_at(self.lines)
            # this build's pace against the last one's (a warm rebuild after a cold build of
            # the flagship: about 1/30), bounded where a few seconds would say too much
            speed = t / tau if tau >= MIN_BASE and t >= MIN_BASE else 1.0
            left = max(0.0, min(100.0, max(0.01, speed)) * (last.seconds - tau))
            if fraction is None and last.lines:
                fraction = min(0.99, self.lines / last.lines)
        elif count is not None and count.fraction >= MIN_FRACTION:
            spent = t - self._count_since
            left = spent * (1 - count.fraction) / count.fraction
        return Status(now, count, fraction, left)

    def status(self) -> Status:
        with self._lock:
            return self._status

    def timing(self, seconds: float | None = None) -> Timing:
        """This build's record, ``seconds`` long (default: until now)."""
        with self._lock:
            total = self._clock() - self._t0 if seconds is None else seconds
            marks = self._marks
            if len(marks) > MARKS:
                step = len(marks) / MARKS
                marks = [marks[int(i * step)] for i in range(MARKS)]
            if self.lines and (not marks or marks[-1].lines != self.lines):
                marks = [*marks, Mark(self.lines, round(self._last_t, 2))]
            return Timing(round(total, 2), self.lines, tuple(marks))
