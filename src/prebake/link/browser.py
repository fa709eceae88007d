"""Programs and pages run in real browsers: an Emscripten consumer linked against a wasm asset,
loaded the way its users load it (a page on a web server, in headless Chromium and Firefox),
with what it printed, its exit code and the console's errors handed back.

One run: a server on 127.0.0.1 (an ephemeral port, this process's thread) serves the folder
with ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy:
require-corp`` (a ``-pthread`` module's ``SharedArrayBuffer`` exists only in a cross-origin
isolated page) and each file's MIME type (``application/wasm`` for a module, which
``instantiateStreaming`` insists on); the browser starts headless in a profile of its own,
in a process group of its own, on the page; the page (``browser_page.js``, served as
``/__prebake/page.js``) posts back every event as it happens — the program's stdout and
stderr lines, its exit code (Emscripten's ``onExit``), an abort (``onAbort``: a module an
engine cannot compile or instantiate says so there, in the engine's own words), uncaught
errors and rejections, console errors — in order, one request at a time. The browser's own
log (Chromium's ``--enable-logging=stderr``, Firefox's ``devtools.console.stdout.content``)
carries every console line, workers' included, and is what a run that never finishes shows:
after ``timeout`` seconds the run stops with its last lines. The run ends when the program
exits or aborts, when the page calls ``prebake.done(value)``, when an error leaves it
nothing to wait for, or at the timeout; then the browser's whole process group is killed.

Why the page and not a debugging protocol (Chromium's DevTools protocol, Firefox's WebDriver
BiDi): both browsers take the same page, the server is the standard library's, no WebSocket
client is needed, and an event reaches the server even if the browser then hangs; the
browsers' own logs cover what the page cannot hook (console lines of workers).

``python -m prebake.link.browser [--browser chromium|firefox]… [--input FILE]… [--output
FILE]… [--root FOLDER] PROGRAM.js [ARG]…`` runs a program as ``prebake.link.wine`` runs a
Windows one, for scripts (``scripts/long-leg``, ``scripts/main-job``) and for anyone's
Emscripten output as it was linked: a script that starts itself, a ``-sMODULARIZE`` factory,
an ES module (``-sEXPORT_ES6``), with or without ``-sEXIT_RUNTIME=1`` (without it main's
return is the exit, as in Emscripten's Node loader). The harness page is at the served
folder's top, so a URL the program fetches relative to its page names that folder's file
(``--root``: a folder above the program's). A program that reads or writes files
links with ``-sFORCE_FILESYSTEM=1 -sEXPORTED_RUNTIME_METHODS=FS`` (no ``NODERAWFS``): the page
writes each ``--input`` into its file system at the same path before ``main`` and the run
writes each ``--output`` back after it exits. When ``PROGRAM.wasm`` beside it can be read,
the run also says what ``prebake.engines`` predicted for that engine and release (it runs,
or which feature it lacks) and whether the run agreed; ``--verdict`` makes that the exit code.
"""

from __future__ import annotations

import argparse
import base64
import json
import mimetypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from prebake import engines
from prebake.errors import PrebakeError
from prebake.inspect import inspect
from prebake.jsonio import atomic_write_bytes
from prebake.variables import sanitized

PAGE_JS = Path(__file__).with_name("browser_page.js")
PREFIX = "/__prebake/"
# the harness page sits at the served folder's top, so that a URL the program fetches relative
# to its page ("model.onnx") means the folder's file, as in the page its users load it from
HARNESS_PAGE = "/__prebake.html"
MAX_SNIFF = 64 << 10  # the tail of a program's JS read for how it must be started
MAX_EVENTS_BYTES = 256 << 20  # one POST of events (an output file rides in one, base64)
GRACE = 2.0  # seconds an error waits for the exit or abort that usually follows it
KILL_WAIT = 5.0
TYPES = {".wasm": "application/wasm", ".js": "text/javascript", ".mjs": "text/javascript",
         ".html": "text/html; charset=utf-8", ".json": "application/json",
         ".css": "text/css", ".txt": "text/plain; charset=utf-8", ".svg": "image/svg+xml",
         ".data": "application/octet-stream", ".onnx": "application/octet-stream"}
HARNESS = ('<!doctype html><meta charset="utf-8"><title>prebake</title><body>'
           f'<script src="{PREFIX}page.js"></script></body>\n')
# Chromium's log line for a console message, and Firefox's (devtools.console.stdout.content)
_CHROMIUM_CONSOLE = re.compile(r':CONSOLE:\d+\] "(.*)", source: (\S*) \((\d+)\)$')
_FIREFOX_CONSOLE = re.compile(r"^console\.(log|info|warn|error|debug|trace): (.*)$")
# Emscripten's last lines: an ES module's default export, a -sMODULARIZE factory's UMD export
_ES_EXPORT = re.compile(rb"\bexport\s+default\s+[A-Za-z_$][\w$]*\s*;")
_FACTORY = re.compile(rb"\bmodule\.exports\s*=\s*([A-Za-z_$][\w$]*)\s*;")


@dataclass(frozen=True)
class Browser:
    """A browser prebake knows how to start headless, and the Debian package that has it."""

    name: str
    title: str
    programs: tuple[str, ...]  # the executables, in the order they are looked for
    package: str
    engine: str  # its row in prebake.engines (chromium reports as chrome)


BROWSERS: Mapping[str, Browser] = {
    "chromium": Browser("chromium", "Chromium", ("chromium", "chromium-browser"), "chromium",
                        "chrome"),
    "firefox": Browser("firefox", "Firefox", ("firefox-esr", "firefox"), "firefox-esr",
                       "firefox"),
}
# Firefox's first start in a fresh profile: no first-run pages, no update, telemetry, safe
# browsing or captive-portal requests (this machine's closed network refuses them, and a run
# must not wait on them), no proxy between it and 127.0.0.1, console lines on its stdout.
FIREFOX_PREFS: Mapping[str, bool | int | str] = {
    "devtools.console.stdout.content": True,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "browser.sessionstore.resume_from_crash": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "app.normandy.enabled": False,
    "extensions.update.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.proxy.type": 0,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
}
# Chromium headless as the machine notes say it runs here: without the background-networking
# flags its connections to Google's hosts are refused many at a time; as root only without
# its sandbox
CHROMIUM_FLAGS = ("--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--no-default-browser-check", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-extensions",
                  "--no-proxy-server", "--enable-logging=stderr", "--v=0")


@dataclass(frozen=True)
class Engine:
    """One browser found on this machine, with the release it reports (``--version``)."""

    browser: Browser
    path: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.browser.title} {self.version}"


def find(name: str) -> Engine:
    """The browser ``name`` (``chromium``, ``firefox``) as installed here, or one line saying
    which Debian package to install."""
    browser = BROWSERS.get(name)
    if browser is None:
        raise PrebakeError(f"unknown browser {name!r}; prebake runs {', '.join(BROWSERS)}")
    for program in browser.programs:
        path = shutil.which(program)
        if path is not None:
            return Engine(browser, path, _version(path, browser))
    raise PrebakeError(f"{browser.title} is not installed: apt-get install {browser.package} "
                       "(Debian's package; scripts/bootstrap installs it)")


def _version(path: str, browser: Browser) -> str:
    with tempfile.TemporaryDirectory(prefix="prebake-browser-") as home:
        try:
            proc = subprocess.run([path, "--version"], capture_output=True, text=True,
                                  errors="replace", timeout=60, check=False,
                                  env=_env(Path(home)), stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PrebakeError(f"{path} --version did not answer: {exc}") from None
    found = re.search(r"\b(\d+(?:\.\d+)+)", proc.stdout)
    if found is None:
        raise PrebakeError(f"{path} --version printed no {browser.title} release: "
                           f"{(proc.stdout or proc.stderr).strip()[:200]!r}")
    return found.group(1)


def _env(home: Path) -> dict[str, str]:
    """The one allow-list, no proxy (the page is on 127.0.0.1) and a home of the run's own,
    so that nothing the browser writes lands outside its temporary folder."""
    env = sanitized(None, extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
                                 "XDG_CACHE_HOME": str(home / "cache"),
                                 "XDG_DATA_HOME": str(home / "data"), "LC_ALL": "C.UTF-8"})
    for name in list(env):
        if name.lower().endswith("_proxy"):
            del env[name]
    return env


# --------------------------------------------------------------------------------------------
# the run's record


@dataclass
class PageRun:
    """What one page did in one engine. ``outcome``: ``exited`` (the program's exit code),
    ``done`` (the page's ``prebake.done(value)``), ``refused`` (the module never started: an
    engine that cannot compile or instantiate it, or lacks an API its loader calls),
    ``crashed`` (an abort or uncaught error after it started, or the browser died),
    ``returned`` (main is over but its status hidden: a factory's program linked without
    ``-sEXIT_RUNTIME=1``) or ``timeout``."""

    engine: Engine
    outcome: str = "timeout"
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    errors: list[str] = field(default_factory=list)  # the page's console errors, uncaught ones
    console: list[str] = field(default_factory=list)  # the browser's log of console lines
    value: Any = None
    seconds: float = 0.0
    isolated: bool | None = None  # crossOriginIsolated, as the page saw it
    group: int | None = None  # the browser's process group (gone when the run returns)
    started: bool = False  # the program's runtime came up: the engine compiled and ran it
    reason: str = ""  # why it stopped, when it did not exit or finish
    returned: bool = False  # exited by main's return, the runtime kept (no -sEXIT_RUNTIME=1)

    @property
    def ok(self) -> bool:
        return (self.outcome == "exited" and self.returncode == 0) or self.outcome == "done"

    def failure(self) -> str:
        """One line saying why the run failed (empty when it did not)."""
        if self.ok:
            return ""
        where = f"in {self.engine.label}"
        if self.outcome == "exited":
            return self.said()
        if self.outcome == "returned":
            return (f"main returned {where}, but a -sMODULARIZE program linked without "
                    "-sEXIT_RUNTIME=1 keeps its exit status inside: link it with "
                    "-sEXIT_RUNTIME=1")
        if self.outcome == "timeout":
            last = "; ".join(self.console[-5:]) or "(the console said nothing)"
            hint = ("; it started: is it waiting on something, or a main loop?"
                    if self.started else "")
            return (f"no exit {where} after {self.seconds:.0f} s; the console's last lines: "
                    f"{last}{hint}")
        return f"{self.outcome} {where}: {self.reason}"

    def said(self) -> str:
        """One line for the run: how it ended (``failure()`` when it failed)."""
        if self.outcome == "done":
            return f"done in {self.engine.label}"
        if self.outcome != "exited":
            return self.failure()
        kept = ("; main returned and the runtime stays (linked without -sEXIT_RUNTIME=1): "
                "its status is the exit, nothing it left running was waited for"
                if self.returned else "")
        return f"exited with status {self.returncode} in {self.engine.label}{kept}"

    def to_json(self) -> dict[str, Any]:
        return {"browser": self.engine.browser.name, "version": self.engine.version,
                "outcome": self.outcome, "returncode": self.returncode,
                "stdout": self.stdout, "stderr": self.stderr, "errors": self.errors,
                "console": self.console, "value": self.value, "isolated": self.isolated,
                "reason": self.reason, "returned": self.returned,
                "seconds": round(self.seconds, 2)}


@dataclass
class _State:
    """What the server thread has heard, under one condition the run waits on."""

    config: dict[str, Any]
    inputs: list[Path]
    outputs: dict[str, bytes | None] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)


# --------------------------------------------------------------------------------------------
# the server


def _handler(root: Path, state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "prebake"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the run reports what the page says, not each request

        def _send(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == HARNESS_PAGE:
                self._send(HTTPStatus.OK, HARNESS.encode(), TYPES[".html"])
                return
            if path.startswith(PREFIX):
                self._ours(path[len(PREFIX):])
                return
            target = _inside(root, path)
            if target is None:
                self._send(HTTPStatus.NOT_FOUND, b"not found")
                return
            self._send(HTTPStatus.OK, target.read_bytes(), _type(target))

        def _ours(self, name: str) -> None:
            if name == "page.js":
                self._send(HTTPStatus.OK, PAGE_JS.read_bytes(), TYPES[".js"])
            elif name == "config.json":
                self._send(HTTPStatus.OK, json.dumps(state.config).encode(), TYPES[".json"])
            elif name.startswith("input/") and name[6:].isdigit() \
                    and int(name[6:]) < len(state.inputs):
                self._send(HTTPStatus.OK, state.inputs[int(name[6:])].read_bytes(),
                           "application/octet-stream")
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found")

        def do_POST(self) -> None:
            if self.path != f"{PREFIX}events":
                self._send(HTTPStatus.NOT_FOUND, b"not found")
                return
            try:
                size = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                size = -1
            if not 0 <= size <= MAX_EVENTS_BYTES:
                self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"too large")
                return
            try:
                batch = json.loads(self.rfile.read(size))
            except (ValueError, UnicodeDecodeError):
                self._send(HTTPStatus.BAD_REQUEST, b"not JSON")
                return
            events = [e for e in batch if isinstance(e, dict)] if isinstance(batch, list) else []
            with state.cond:
                for event in events:
                    _take(state, event)
                state.cond.notify_all()
            self._send(HTTPStatus.NO_CONTENT, b"")

    return Handler


def _take(state: _State, event: dict[str, Any]) -> None:
    """An event as the run keeps it; an output file only under a name the run asked for."""
    if event.get("kind") == "output":
        path, data = event.get("path"), event.get("data")
        if path in state.outputs:
            try:
                state.outputs[path] = (base64.b64decode(data, validate=True)
                                       if isinstance(data, str) else None)
            except ValueError:
                state.outputs[path] = None
        return
    state.events.append(event)


def _inside(root: Path, url_path: str) -> Path | None:
    """The file a URL names under ``root``, never one outside it (``..``, a link leading
    out), never a folder."""
    rel = unquote(url_path).lstrip("/") or "index.html"
    try:
        target = (root / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(root) or not target.is_file():
        return None
    return target


def _type(path: Path) -> str:
    return TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] \
        or "application/octet-stream"


@contextmanager
def _serving(root: Path, state: _State) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(root, state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="prebake-browser-server",
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=KILL_WAIT)


# --------------------------------------------------------------------------------------------
# the browser


def _argv(engine: Engine, profile: Path, url: str, flags: Sequence[str]) -> list[str]:
    if engine.browser.name == "chromium":
        sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
        return [engine.path, *CHROMIUM_FLAGS, *sandbox, f"--user-data-dir={profile}", *flags,
                url]
    profile.mkdir(parents=True, exist_ok=True)
    prefs = dict(FIREFOX_PREFS)
    for flag in flags:  # NAME=VALUE: a preference for this run (true/false/an integer/text)
        name, _, raw = flag.partition("=")
        prefs[name] = _pref_value(raw)
    (profile / "user.js").write_text("".join(
        f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items()))
    return [engine.path, "--headless", "--no-remote", "--new-instance", "--profile",
            str(profile), url]


def _pref_value(raw: str) -> bool | int | str:
    if raw in ("true", "false"):
        return raw == "true"
    return int(raw) if re.fullmatch(r"-?\d+", raw) else raw


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """The browser and every process it started (its own group, never anything else): TERM,
    then KILL for what is left after ``KILL_WAIT`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _signal_group(proc, sig):
            break
        deadline = time.monotonic() + KILL_WAIT
        while time.monotonic() < deadline and _group_alive(proc):
            time.sleep(0.05)
        if not _group_alive(proc):
            break
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=KILL_WAIT)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> bool:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    proc.poll()  # reaps the leader, whose zombie would keep the group alive
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


def console_lines(log: str, browser: str) -> list[str]:
    """The console messages in a browser's own log, in order (``source:line`` after each of
    Chromium's, which says where)."""
    out = []
    for line in log.splitlines():
        if browser == "chromium":
            m = _CHROMIUM_CONSOLE.search(line)
            if m:
                out.append(f"{m.group(1)} ({m.group(2).rsplit('/', 1)[-1]}:{m.group(3)})")
        else:
            m = _FIREFOX_CONSOLE.match(line)
            if m:
                out.append(f"{m.group(1)}: {m.group(2)}")
    return out


# --------------------------------------------------------------------------------------------
# one run


def run_page(folder: Path, engine: Engine, *, page: str | None = None,
             config: Mapping[str, Any] | None = None, inputs: Sequence[Path] = (),
             outputs: Sequence[str] = (), timeout: float = 120,
             flags: Sequence[str] = ()) -> tuple[PageRun, dict[str, bytes | None]]:
    """Serve ``folder`` and load ``page`` in ``engine`` (``page`` None: prebake's harness,
    which starts ``config["program"]``); the run, and the output files the page posted back
    (None for one the program did not write). ``flags``: Chromium command-line flags, or
    Firefox preferences as ``NAME=VALUE``."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise PrebakeError(f"{folder}: no such folder to serve")
    state = _State({"program": None, "arguments": [], "inputs": [], "outputs": [],
                    **dict(config or {})}, [Path(p) for p in inputs],
                   dict.fromkeys(outputs))
    run = PageRun(engine)
    with tempfile.TemporaryDirectory(prefix="prebake-browser-") as tmp, \
            _serving(root, state) as base:
        home = Path(tmp)
        url = f"{base}/{quote(page.lstrip('/'))}" if page else f"{base}{HARNESS_PAGE}"
        log_path = home / "browser.log"
        start = time.monotonic()
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.Popen(_argv(engine, home / "profile", url, flags),
                                        stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=_env(home),
                                        start_new_session=True)
            except OSError as exc:
                raise PrebakeError(f"{engine.path}: cannot start {engine.browser.title}: "
                                   f"{exc.strerror or exc}") from None
            run.group = proc.pid
            try:
                _wait(state, proc, run, start, timeout)
                run.seconds = time.monotonic() - start
            finally:
                _kill(proc)
        text = log_path.read_bytes()[-(4 << 20):].decode("utf-8", "replace")
        run.console = console_lines(text, engine.browser.name)
        if run.outcome == "crashed" and not run.reason:
            tail = [ln for ln in text.splitlines() if ln.strip()][-3:]
            run.reason = (f"{engine.browser.title} exited with status {proc.returncode} "
                          "before the page finished: " + " | ".join(tail))
    return run, dict(state.outputs)


def _wait(state: _State, proc: subprocess.Popen[bytes], run: PageRun, start: float,
          timeout: float) -> None:
    """Fold the events into ``run`` until one ends it, the browser dies or time is up."""
    seen = 0
    out: list[str] = []
    err: list[str] = []
    started = False
    error_at: float | None = None
    over_at: float | None = None  # main is over, its status hidden: an exit may still come
    with state.cond:
        while True:
            for event in state.events[seen:]:
                kind, text = event.get("kind"), str(event.get("text", ""))
                if kind == "stdout":
                    out.append(text)
                elif kind == "stderr":
                    err.append(text)
                elif kind == "started":
                    started = run.started = True
                elif kind == "page":
                    run.isolated = bool(event.get("isolated"))
                elif kind in ("console", "error"):
                    run.errors.append(text)
                    if kind == "error" and error_at is None and run.outcome == "timeout":
                        error_at = time.monotonic()
                        run.reason = text
                elif kind == "returned" and not isinstance(event.get("code"), int):
                    over_at = time.monotonic() if over_at is None else over_at
                elif kind in ("exit", "returned"):
                    code = event.get("code")
                    run.outcome, run.returned = "exited", kind == "returned"
                    run.returncode = code if isinstance(code, int) else 1
                elif kind == "abort":
                    run.outcome, run.reason = ("crashed" if started else "refused"), text
                elif kind == "done":
                    run.outcome, run.value = "done", event.get("value")
            seen = len(state.events)
            run.stdout = "".join(f"{line}\n" for line in out)
            run.stderr = "".join(f"{line}\n" for line in err)
            if run.outcome != "timeout":
                return
            now = time.monotonic()
            if error_at is not None and now - error_at >= GRACE:
                run.outcome = "crashed" if started else "refused"
                return
            if over_at is not None and now - over_at >= GRACE:
                run.outcome = "returned"
                return
            if proc.poll() is not None:
                run.outcome = "crashed"
                return
            if now - start >= timeout:
                return
            state.cond.wait(timeout=0.25)


def loader(program: Path) -> tuple[str, str | None]:
    """How an Emscripten program's JS is started, read from its tail as Emscripten writes it:
    ``("module", None)`` for an ES module (``-sEXPORT_ES6``: ``X.mjs``, or an ``X.js`` that
    says ``export default NAME;``), else ``("script", FACTORY)``: FACTORY the name
    ``-sMODULARIZE`` gave the factory its UMD tail exports (``module.exports = NAME;``), to
    be called with the settings once the script ran; None for a program that starts itself."""
    try:
        with open(program, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - MAX_SNIFF))
            tail = f.read(MAX_SNIFF)
    except OSError as exc:
        raise PrebakeError(f"{program}: cannot be read: {exc.strerror or exc}") from None
    if program.suffix == ".mjs" or _ES_EXPORT.search(tail):
        return "module", None
    found = _FACTORY.search(tail)
    return "script", found.group(1).decode() if found else None


def run_program(program: Path, args: Sequence[str] = (), *, engine: Engine,
                inputs: Sequence[Path] = (), outputs: Sequence[Path] = (),
                timeout: float = 120, flags: Sequence[str] = (),
                root: Path | None = None) -> PageRun:
    """Run an Emscripten program (``X.js`` or ``X.mjs`` with its ``X.wasm``, served from
    ``root``, by default its own folder, whose top the page is at: what it fetches relative
    to its page is that folder's) with ``args``; each of ``inputs`` is in its file system at
    its own absolute path before ``main``, each of ``outputs`` written back here after it
    exits."""
    program = Path(program)
    if program.suffix.lower() in (".html", ".htm"):
        raise PrebakeError(f"{program}: a page; give the program's JS "
                           f"({program.with_suffix('.js').name}), or --page {program.name}")
    if not program.is_file():
        raise PrebakeError(f"{program}: no such program")
    served = Path(root if root is not None else program.parent).resolve()
    if not program.resolve().is_relative_to(served):
        raise PrebakeError(f"{program}: not inside the folder served ({root})")
    for path in inputs:
        if not Path(path).is_file():
            raise PrebakeError(f"{path}: no such input file")
    kind, factory = loader(program)
    wanted: list[str] = [str(Path(p).absolute()) for p in outputs]
    config = {"program": "/" + quote(program.resolve().relative_to(served).as_posix()),
              "kind": kind, "factory": factory, "arguments": list(args),
              "inputs": [str(Path(p).absolute()) for p in inputs], "outputs": wanted}
    run, written = run_page(served, engine, config=config,
                            inputs=[Path(p) for p in inputs], outputs=wanted,
                            timeout=timeout, flags=flags)
    if run.outcome == "exited":
        for name, data in written.items():
            if data is not None:
                atomic_write_bytes(Path(name), data)
    return run


# --------------------------------------------------------------------------------------------
# the table's prediction, and the run's verdict beside it


@dataclass(frozen=True)
class Prediction:
    """What ``prebake.engines`` says of a module in an engine at its release: ``lacks`` empty
    means it runs; ``decided`` false when the table or the facts cannot say."""

    floor: engines.Floor
    lacks: tuple[engines.Lack, ...]
    decided: bool

    def text(self) -> str:
        if not self.decided:
            return "engines.toml cannot say: " + "; ".join(x.text() for x in self.lacks)
        if not self.lacks:
            return (f"engines.toml predicted it runs ({self.floor.label} has every feature it "
                    "needs)")
        return "engines.toml predicted it does not: " + "; ".join(x.text() for x in self.lacks)

    def agrees(self, run: PageRun) -> bool | None:
        """Whether the run's outcome is the one predicted (None: nothing was predicted). A
        module predicted to run must start: the engine compiles and instantiates it (what it
        then does, its exit code, a crash or never exiting, is the program's business); one
        predicted not to must be refused by the engine, not crash later or time out."""
        if not self.decided:
            return None
        if not self.lacks:
            return run.started or run.outcome in ("exited", "done")
        return run.outcome == "refused"


def predict(module: Path, engine: Engine) -> Prediction | str:
    """The prediction for ``module`` (the ``.wasm`` of a program, read with its loader beside
    it) in ``engine``, or why there is none."""
    try:
        facts = inspect(module)
    except PrebakeError as exc:
        return str(exc)
    need = engines.needs(facts)
    if need is None:
        return f"{module}: not a wasm module"
    floor = engines.Floor(engine.browser.engine, engine.version)
    lacks = tuple(engines.judge(need, floor))
    decided = need.partial is None and all(x.how == "lacks" for x in lacks)
    return Prediction(floor, lacks, decided)


# --------------------------------------------------------------------------------------------
# the command line


def main(argv: Sequence[str] | None = None) -> int:
    """Each browser's run of the program (or page): its stdout and stderr as its own, one line
    per run on stderr with the outcome and the table's prediction, the exit code the
    program's (with ``--verdict``: 0 when every run agreed with the prediction)."""
    p = argparse.ArgumentParser(prog="python -m prebake.link.browser",
                                description="run an Emscripten program or a page in headless "
                                            "Chromium and Firefox")
    p.add_argument("--browser", action="append", choices=sorted(BROWSERS),
                   help="chromium or firefox (repeatable; default: both)")
    p.add_argument("--input", action="append", default=[], type=Path,
                   help="a file the program reads, put in its file system at the same path")
    p.add_argument("--output", action="append", default=[], type=Path,
                   help="a file the program writes, written back here after it exits")
    p.add_argument("--page", help="load this page of PROGRAM's folder instead (it reports "
                                  "through /__prebake/page.js: prebake.done(value))")
    p.add_argument("--root", type=Path,
                   help="serve this folder (default: the program's); the page is at its top, "
                        "so what the program fetches relative to its page is found there")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")
    p.add_argument("--flag", action="append", default=[],
                   help="a Chromium flag, or a Firefox preference NAME=VALUE (repeatable)")
    p.add_argument("--json", type=Path, help="write every run (and prediction) to this file")
    p.add_argument("--verdict", action="store_true",
                   help="exit 0 when every run agreed with the table's prediction")
    p.add_argument("program", type=Path, help="PROGRAM.js / .mjs (or the folder, with --page)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    names = a.browser or list(BROWSERS)
    try:
        if a.output and len(names) > 1:
            raise PrebakeError("--output takes one --browser (each run would write the files "
                               "the other one wrote)")
        found = [find(n) for n in names]
        codes = [_one(a, engine) for engine in found]
    except PrebakeError as exc:
        sys.stderr.write(f"prebake.link.browser: {exc}\n")
        return 2
    if a.json is not None:
        atomic_write_bytes(a.json, (json.dumps([c[1] for c in codes], indent=2) + "\n")
                           .encode())
    if a.verdict:
        return 0 if all(c[1].get("agrees") is True for c in codes) else 1
    return next((c[0] for c in codes if c[0] != 0), 0)


def _one(a: argparse.Namespace, engine: Engine) -> tuple[int, dict[str, Any]]:
    if a.page:
        folder = a.program if a.program.is_dir() else a.program.parent
        run, _ = run_page(folder, engine, page=a.page, timeout=a.timeout, flags=a.flag)
        prediction: Prediction | str = "a page: no module to predict for"
    else:
        run = run_program(a.program, a.args, engine=engine, inputs=a.input, outputs=a.output,
                          timeout=a.timeout, flags=a.flag, root=a.root)
        prediction = predict(a.program.with_suffix(".wasm"), engine)
    sys.stdout.write(run.stdout)
    if run.outcome == "done":
        sys.stdout.write(json.dumps(run.value) + "\n")
    sys.stdout.flush()
    sys.stderr.write(run.stderr)
    said = run.said()
    record = run.to_json()
    if isinstance(prediction, Prediction):
        agrees = prediction.agrees(run)
        record.update(predicted=prediction.text(), agrees=agrees)
        said += f" ({run.seconds:.1f} s); {prediction.text()}" + (
            "" if agrees is None else ": the run agrees" if agrees else ": the run DISAGREES")
    else:
        record.update(predicted=None, agrees=None)
        said += f" ({run.seconds:.1f} s); no prediction: {prediction}"
    sys.stderr.write(f"prebake.link.browser: {said}\n")
    code = (run.returncode or 0) if run.outcome == "exited" else 0 if run.ok else \
        124 if run.outcome == "timeout" else 1
    return code, record


if __name__ == "__main__":
    sys.exit(main())
