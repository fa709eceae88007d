"""A content-addressed download cache: ``<cache>/sources/<sha256>``, verified before every use.

An entry is written to a temporary file beside it and renamed into place only once its sha256
matches the pin, so an interrupted or tampered download never leaves an entry behind; an entry
that no longer matches (disk corruption, a hand edit) is discarded and fetched again.

A file is asked for by its name as the lock keys it — a registry reference
(``debian:pool/…``) or a URL — and the cache's ``Resolver`` (``prebake.sources.mirrors``) turns
the name into the URLs this machine's mirrors serve it from, only when the cache lacks it.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import tempfile
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from prebake.cachedir import default_cache_dir
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.redact import redact_text
from prebake.sources.candidates import AsWritten, Resolves, served
from prebake.web import open_url

CHUNK = 1 << 20


# With no locked size (a digest written in a recipe), the bound ``prebake pin`` downloads under
# (onnxruntime's biggest release archive is ~300 MB).
MAX_DOWNLOAD_BYTES = 8 << 30


class TooBig(Exception):
    """A mirror sent (or announced) more bytes than the file can have."""


def _download(url: str, tmp: Path, limit: int, headers: Mapping[str, str] | None = None
              ) -> str:
    """Stream ``url`` into ``tmp``, never more than ``limit`` bytes (the lock's size: the
    file cannot be longer, so the first byte past it ends the download); return the sha256
    of what was received."""
    h = hashlib.sha256()
    with open_url(url, dict(headers or {})) as resp, open(tmp, "wb") as out:
        announced = resp.headers.get("Content-Length")
        if announced is not None and announced.isdigit() and int(announced) > limit:
            raise TooBig(f"the server announces {int(announced)} bytes")
        received = 0
        while chunk := resp.read(min(CHUNK, limit + 1 - received)):
            received += len(chunk)
            if received > limit:
                raise TooBig(f"more than {limit} bytes sent; stopped there")
            h.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return h.hexdigest()


Log = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


class SourceCache:
    """Downloads by pinned sha256, trying mirrors in order.

    ``resolver`` turns a name (a registry reference or a URL) into the URLs that may serve it
    (``prebake.sources.mirrors.Resolver``: the machine's mirrors and the workspace's
    ``[mirrors]``); without one a name is the URL it spells. Units running in parallel share
    one cache: what a call has to say goes to the ``log`` it is given, never to a log kept on
    the cache."""

    def __init__(self, root: Path | None = None, resolver: Resolves | None = None) -> None:
        self.base = root or default_cache_dir()
        self.root = self.base / "sources"
        self.resolver: Resolves = resolver or AsWritten()

    def resolving(self, resolver: Resolves) -> SourceCache:
        """The same cache, its names resolved by ``resolver``."""
        return SourceCache(self.base, resolver)

    def _tmp(self, sha256: str) -> Path:
        """A fresh temporary name beside the entry (units in parallel may fetch one file)."""
        fd, name = tempfile.mkstemp(prefix=f".{sha256}.", suffix=".part", dir=self.root)
        os.close(fd)
        return Path(name)

    def path_for(self, sha256: str) -> Path:
        return self.root / sha256

    def lookup(self, sha256: str, log: Log = _quiet) -> Path | None:
        """The verified entry, or ``None`` (a corrupt entry is removed)."""
        p = self.path_for(sha256)
        if not p.is_file():
            return None
        if file_sha256(p) == sha256:
            return p
        log(f"cache entry {p} does not match its sha256; discarding it")
        p.unlink(missing_ok=True)
        return None

    def fetch(self, urls: Sequence[str], sha256: str, log: Log = _quiet, size: int = -1
              ) -> Path:
        """The file with this sha256, from the cache or the first mirror that serves it;
        ``urls`` are its name (as the lock keys it) and the recipe's own mirrors, each
        resolved to the URLs that may serve it; ``size`` is the lock's byte count (-1: not
        known), past which no mirror is read. A mirror that sends other bytes is passed over
        (the lock's digest, and what came, in the log and in the error if none serves it)."""
        name = urls[0] if urls else "?"
        if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
            raise PrebakeError(f"{redact_text(name)}: sha256 pin {sha256!r} is not "
                               "64 lowercase hex digits")
        if hit := self.lookup(sha256, log):
            return hit
        self.root.mkdir(parents=True, exist_ok=True)
        failures: list[str] = []
        limit = size if size >= 0 else MAX_DOWNLOAD_BYTES
        what = (f"the {size} bytes prebake.sources.lock records" if size >= 0
                else f"the {MAX_DOWNLOAD_BYTES}-byte download bound")
        for step in served(self.resolver, urls, failures, log):
            url = step.url
            if step.sha256 and step.sha256 != sha256:  # the index itself lists other bytes
                failures.append(f"{url}: its index ({step.said}) lists sha256 {step.sha256}, "
                                "not the lock's")
                log(redact_text(f"{name}: {failures[-1]}; trying the next mirror"))
                continue
            tmp = self._tmp(sha256)
            try:
                got = _download(url, tmp, limit, step.headers)
            except TooBig as exc:
                tmp.unlink(missing_ok=True)
                failures.append(f"{url}: longer than {what} ({exc})")
                log(redact_text(f"{url}: longer than {what} ({exc}); trying the next mirror"))
                continue
            except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
                tmp.unlink(missing_ok=True)
                reason = (f"HTTP {exc.code} {exc.reason}" if isinstance(exc, urllib.error.HTTPError)
                          else getattr(exc, "reason", None) or exc)
                failures.append(f"{url}: {reason}")
                log(redact_text(f"download failed: {url}: {reason}; trying the next mirror"))
                continue
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            if got != sha256:
                came = tmp.stat().st_size
                tmp.unlink(missing_ok=True)
                failures.append(f"{url} sent sha256 {got} ({came} bytes), not the lock's")
                log(redact_text(f"{name}: {url} sent sha256 {got} ({came} bytes) but "
                                f"prebake.sources.lock has {sha256}: refused; trying the next "
                                "mirror"))
                continue
            final = self.path_for(sha256)
            tmp.replace(final)
            named = f" for {name}" if url != name else ""
            log(redact_text(f"downloaded {url} ({final.stat().st_size} bytes, sha256 "
                            f"verified){named}"))
            return final
        pinned = f"sha256 {sha256}" + (f", {size} bytes" if size >= 0 else "")
        raise PrebakeError(redact_text(f"{name}: no mirror served the file "
                                       f"prebake.sources.lock pins ({pinned}); tried: "
                                       + "; ".join(failures or ["nothing"])))
