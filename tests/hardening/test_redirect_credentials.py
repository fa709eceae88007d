"""Credentials go only to the origin (scheme, host, port) they were given for, on every HTTP
path: ``prebake pin`` and ``build`` downloading a source, ``fetch`` from an HTTP mirror store.

Two real servers on 127.0.0.1 (different ports), reached as ``127.0.0.1`` and as
``localhost``: the first answers 302 to the second, which records every header it is sent.
The token of a source URL's userinfo, a mirror store's, a cookie the first server set and a
proxy's credentials must never reach the second; a redirect within one origin keeps the token
(a private archive that redirects inside its host still downloads); an https source
redirected to http loses it; a redirect to ``ftp:`` is refused.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from prebake.package.naming import sha256_line
from tests import support
from tests.servers.redirects import Recorder

TOKEN = "ghp_RedirT0kenNeverElsewhere42"
COOKIE = "session=CookieNeverElsewhere77"
PROXY_PASSWORD = "PrxPassNeverElsewhere9"
BASIC = "Basic " + base64.b64encode(f"builder:{TOKEN}".encode()).decode()
PLATFORM = "linux-x86_64"

RECIPE = """\
from prebake.recipes import Build, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="mini",
    pin="mini",
    sources=(UrlSource({url!r}),),
    platforms={{"*": Build(commands=(
        "cmake -E make_directory {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -I{{src}} -c {{src}}/mini.c -o {{build}}/mini.o",
        "{{ar}} rcs {{prefix}}/lib/libmini.a {{build}}/mini.o",
        "cmake -E copy {{src}}/mini.h {{prefix}}/include/mini.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libmini.a",)}}, headers=("include/mini.h",),
                    license="LICENSE"),
)
"""


def _tarball(path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("mini-1.0/mini.c", b"int mini_add(int a, int b) { return a + b; }\n"),
                           ("mini-1.0/mini.h", b"int mini_add(int, int);\n"),
                           ("mini-1.0/LICENSE", b"MIT\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[Recorder, Recorder]]:
    """``first`` (the URL given, with the credentials) and ``second`` (where it redirects),
    both serving the tarball."""
    root = tmp_path / "served"
    root.mkdir()
    _tarball(root / "mini-1.0.tar.gz")
    with Recorder(root) as first, Recorder(root) as second:
        yield first, second


def _workspace(tmp_path: Path, url: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(support.gcc_workspace(
        "redirdemo", 'mini = "1.0"', "core", '["mini"]', env_unset=("CFLAGS", "LDFLAGS"),
        more=""))
    (ws / "recipes" / "mini.py").write_text(RECIPE.format(url=url))
    return ws


def _prebake(ws: Path, *args: str, cache: Path, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    proc = support.prebake("-C", ws, *args, env={"PREBAKE_CACHE": str(cache), **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _carried(headers: list[dict[str, str]]) -> list[str]:
    """The credential headers among ``headers`` (one request's each), with their values."""
    return [f"{k}: {v}" for h in headers for k, v in h.items()
            if k in ("authorization", "proxy-authorization", "cookie")]


def test_pin_and_build_send_a_source_token_only_to_its_own_host(
        tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    """The issue's reproducer: ``http://builder:TOKEN@127.0.0.1:P1/…`` answering 302 to
    ``http://localhost:P2/…``; ``pin`` downloads it, then ``build`` (with an empty cache)
    downloads it again."""
    first, second = servers
    first.redirect("/mini-1.0.tar.gz", f"http://localhost:{second.port}/mini-1.0.tar.gz",
                   cookie=COOKIE)
    ws = _workspace(tmp_path, f"http://builder:{TOKEN}@127.0.0.1:{first.port}"
                              "/mini-{version}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache-pin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _prebake(ws, "build", cache=tmp_path / "cache-build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert first.headers_for("/mini-1.0.tar.gz")[0]["authorization"] == BASIC  # given there
    got = second.headers_for("/mini-1.0.tar.gz")
    assert len(got) == 2, second.seen  # pin's download and build's
    assert {h["host"] for h in got} == {f"localhost:{second.port}"}
    assert _carried(got) == []


def test_another_port_of_one_host_is_another_origin(
        tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    first, second = servers
    first.redirect("/mini-1.0.tar.gz", f"http://127.0.0.1:{second.port}/mini-1.0.tar.gz")
    ws = _workspace(tmp_path, f"http://builder:{TOKEN}@127.0.0.1:{first.port}"
                              "/mini-{version}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _carried(second.headers_for("/mini-1.0.tar.gz")) == []


def test_another_host_name_on_the_same_port_is_another_origin(
        tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    """``127.0.0.1:P`` to ``localhost:P``: the same socket, but another host name."""
    first, _second = servers
    first.redirect("/mini-1.0.tar.gz", f"http://localhost:{first.port}/moved/mini-1.0.tar.gz")
    (first.httpd.root / "moved").mkdir()
    _tarball(first.httpd.root / "moved" / "mini-1.0.tar.gz")
    ws = _workspace(tmp_path, f"http://builder:{TOKEN}@127.0.0.1:{first.port}"
                              "/mini-{version}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    moved = first.headers_for("/moved/")
    assert moved and _carried(moved) == []


def test_a_redirect_within_the_origin_keeps_the_token(
        tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    """A private archive that redirects inside its own host still downloads: the second
    path answers 401 without the token."""
    first, _second = servers
    first.redirect("/mini-1.0.tar.gz", f"http://127.0.0.1:{first.port}/private/mini-1.0.tar.gz")
    (first.httpd.root / "private").mkdir()
    _tarball(first.httpd.root / "private" / "mini-1.0.tar.gz")
    first.require_auth("/private/mini-1.0.tar.gz", BASIC)
    ws = _workspace(tmp_path, f"http://builder:{TOKEN}@127.0.0.1:{first.port}"
                              "/mini-{version}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert first.headers_for("/private/")[0]["authorization"] == BASIC


def test_a_proxys_credentials_never_reach_a_host_it_does_not_proxy(
        tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    """Through ``http_proxy=http://user:PASSWORD@127.0.0.1:P1``, a redirect to a host that
    ``no_proxy`` names goes there directly, and urllib's copy of the request's headers would
    hand it the proxy's ``Proxy-Authorization``."""
    first, second = servers  # the first is the proxy: it answers proxied requests itself
    first.redirect("/mini-1.0.tar.gz", f"http://localhost:{second.port}/mini-1.0.tar.gz")
    ws = _workspace(tmp_path, "http://upstream.invalid/mini-{version}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache",
                    env={"http_proxy": f"http://proxyuser:{PROXY_PASSWORD}@127.0.0.1:"
                                       f"{first.port}", "no_proxy": "localhost"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert first.headers_for("upstream.invalid")[0]["proxy-authorization"].startswith("Basic ")
    assert _carried(second.headers_for("/mini-1.0.tar.gz")) == []


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and the CA file a client trusts it by)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1,IP:127.83.1.2,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_https_redirected_to_http_loses_the_token(
        tmp_path: Path, servers: tuple[Recorder, Recorder],
        certificate: tuple[Path, Path]) -> None:
    _first, second = servers
    with Recorder(second.httpd.root, tls=certificate) as secure:
        secure.redirect("/mini-1.0.tar.gz", f"http://127.0.0.1:{second.port}/mini-1.0.tar.gz")
        ws = _workspace(tmp_path, f"https://builder:{TOKEN}@127.0.0.1:{secure.port}"
                                  "/mini-{version}.tar.gz")
        proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache",
                        env={"SSL_CERT_FILE": str(certificate[0])})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert secure.headers_for("/mini-1.0.tar.gz")[0]["authorization"] == BASIC
    assert _carried(second.headers_for("/mini-1.0.tar.gz")) == []


def test_a_redirect_to_ftp_is_refused(tmp_path: Path, servers: tuple[Recorder, Recorder]
                                      ) -> None:
    """urllib follows ``ftp:`` (and refuses ``file:`` itself)."""
    first, _second = servers
    location = "ftp://127.0.0.1/etc/hostname"
    first.redirect("/mini-1.0.tar.gz", location)
    ws = _workspace(tmp_path, f"http://127.0.0.1:{first.port}/mini-{{version}}.tar.gz")
    proc = _prebake(ws, "pin", "mini", "1.0", cache=tmp_path / "cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"to {location}: only http(s) redirects are followed" in proc.stderr, proc.stderr


# ---- fetch from an HTTP mirror store ---------------------------------------------------------

def _mirror(root: Path) -> str:
    """A release of ``demo`` laid out as a mirror serves it (``<release>/<file>``)."""
    manifest = support.valid_manifest("demo", "1.0.0", PLATFORM)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        data = json.dumps(manifest).encode()
        ti = tarfile.TarInfo("share/prebake/manifest.json")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    name = f"demo-1.0.0-{PLATFORM}.tar.xz"
    d = root / "continuous"
    d.mkdir(parents=True)
    (d / name).write_bytes(buf.getvalue())
    (d / (name + ".json")).write_text(json.dumps(manifest))
    (d / (name + ".sha256")).write_text(sha256_line(hashlib.sha256(buf.getvalue()).hexdigest(),
                                                    name))
    return name


def _fetch(tmp_path: Path, store: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    proc = support.prebake("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", store,
                           "--into", str(tmp_path / "into"), "--release", "continuous",
                           "--lock", str(tmp_path / "prebake.lock"),
                           env={"PREBAKE_CACHE": str(tmp_path / "cache"), **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("userinfo", [f"builder:{TOKEN}@", ""], ids=["token", "cookie-only"])
def test_fetch_sends_a_mirrors_token_and_cookie_only_to_that_mirror(
        tmp_path: Path, servers: tuple[Recorder, Recorder], userinfo: str) -> None:
    """Every file of the release answers 302 to the other server (on another port of the
    same host: a cookie knows no port), with a cookie set on the way. (httpx's own rule
    already dropped the token; its cookie jar sent the cookie on, where the store URL has
    no userinfo.)"""
    first, second = servers
    name = _mirror(first.httpd.root)
    for suffix in ("", ".json", ".sha256"):
        path = f"/continuous/{name}{suffix}"
        first.redirect(path, f"http://127.0.0.1:{second.port}{path}", cookie=COOKIE)
    proc = _fetch(tmp_path, f"http://{userinfo}127.0.0.1:{first.port}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "into" / "share/prebake/manifest.json").is_file()
    if userinfo:
        assert first.headers_for(name)[0]["authorization"] == BASIC
    got = second.headers_for(name)
    assert len(got) >= 3, second.seen
    assert _carried(got) == []


def test_fetch_drops_the_token_on_a_move_to_https(
        tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    """``http://H/`` to ``https://H/`` (default ports: the one move httpx keeps a token on)
    is another origin too. Needs ports 80 and 443 (a loopback address of its own)."""
    if os.geteuid() != 0:
        pytest.skip("binding ports 80 and 443 needs root")
    root = tmp_path / "served"
    name = _mirror(root)
    host = "127.83.1.2"
    with Recorder(root, host=host, port=80) as plain, \
            Recorder(root, host=host, port=443, tls=certificate) as secure:
        for suffix in ("", ".json", ".sha256"):
            path = f"/continuous/{name}{suffix}"
            plain.redirect(path, f"https://{host}{path}")
        proc = _fetch(tmp_path, f"http://builder:{TOKEN}@{host}",
                      env={"SSL_CERT_FILE": str(certificate[0])})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = secure.headers_for(name)
    assert len(got) >= 3 and _carried(got) == []
