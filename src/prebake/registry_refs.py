"""Registry references: a source named by the registry that publishes it, never by a host.

``debian:pool/main/f/ffmpeg/ffmpeg_7.1.5.orig.tar.xz`` is a file of Debian's archive, found under
any Debian mirror at that path; ``pypi:onnxruntime==1.21.0#cp311-cp311-win_amd64`` is the one
file of that PyPI release whose wheel tags include the one after ``#`` (no ``#``: the release's
sdist); ``npm:onnxruntime-web@1.30.0`` (or ``npm:@scope/name@1.0.0``) is the tarball of that npm
release. Which host serves it is the machine's configuration (``prebake.machine_mirrors``:
apt's sources, pip's index, npm's registry), resolved at download time
(``prebake.sources.mirrors``); the lock, the input hash and every record name the reference.

This module only reads the text (no I/O, on the ground floor: recipes, sources and the workspace
all read references): a recipe or ``prebake.toml`` with a malformed
reference is refused when it is loaded, one line naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

SCHEMES = ("debian", "pypi", "npm")
_SCHEME = re.compile(r"([a-z]+):(?!//)")
# a Debian pool path: pool/<component>/<prefix>/<source>/<file>, Debian's file-name characters
_POOL = re.compile(r"pool/(?:[A-Za-z0-9+~._-]+/){3}[A-Za-z0-9+~._-]+")
_PYPI = re.compile(r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)=="
                   r"(?P<version>[A-Za-z0-9.+!_-]+)(?:#(?P<tag>[^#]+))?")
_TAG = re.compile(r"[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+")
# npm's package names (lower case, URL-safe, at most 214 characters) and an exact version
_NPM = re.compile(r"(?P<name>(?:@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*)"
                  r"@(?P<version>[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)")


class ReferenceError(ValueError):
    """A text that starts like a reference but is not one (the message says what is wrong)."""


@dataclass(frozen=True)
class DebianFile:
    """A file of Debian's archive, at ``path`` under any mirror's root."""

    path: str

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PypiFile:
    """One file of a PyPI release: the wheel whose tags include ``tag``, or (``tag`` empty)
    the sdist."""

    project: str
    version: str
    tag: str = ""

    @property
    def key(self) -> str:
        """The project as an index names its page (PEP 503's normalised name)."""
        return canonicalize_name(self.project)

    @property
    def tags(self) -> frozenset[str]:
        """The tags ``tag`` stands for (a compressed ``py3.py2-none-any`` is several)."""
        return frozenset(str(t) for t in parse_tag(self.tag)) if self.tag else frozenset()


@dataclass(frozen=True)
class NpmTarball:
    """The tarball of one npm release."""

    name: str
    version: str

    @property
    def scope(self) -> str:
        return self.name.split("/", 1)[0] if self.name.startswith("@") else ""


Reference = DebianFile | PypiFile | NpmTarball


def scheme_of(text: str) -> str | None:
    """``debian``, ``pypi`` or ``npm`` when ``text`` is written as a reference, else None (a
    URL, ``scheme://…``, is never one)."""
    m = _SCHEME.match(text)
    return m[1] if m is not None and m[1] in SCHEMES else None


def is_reference(text: str) -> bool:
    return scheme_of(text) is not None


def parse(text: str) -> Reference:
    """The reference ``text`` spells (placeholders filled); a malformed one raises
    ``ReferenceError`` saying what the form is."""
    scheme = scheme_of(text)
    body = text.partition(":")[2]
    if scheme == "debian":
        if not _POOL.fullmatch(body) or "/../" in f"/{body}/" or "/./" in f"/{body}/":
            raise ReferenceError(f"{text!r} is not debian:pool/<component>/<prefix>/<source>/"
                                 "<file> (a file of Debian's pool, e.g. debian:pool/main/f/"
                                 "ffmpeg/ffmpeg_7.1.5.orig.tar.xz)")
        return DebianFile(body)
    if scheme == "pypi":
        m = _PYPI.fullmatch(body)
        if m is None or (m["tag"] is not None and not _TAG.fullmatch(m["tag"])):
            raise ReferenceError(f"{text!r} is not pypi:<project>==<version>[#<wheel tag>] "
                                 "(e.g. pypi:onnxruntime==1.21.0#cp311-cp311-win_amd64; no "
                                 "tag: the sdist)")
        try:
            Version(m["version"])
        except InvalidVersion:
            raise ReferenceError(f"{text!r}: {m['version']!r} is not a PEP 440 version"
                                 ) from None
        return PypiFile(m["name"], m["version"], m["tag"] or "")
    if scheme == "npm":
        m = _NPM.fullmatch(body)
        if m is None or len(m["name"]) > 214:
            raise ReferenceError(f"{text!r} is not npm:<package>@<exact version> (e.g. "
                                 "npm:onnxruntime-web@1.30.0, npm:@scope/name@2.0.1)")
        return NpmTarball(m["name"], m["version"])
    raise ReferenceError(f"{text!r} is not a reference ({', '.join(s + ':' for s in SCHEMES)})")


def filename(text: str) -> str:
    """The file name a download of ``text`` (a reference or a URL) has, for its kind
    (``.tar.xz``, ``.whl``, ``.tgz``): a build that unpacks an archive itself reads it."""
    if not is_reference(text):
        return text.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    ref = parse(text)
    if isinstance(ref, DebianFile):
        return ref.filename
    if isinstance(ref, PypiFile):
        stem = f"{ref.key.replace('-', '_')}-{ref.version}"
        return f"{stem}-{ref.tag}.whl" if ref.tag else f"{stem}.tar.gz"
    return f"{ref.name.rsplit('/', 1)[-1]}-{ref.version}.tgz"


def sample(template: str) -> str:
    """``template`` with every ``{…}`` placeholder replaced by a version-like word, so the
    shape of a templated reference can be checked before any pin fills it."""
    return re.sub(r"\{[^{}]*\}", "1.0.0", template)
