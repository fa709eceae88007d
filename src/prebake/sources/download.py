"""Downloading a file whose digest is not known yet (``prebake pin`` computes it).

Mirrors are tried in order; a partial download is kept under ``<cache>/sources/.partial/`` (named
by the URL's hash) and resumed with an HTTP ``Range`` request on the next attempt, so a big
upstream archive cut at 90 % costs the last 10 %. The finished file is moved into the
content-addressed cache under its sha256, where the build finds it without a second download.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.sources.cache import CHUNK, MAX_DOWNLOAD_BYTES, SourceCache
from prebake.web import open_url


@dataclass(frozen=True)
class Downloaded:
    url: str  # the URL that served it (a mirror, perhaps)
    sha256: str
    size: int
    path: Path


def _partial(cache: SourceCache, url: str) -> Path:
    folder = cache.root / ".partial"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / hashlib.sha256(url.encode()).hexdigest()


def _get(url: str, part: Path) -> None:
    """Append the rest of ``url`` to ``part`` (from its current size), or restart it."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        resp = open_url(url, headers)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # already complete
            return
        raise
    with resp:
        mode = "ab" if have and resp.status == 206 else "wb"
        written = have if mode == "ab" else 0
        with open(part, mode) as out:
            while chunk := resp.read(CHUNK):
                written += len(chunk)
                if written > MAX_DOWNLOAD_BYTES:
                    raise PrebakeError(f"{url}: larger than {MAX_DOWNLOAD_BYTES} bytes; refused")
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        length = resp.headers.get("Content-Length")
        if length is not None and written - (have if mode == "ab" else 0) != int(length):
            raise OSError(f"connection closed after {written} bytes")


def download_new(urls: Sequence[str], cache: SourceCache,
                 log: Callable[[str], None] | None = None) -> tuple[Downloaded | None, list[str]]:
    """The first mirror that serves the file, in the cache under its sha256; else ``None`` and
    why each mirror failed."""
    say = log or (lambda _m: None)
    failures: list[str] = []
    for url in urls:
        part = _partial(cache, url)
        try:
            _get(url, part)
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = (f"HTTP {exc.code} {exc.reason}" if isinstance(exc, urllib.error.HTTPError)
                      else str(getattr(exc, "reason", None) or exc))
            if isinstance(exc, urllib.error.HTTPError):
                part.unlink(missing_ok=True)  # nothing to resume from an error page
            failures.append(f"{urlsplit(url).netloc or url}: {reason}")
            say(f"download failed: {url}: {reason}; trying the next mirror")
            continue
        sha = file_sha256(part)
        size = part.stat().st_size
        final = cache.path_for(sha)
        part.replace(final)
        say(f"downloaded {url} ({size} bytes, sha256 {sha})")
        return Downloaded(url, sha, size, final), failures
    return None, failures
