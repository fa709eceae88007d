"""From a source's name (a registry reference or a URL) to the URLs that may serve it here.

A reference is resolved through the machine's configuration (``prebake.machine_mirrors``):
``debian:`` under each Debian mirror's root; ``pypi:`` through each simple index (PEP 691 JSON
or PEP 503 HTML, the file whose name carries the release and the tag, and the sha256 the index
states for it) and pip's ``find-links``; ``npm:`` through the registry's package document
(``versions[V].dist.tarball`` and ``dist.integrity``). Every URL, a plain source URL too, then
goes through the workspace's ``[mirrors]`` table: the longest prefix it starts with is replaced
by each of its mirrors in order (``"origin"``: the URL as it is); a URL no prefix matches is
asked as it is.

Resolution is lazy and runs only when the content-addressed cache lacks the file: a machine
with the file cached never asks an index. Index documents are fetched once per process
(parallel units share a resolver) with the one opener sources download with
(``prebake.web.open_url``: credentials only to their origin), read under a bound. Nothing
here decides whether bytes are right: the lock's sha256 does (``SourceCache.fetch``); an
index's own digest only lets a mirror that lists other bytes be passed over without
downloading them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import threading
import urllib.error
from collections.abc import Callable, Iterator, Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit
from urllib.request import url2pathname

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from prebake import machine_mirrors as configured
from prebake.redact import redact_text
from prebake.registry_refs import (
    DebianFile,
    NpmTarball,
    PypiFile,
    is_reference,
    parse,
)
from prebake.sources.cache import SourceCache
from prebake.sources.candidates import AsWritten, Candidate, Step, Unserved
from prebake.web import open_url

T = TypeVar("T")
_SHA256 = re.compile(r"[0-9a-f]{64}")
ORIGIN = "origin"  # in a [mirrors] list: the URL itself, at that place in the order
# an index page or a package document: onnxruntime's PyPI page is ~400 KB, a big npm package
# document (abbreviated) a few MB; more is not an index this reads
MAX_DOCUMENT_BYTES = 64 << 20
SIMPLE_ACCEPT = ("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;"
                 "q=0.2, text/html;q=0.01")
NPM_ACCEPT = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"


def parse_table(raw: Mapping[str, Any]
                ) -> tuple[dict[str, tuple[str, ...]], list[tuple[str, str]]]:
    """``[mirrors]`` as prefix -> mirrors, and (prefix, what is wrong) per problem: a prefix
    and each mirror is an http(s) or file URL, a mirror list a string or a non-empty list of
    them, no mirror twice (``"origin"``, the URL itself, at most once)."""
    table: dict[str, tuple[str, ...]] = {}
    problems: list[tuple[str, str]] = []
    for prefix, value in raw.items():
        values = [value] if isinstance(value, str) else value
        if not configured.is_root_url(prefix):
            problems.append((prefix, "a [mirrors] key is the start of a URL "
                             "(https://host/path/), not " + (
                                 "a registry reference: its mirrors come from apt, pip or npm"
                                 if is_reference(prefix) else repr(prefix))))
        elif not isinstance(values, list) or not values or not all(
                isinstance(v, str) for v in values):
            problems.append((prefix, "must be a mirror URL or a non-empty list of them "
                             f"(\"origin\" for the URL itself); got {value!r}"))
        elif bad := [v for v in values if v != ORIGIN and not configured.is_root_url(v)]:
            problems.append((prefix, f"{bad[0]!r} is not an http(s) or file URL (nor "
                             "\"origin\")"))
        elif len(set(values)) != len(values):
            problems.append((prefix, "names a mirror twice"))
        else:
            table[prefix] = tuple(values)
    return table, problems


def with_mirrors(cache: SourceCache, ws: Any) -> SourceCache:
    """``cache`` resolving through this machine's mirrors and ``ws``'s ``[mirrors]`` (a
    ``Workspace``), unless it was given a resolver of its own."""
    if not isinstance(cache.resolver, AsWritten):
        return cache
    return cache.resolving(Resolver(ws.mirrors, ws.root))


class Resolver:
    """The URLs for a source name on this machine, for one workspace (see the module doc)."""

    def __init__(self, table: Mapping[str, tuple[str, ...]] | None = None,
                 project: Path | None = None, environ: Mapping[str, str] | None = None
                 ) -> None:
        self.table = dict(table or {})
        self.project = project
        self.environ = dict(os.environ if environ is None else environ)
        self._documents: dict[str, bytes | str] = {}  # url -> body, or why it failed
        self._origins: dict[str, Any] = {}  # registry -> what the machine's configuration says
        self._lock = threading.Lock()

    def _once(self, registry: str, read: Callable[[], T]) -> T:
        """The machine's configuration for ``registry``, read once per resolver (each read
        may start ``apt-config`` or ``npm``); one that cannot be read raises every time."""
        with self._lock:
            if registry in self._origins:
                return cast(T, self._origins[registry])
        got = read()
        with self._lock:
            return cast(T, self._origins.setdefault(registry, got))

    # ---- what a name stands for ---------------------------------------------------------

    def expand(self, name: str) -> Iterator[Step]:
        """Each URL that may serve ``name`` in order, or why a configured mirror cannot; an
        origin that resolves to nothing yields one ``Unserved`` saying what is configured."""
        if not is_reference(name):
            yield from self._through_table(Candidate(name, "the URL itself"))
            return
        ref = parse(name)
        if isinstance(ref, DebianFile):
            steps: Iterator[Step] = self._debian(ref)
        elif isinstance(ref, PypiFile):
            steps = self._pypi(ref)
        else:
            steps = self._npm(ref)
        for step in steps:
            if isinstance(step, Candidate):
                yield from self._through_table(step)
            else:
                yield step

    def describe(self, name: str) -> str:
        """Where ``name`` would be asked for, without asking (``build --dry-run``)."""
        if not is_reference(name):
            urls = [c.url for c in self._through_table(Candidate(name, ""))
                    if isinstance(c, Candidate)]
            return redact_text(", ".join(urls))
        ref = parse(name)
        if isinstance(ref, DebianFile):
            found = self._once("debian", lambda: configured.debian_mirrors(self.environ))
            roots = [f"{o.url} ({o.said})" for o in found]
            return redact_text(f"{name} from " + (", ".join(roots) or "no Debian mirror"))
        if isinstance(ref, PypiFile):
            indexes, links = self._once("pypi", lambda: configured.pip_indexes(self.environ))
            return redact_text(f"{name} from " + (", ".join(
                f"{o.url} ({o.said})" for o in [*indexes, *links]) or "no PyPI index"))
        origin = self._once(f"npm{ref.scope}", lambda: configured.npm_registry(
            self.environ, self.project, ref.scope))
        return redact_text(f"{name} from " + (f"{origin.url} ({origin.said})" if origin
                                              else "no npm registry"))

    def _through_table(self, cand: Candidate) -> Iterator[Step]:
        best = max((p for p in self.table if cand.url.startswith(p)), key=len, default=None)
        if best is None:
            yield cand
            return
        for mirror in self.table[best]:
            if mirror == ORIGIN:
                yield cand
            else:
                yield Candidate(mirror + cand.url[len(best):],
                                f"[mirrors] {best} -> {mirror}", cand.sha256, cand.integrity)

    # ---- debian -------------------------------------------------------------------------

    def _debian(self, ref: DebianFile) -> Iterator[Step]:
        roots = self._once("debian", lambda: configured.debian_mirrors(self.environ))
        if not roots:
            files = ", ".join(map(str, configured.apt_source_files(self.environ))) or "none"
            yield Unserved(f"no Debian mirror is configured here (PREBAKE_DEBIAN_MIRROR is "
                           f"unset; apt's sources, {files}, list no Debian archive)")
        for origin in roots:
            yield Candidate(f"{origin.url}/{ref.path}", origin.said)

    # ---- pypi ---------------------------------------------------------------------------

    def _pypi(self, ref: PypiFile) -> Iterator[Step]:
        indexes, links = self._once("pypi", lambda: configured.pip_indexes(self.environ))
        if not indexes and not links:
            yield Unserved("no PyPI index is configured here (PIP_INDEX_URL, pip.conf's "
                           "index-url, or an installed pip's default)")
        for origin in indexes:
            page = origin.url.rstrip("/") + f"/{ref.key}/"
            body = self._document(page, {"Accept": SIMPLE_ACCEPT})
            if isinstance(body, str):
                yield Unserved(f"index {page} ({origin.said}): {body}")
                continue
            try:
                files = _index_files(body, page, origin.url)
            except ValueError as exc:  # a link no URL parser takes: not an index page
                yield Unserved(f"index {page} ({origin.said}): not a simple index page ({exc})")
                continue
            yield self._pick(ref, files, f"index {page}", origin.said)
        for origin in links:
            listed = self._links(origin.url)
            if isinstance(listed, str):
                yield Unserved(f"find-links {origin.url} ({origin.said}): {listed}")
                continue
            yield self._pick(ref, listed, f"find-links {origin.url}", origin.said)

    def _pick(self, ref: PypiFile, files: list[tuple[str, str, str]], where: str, said: str
              ) -> Step:
        want = Version(ref.version)
        found, versions = [], set()
        for fname, url, sha in files:
            meta = _pypi_meta(fname)
            if meta is None or meta[0] != ref.key:
                continue
            versions.add(str(meta[1]))
            if meta[1] == want and (meta[2] is None if not ref.tag else
                                    meta[2] is not None and ref.tags <= meta[2]):
                found.append((fname, url, sha))
        what = f"{ref.project} {ref.version} " + (f"wheel tagged {ref.tag}" if ref.tag
                                                  else "sdist")
        if len(found) == 1:
            fname, url, sha = found[0]
            return Candidate(url, f"{where} ({said})", sha)
        if found:
            return Unserved(f"{where}: {len(found)} files are a {what}: "
                            f"{', '.join(f for f, _, _ in found)}; write a tag only one has")
        listed = f" (it lists {', '.join(sorted(versions, key=Version)[-5:])})" if versions \
            else ""
        return Unserved(f"{where} ({said}): no {what}{listed}")

    def _links(self, location: str) -> list[tuple[str, str, str]] | str:
        """A find-links location's files: a local folder's, or the links of an HTML page."""
        path = Path(url2pathname(urlsplit(location).path)) \
            if location.startswith("file:") else Path(location)
        if "://" not in location or location.startswith("file:"):
            if not path.is_dir():
                return "not a folder"
            return [(p.name, p.as_uri(), "") for p in sorted(path.iterdir()) if p.is_file()]
        body = self._document(location, {"Accept": "text/html"})
        if isinstance(body, str):
            return body
        try:
            return _index_files(body, location, location)
        except ValueError as exc:
            return f"not a page of links ({exc})"

    # ---- npm ----------------------------------------------------------------------------

    def _npm(self, ref: NpmTarball) -> Iterator[Step]:
        origin = self._once(f"npm{ref.scope}", lambda: configured.npm_registry(
            self.environ, self.project, ref.scope))
        if origin is None:
            yield Unserved("no npm registry is configured here (npm_config_registry, an "
                           ".npmrc's registry, or an installed npm's default)")
            return
        doc_url = origin.url.rstrip("/") + "/" + quote(ref.name, safe="@")
        body = self._document(doc_url, {"Accept": NPM_ACCEPT, **origin.headers})
        if isinstance(body, str):
            yield Unserved(f"registry {doc_url} ({origin.said}): {body}")
            return
        doc = _json(body)
        dist = _at(doc, "versions", ref.version, "dist")
        if not isinstance(dist, dict) or not isinstance(dist.get("tarball"), str):
            latest = _at(doc, "dist-tags", "latest")
            listed = f" (latest: {latest})" if isinstance(latest, str) else ""
            yield Unserved(f"registry {doc_url} ({origin.said}): no version {ref.version} "
                           f"with a dist.tarball{listed}")
            return
        tarball = urljoin(doc_url, dist["tarball"])
        if not _may_link(doc_url, tarball):
            yield Unserved(f"registry {doc_url} ({origin.said}): its tarball {tarball!r} is "
                           "not an http(s) URL")
            return
        integrity = dist["integrity"] if isinstance(dist.get("integrity"), str) else ""
        same_host = urlsplit(tarball).netloc.rpartition("@")[2] == \
            urlsplit(origin.url).netloc.rpartition("@")[2]
        yield Candidate(tarball, f"registry {doc_url} ({origin.said})", "", integrity,
                        origin.headers if same_host else {})

    # ---- documents ----------------------------------------------------------------------

    def _document(self, url: str, headers: Mapping[str, str]) -> bytes | str:
        """The body at ``url`` (fetched once per process), or why it could not be had."""
        with self._lock:
            if url in self._documents:
                return self._documents[url]
        got: bytes | str
        try:
            got = _fetch_document(url, dict(headers))
        except urllib.error.HTTPError as exc:
            got = f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            got = str(getattr(exc, "reason", None) or exc)
        with self._lock:
            self._documents.setdefault(url, got)
            return self._documents[url]


def _fetch_document(url: str, headers: dict[str, str]) -> bytes:
    parts = urlsplit(url)
    if parts.scheme == "file" and Path(url2pathname(parts.path)).is_dir():
        url = urljoin(url if url.endswith("/") else url + "/", "index.html")  # as pip reads it
    with open_url(url, headers) as resp:
        body: bytes = resp.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"more than {MAX_DOCUMENT_BYTES} bytes; not an index document")
    return body


class _Links(HTMLParser):
    """PEP 503: each anchor's href and text (the file name), after any ``<base href>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base = ""
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "base" and values.get("href") and not self.base:
            self.base = values["href"] or ""
        elif tag == "a" and values.get("href"):
            self._href, self._text = values["href"], []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def _index_files(body: bytes, page: str, index: str) -> list[tuple[str, str, str]]:
    """(file name, absolute URL, sha256 or "") of each file a simple page lists (PEP 691 JSON
    or PEP 503 HTML), the index's credentials carried to files on its own host (as pip)."""
    out: list[tuple[str, str, str]] = []
    data = _json(body)
    if isinstance(data, dict) and isinstance(data.get("files"), list):
        for f in data["files"]:
            if isinstance(f, dict) and isinstance(f.get("url"), str):
                sha = (f.get("hashes") or {}).get("sha256", "") if isinstance(
                    f.get("hashes"), dict) else ""
                url = urljoin(page, f["url"])
                out.append((str(f.get("filename") or _basename(url)), url, str(sha)))
    else:
        parser = _Links()
        parser.feed(body.decode("utf-8", "replace"))
        base = urljoin(page, parser.base) if parser.base else page
        for href, text in parser.links:
            url, _, fragment = urljoin(base, href).partition("#")
            sha = fragment[len("sha256="):] if fragment.startswith("sha256=") else ""
            out.append((text or _basename(url), url, sha))
    # a digest is 64 hex digits or nothing: the cache is addressed by it; a page served over
    # http(s) links only to http(s) files (never to a file of this machine)
    return [(n, _with_credentials(u, index), s.lower() if _SHA256.fullmatch(s.lower()) else "")
            for n, u, s in out if _may_link(page, u)]


def _may_link(page: str, url: str) -> bool:
    """Whether a document at ``page`` may name ``url`` as a file: an http(s) one names http(s)
    URLs only, a local (``file:``) index or registry names files too."""
    if not configured.is_root_url(url):  # white space, a bracket no parser takes
        return False
    scheme = urlsplit(url).scheme.lower()
    return scheme in ("http", "https") or (scheme == "file"
                                           and urlsplit(page).scheme.lower() == "file")


def _json(body: bytes) -> Any:
    """A document's JSON, or None for what is not JSON (an HTML page, a truncated or hostile
    body: nesting deeper than the parser's recursion is not a document either)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _at(doc: Any, *keys: str) -> Any:
    """``doc[k1][k2]…`` through dicts only, None where a level is missing or not a dict."""
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _basename(url: str) -> str:
    return unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def _with_credentials(url: str, index: str) -> str:
    """``url`` with the index URL's userinfo when it is on the index's host without any."""
    i, u = urlsplit(index), urlsplit(url)
    if "@" not in i.netloc or "@" in u.netloc or u.netloc != i.netloc.rpartition("@")[2]:
        return url
    return urlunsplit(u._replace(netloc=i.netloc))


def _pypi_meta(fname: str) -> tuple[str, Version, frozenset[str] | None] | None:
    """(normalised project, version, wheel tags or None for an sdist) of a file name."""
    try:
        if fname.endswith(".whl"):
            name, version, _build, tags = parse_wheel_filename(fname)
            return name, version, frozenset(str(t) for t in tags)
        name, version = parse_sdist_filename(fname)
        return name, version, None
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None

