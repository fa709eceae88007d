"""Every read of a sidecar, lock, manifest, signature or HTTP body is bounded in size and time;
special files are refused; an unreachable S3 endpoint is one line naming the store.

Real files (symlinks to ``/dev/zero``, FIFOs), a real HTTP server on 127.0.0.1 that never ends
its body (or trickles it), and a real closed port as the S3 endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from prebake.consume.consumer_lock import read_lock
from prebake.errors import PrebakeError
from prebake.store.base import bound_words
from tests import support
from tests.servers.assets import make_asset
from tests.servers.static_http import LoopbackServer, Running, closed_port_url

PLATFORM = "linux-x86_64"
ASSET = f"demo-1.0.0-{PLATFORM}.tar.xz"


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    base = {"PREBAKE_CACHE": str(cwd / "cache"), "PREBAKE_RETRY_BASE": "0.01"}
    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)], cwd=cwd,
                          env=support.tool_env({**base, **(env or {})}), capture_output=True,
                          text=True, timeout=timeout)


def _fetch(tmp_path: Path, store: str, *extra: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return _run("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", store,
                "--release", "v1.0.0", "--into", tmp_path / "into", *extra, cwd=tmp_path,
                env=env)


def _one_error_line(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert "MemoryError" not in proc.stderr
    for n in names:
        assert n in proc.stderr, proc.stderr


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    make_asset(root / "v1.0.0", "demo", "1.0.0", PLATFORM, {"lib/libdemo.a": b"!<arch>\n"})
    return root


@pytest.mark.parametrize("suffix", [".sha256", ".json", ".sig"])
@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "huge"])
def test_special_or_huge_sidecar_in_a_file_store(tmp_path: Path, store: Path, suffix: str,
                                                 kind: str) -> None:
    side = store / "v1.0.0" / (ASSET + suffix)
    side.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(side)
    elif kind == "huge":
        with open(side, "wb") as fh:
            fh.truncate(3 * 1024**3)  # sparse: 3 GB that cost no disk
    else:
        side.symlink_to("/dev/zero")
    extra: tuple[str, ...] = ()
    if suffix == ".sig":
        allowed = tmp_path / "allowed_signers"
        allowed.write_text("a@b ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEbx\n")
        extra = ("--allowed-signers", str(allowed))
    t0 = time.monotonic()
    proc = _fetch(tmp_path, store.as_uri(), *extra)
    assert time.monotonic() - t0 < 60
    _one_error_line(proc, store.as_uri(), ASSET + suffix)
    assert not (tmp_path / "into").exists()


def test_lock_file_that_is_a_device_or_fifo(tmp_path: Path, store: Path) -> None:
    for make in ("/dev/zero", "fifo"):
        lock = tmp_path / f"lock-{make.strip('/').replace('/', '-')}"
        if make == "fifo":
            os.mkfifo(lock)
        else:
            lock.symlink_to(make)
        proc = _fetch(tmp_path, store.as_uri(), "--lock", str(lock))
        _one_error_line(proc, lock.name, "not a regular file")


class _Endless(BaseHTTPRequestHandler):
    """Every GET: a 200 with no length whose body never ends (or trickles a byte a second)."""

    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"0" * 65536 if not self.server.trickle else b"0"
        try:
            while not self.server.stop.is_set():
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                if self.server.trickle:
                    time.sleep(0.5)
        except OSError:
            pass


@pytest.fixture(params=["endless", "trickle"])
def endless(request: pytest.FixtureRequest) -> Iterator[str]:
    httpd = LoopbackServer(("127.0.0.1", 0), _Endless)
    httpd.trickle = request.param == "trickle"  # type: ignore[attr-defined]
    httpd.stop = threading.Event()  # type: ignore[attr-defined]
    with Running(httpd) as srv:
        yield srv.url
        httpd.stop.set()  # type: ignore[attr-defined]


def test_endless_http_body_is_an_error_not_a_hang(tmp_path: Path, endless: str) -> None:
    t0 = time.monotonic()
    proc = _fetch(tmp_path, endless, env={"PREBAKE_SMALL_GET_SECONDS": "3"})
    assert time.monotonic() - t0 < 60
    _one_error_line(proc, ASSET + ".sha256", "127.0.0.1")
    assert not (tmp_path / "into").exists()


S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
          "AWS_DEFAULT_REGION": "us-east-1"}


def _s3_url() -> str:
    return f"s3://prebake-down/assets?endpoint={closed_port_url()}"


def test_unreachable_s3_endpoint_in_fetch(tmp_path: Path) -> None:
    proc = _fetch(tmp_path, _s3_url(), env=S3_ENV)
    _one_error_line(proc, "s3://prebake-down/assets", "cannot reach the endpoint")
    assert "EndpointConnectionError" not in proc.stderr


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "sdk"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns(".prebake", "releases"))
    return ws


def test_unreachable_s3_endpoint_in_plan(tmp_path: Path) -> None:
    """plan reports statuses it could not learn as unknown, naming the store and why."""
    proc = _run("-C", _ws(tmp_path), "plan", "--store", _s3_url(), cwd=tmp_path, env=S3_ENV)
    out = proc.stdout + proc.stderr
    assert "internal error" not in out and "Traceback" not in out, out
    assert "s3://prebake-down/assets" in out and "cannot reach the endpoint" in out, out
    assert "missing" not in proc.stdout  # never claims to know the store lacks the assets


def test_unreachable_s3_endpoint_in_build(tmp_path: Path) -> None:
    proc = _run("-C", _ws(tmp_path), "build", "--platform", PLATFORM, "--stage", "core",
                cwd=tmp_path, env={**S3_ENV, "PREBAKE_STORE": _s3_url()})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "internal error" not in out and "Traceback" not in out, out
    assert "s3://prebake-down/assets" in out and "cannot reach the endpoint" in out, out


class _EndlessAsset(_Endless):
    """A mirror of a file store whose sidecars are the true ones and whose asset never ends:
    what a hostile or broken mirror serves a consumer whose lock pins the asset's bytes."""

    def do_GET(self) -> None:
        rel = self.path.lstrip("/")
        if rel.endswith(ASSET):
            self.server.asked = True
            super().do_GET()
            return
        path = self.server.root / rel
        body = path.read_bytes() if path.is_file() else b""
        self.send_response(200 if path.is_file() else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_locked_fetch_stops_at_the_size_the_lock_records(tmp_path: Path, store: Path) -> None:
    """The lock of an honest fetch records the asset's size; from a mirror answering an endless
    body for the same asset, the next fetch (fresh cache) stops there: one line naming the
    lock's bound, nothing installed, no partial download kept."""
    lock = tmp_path / "prebake.lock"
    first = tmp_path / "first"
    first.mkdir()
    proc = _fetch(first, store.as_uri(), "--lock", str(lock))
    assert proc.returncode == 0, proc.stderr
    [entry] = json.loads(lock.read_text())["packages"]
    size = (store / "v1.0.0" / ASSET).stat().st_size
    assert entry["size"] == size < 64 * 1024
    httpd = LoopbackServer(("127.0.0.1", 0), _EndlessAsset)
    httpd.root, httpd.trickle, httpd.asked = store, False, False  # type: ignore[attr-defined]
    httpd.stop = threading.Event()  # type: ignore[attr-defined]
    with Running(httpd) as srv:
        t0 = time.monotonic()
        proc = _fetch(tmp_path, srv.url, "--lock", str(lock))
        httpd.stop.set()  # type: ignore[attr-defined]
    assert httpd.asked  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 30
    _one_error_line(proc, ASSET, f"{size} bytes the consumer lock records")
    assert not (tmp_path / "into").exists()
    assert not list((tmp_path / "cache").rglob("*.part")), "a partial download was kept"
    # the lock is as it was: an asset that could not be fetched changes nothing
    assert json.loads(lock.read_text())["packages"] == [entry]


def test_a_lock_without_sizes_still_reads_and_says_the_bound(tmp_path: Path) -> None:
    """Locks written before sizes were recorded still read; the bound they leave is said."""
    lock = tmp_path / "prebake.lock"
    lock.write_text('{"schema_version": 1, "packages": [{"name": "demo", "version": "1.0.0", '
                    '"platform": "wasm", "sha256": "' + "0" * 64 + '", "url": "u"}]}')
    assert read_lock(lock).get("demo", "wasm").size is None  # type: ignore[union-attr]
    assert "2147483648 bytes" in bound_words(None) and "records no size" in bound_words(None)
    lock.write_text(lock.read_text().replace('"url": "u"', '"url": "u", "size": -1'))
    with pytest.raises(PrebakeError, match="size -1 is not a byte count"):
        read_lock(lock)
