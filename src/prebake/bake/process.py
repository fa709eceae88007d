"""A recipe's commands: their ``{placeholders}`` filled in, each run with its output going to
the unit's log, killable as a group.

A command is an argv tuple or a string split like a shell line (no shell features). A token that
is exactly ``{cc}``/``{cxx}``/``{ar}`` (or ``{release[NAME]}``) expands to the whole argv
(``python -m ziglang cc -target …``, none at all for an empty one); inside a longer token
(``CC={cc}``) the argv is joined with spaces (:class:`Context`, :func:`expand`).

Each command starts in its own session so that Ctrl-C or a cancelled build kills the whole
process tree (make, ninja and every compiler under them), not just the direct child. Its output
reaches the log through a pipe, line by line through ``prebake.redact`` like every line prebake
writes there itself: a command that echoes a proxy setting or a token from its environment
does not put it in the log.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TextIO

from prebake.errors import PrebakeError
from prebake.redact import env_secrets, redact_env, redact_text
from prebake.variables import FLAG_VARIABLES


@dataclass(frozen=True)
class Context:
    """Values for the placeholders of one recipe build on one platform."""

    values: Mapping[str, str]
    pins: Mapping[str, str]
    argv: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    host_tools: Mapping[str, str] = field(default_factory=dict)  # name -> absolute path
    # ``{release[NAME]}``: the recipe's per-release arguments for the pinned version
    release: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ``{tools[NAME]}``: one word on PATH per tool (prebake.toolchain.configure)
    tools: Mapping[str, str] = field(default_factory=dict)

    def fill(self, token: str, where: str) -> str:
        scalars = {**self.values, **{k: shlex.join(v) for k, v in self.argv.items()}}
        try:
            return token.format(pins=dict(self.pins), host_tools=dict(self.host_tools),
                                tools=dict(self.tools),
                                release={k: shlex.join(v) for k, v in self.release.items()},
                                **scalars)
        except KeyError as exc:
            raise PrebakeError(f"{where}: unknown placeholder {{{exc.args[0]}}} in {token!r}"
                               ) from None
        except (IndexError, ValueError) as exc:
            raise PrebakeError(f"{where}: bad placeholder in {token!r}: {exc}") from None


def expand(command: Sequence[str] | str, ctx: Context, where: str) -> list[str]:
    """One command as an argv list with every placeholder filled."""
    tokens = shlex.split(command) if isinstance(command, str) else list(command)
    out: list[str] = []
    for tok in tokens:
        bare = tok[1:-1] if tok.startswith("{") and tok.endswith("}") else None
        if bare is not None and bare in ctx.argv:
            out.extend(ctx.argv[bare])
        elif bare is not None and bare.startswith("release[") and bare.endswith("]") \
                and bare[len("release["):-1] in ctx.release:
            out.extend(ctx.release[bare[len("release["):-1]])
        else:
            out.append(ctx.fill(tok, where))
    return out


TAIL_LINES = 30
#: how much of the log's end a failure's message reads: 30 lines of a compiler's errors fit
#: many times over, and a command that printed 200 MB costs no more than one that printed 2
TAIL_BYTES = 64 << 10
# after the command exits, how long its output may still drain (a daemon it started may hold
# the pipe open for ever: its later output is not the command's)
DRAIN_SECONDS = 5.0
MAX_LINE = 1 << 20  # a longer line is written in pieces of this size


class BuildLog:
    """One unit's log: its commands, environment and everything they printed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # open for the unit's whole life (closed by ``close``), shared by its commands
        self._fh: TextIO = open(path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._lock = threading.Lock()
        # the secret values of the environments the log has seen (scrubbed from every line)
        self._secrets: set[str] = set(env_secrets(os.environ))

    def write(self, text: str) -> None:
        self.written(text)

    def written(self, text: str) -> str:
        """Append ``text`` (redacted) as a line; returns what was written."""
        text = redact_text(text, *self._secrets)
        with self._lock:
            if self._fh.closed:  # a late line of a command's daemon, after the unit ended
                return text
            self._fh.write(text if text.endswith("\n") else text + "\n")
            self._fh.flush()
        return text

    def env(self, env: Mapping[str, str], dropped: Sequence[str]) -> None:
        self._secrets.update(env_secrets(env))
        lines = ["# environment (allowlist + platform + recipe):"]
        shown = redact_env(env)  # proxy credentials and tokens never reach a log
        lines += [f"#   {k}={shown[k]}" for k in sorted(shown)]
        if dropped:
            lines.append(f"# dropped from the caller's environment: {', '.join(dropped)}")
        absent = [k for k in FLAG_VARIABLES if k not in env]
        lines.append(f"# not set for the build: {', '.join(absent)}")
        self.write("\n".join(lines))

    def close(self) -> None:
        with self._lock:
            self._fh.close()

    def keep_copy(self, source: Path, dest: Path) -> None:
        """Copy a log a command wrote (a configure script's ``config.log``) to ``dest``
        beside this one, masked as this log masks its lines: a script's log records its
        environment (proxy credentials, tokens) as the commands' output would."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(source, "rb") as src, open(dest, "w", encoding="utf-8",
                                              errors="replace") as out:
            for raw in iter(lambda: src.readline(MAX_LINE), b""):
                out.write(redact_text(raw.decode("utf-8", "replace"), *self._secrets))

    def tail(self, n: int = TAIL_LINES, limit: int = TAIL_BYTES) -> str:
        """The log's last ``n`` lines, read from its last ``limit`` bytes only (a line cut
        there starts with ``…``)."""
        try:
            with open(self.path, "rb") as fh:
                start = max(0, fh.seek(0, os.SEEK_END) - limit)
                fh.seek(start)
                data = fh.read(limit)
        except OSError:
            return ""
        lines = data.decode("utf-8", "replace").splitlines()
        if start and lines:
            lines[0] = "…" + lines[0]
        return "\n".join(lines[-n:])


def run_logged(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: BuildLog,
               cancel: threading.Event | None = None,
               on_line: Callable[[str], None] | None = None) -> int:
    """Run ``argv``; stdout and stderr go to ``log``, and each line (redacted) to ``on_line``
    (the unit's progress: ``prebake.bake.progress``). Returns the exit status (-1:
    cancelled)."""
    log.write(f"$ cd {shlex.quote(str(cwd))} && {shlex.join(argv)}")
    cwd.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError as exc:
        log.write(f"prebake: cannot run {argv[0]}: {exc.strerror or exc}")
        return 127
    assert proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(proc.stdout, log, on_line), daemon=True)
    pump.start()
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    _kill(proc)
                    pump.join(DRAIN_SECONDS)
                    log.write("prebake: cancelled")
                    return -1
    except BaseException:  # Ctrl-C: take the whole process group down with us
        _kill(proc)
        raise
    pump.join(DRAIN_SECONDS)
    log.write(f"# exit status {rc}")
    return rc


def _pump(out: IO[bytes], log: BuildLog, on_line: Callable[[str], None] | None) -> None:
    """Copy a command's output into ``log`` line by line (each line redacted)."""
    with out:
        for raw in iter(lambda: out.readline(MAX_LINE), b""):
            line = log.written(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if on_line is not None:
                on_line(line)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
