"""Stores: where assets live (local folder, GitHub Releases, S3, HTTP mirrors).

``open_store(url)`` picks the backend by URL scheme from one registry (the cibuildwheel
platform-module pattern); every backend implements ``prebake.store.base.Store``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prebake.errors import PrebakeError
from prebake.store.base import Store

#: scheme -> "module:function" building the store from (url, root). Imported lazily so that
#: ``file://`` users never import httpx or boto3.
BACKENDS: dict[str, str] = {
    "file": "prebake.store.local:open_local",
    "github": "prebake.store.github:open_github",
    "s3": "prebake.store.s3:open_s3",
    "http": "prebake.store.http:open_mirrors",
    "https": "prebake.store.http:open_mirrors",
}


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def open_store(url: str | Sequence[str], *, root: Path | None = None) -> Store:
    """The store for ``url``; relative ``file://`` paths resolve against ``root`` (the workspace
    root; the current folder when ``None``). Several ``http(s)`` URLs — a list or one string
    separated by ``,`` — form a mirror list tried in order."""
    urls = [u.strip() for u in (url.split(",") if isinstance(url, str) else url) if u.strip()]
    if not urls:
        raise PrebakeError("empty store URL")
    schemes = {_scheme(u) for u in urls}
    if len(urls) > 1 and not schemes <= {"http", "https"}:
        raise PrebakeError(f"{','.join(urls)}: only http(s) mirrors can be listed together")
    scheme = schemes.pop()
    target = BACKENDS.get(scheme)
    if target is None:
        raise PrebakeError(
            f"{urls[0]}: unknown store scheme {scheme!r} (known: {', '.join(sorted(BACKENDS))})"
        )
    mod_name, fn_name = target.split(":")
    factory = getattr(importlib.import_module(mod_name), fn_name)
    store: Store = factory(urls if scheme in ("http", "https") else urls[0], root)
    return store


if TYPE_CHECKING:  # mypy proves every backend implements the protocol
    from prebake.store.github import GitHubStore
    from prebake.store.http import MirrorStore
    from prebake.store.local import LocalStore
    from prebake.store.s3 import S3Store

    def _conforms(a: LocalStore, b: GitHubStore, c: S3Store, d: MirrorStore) -> list[Store]:
        return [a, b, c, d]

