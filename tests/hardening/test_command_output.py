"""What a failing command wrote, as ``prebake build`` shows it: real commands, real builds.

- terminal escapes (OSC 0 the window title, OSC 52 the clipboard, CSI 2J, cursor-up and
  erase-line, their 8-bit forms, a bare CR) and GitHub workflow commands (``::add-mask::``,
  ``::error::``, ``##[warning]``) reach neither the terminal nor the CI log: not in the failure's
  log tail, not in the progress lines, not in ``--json``;
- a log line or a command holding markup (``[/opt/zlib]``, ``[/x]``) prints verbatim, through
  the live display in a terminal too: no ``MarkupError``, no thread traceback, the table shown;
- a failing command that printed 200 MB costs its message no more memory than one that
  printed a line (the log's tail is read from its end);
- the kept copy of a configure script's ``config.log`` is masked like the build log; a command
  failing right after ``configure`` is reported as itself, with its own error.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from tests import support

PLATFORM = "linux-x86_64"
PROXY_PASSWORD = "PxKeptCopy55w"

RECIPE = """\
from prebake.recipes import Build, Outputs, Recipe

RECIPE = Recipe(
    name="mini",
    pin="mini",
    platforms={{"*": Build(commands={commands!r}, config_log={config_log!r})}},
    outputs=Outputs(libs={{"*": ("lib/libmini.a",)}}),
)
"""

# What a hostile (or merely colourful) command prints before it fails.
ESCAPES = {
    "osc-title": "\x1b]0;pwned title\x07",
    "osc-clipboard": "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x1b\\",
    "clear-screen": "\x1b[2J\x1b[H",
    "cursor-up-erase": "\x1b[1A\x1b[2K",
    "c1-csi": "\u009b2J",
    "c1-osc": "\u009d0;c1 title\u009c",
}
WORKFLOW = ("::add-mask::ghp_notreally", "  ::error file=x.c::forged failure",
            "::stop-commands::abc", "note ##[warning]forged")


def _workspace(tmp_path: Path, commands: tuple[str | tuple[str, ...], ...],
               config_log: str = "") -> Path:
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(support.gcc_workspace(
        "outdemo", 'mini = "1.0"', "core", '["mini"]', env_unset=("CFLAGS", "LDFLAGS"),
        more=""))
    (ws / "recipes" / "mini.py").write_text(RECIPE.format(commands=commands,
                                                          config_log=config_log))
    return ws


def _script(tmp_path: Path, name: str, text: str) -> str:
    """A shell script beside the workspace; the command that runs it."""
    path = tmp_path / "scripts" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return f"sh {path}"


def _in_terminal(ws: Path, *args: str, env: dict[str, str] | None = None
                 ) -> tuple[int, str]:
    """``prebake -C WS ARGS`` with stdout and stderr on a real pseudo-terminal (rich's live
    display runs), and everything it wrote there."""
    full = support.tool_env({"COLUMNS": "200", "LINES": "50", "TERM": "xterm", **(env or {})})
    pid, fd = pty.fork()
    if pid == 0:  # the child: its standard streams are the terminal
        os.execve(sys.executable, [sys.executable, "-m", "prebake", "-C", str(ws), *args], full)
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def _hostile(tmp_path: Path) -> str:
    lines = [f"echo '{name}: {seq}'" for name, seq in ESCAPES.items()]
    lines += [f"echo '{w}'" for w in WORKFLOW]
    lines += ["printf 'visible\\rhidden by CR\\n'", "echo 'mini.c:1: error: the real error'",
              "exit 3"]
    return _script(tmp_path, "hostile.sh", "\n".join(lines) + "\n")


def _no_escape_left(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text and "\x9d" not in text, repr(text)
    assert "\x07" not in text and "\r" not in text, repr(text)
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line


def test_escapes_and_workflow_commands_never_reach_a_ci_log(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, (_hostile(tmp_path),))
    proc = support.prebake("-C", ws, "build")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    shown = proc.stdout + proc.stderr
    _no_escape_left(shown)
    # the command's words are still there, as text: the tail says what happened
    assert "mini.c:1: error: the real error" in shown
    assert "\\::add-mask::ghp_notreally" in shown and "#\\#[warning]forged" in shown
    assert "visible\nhidden by CR" in shown
    assert "pwned title" not in shown  # an escape goes whole, with its payload
    # --json: every control character escaped, none raw
    proc = support.prebake("-C", ws, "build", "--json")
    (unit,) = json.loads(proc.stdout)["units"]
    assert "\u009b" in unit["message"]  # the data kept, as data
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", proc.stdout), repr(proc.stdout)


def test_escapes_never_reach_the_terminal_through_the_live_display(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, (_hostile(tmp_path),))
    rc, shown = _in_terminal(ws, "build")
    assert rc == 1, shown
    for seq in ("\x1b]0;", "\x1b]52;", "\x1b[2J", "\x9b", "\x9d"):
        assert seq not in shown, (seq, shown)
    assert "mini.c:1: error: the real error" in shown
    assert not any(line.lstrip().startswith("::") for line in re.sub(
        r"\x1b\[[0-?]*[ -/]*[@-~]", "", shown).splitlines()), shown


def test_markup_in_a_config_log_and_a_command_prints_verbatim(tmp_path: Path) -> None:
    """The issue's two: a config.log ending ``error: [/opt/zlib] holds no zlib.h`` (the unit's
    one-line failure), and a command holding ``[/x]`` (its progress line), in a terminal."""
    configure = _script(tmp_path, "configure", "echo 'checking for zlib... [/x] [bold]no'\n"
                                         "echo 'configure:9: error: [/opt/zlib] holds no "
                                         "zlib.h' > config.log\nexit 1\n")
    # (a second long: the live display shows the command line before it fails)
    ws = _workspace(tmp_path, (("sh", "-c", f"echo [/x]; sleep 1; exec {configure}"),),
                    config_log="{build}/config.log")
    rc, shown = _in_terminal(ws, "build")
    assert rc == 1, shown
    assert "Traceback" not in shown and "MarkupError" not in shown, shown
    assert "internal error" not in shown, shown
    assert "configure failed: [/opt/zlib] holds no zlib.h" in shown, shown
    assert "prebake build" in shown  # the table was printed
    assert "sh -c 'echo [/x]; sleep 1; exec sh" in shown  # as the progress showed it


def test_a_command_that_printed_200_mb_costs_its_message_no_memory(tmp_path: Path) -> None:
    """The issue measured 641 MiB of RSS for 200 MB of output: the message read the whole
    log. Its tail is read from the end now: the whole build stays under 150 MiB."""
    line = "x" * 4095
    loud = _script(tmp_path, "loud.sh", f"yes '{line}' | head -c 200000000\n"
                                  "echo 'mini.c:9: error: after all that'\nexit 3\n")
    ws = _workspace(tmp_path, (loud,))
    rc, out, rss_kib = _measured([sys.executable, "-m", "prebake", "-C", str(ws), "build",
                                  "--json"])
    print(f"RSS of `prebake build` after 200 MB of output: {rss_kib / 1024:.0f} MiB")
    (unit,) = json.loads(out)["units"]
    assert rc == 1 and unit["state"] == "failed", unit
    assert "mini.c:9: error: after all that" in unit["message"]
    assert len(unit["message"]) < 100_000  # 30 lines, each cut at the tail's 64 KiB
    log = next((ws / ".prebake" / "logs").glob("mini*.log"))
    assert log.stat().st_size > 200_000_000
    assert rss_kib < 150 * 1024, rss_kib


def _measured(argv: list[str]) -> tuple[int, str, int]:
    """Exit code, stdout and the largest resident set (KiB) of ``argv`` and what it waited
    for (``wait4``'s own account, not a sample)."""
    import threading

    proc = subprocess.Popen(argv, env=support.tool_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()))  # type: ignore
    drain.start()
    out = proc.stdout.read()
    drain.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return proc.returncode, out.decode(), usage.ru_maxrss


def test_the_kept_config_log_is_masked_like_the_build_log(tmp_path: Path) -> None:
    configure = _script(tmp_path, "configure", "echo \"configure:3: using proxy $http_proxy\" "
                                         "> config.log\n"
                                         "echo 'configure:9: error: no zlib' >> config.log\n"
                                         "exit 1\n")
    ws = _workspace(tmp_path, (configure,), config_log="{build}/config.log")
    env = {"http_proxy": f"http://proxyuser:{PROXY_PASSWORD}@127.0.0.1:3128"}
    proc = support.prebake("-C", ws, "build", "--json", env=env)
    (unit,) = json.loads(proc.stdout)["units"]
    kept = ws / ".prebake" / "logs" / f"mini--{PLATFORM}.config.log"
    assert unit["message"] == f"mini on {PLATFORM}: configure failed: no zlib (its log: {kept})"
    text = kept.read_text()
    assert "configure:9: error: no zlib" in text
    assert "using proxy http://***@127.0.0.1:3128" in text, text
    for path in (ws / ".prebake" / "logs").iterdir():
        assert PROXY_PASSWORD not in path.read_text(), path


def test_a_command_failing_right_after_configure_is_reported_as_itself(tmp_path: Path) -> None:
    """configure succeeds (its log ends with config.status's lines), the next command fails
    within the same second: its own error is the message, not "configure failed"."""
    configure = _script(tmp_path, "configure", "echo 'configure:5: checking for gcc... gcc' "
                                         "> config.log\n"
                                         "echo 'config.status:1: creating Makefile' "
                                         ">> config.log\n")
    make = _script(tmp_path, "make.sh", "echo 'mini.c:3: undefined reference to mini_gone' >&2\n"
                                  "exit 2\n")
    ws = _workspace(tmp_path, (configure, make), config_log="{build}/config.log")
    proc = support.prebake("-C", ws, "build", "--json")
    (unit,) = json.loads(proc.stdout)["units"]
    assert unit["message"].startswith("mini: command 2 failed (exit status 2): sh "), unit
    assert "mini.c:3: undefined reference to mini_gone" in unit["message"]
    assert "configure failed" not in unit["message"]
