"""The HTTP transport under the GitHub (``store/github.py``) and mirror (``store/http.py``)
backends: one client that never logs or echoes credentials (and follows redirects under
``prebake.web``'s rule: credentials only to their origin), statuses mapped to prebake's error
classes, resumable downloads (``Range``) with retries and bounded small GETs. Not a store itself."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx

from prebake.package.naming import MAX_ASSET_BYTES
from prebake.store.base import (
    AuthError,
    ProgressFn,
    StoreError,
    TransientError,
    bound_words,
    redact,
    with_retries,
)
from prebake.web import RedirectRefused, redirect_headers

TIMEOUT = httpx.Timeout(60.0, connect=10.0)
#: sidecars and API answers: a manifest of 100 000 files fits; an endless body does not
MAX_SMALL_BODY = 64 * 1024**2
SMALL_BODY_SECONDS = float(os.environ.get("PREBAKE_SMALL_GET_SECONDS", "120"))
USER_AGENT = "prebake (+https://github.com/prebake)"


class NotFound(StoreError):
    """The URL answered 404 (a mirror may lack what another has)."""


MAX_REDIRECTS = 10


def make_client() -> httpx.Client:
    """The stores' client. It follows no redirect itself (:func:`send` does, under
    ``prebake.web``'s rule) and keeps no cookie: no store needs one, and a cookie has no port,
    so one mirror's would reach another on the same host."""
    return httpx.Client(timeout=TIMEOUT, follow_redirects=False,
                        headers={"User-Agent": USER_AGENT},
                        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])))


def send(client: httpx.Client, method: str, url: str, *, stream: bool = False,
         **kw: Any) -> httpx.Response:
    """``client.request`` with redirects followed by ``prebake.web.redirect_headers``:
    credentials only to the origin they were given for. With ``stream`` the body is left
    unread (close the response); a redirect to a scheme other than http(s) is a
    ``StoreError``."""
    request = client.build_request(method, url, **kw)
    for _ in range(MAX_REDIRECTS + 1):
        resp = client.send(request, stream=True)
        following = resp.next_request
        if following is None:
            if not stream:
                try:
                    resp.read()
                finally:
                    resp.close()
            return resp
        resp.close()
        try:
            kept = redirect_headers(str(request.url), str(following.url),
                                    {k.decode("latin-1"): v.decode("latin-1")  # as spelt
                                     for k, v in following.headers.raw})
        except RedirectRefused as exc:
            raise StoreError(redact(str(exc))) from None
        following.headers = httpx.Headers(kept)
        request = following
    raise StoreError(redact(f"{url}: more than {MAX_REDIRECTS} redirects"))


@contextlib.contextmanager
def streamed(client: httpx.Client, method: str, url: str, **kw: Any
             ) -> Iterator[httpx.Response]:
    """:func:`send` as a context manager: the response's body read as it arrives."""
    resp = send(client, method, url, stream=True, **kw)
    try:
        yield resp
    finally:
        resp.close()


def _message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return str(body["message"])
    except ValueError:
        pass
    return resp.reason_phrase or ""


def check(resp: httpx.Response, what: str, secret: str | None = None) -> httpx.Response:
    """Map a response to prebake's error classes; the returned response is a success."""
    code = resp.status_code
    if code < 400:
        return resp
    if not resp.is_stream_consumed:
        resp.read()
    msg = redact(f"{what}: HTTP {code} {_message(resp)}".strip(), secret)
    # GitHub answers rate limits (primary and secondary) with 403 too: those are worth waiting
    rate_limited = code == 403 and (resp.headers.get("x-ratelimit-remaining") == "0"
                                    or "retry-after" in resp.headers
                                    or "rate limit" in msg.lower())
    if code in (401, 403) and not rate_limited:
        raise AuthError(f"{msg} — authentication failed; check the token in GH_TOKEN/GITHUB_TOKEN "
                        "and that it may write releases")
    if code == 404:
        raise NotFound(msg)
    if code == 429 or code >= 500 or code == 403:
        raise TransientError(msg)
    raise StoreError(msg)


_TRANSPORT = (  # httpx's exception classes, said as what happened
    (httpx.ConnectTimeout, "connection timed out"),
    (httpx.ConnectError, "cannot connect"),
    (httpx.ReadTimeout, "no answer in time"),
    (httpx.WriteTimeout, "could not send in time"),
    (httpx.PoolTimeout, "no free connection in time"),
    (httpx.RemoteProtocolError, "the server broke the connection"),
    (httpx.ProxyError, "the proxy refused"),
)


def transport_error(exc: Exception, what: str, secret: str | None = None) -> TransientError:
    said = next((text for cls, text in _TRANSPORT if isinstance(exc, cls)), "network error")
    detail = str(exc)
    return TransientError(redact(f"{what}: {said}" + (f" ({detail})" if detail else ""),
                                 secret))


def download(client: httpx.Client, url: str, dest: Path, *, what: str,
             headers: Mapping[str, str] | None = None, progress: ProgressFn | None = None,
             secret: str | None = None, attempts: int | None = None,
             limit: int | None = None) -> Path:
    """GET ``url`` into ``dest`` via ``dest.part``, resuming with ``Range`` after a break (and
    across runs); transient failures are retried with backoff. No more than ``limit`` bytes
    (the asset's size a consumer lock records; else ``MAX_ASSET_BYTES``) are ever written: a
    body announced or sent longer is refused, nothing kept."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    cap = MAX_ASSET_BYTES if limit is None else limit
    if part.exists() and part.stat().st_size > cap:  # left by a fetch without the bound
        part.unlink()

    def attempt() -> None:
        have = part.stat().st_size if part.exists() else 0
        h = {**dict(headers or {}), "Accept-Encoding": "identity"}  # byte ranges of the file
        if have:
            h["Range"] = f"bytes={have}-"
        try:
            with streamed(client, "GET", url, headers=h) as resp:
                if resp.status_code == 416:  # the partial file is stale or already whole
                    part.unlink(missing_ok=True)
                    raise TransientError(f"{what}: stale partial download, starting over")
                check(resp, what, secret)
                length = resp.headers.get("content-length")
                if resp.status_code == 206 and _range_start(resp) == have:
                    mode, done = "ab", have
                else:
                    mode, done = "wb", 0
                total = done + int(length) if length and length.isdigit() else None
                if total is not None and total > cap:
                    part.unlink(missing_ok=True)
                    raise StoreError(redact(f"{what}: the server announces {total} bytes, "
                                            f"{bound_words(limit)}; nothing kept", secret))
                stop = cap if total is None else total  # a total above cap was refused
                with open(part, mode) as fh:
                    for chunk in resp.iter_bytes():  # as they arrive: a cut keeps what came
                        if done + len(chunk) > stop:
                            part.unlink(missing_ok=True)
                            said = bound_words(limit) if total is None else \
                                f"more than the {total} it announced"
                            raise StoreError(redact(f"{what}: the body runs on past {stop} "
                                                    f"bytes, {said} (an endless body?); "
                                                    "nothing kept", secret))
                        fh.write(chunk)
                        done += len(chunk)
                        if progress:
                            progress(done, total)
                if total is not None and done != total:
                    raise TransientError(f"{what}: connection ended after {done} of {total} bytes")
        except httpx.TransportError as exc:
            raise transport_error(exc, what, secret) from None

    with_retries(attempt, what, attempts)
    part.replace(dest)
    return dest


def _range_start(resp: httpx.Response) -> int | None:
    cr = resp.headers.get("content-range", "")  # "bytes 100-199/200"
    try:
        return int(cr.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def get_bytes(client: httpx.Client, url: str, *, what: str,
              headers: Mapping[str, str] | None = None, secret: str | None = None,
              attempts: int | None = None, limit: int = MAX_SMALL_BODY,
              deadline: float = SMALL_BODY_SECONDS) -> bytes:
    """A small GET (sidecars, API answers) with retries, bounded in size and in time: an
    endless or trickling body is an error, never a MemoryError or a hang."""

    def attempt() -> bytes:
        start = time.monotonic()
        try:
            with streamed(client, "GET", url, headers=dict(headers or {})) as resp:
                check(resp, what, secret)
                length = resp.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    raise StoreError(redact(f"{what}: the server announces {length} bytes, "
                                            f"more than the {limit} this file may have", secret))
                chunks: list[bytes] = []
                got = 0
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    got += len(chunk)
                    if got > limit:
                        raise StoreError(redact(f"{what}: more than the {limit} bytes this "
                                                "file may have (an endless body?)", secret))
                    if time.monotonic() - start > deadline:
                        raise StoreError(redact(f"{what}: still sending after {deadline:.0f} s "
                                                f"({got} bytes); gave up", secret))
                return b"".join(chunks)
        except httpx.TransportError as exc:
            raise transport_error(exc, what, secret) from None

    return with_retries(attempt, what, attempts)
