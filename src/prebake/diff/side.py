"""One side of a diff read into one shape, whatever it came from.

A side is a release asset or upstream package (``.tar.xz``, ``.tgz``, ``.whl``, ``.zip``,
unpacked safely into a temporary folder), a folder (an unpacked install prefix with
``lib/``/``include/``, or any tree of binaries; every binary anywhere in it, found by
``prebake.inspect.resolve`` like ``inspect`` and ``check`` find them), a single binary, or
— for reports over remote stores — just an asset's manifest (facts, file list, link order, no
symbols). The comparison only sees ``Side``; it never cares where the bytes were.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.diff.public import header_identifiers
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.extract import safe_extract
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts
from prebake.inspect.resolve import is_binary, is_package, resolve
from prebake.link.order import relative_order
from prebake.manifest import Manifest, read_manifest_file

MANIFEST_PATH = "share/prebake/manifest.json"
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inc", ".inl", ".ipp", ".tcc")
LIB_DIRS = ("lib", "lib64", "bin")

# Version suffixes stripped to match a library across versions, tried in order (rules as data):
# libfoo.so.1.2 -> libfoo.so, libfoo.1.2.dylib -> libfoo.dylib, foo-1.2.dll -> foo.dll.
_VERSION_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(.+\.so)(?:\.\d+[A-Za-z0-9]*)+$"), r"\1"),
    (re.compile(r"^(.+?)(?:\.\d+)+(\.dylib)$"), r"\1\2"),
    (re.compile(r"^(.+?)-\d+(?:\.\d+)*(\.(?:a|lib|dll|so|dylib|wasm))$"), r"\1\2"),
)


def library_key(name: str) -> str:
    """The name a library keeps across versions (``libfoo.so.1.2``, ``.1.3`` -> ``libfoo.so``)."""
    for pattern, repl in _VERSION_RULES:
        stripped, n = pattern.subn(repl, name)
        if n:
            return stripped
    return name


@dataclass
class Library:
    """One library of a side; ``facts`` has the manifest's ``Facts.summary`` shape."""

    key: str
    path: str
    facts: dict[str, Any]
    exports: frozenset[str] | None  # None: unknown (a manifest-only side)
    size: int | None
    # which exports are code (None: the format does not say) and each export's symbol
    # version node (ELF images), for the diff's function/variable split and re-versioning
    functions: frozenset[str] | None = None
    export_versions: Mapping[str, str] = field(default_factory=dict)

    @property
    def static(self) -> bool:
        return self.facts.get("kind") == "static-library"


@dataclass
class Side:
    """Everything the comparison reads from one side."""

    label: str
    kind: str  # asset | prefix | tree | binary | manifest
    libraries: dict[str, Library] = field(default_factory=dict)
    headers: dict[str, str] | None = None  # path -> sha256 (None: unknown)
    link_order: list[list[str]] | None = None  # groups of library paths
    link_order_source: str | None = None  # "manifest" | "computed"
    size: int | None = None  # the asset file for assets, else the bytes of its files
    manifest: dict[str, Any] | None = None
    # identifiers the side's headers declare (None: no headers read), and the globs its
    # recipes list as public_symbols: together they say which exports are the API
    declared: frozenset[str] | None = None
    public_symbols: tuple[str, ...] = ()

    @property
    def identity(self) -> dict[str, Any]:
        m = self.manifest or {}
        return {"label": self.label, "kind": self.kind, "name": m.get("name"),
                "version": m.get("version"), "platform": m.get("platform"),
                "input_hash": m.get("input_hash"), "size": self.size}


def load_side(path: Path, label: str | None = None) -> Side:
    """Read an asset, a folder or a binary; bad input raises ``PrebakeError`` naming ``path``."""
    path = Path(path)
    label = label or str(path)
    if not path.exists():
        raise PrebakeError(f"{path}: no such file or folder")
    if path.is_dir():
        return _from_tree(path, label, None)

    if is_package(path) and not is_binary(path):
        with tempfile.TemporaryDirectory(prefix="prebake-diff-") as tmp:
            dest = Path(tmp) / "asset"
            safe_extract(path, dest)
            side = _from_tree(dest, label, "asset")
        side.size = path.stat().st_size
        return side
    lib = _library(path, path.name, library_key(path.name))
    return Side(label, "binary", {lib.key: lib}, size=lib.size)


def side_from_manifest(manifest: Manifest, label: str) -> Side:
    """A side known only from its manifest: facts, files and link order, but no exports."""
    files = {f.path: f for f in manifest.files}
    libs: dict[str, Library] = {}
    keys = _keys([f.path for f in manifest.facts])
    for f, key in zip(manifest.facts, keys, strict=True):
        entry = files.get(f.path)
        libs[key] = Library(key, f.path, f.to_json(), None,
                            entry.size if entry is not None else None)
    headers = {p: f.sha256 for p, f in files.items()
               if p.startswith("include/") and f.sha256 is not None}
    order = [list(g) for g in manifest.link_order] or None
    sizes = [f.size for f in files.values() if f.size is not None]
    m = manifest.to_json()
    return Side(label, "manifest", libs, headers, order, "manifest" if order else None,
                sum(sizes), m, public_symbols=_public_symbols(m))


def _public_symbols(manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The ``public_symbols`` globs every recipe of the asset declared (in its manifest)."""
    out: list[str] = []
    for r in _list((manifest or {}).get("recipes")):
        if isinstance(r, Mapping):
            out += [str(g) for g in _list(r.get("public_symbols")) if isinstance(g, str)]
    return tuple(dict.fromkeys(out))


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _keys(paths: list[str]) -> list[str]:
    """Match keys: the unversioned file name, or the unversioned path where names collide."""
    names = [library_key(p.rsplit("/", 1)[-1]) for p in paths]
    dup = {n for n in names if names.count(n) > 1}
    return [(p.rsplit("/", 1)[0] + "/" + n if n in dup and "/" in p else n)
            for p, n in zip(paths, names, strict=True)]


def _read_manifest(root: Path) -> Manifest | None:
    """The tree's ``share/prebake/manifest.json`` through the one loader (bounded, validated;
    an invalid one is an error naming it, never a half-trusted side)."""
    p = root / MANIFEST_PATH
    return read_manifest_file(p) if p.is_file() else None


def _files(root: Path) -> Iterator[Path]:
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            yield p


def _from_tree(root: Path, label: str, kind: str | None) -> Side:
    typed = _read_manifest(root)
    manifest = typed.to_json() if typed is not None else None
    prefix = any((root / d).is_dir() for d in (*LIB_DIRS, "include"))
    if prefix:
        header_files = list(_files(root / "include")) if (root / "include").is_dir() else []
    else:
        header_files = [p for p in _files(root) if p.name.endswith(HEADER_SUFFIXES)]
    libs = {}
    with tempfile.TemporaryDirectory(prefix="prebake-diff-") as tmp:
        # every binary anywhere, as inspect and check see them (packages inside unpacked)
        found = resolve([root], Path(tmp))
        rels = [b.rel for b in found.binaries]
        for b, key in zip(found.binaries, _keys(rels), strict=True):
            libs[key] = _library(b.path, b.rel, key)
    headers = {p.relative_to(root).as_posix(): file_sha256(p) for p in header_files}
    if not libs and not headers:
        raise PrebakeError(f"{label}: holds no binaries or headers prebake knows; nothing to "
                           "compare")

    side = Side(label, kind or ("prefix" if prefix else "tree"), libs, headers,
                manifest=manifest, size=sum(p.stat().st_size for p in _files(root)),
                declared=header_identifiers(header_files) if header_files else None,
                public_symbols=_public_symbols(manifest))
    order = ([list(g) for g in typed.link_order] or None) if typed is not None else None
    if order:
        side.link_order, side.link_order_source = order, "manifest"
    else:
        side.link_order = _computed_order(root, libs)
        side.link_order_source = "computed" if side.link_order else None
    return side


def _library(path: Path, rel: str, key: str) -> Library:
    facts = inspect(path, ParseOptions(symbols=True))
    sy = facts.symbols if facts.members is None else None  # an image's own table
    functions = sy.functions if sy is not None else None
    return Library(key, rel, facts.summary(rel), frozenset(exports_of(facts)),
                   facts.size, None if functions is None else frozenset(functions),
                   dict(sy.export_versions) if sy is not None else {})


def exports_of(facts: Facts) -> set[str]:
    """What consumers can link against: a shared library's dynamic exports, or the union of an
    archive's members' non-hidden definitions (the archive index also lists hidden ones)."""
    members = [m for m in facts.walk()[1:] if m.members is None and m.symbols is not None]
    if facts.members is not None and members:
        return {n for m in members for n in (m.symbols.exports if m.symbols else [])}
    return set(facts.symbols.exports) if facts.symbols is not None else set()


def _computed_order(root: Path, libs: Mapping[str, Library]) -> list[list[str]] | None:
    """Without a manifest: the order ``prebake link-order`` would compute for the archives."""
    static = [lib.path for lib in libs.values() if lib.static and (root / lib.path).is_file()]
    if not static:
        return None

    try:
        return relative_order(root, static)
    except PrebakeError:
        return None
