"""What an HTTP request may carry when a server redirects it: the one rule for every HTTP path
prebake has (source downloads through urllib, ``sources``; the stores' httpx client,
``store.transport``), and the opener sources use.

Credentials go only to the origin they were given for — the scheme, host and port of the URL
they came with (RFC 6454's origin; ``localhost`` and ``127.0.0.1`` are two hosts, ``:8080`` and
``:8081`` two origins, ``https`` to ``http`` a downgrade). On a redirect to another origin the
request loses ``Authorization``, ``Proxy-Authorization`` and any cookie: a source URL's
``user:token@`` (sent as a Basic header), a store's bearer token and a proxy's credentials
reach neither a mirror's CDN nor whatever host a compromised server names. A same-origin
redirect keeps them (GitLab's archive URLs redirect within the host). urllib copies every
header onto every redirect, and a ``Proxy-Authorization`` its proxy handler added would then go
straight to a host the request reaches without the proxy (``no_proxy``); httpx keeps
``Authorization`` on an ``http`` to ``https`` move and keeps a cookie across ports (cookies
have no port): so neither library's own rule is used. A redirect anywhere but ``http(s)``
(``ftp:``, ``file:``) is refused.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import IO, Any
from urllib.parse import unquote, urlsplit, urlunsplit

#: headers that carry a credential (compared case-insensitively)
CREDENTIALS = frozenset({"authorization", "proxy-authorization", "cookie", "cookie2"})
SCHEMES = ("http", "https")
_DEFAULT_PORT = {"http": 80, "https": 443}
TIMEOUT = 60.0


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` with the scheme's default port filled in, host lowercased."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is no number: an origin of its own, equal to none
        port = -1
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORT.get(scheme)


class RedirectRefused(ValueError):
    """A redirect to a scheme prebake does not follow."""


def redirect_headers(old_url: str, new_url: str, headers: Mapping[str, str]) -> dict[str, str]:
    """The headers the request to ``new_url`` may carry, redirected from ``old_url`` with
    ``headers``: all of them to the same origin, none of :data:`CREDENTIALS` to another.
    Raises ``RedirectRefused`` for a redirect to a
    scheme other than ``http``/``https``."""
    if urlsplit(new_url).scheme.lower() not in SCHEMES:
        raise RedirectRefused(f"redirected from {old_url} to {new_url}: only http(s) redirects "
                              "are followed")
    if origin(old_url) == origin(new_url):
        return dict(headers)
    return {k: v for k, v in headers.items() if k.lower() not in CREDENTIALS}


class _Redirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, with the headers :func:`redirect_headers` allows."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int,
                         msg: str, headers: Any, newurl: str) -> urllib.request.Request | None:
        try:
            kept = redirect_headers(req.full_url, newurl, req.headers)
        except RedirectRefused as exc:
            raise urllib.error.HTTPError(req.full_url, code, str(exc), headers, fp) from None
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            # the base class copied every header but the body's; a proxy's own header is
            # added again by the proxy handler for a request that goes through the proxy
            new.headers = {k: v for k, v in new.headers.items()
                           if k in kept and k.lower() != "proxy-authorization"}
        return new


def open_url(url: str, headers: Mapping[str, str] | None = None, *,
             timeout: float = TIMEOUT) -> Any:
    """``urlopen`` for a URL that may carry credentials (``https://user:token@host/…``, what
    a private GitHub or GitLab archive takes): urllib would read the userinfo as part of the
    host name, so it goes in a Basic ``Authorization`` header, as curl and git send it, and
    only to that origin. Redirects follow :func:`redirect_headers`. Returns urllib's
    response (raises its ``URLError``/``HTTPError``)."""
    parts = urlsplit(url)
    head = {"User-Agent": "prebake", **(headers or {})}
    if "@" in parts.netloc:
        userinfo, _, host = parts.netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        head["Authorization"] = f"Basic {token}"
        url = urlunsplit(parts._replace(netloc=host))
    opener = urllib.request.build_opener(_Redirects)
    return opener.open(urllib.request.Request(url, headers=head), timeout=timeout)
