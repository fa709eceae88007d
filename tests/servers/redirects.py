"""A loopback server that records every request's headers and answers a path with a redirect
(or a file, or a challenge for credentials): the other end of a redirect that must not carry
credentials, as a mirror's CDN or a hostile host would see it.

``Recorder(root)`` serves ``root``'s files; ``redirect(path, location, cookie=…)`` makes
``path`` answer 302; ``require_auth(path, header)`` answers 401 unless the request carries that
``Authorization``. ``seen`` holds ``(host header, path, headers)`` per request, in order, and a
proxied request (an absolute URL in the request line, ``http_proxy``) is answered the same way.
``tls=(cert, key)`` makes it an https server.
"""

from __future__ import annotations

import ssl
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.servers.static_http import LoopbackServer, Running


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.server.seen.append((self.headers.get("Host", ""), self.path,
                                 {k.lower(): v for k, v in self.headers.items()}))
        if path in self.server.redirects:
            location, cookie = self.server.redirects[path]
            self.send_response(302)
            self.send_header("Location", location)
            if cookie:
                self.send_header("Set-Cookie", cookie)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        wanted = self.server.auth.get(path)
        if wanted is not None and self.headers.get("Authorization") != wanted:
            self._plain(401, b"credentials wanted")
            return
        file = (self.server.root / unquote(path).lstrip("/")).resolve()
        if self.server.root.resolve() not in file.parents or not file.is_file():
            self._plain(404, b"not found")
            return
        self._plain(200, file.read_bytes())

    def _plain(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(LoopbackServer):
    root: Path
    redirects: dict[str, tuple[str, str]]
    auth: dict[str, str]
    seen: list[tuple[str, str, dict[str, str]]]


class Recorder(Running):
    httpd: _Server

    def __init__(self, root: Path, *, host: str = "127.0.0.1", port: int = 0,
                 tls: tuple[Path, Path] | None = None) -> None:
        httpd = _Server((host, port), _Handler)
        httpd.root = Path(root)
        httpd.redirects, httpd.auth, httpd.seen = {}, {}, []
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        super().__init__(httpd)
        if tls is not None:
            self.url = self.url.replace("http://", "https://", 1)
        self.port = int(httpd.server_address[1])

    def redirect(self, path: str, location: str, cookie: str = "") -> None:
        self.httpd.redirects[path] = (location, cookie)

    def require_auth(self, path: str, header: str) -> None:
        self.httpd.auth[path] = header

    @property
    def seen(self) -> list[tuple[str, str, dict[str, str]]]:
        return self.httpd.seen

    def headers_for(self, path_part: str) -> list[dict[str, str]]:
        """The headers of every request whose path holds ``path_part``."""
        return [h for _host, p, h in self.seen if path_part in p]
