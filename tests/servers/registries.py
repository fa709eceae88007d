"""A package mirror on 127.0.0.1 in the three registries' own layouts, for sources named by
registry reference (``debian:``, ``pypi:``, ``npm:``):

- ``<debian>/pool/…``: an apt-style archive root (the pool's files as they are);
- ``<pypi>/<project>/``: a PyPI simple index (PEP 691 JSON when the client asks for it, else
  PEP 503 HTML), links relative to the page with ``#sha256=`` fragments, files under
  ``<files>/``;
- ``<npm>/<name>`` (``@scope%2fname`` for a scoped one): an npm registry's package document,
  ``versions[V].dist`` with ``tarball`` (on this server), ``integrity`` (sha512) and
  ``shasum``, tarballs at ``<npm>/<name>/-/<base>-<V>.tgz``.

Each mirror chooses its own prefixes (``paths``), so two mirrors of the same files have other
URLs; ``token`` makes the npm registry answer only requests with that bearer token, ``auth``
(``user:password``) makes the whole server answer only that Basic authorization. ``requests``
records every path asked for, ``authorizations`` the ``Authorization`` header each carried.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.servers.static_http import LoopbackServer, Running


@dataclass(frozen=True)
class Paths:
    debian: str = "/debian"
    pypi: str = "/pypi/simple"
    files: str = "/pypi/files"
    npm: str = "/npm"


@dataclass
class _State:
    root: Path
    paths: Paths
    base: str = ""
    token: str = ""
    auth: str = ""
    requests: list[str] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # per request, "" for none
    wheels: dict[str, list[Path]] = field(default_factory=dict)  # project -> files
    npm: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> version -> tgz


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        st = self.server.state
        st.requests.append(self.path)
        st.authorizations.append(self.headers.get("Authorization", ""))
        path = urlsplit(self.path).path
        if st.auth and self.headers.get("Authorization") != (
                "Basic " + base64.b64encode(st.auth.encode()).decode()):
            self._send(401, b"credentials required", "text/plain")
            return
        for prefix, serve in ((st.paths.debian + "/", self._debian),
                              (st.paths.pypi + "/", self._simple),
                              (st.paths.files + "/", self._file),
                              (st.paths.npm + "/", self._npm)):
            if path.startswith(prefix):
                serve(unquote(path[len(prefix):]))
                return
        self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _path(self, folder: Path, rel: str) -> None:
        target = (folder / rel).resolve()
        if folder.resolve() not in target.parents or not target.is_file():
            self._send(404, b"not found", "text/plain")
            return
        self._send(200, target.read_bytes(), "application/octet-stream")

    def _debian(self, rel: str) -> None:
        self._path(self.server.state.root / "debian", rel)

    def _file(self, rel: str) -> None:
        self._path(self.server.state.root / "files", rel)

    def _simple(self, rel: str) -> None:
        st = self.server.state
        project = canonicalize_name(rel.strip("/"))
        files = st.wheels.get(project)
        if files is None or not rel.endswith("/"):
            self._send(404, b"not found", "text/plain")
            return
        # relative to the page, as real indexes often write them
        up = "../" * (st.paths.pypi.count("/") + 1)
        rows = [(f.name, f"{up}{st.paths.files.lstrip('/')}/{quote(f.name)}", _sha256(f))
                for f in files]
        if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
            doc = {"meta": {"api-version": "1.1"}, "name": project,
                   "files": [{"filename": n, "url": u, "hashes": {"sha256": h}}
                             for n, u, h in rows]}
            self._send(200, json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json")
            return
        links = "".join(f'<a href="{u}#sha256={h}">{n}</a><br/>\n' for n, u, h in rows)
        self._send(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(),
                   "text/html")

    def _npm(self, rel: str) -> None:
        st = self.server.state
        if st.token and self.headers.get("Authorization") != f"Bearer {st.token}":
            self._send(401, b'{"error":"unauthorized"}', "application/json")
            return
        m = re.fullmatch(r"(.+)/-/([^/]+\.tgz)", rel)
        if m is not None:
            for tgz in st.npm.get(m[1], {}).values():
                if tgz.name == m[2]:
                    self._send(200, tgz.read_bytes(), "application/octet-stream")
                    return
            self._send(404, b"not found", "text/plain")
            return
        versions = st.npm.get(rel)
        if versions is None:
            self._send(404, b'{"error":"not found"}', "application/json")
            return
        doc = {"name": rel, "dist-tags": {"latest": max(versions)}, "versions": {
            v: {"name": rel, "version": v, "dist": {
                "tarball": f"{st.base}{st.paths.npm}/{rel}/-/{tgz.name}",
                "integrity": "sha512-" + base64.b64encode(
                    hashlib.sha512(tgz.read_bytes()).digest()).decode(),
                "shasum": hashlib.sha1(tgz.read_bytes()).hexdigest()}}
            for v, tgz in versions.items()}}
        self._send(200, json.dumps(doc).encode(), "application/vnd.npm.install-v1+json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Server(LoopbackServer):
    state: _State


class RegistryMirror(Running):
    """``with RegistryMirror(folder) as m:`` then ``m.add_debian(…)``, ``m.add_wheel(…)``,
    ``m.add_npm(…)``; ``m.debian``, ``m.pypi``, ``m.npm`` are the roots a machine's apt, pip
    and npm configuration name."""

    httpd: _Server

    def __init__(self, root: Path, paths: Paths | None = None, token: str = "",
                 auth: str = "") -> None:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.state = _State(Path(root), paths or Paths(), token=token, auth=auth)
        super().__init__(httpd)
        httpd.state.base = self.url

    @property
    def state(self) -> _State:
        return self.httpd.state

    @property
    def requests(self) -> list[str]:
        return self.state.requests

    @property
    def authorizations(self) -> list[str]:
        return self.state.authorizations

    @property
    def debian(self) -> str:
        return self.url + self.state.paths.debian

    @property
    def pypi(self) -> str:
        return self.url + self.state.paths.pypi

    @property
    def npm(self) -> str:
        return self.url + self.state.paths.npm + "/"

    def add_debian(self, pool: str, file: Path) -> None:
        """``file`` served as ``<debian>/pool/…`` (``pool``: its path from the root)."""
        dest = self.state.root / "debian" / pool
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, dest)

    def add_wheel(self, file: Path, name: str | None = None) -> None:
        """A wheel (or any file, under the wheel's ``name``) in the simple index."""
        dest = self.state.root / "files" / (name or file.name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, dest)
        project = str(parse_wheel_filename(dest.name)[0])
        self.state.wheels.setdefault(project, []).append(dest)

    def add_npm(self, name: str, version: str, tgz: Path) -> None:
        dest = self.state.root / "npm" / name / f"{name.rsplit('/', 1)[-1]}-{version}.tgz"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tgz, dest)
        self.state.npm.setdefault(name, {})[version] = dest


def machine_config(home: Path, mirror: RegistryMirror, suite: str = "bookworm",
                   npmrc: str = "") -> dict[str, str]:
    """The variables that point this machine's apt, pip and npm at ``mirror`` through their
    own configuration files (``APT_CONFIG`` and a sources part; a user ``pip.conf`` and
    ``.npmrc`` under ``home``), for a prebake started with ``HOME=home``: what a release
    engineer's machine behind a company mirror holds."""
    apt = home / "apt"
    (apt / "sources.list.d").mkdir(parents=True, exist_ok=True)
    (apt / "apt.conf").write_text(f'Dir::Etc::sourcelist "{apt / "sources.list"}";\n'
                                  f'Dir::Etc::sourceparts "{apt / "sources.list.d"}";\n')
    (apt / "sources.list.d" / "mirror.sources").write_text(
        f"Types: deb\nURIs: {mirror.debian}\nSuites: {suite} {suite}-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    pip = home / ".config" / "pip"
    pip.mkdir(parents=True, exist_ok=True)
    (pip / "pip.conf").write_text(f"[global]\nindex-url = {mirror.pypi}\n")
    (home / ".npmrc").write_text(f"registry={mirror.npm}\n{npmrc}")
    return {"HOME": str(home), "APT_CONFIG": str(apt / "apt.conf"),
            "XDG_CONFIG_HOME": str(home / ".config")}
