"""``github://OWNER/REPO``: GitHub Releases through the REST API (httpx).

* Release per tag. ``continuous`` is the rolling *prerelease* that CI refreshes; any other tag
  (``v1.27.0``) is a normal release.
* Creating a release races between parallel CI legs: ``ensure_release`` reads the tag, creates it
  when missing, and on ``422 already_exists`` (another leg won) re-reads it, with retries because
  a freshly created release can take a moment to be visible by tag.
* Every file is uploaded under a temporary name (``<file>.<random>.partial``, never parsed as an
  asset) and renamed when complete; an existing asset of the final name is deleted just before
  the rename (re-publishing replaces). The ``.sha256`` sidecar is deleted first and renamed into
  place last: it is the commit marker. Readers list only ``state == "uploaded"`` assets whose two
  sidecars are present.
* The token comes from ``GH_TOKEN`` or ``GITHUB_TOKEN``; it is sent only in the Authorization
  header (dropped on a redirect to another origin, the storage host: ``prebake.web``), never
  printed, and redacted from every error message.
* ``PREBAKE_GITHUB_API`` (default ``https://api.github.com``) and ``PREBAKE_GITHUB_UPLOADS``
  (default: the release's own ``upload_url``) point it at another server, e.g. the tests' local
  release-API server on 127.0.0.1 or a GitHub Enterprise host.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from prebake.errors import PrebakeError
from prebake.package.naming import AssetId
from prebake.store import transport
from prebake.store.base import (
    DEFAULT_RELEASE,
    AuthError,
    ProgressFn,
    StoreError,
    TransientError,
    complete_assets,
    prepare_publish,
    redact,
    sidecar_limit,
    with_retries,
)

API_DEFAULT = "https://api.github.com"
_REPO = re.compile(r"^github://([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)/?$")
_CREATE_ATTEMPTS = 12
PARTIAL_MAX_AGE = 3600.0  # seconds before a temporary upload counts as a killed publisher's


def token_from_env(env: dict[str, str] | None = None) -> str | None:
    e = os.environ if env is None else env
    return e.get("GH_TOKEN") or e.get("GITHUB_TOKEN") or None


class _Upload:
    """A streamed request body that reports progress (re-created for every attempt)."""

    def __init__(self, path: Path, progress: ProgressFn | None) -> None:
        self.path = path
        self.progress = progress
        self.total = path.stat().st_size

    def __iter__(self) -> Iterator[bytes]:
        done = 0
        with open(self.path, "rb") as fh:
            while chunk := fh.read(256 * 1024):
                done += len(chunk)
                yield chunk
                if self.progress:
                    self.progress(done, self.total)


class GitHubStore:
    writable = True

    def __init__(self, url: str, owner: str, repo: str, *, token: str | None = None,
                 api: str | None = None, uploads: str | None = None) -> None:
        self.url = url
        self.owner = owner
        self.repo = repo
        self._token = token
        self.api = (api or os.environ.get("PREBAKE_GITHUB_API") or API_DEFAULT).rstrip("/")
        self.uploads = uploads or os.environ.get("PREBAKE_GITHUB_UPLOADS") or None
        self._client: httpx.Client | None = None

    def __repr__(self) -> str:  # never show the token
        return f"GitHubStore({self.url!r})"

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = transport.make_client()
            self._client.headers["Accept"] = "application/vnd.github+json"
            self._client.headers["X-GitHub-Api-Version"] = "2022-11-28"
            if self._token:
                self._client.headers["Authorization"] = f"Bearer {self._token}"
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _repo_url(self, path: str) -> str:
        return f"{self.api}/repos/{self.owner}/{self.repo}{path}"

    def _call(self, method: str, url: str, what: str, **kw: Any) -> httpx.Response:
        """One request; transport failures become ``TransientError`` (retried by callers)."""
        try:
            resp = transport.send(self.client, method, url, **kw)
        except httpx.TransportError as exc:
            raise transport.transport_error(exc, f"{self.url}: {what}", self._token) from None
        if resp.status_code == 422:
            return resp  # callers interpret validation failures (already_exists)
        return transport.check(resp, f"{self.url}: {what}", self._token)

    def _retrying(self, method: str, url: str, what: str, **kw: Any) -> httpx.Response:
        return with_retries(lambda: self._call(method, url, what, **kw), f"{self.url}: {what}")

    def _need_token(self) -> None:
        if not self._token:
            raise AuthError(f"{self.url}: publishing needs a token; set GH_TOKEN or GITHUB_TOKEN")

    # -- releases ---------------------------------------------------------------------------
    def get_release(self, tag: str) -> dict[str, Any] | None:
        try:
            resp = self._retrying("GET", self._repo_url(f"/releases/tags/{quote(tag, safe='')}"),
                                  f"read release {tag}")
        except transport.NotFound:
            return None
        data: dict[str, Any] = resp.json()
        return data

    def ensure_release(self, tag: str) -> dict[str, Any]:
        """The release for ``tag``, created if missing; safe against parallel creators."""
        self._need_token()
        for i in range(_CREATE_ATTEMPTS):
            rel = self.get_release(tag)
            if rel is not None:
                return rel
            body = {"tag_name": tag, "name": tag, "prerelease": tag == DEFAULT_RELEASE,
                    "body": "Assets published by prebake."}
            resp = self._retrying("POST", self._repo_url("/releases"), f"create release {tag}",
                                  json=body)
            if resp.status_code == 201:
                created: dict[str, Any] = resp.json()
                return created
            if not _already_exists(resp):
                raise StoreError(redact(f"{self.url}: create release {tag}: HTTP 422 "
                                        f"{resp.text[:300]}", self._token))
            time.sleep(min(0.05 * 2**i, 2.0))  # another leg created it: re-read it
        raise StoreError(f"{self.url}: release {tag} exists but could not be read back")

    def releases(self) -> list[str]:
        return sorted({r["tag_name"] for r in self._pages(self._repo_url("/releases"),
                                                          "list releases")})

    def _pages(self, url: str, what: str) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            try:
                resp = self._retrying("GET", url, what, params={"per_page": 100, "page": page})
            except transport.NotFound:
                return
            items = resp.json()
            yield from items
            if len(items) < 100:
                return
            page += 1

    def _assets(self, rel: dict[str, Any]) -> list[dict[str, Any]]:
        return list(self._pages(self._repo_url(f"/releases/{rel['id']}/assets"),
                                f"list assets of {rel['tag_name']}"))

    def _uploaded(self, release: str | None) -> dict[str, dict[str, Any]]:
        rel = self.get_release(release or DEFAULT_RELEASE)
        if rel is None:
            return {}
        return {a["name"]: a for a in self._assets(rel) if a.get("state") == "uploaded"}

    # -- reading ----------------------------------------------------------------------------
    def list_assets(self, release: str | None = None) -> list[AssetId]:
        tags = [release] if release else self.releases()
        found: set[AssetId] = set()
        for tag in tags:
            found.update(complete_assets(set(self._uploaded(tag))))
        return sorted(found)

    def _asset_download_url(self, a: dict[str, Any]) -> str:
        return self._repo_url(f"/releases/assets/{a['id']}")

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        assets = self._uploaded(release)
        if asset.filename not in assets or asset.filename + suffix not in assets:
            return None
        side = assets[asset.filename + suffix]
        return transport.get_bytes(self.client, self._asset_download_url(side),
                                   what=f"{self.url}: download {asset.filename}{suffix}",
                                   headers={"Accept": "application/octet-stream"},
                                   secret=self._token, limit=sidecar_limit(suffix))

    def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                 progress: ProgressFn | None = None, limit: int | None = None) -> Path:
        assets = self._uploaded(release)
        if asset.filename not in assets:
            raise StoreError(f"{self.url}: no {asset.filename} in release "
                             f"{release or DEFAULT_RELEASE}")
        url = self._asset_download_url(assets[asset.filename])
        return transport.download(self.client, url, dest,
                                  what=f"{self.url}: download {asset.filename}",
                                  headers={"Accept": "application/octet-stream"},
                                  progress=progress, secret=self._token, limit=limit)

    def asset_url(self, asset: AssetId, release: str | None = None) -> str:
        tag = quote(release or DEFAULT_RELEASE, safe="")
        web = "https://github.com" if self.api == API_DEFAULT else self.api
        return f"{web}/{self.owner}/{self.repo}/releases/download/{tag}/{asset.filename}"

    # -- writing ----------------------------------------------------------------------------
    def publish(self, asset_path: Path, release: str | None = None, *,
                progress: ProgressFn | None = None) -> AssetId:
        ps = prepare_publish(asset_path)
        self._need_token()
        rel = self.ensure_release(release or DEFAULT_RELEASE)
        self._delete_named(rel, ps.aid.sha256_name)  # hide the old asset (commit marker) first
        self._put(rel, ps.asset, ps.aid.filename, progress)
        self._put(rel, ps.manifest_file, ps.aid.manifest_name, None)
        for name in ps.stale_extras():
            self._delete_named(rel, name)
        for extra in ps.extras:
            self._put(rel, extra, extra.name, None)
        self._put(rel, ps.sha256_file, ps.aid.sha256_name, None)  # commit
        self._sweep(rel, ps.aid)
        return ps.aid

    def _sweep(self, rel: dict[str, Any], aid: AssetId) -> None:
        """Delete temporary uploads of this asset left by killed publishers. Only old ones:
        a young one may belong to a publisher still uploading."""
        now = time.time()
        prefixes = (f"{aid.filename}.",)  # every sidecar's temporary name starts so too
        for a in self._assets(rel):
            name = str(a["name"])
            if not (name.endswith(".partial") and name.startswith(prefixes)):
                continue
            created = _timestamp(a.get("created_at"))
            if created is not None and now - created > PARTIAL_MAX_AGE:
                with contextlib.suppress(transport.NotFound):
                    self._retrying("DELETE", self._repo_url(f"/releases/assets/{a['id']}"),
                                   f"delete stale {name}")

    def _upload_url(self, rel: dict[str, Any]) -> str:
        if self.uploads:
            base = self.uploads.rstrip("/")
            return f"{base}/repos/{self.owner}/{self.repo}/releases/{rel['id']}/assets"
        return str(rel["upload_url"]).split("{", 1)[0]

    def _put(self, rel: dict[str, Any], path: Path, name: str,
             progress: ProgressFn | None) -> None:
        """Upload under a temporary name, then rename over any asset already called ``name``."""
        url = self._upload_url(rel)

        def upload() -> dict[str, Any]:
            tmp = f"{name}.{secrets.token_hex(6)}.partial"
            resp = self._call("POST", url, f"upload {name}", params={"name": tmp},
                              content=_Upload(path, progress),
                              headers={"Content-Type": "application/octet-stream",
                                       "Content-Length": str(path.stat().st_size)})
            if resp.status_code == 422:
                raise TransientError(f"upload {name}: HTTP 422 {resp.text[:200]}")
            data: dict[str, Any] = resp.json()
            return data

        uploaded = with_retries(upload, f"{self.url}: upload {name}")

        def rename() -> None:
            self._delete_named(rel, name)
            resp = self._call("PATCH", self._repo_url(f"/releases/assets/{uploaded['id']}"),
                              f"rename {name}", json={"name": name})
            if resp.status_code == 422:  # a parallel publisher put one there in between
                raise TransientError(f"rename {name}: an asset of that name appeared")

        with_retries(rename, f"{self.url}: rename {name}")

    def _delete_named(self, rel: dict[str, Any], name: str) -> None:
        for a in self._assets(rel):
            if a["name"] == name:
                with contextlib.suppress(transport.NotFound):  # someone else deleted it first
                    self._retrying("DELETE", self._repo_url(f"/releases/assets/{a['id']}"),
                                   f"delete {name}")


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _already_exists(resp: httpx.Response) -> bool:
    try:
        errors = resp.json().get("errors", [])
    except (ValueError, AttributeError):
        return False
    return any(isinstance(e, dict) and e.get("code") == "already_exists" for e in errors)


def open_github(url: str, root: Path | None) -> GitHubStore:
    m = _REPO.match(url)
    if not m:
        raise PrebakeError(f"{url}: expected github://OWNER/REPO")
    return GitHubStore(url, m[1], m[2], token=token_from_env())

