"""A local GitHub release-API subset on 127.0.0.1: exactly the endpoints prebake uses.

Behaviour follows the real API where prebake depends on it: ``POST /releases`` answers ``422``
with ``errors[].code == "already_exists"`` for an existing tag; an upload whose name exists
answers ``422``; an interrupted upload leaves an asset in state ``"starter"`` (listed, never
``"uploaded"``); ``GET /releases/assets/ID`` with ``Accept: application/octet-stream`` redirects
to a download URL that honours ``Range``; writes need ``Authorization: Bearer <token>``.

Injectable misbehaviour for tests:
* ``fail(kind, status, count)`` — the next ``count`` requests of ``kind`` (``"create"``,
  ``"upload"``, ``"download"``, ``"list"``, ``"rename"``, ``"get_release"``) answer ``status``;
* ``tag_lag`` — seconds during which a newly created release is invisible to ``GET
  /releases/tags/TAG`` (the eventual consistency that makes create races bite);
* ``upload_delay`` — seconds slept per 64 KiB of upload body (a slow link to kill a publisher on);
* ``drop_download_after`` — close the connection after this many bytes of the next download
  (to exercise resume).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers.static_http import LoopbackServer, Running


@dataclass
class Asset:
    id: int
    name: str
    release_id: int
    state: str = "starter"
    data: bytes = b""
    created: float = field(default_factory=time.time)


@dataclass
class Release:
    id: int
    tag: str
    prerelease: bool
    created: float
    assets: list[int] = field(default_factory=list)


class GitHubState:
    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.releases: dict[int, Release] = {}
        self.assets: dict[int, Asset] = {}
        self.failures: dict[str, list[int]] = {}
        self.tag_lag = 0.0
        self.upload_delay = 0.0
        self.drop_download_after: int | None = None
        self.rate_limit_next = 0  # answer this many next requests with a rate-limit 403
        self.calls: Counter[str] = Counter()
        self.upload_started = threading.Event()
        self.seen_headers: list[dict[str, str]] = []

    def fail(self, kind: str, status: int, count: int = 1) -> None:
        with self.lock:
            self.failures.setdefault(kind, []).extend([status] * count)

    def _take_failure(self, kind: str) -> int | None:
        with self.lock:
            queue = self.failures.get(kind)
            return queue.pop(0) if queue else None

    def release_by_tag(self, tag: str) -> Release | None:
        matches = [r for r in self.releases.values() if r.tag == tag]
        return matches[0] if matches else None

    def uploaded(self, tag: str) -> dict[str, bytes]:
        rel = self.release_by_tag(tag)
        if rel is None:
            return {}
        return {a.name: a.data for i in rel.assets if (a := self.assets[i]).state == "uploaded"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def st(self) -> GitHubState:
        return self.server.state

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None) -> None:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if raw is None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _authed(self) -> bool:
        return self.headers.get("Authorization") in (f"Bearer {self.st.token}",
                                                     f"token {self.st.token}")

    def _deny_if_bad_auth(self, write: bool) -> bool:
        auth = self.headers.get("Authorization")
        if (write or auth) and not self._authed():
            self._drain()
            self._send(401, {"message": "Bad credentials"})
            return True
        return False

    def _drain(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)

    def _fault(self, kind: str) -> bool:
        self.st.calls[kind] += 1
        status = self.st._take_failure(kind)
        if status is None:
            return False
        self._drain()
        self._send(status, {"message": "injected failure"})
        return True

    def _rel_json(self, r: Release) -> dict[str, Any]:
        base = self.server.base_url
        return {"id": r.id, "tag_name": r.tag, "name": r.tag, "prerelease": r.prerelease,
                "upload_url": f"{base}/uploads/repos/{self.server.repo}/releases/{r.id}/assets"
                              "{?name,label}"}

    def _asset_json(self, a: Asset) -> dict[str, Any]:
        created = datetime.fromtimestamp(a.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"id": a.id, "name": a.name, "state": a.state, "size": len(a.data),
                "created_at": created,
                "browser_download_url": f"{self.server.base_url}/download/{a.id}"}

    # -- routing ------------------------------------------------------------------------------
    def _route(self) -> None:
        self.st.seen_headers.append(dict(self.headers))
        with self.st.lock:
            limited = self.st.rate_limit_next > 0
            self.st.rate_limit_next -= limited
        if limited:
            self._drain()
            self._send(403, {"message": "API rate limit exceeded"},
                       headers={"x-ratelimit-remaining": "0", "retry-after": "0"})
            return
        u = urlsplit(self.path)
        path, query = u.path, parse_qs(u.query)
        repo = re.escape(self.server.repo)
        routes = [
            ("GET", rf"/repos/{repo}/releases/tags/(?P<tag>[^/]+)", self.get_release),
            ("GET", rf"/repos/{repo}/releases", self.list_releases),
            ("POST", rf"/repos/{repo}/releases", self.create_release),
            ("GET", rf"/repos/{repo}/releases/(?P<rid>\d+)/assets", self.list_assets),
            ("POST", rf"/uploads/repos/{repo}/releases/(?P<rid>\d+)/assets", self.upload),
            ("GET", rf"/repos/{repo}/releases/assets/(?P<aid>\d+)", self.get_asset),
            ("PATCH", rf"/repos/{repo}/releases/assets/(?P<aid>\d+)", self.rename),
            ("DELETE", rf"/repos/{repo}/releases/assets/(?P<aid>\d+)", self.delete),
            ("GET", r"/download/(?P<aid>\d+)", self.download),
        ]
        for method, pattern, fn in routes:
            m = re.fullmatch(pattern, path)
            if m and method == self.command:
                fn(query=query, **m.groupdict())
                return
        self._drain()
        self._send(404, {"message": "Not Found"})

    do_GET = do_POST = do_PATCH = do_DELETE = _route

    # -- endpoints ----------------------------------------------------------------------------
    def get_release(self, tag: str, **_: Any) -> None:
        if self._deny_if_bad_auth(False) or self._fault("get_release"):
            return
        with self.st.lock:
            r = self.st.release_by_tag(tag)
            visible = r is not None and time.monotonic() - r.created >= self.st.tag_lag
        if not visible:
            self._send(404, {"message": "Not Found"})
        else:
            assert r is not None
            self._send(200, self._rel_json(r))

    def list_releases(self, query: dict[str, list[str]], **_: Any) -> None:
        if self._deny_if_bad_auth(False) or self._fault("list"):
            return
        page, per = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
        with self.st.lock:
            rels = sorted(self.st.releases.values(), key=lambda r: r.id)
        chunk = rels[(page - 1) * per: page * per]
        self._send(200, [self._rel_json(r) for r in chunk])

    def create_release(self, **_: Any) -> None:
        if self._deny_if_bad_auth(True) or self._fault("create"):
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.st.lock:
            if self.st.release_by_tag(body["tag_name"]) is not None:
                err = {"message": "Validation Failed", "errors": [
                    {"resource": "Release", "code": "already_exists", "field": "tag_name"}]}
                status, out = 422, err
            else:
                r = Release(next(self.st.ids), body["tag_name"], bool(body.get("prerelease")),
                            time.monotonic())
                self.st.releases[r.id] = r
                status, out = 201, self._rel_json(r)
        self._send(status, out)

    def list_assets(self, rid: str, query: dict[str, list[str]], **_: Any) -> None:
        if self._deny_if_bad_auth(False) or self._fault("list"):
            return
        page, per = int(query.get("page", ["1"])[0]), int(query.get("per_page", ["30"])[0])
        with self.st.lock:
            r = self.st.releases.get(int(rid))
            items = [self._asset_json(self.st.assets[i]) for i in (r.assets if r else [])]
        if r is None:
            self._send(404, {"message": "Not Found"})
            return
        self._send(200, items[(page - 1) * per: page * per])

    def upload(self, rid: str, query: dict[str, list[str]], **_: Any) -> None:
        if self._deny_if_bad_auth(True) or self._fault("upload"):
            return
        name = query.get("name", [""])[0]
        length = int(self.headers["Content-Length"])
        with self.st.lock:
            r = self.st.releases.get(int(rid))
            clash = r is not None and any(self.st.assets[i].name == name for i in r.assets)
            if r is not None and not clash:
                a = Asset(next(self.st.ids), name, r.id)
                self.st.assets[a.id] = a
                r.assets.append(a.id)
        if r is None or clash:
            self._drain()
            self._send(404 if r is None else 422,
                       {"message": "Validation Failed",
                        "errors": [{"resource": "ReleaseAsset", "code": "already_exists",
                                    "field": "name"}]})
            return
        self.st.upload_started.set()
        chunks, got = [], 0
        while got < length:
            chunk = self.rfile.read(min(65536, length - got))
            if not chunk:
                return  # client went away: the asset stays a "starter", never "uploaded"
            chunks.append(chunk)
            got += len(chunk)
            if self.st.upload_delay:
                time.sleep(self.st.upload_delay)
        with self.st.lock:
            a.data = b"".join(chunks)
            a.state = "uploaded"
        self._send(201, self._asset_json(a))

    def get_asset(self, aid: str, **_: Any) -> None:
        if self._deny_if_bad_auth(False):
            return
        a = self.st.assets.get(int(aid))
        if a is None:
            self._send(404, {"message": "Not Found"})
        elif self.headers.get("Accept") == "application/octet-stream":
            # like GitHub, redirect to another host (its asset CDN there):
            # "localhost" is another origin than "127.0.0.1", so clients must drop the token
            storage = self.server.base_url.replace("127.0.0.1", "localhost")
            self._send(302, headers={"Location": f"{storage}/download/{a.id}"}, raw=b"")
        else:
            self._send(200, self._asset_json(a))

    def rename(self, aid: str, **_: Any) -> None:
        if self._deny_if_bad_auth(True) or self._fault("rename"):
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.st.lock:
            a = self.st.assets.get(int(aid))
            if a is None:
                status, out = 404, {"message": "Not Found"}
            elif any(self.st.assets[i].name == body["name"] and i != a.id
                     for i in self.st.releases[a.release_id].assets):
                status, out = 422, {"message": "Validation Failed",
                                    "errors": [{"code": "already_exists", "field": "name"}]}
            else:
                a.name = body["name"]
                status, out = 200, self._asset_json(a)
        self._send(status, out)

    def delete(self, aid: str, **_: Any) -> None:
        if self._deny_if_bad_auth(True):
            return
        with self.st.lock:
            a = self.st.assets.pop(int(aid), None)
            if a is not None:
                self.st.releases[a.release_id].assets.remove(a.id)
        self._send(404 if a is None else 204, {"message": "Not Found"} if a is None else None)

    def download(self, aid: str, **_: Any) -> None:
        if "Authorization" in self.headers:  # the storage host must never see the token
            self._send(400, {"message": "credentials sent to the storage host"})
            return
        if self._fault("download"):
            return
        a = self.st.assets.get(int(aid))
        if a is None or a.state != "uploaded":
            self._send(404, {"message": "Not Found"})
            return
        data, start = a.data, 0
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if m:
            start = int(m[1])
            if start >= len(data):
                self._send(416, raw=b"", headers={"Content-Range": f"bytes */{len(data)}"})
                return
        body = data[start:]
        self.send_response(206 if m else 200)
        if m:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        with self.st.lock:  # only a body longer than the cut point consumes the cut
            drop = self.st.drop_download_after
            if drop is not None and drop < len(body):
                self.st.drop_download_after = None
            else:
                drop = None
        if drop is not None:
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


class _Server(LoopbackServer):
    state: GitHubState
    repo: str
    base_url: str


class GitHubServer(Running):
    """``with GitHubServer(repo="o/r", token="t") as gh: gh.api``; ``gh.state`` for asserts."""

    httpd: _Server

    def __init__(self, repo: str = "acme/sdk", token: str = "ghp_test_secret_token") -> None:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.state = GitHubState(token)
        httpd.repo = repo
        super().__init__(httpd)
        httpd.base_url = self.url

    @property
    def api(self) -> str:
        return self.httpd.base_url

    @property
    def state(self) -> GitHubState:
        return self.httpd.state


if __name__ == "__main__":  # run standalone for manual poking: python -m tests.servers.github_api
    import sys

    srv = GitHubServer(*(sys.argv[1:3]))
    print(srv.api, flush=True)
    with srv:
        srv.thread.join()
