"""A static file server on 127.0.0.1 with ``Range`` support (``http.server`` has none), used as
an HTTP mirror of a ``file://`` store and as a slow or flaky upstream."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote, urlsplit


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        rng = self.headers.get("Range")
        self.server.requests.append(self.path + (f" {rng}" if rng else ""))
        rel = unquote(urlsplit(self.path).path).lstrip("/")
        path = (self.server.root / rel).resolve()
        if self.server.root.resolve() not in path.parents or not path.is_file():
            self._plain(404, b"not found")
            return
        data = path.read_bytes()
        start = 0
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if m:
            start = int(m[1])
            if start >= len(data):
                self._plain(416, b"")
                return
        body = data[start:]
        self.send_response(206 if m else 200)
        if m:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        drop = self.server.drop_after
        if drop is not None and drop < len(body):
            self.server.drop_after = None
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _plain(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class LoopbackServer(ThreadingHTTPServer):
    """The base of the test servers: daemon threads, and a client that hangs up mid-response
    (tests kill clients on purpose) is not reported as an error."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # killed clients are expected
            super().handle_error(request, client_address)


class Running:
    """Serves ``httpd`` on a daemon thread between ``__enter__`` and ``__exit__``; ``url`` is
    its ``http://127.0.0.1:PORT``."""

    def __init__(self, httpd: LoopbackServer) -> None:
        self.httpd = httpd
        host, port = httpd.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self.thread = threading.Thread(target=httpd.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Server(LoopbackServer):
    root: Path
    drop_after: int | None
    requests: list[str]


class StaticServer(Running):
    """``with StaticServer(folder) as s: s.url``; ``s.drop_after = N`` cuts the next body."""

    httpd: _Server

    def __init__(self, root: Path) -> None:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.root = Path(root)
        httpd.drop_after = None
        httpd.requests = []
        super().__init__(httpd)

    @property
    def requests(self) -> list[str]:
        return self.httpd.requests

    @property
    def drop_after(self) -> int | None:
        return self.httpd.drop_after

    @drop_after.setter
    def drop_after(self, n: int | None) -> None:
        self.httpd.drop_after = n


def closed_port_url() -> str:
    """A loopback URL nothing listens on (a mirror that is down)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
