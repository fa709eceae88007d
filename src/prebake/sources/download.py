"""Downloading a file whose digest is not known yet (``prebake pin`` computes it).

Mirrors are tried in order; a partial download is kept under ``<cache>/sources/.partial/`` (named
by the URL's hash) and resumed with an HTTP ``Range`` request on the next attempt, so a big
upstream archive cut at 90 % costs the last 10 %. The finished file is moved into the
content-addressed cache under its sha256, where the build finds it without a second download.

A name is resolved by the cache's resolver (``prebake.sources.mirrors``); where the index states
what the file is (PyPI's sha256, npm's ``dist.integrity``), a download that is something else
is refused for that mirror: the digest ``prebake pin`` locks is then the one the registry
publishes.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.redact import redact_text
from prebake.sources.cache import CHUNK, MAX_DOWNLOAD_BYTES, SourceCache
from prebake.sources.candidates import Candidate, served
from prebake.web import open_url

_HEX64 = re.compile(r"[0-9a-f]{64}")


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


def _get(url: str, part: Path, auth: Mapping[str, str] | None = None) -> None:
    """Append the rest of ``url`` to ``part`` (from its current size), or restart it."""
    have = part.stat().st_size if part.exists() else 0
    headers = {**(auth or {}), **({"Range": f"bytes={have}-"} if have else {})}
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


def stated_mismatch(cand: Candidate, path: Path, sha: str) -> str | None:
    """Why the downloaded file is not what the index states it is, or None (it says nothing,
    or it agrees): PyPI's sha256, npm's Subresource Integrity (``sha512-<base64>``)."""
    if cand.sha256 and cand.sha256 != sha:
        return f"sent sha256 {sha}, but its index lists {cand.sha256}"
    algo, _, want = cand.integrity.partition("-")
    if algo in ("sha512", "sha384", "sha256", "sha1") and want:
        h = hashlib.new(algo)
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
        got = base64.b64encode(h.digest()).decode()
        if got != want:
            return f"sent {algo}-{got}, but the registry's dist.integrity is {cand.integrity}"
    return None


def download_new(urls: Sequence[str], cache: SourceCache,
                 log: Callable[[str], None] | None = None) -> tuple[Downloaded | None, list[str]]:
    """The first mirror that serves the file, in the cache under its sha256; else ``None`` and
    why each mirror failed (``urls``: the name and the recipe's mirrors, each resolved)."""
    say = log or (lambda _m: None)
    failures: list[str] = []
    for step in served(cache.resolver, urls, failures, say):
        url = step.url
        if _HEX64.fullmatch(step.sha256) and (held := cache.lookup(step.sha256)) is not None:
            # the index states the digest of a file the cache holds (verified by that digest)
            say(redact_text(f"{urls[0]}: {url}: its index lists sha256 {step.sha256}, which "
                            "the cache holds; not downloaded again"))
            return Downloaded(url, step.sha256, held.stat().st_size, held), failures
        part = _partial(cache, url)
        try:
            _get(url, part, step.headers)
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            reason = (f"HTTP {exc.code} {exc.reason}" if isinstance(exc, urllib.error.HTTPError)
                      else str(getattr(exc, "reason", None) or exc))
            if isinstance(exc, urllib.error.HTTPError):
                part.unlink(missing_ok=True)  # nothing to resume from an error page
            # an upstream URL's failure names its host (as the lock's pending entry keeps it);
            # a mirror's names the whole URL
            where = urlsplit(url).netloc or url if step.url == urls[0] else url
            failures.append(f"{where}: {reason}")
            say(redact_text(f"download failed: {url}: {reason}; trying the next mirror"))
            continue
        sha = file_sha256(part)
        size = part.stat().st_size
        wrong = stated_mismatch(step, part, sha)
        if wrong is not None:
            part.unlink(missing_ok=True)
            failures.append(f"{url}: {wrong}")
            say(redact_text(f"{urls[0]}: {url} {wrong}: refused; trying the next mirror"))
            continue
        final = cache.path_for(sha)
        part.replace(final)
        named = f" for {urls[0]}" if url != urls[0] else ""
        say(redact_text(f"downloaded {url} ({size} bytes, sha256 {sha}){named}"))
        return Downloaded(url, sha, size, final), failures
    return None, failures
