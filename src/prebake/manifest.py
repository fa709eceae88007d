"""The asset manifest as a typed value: what an asset is, how it was made, every file it holds.

Every reader of a manifest — the store's sidecar reader, ``plan`` status, ``diff``, ``report``,
``fetch`` and trust — goes through :func:`parse_manifest` (bounded read, JSON parse, validation)
and gets a :class:`Manifest`, so no reader guesses at a key with ``.get`` and a hostile or
truncated manifest is one error naming the file, never a ``KeyError`` three modules later.

The checks here are the rules of ``schemas/manifest.schema.json`` written out by hand: the schema
is a checkout file (not shipped in the package) and jsonschema is only a test dependency, so the
runtime does not depend on it; ``tests/unit/test_manifest_model.py`` holds this validator to the
schema on real manifests and on broken ones. Parts the schema leaves open (a toolchain's identity,
a fact's ABI, a contract, the provenance) keep their JSON as it was read, so
``Manifest.from_json(d).to_json() == d`` for every manifest prebake writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.errors import PrebakeError

MANIFEST_SCHEMA_VERSION = 1
#: a manifest lists files and facts; 100 000 files fit easily
MAX_MANIFEST_BYTES = 64 * 1024**2

_HEX64 = re.compile(r"[0-9a-f]{64}")
_TOP_REQUIRED = ("schema_version", "name", "version", "platform", "input_hash", "toolchain",
                 "facts", "files", "link_order", "created_by")
_TOP_KEYS = frozenset((*_TOP_REQUIRED, "recipes", "inputs", "guards", "provenance"))


class ManifestError(PrebakeError):
    """A manifest that is not JSON or breaks the manifest schema (exit code 2, one line)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: invalid manifest: {reason}")
        self.source = source
        self.reason = reason


class _Invalid(Exception):
    """Raised inside the checks with the key path; turned into a ManifestError at the top."""


def _obj(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Invalid(f"{where} is not an object")
    return v


def _list(v: Any, where: str) -> list[Any]:
    if not isinstance(v, list):
        raise _Invalid(f"{where} is not an array")
    return v


def _str(v: Any, where: str, *, min_length: int = 0) -> str:
    if not isinstance(v, str):
        raise _Invalid(f"{where} is not a string")
    if len(v) < min_length:
        raise _Invalid(f"{where} is empty")
    return v


def _opt_str(v: Any, where: str) -> str | None:
    return None if v is None else _str(v, where)


def _bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _Invalid(f"{where} is not a boolean")
    return v


def _int(v: Any, where: str, *, nullable: bool = False) -> int | None:
    if v is None and nullable:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise _Invalid(f"{where} is not a non-negative integer")
    return v


def _strs(v: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(x, f"{where}[{i}]") for i, x in enumerate(_list(v, where)))


def _hex64(v: Any, where: str) -> str:
    if not (isinstance(v, str) and _HEX64.fullmatch(v)):
        raise _Invalid(f"{where} is not a lowercase sha256 (64 hex digits)")
    return v


def _required(d: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in d]
    if missing:
        raise _Invalid(f"{where} lacks {', '.join(missing)}")


def _only(d: Mapping[str, Any], keys: frozenset[str] | set[str], where: str) -> None:
    extra = sorted(set(d) - keys)
    if extra:
        raise _Invalid(f"{where} has unknown key(s) {', '.join(extra)}")


@dataclass(frozen=True)
class FileEntry:
    """One archived file (``sha256`` and ``size``) or symlink (``link``), relative to the prefix."""

    path: str
    sha256: str | None = None
    size: int | None = None
    link: str | None = None

    @classmethod
    def from_json(cls, d: Any, where: str) -> FileEntry:
        d = _obj(d, where)
        _only(d, {"path", "sha256", "size", "link"}, where)
        _required(d, ("path",), where)
        path = _str(d["path"], f"{where}.path")
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise _Invalid(f"{where}.path {path!r} is absolute or leaves the prefix")
        if "link" in d:
            if "sha256" in d:
                raise _Invalid(f"{where} is both a file (sha256) and a symlink (link)")
            return cls(path, None, _int(d["size"], f"{where}.size") if "size" in d else None,
                       _str(d["link"], f"{where}.link"))
        _required(d, ("sha256", "size"), where)
        return cls(path, _hex64(d["sha256"], f"{where}.sha256"), _int(d["size"], f"{where}.size"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.size is not None:
            out["size"] = self.size
        if self.link is not None:
            out["link"] = self.link
        return out


@dataclass(frozen=True)
class Toolchain:
    """The identity of the toolchain that built the asset. The schema leaves it open (toolchain
    families record more than argv and versions), so the JSON is kept whole and the fields every
    reader compares are typed views of it."""

    raw: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: Any, where: str = "toolchain") -> Toolchain:
        d = _obj(d, where)
        for k in ("cc", "cxx", "ar"):
            if k in d:
                _strs(d[k], f"{where}.{k}")
        for k in ("pin", "pin_version", "version"):
            if k in d:
                _opt_str(d[k], f"{where}.{k}")
        if "verified" in d:
            v = _obj(d["verified"], f"{where}.verified")
            keys = ("family", "version", "version_line", "target", "llvm", "status", "identity")
            _required(v, keys, f"{where}.verified")
            _only(v, frozenset((*keys, "environment")), f"{where}.verified")
            if "environment" in v:
                _str(v["environment"], f"{where}.verified.environment")
            for k in ("family", "version", "llvm"):
                _opt_str(v[k], f"{where}.verified.{k}")
            for k in ("version_line", "target", "identity"):
                _str(v[k], f"{where}.verified.{k}")
            if v["status"] not in ("ok", "unpinned"):
                raise _Invalid(f"{where}.verified.status is {v['status']!r}, not ok or unpinned")
        return cls(dict(d))

    def _argv(self, key: str) -> tuple[str, ...]:
        v = self.raw.get(key)
        return tuple(v) if isinstance(v, list) else ()

    @property
    def cc(self) -> tuple[str, ...]:
        return self._argv("cc")

    @property
    def cxx(self) -> tuple[str, ...]:
        return self._argv("cxx")

    @property
    def ar(self) -> tuple[str, ...]:
        return self._argv("ar")

    @property
    def pin(self) -> str | None:
        v = self.raw.get("pin")
        return v if isinstance(v, str) else None

    @property
    def pin_version(self) -> str | None:
        v = self.raw.get("pin_version")
        return v if isinstance(v, str) else None

    @property
    def version(self) -> str | None:
        v = self.raw.get("version")
        return v if isinstance(v, str) else None

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class FactSummary:
    """The contract-relevant facts of one shipped library (``facts_summary``); ``abi`` and any
    key the schema leaves open are kept as read."""

    path: str
    format: str | None
    kind: str | None
    os: str | None
    arch: str | None
    abi: Mapping[str, Any]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any, where: str) -> FactSummary:
        d = _obj(d, where)
        _required(d, ("path", "format", "kind", "os", "arch", "abi"), where)
        for k in ("needed", "delay_needed"):
            if d.get(k) is not None:
                _strs(d[k], f"{where}.{k}")
        if "soname" in d:
            _opt_str(d["soname"], f"{where}.soname")
        if "members" in d:
            _int(d["members"], f"{where}.members", nullable=True)
        return cls(_str(d["path"], f"{where}.path"), _opt_str(d["format"], f"{where}.format"),
                   _opt_str(d["kind"], f"{where}.kind"), _opt_str(d["os"], f"{where}.os"),
                   _opt_str(d["arch"], f"{where}.arch"), _obj(d["abi"], f"{where}.abi"), dict(d))

    @property
    def needed(self) -> tuple[str, ...] | None:
        v = self.raw.get("needed")
        return tuple(v) if isinstance(v, list) else None

    @property
    def soname(self) -> str | None:
        v = self.raw.get("soname")
        return v if isinstance(v, str) else None

    @property
    def members(self) -> int | None:
        v = self.raw.get("members")
        return v if isinstance(v, int) else None

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw)


@dataclass(frozen=True)
class RecipeEntry:
    """A recipe the asset holds, at its pinned version."""

    name: str
    version: str
    public_symbols: tuple[str, ...] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Any, where: str) -> RecipeEntry:
        d = _obj(d, where)
        _required(d, ("name", "version"), where)
        pub = _strs(d["public_symbols"], f"{where}.public_symbols") \
            if "public_symbols" in d else None
        return cls(_str(d["name"], f"{where}.name"), _str(d["version"], f"{where}.version"),
                   pub, dict(d))

    def to_json(self) -> dict[str, Any]:
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.public_symbols is not None:
            out["public_symbols"] = list(self.public_symbols)
        return out


@dataclass(frozen=True)
class CheckRecord:
    """The contract check the asset passed before it was packaged."""

    ok: bool
    platform: str
    contract: Mapping[str, Any]
    undecided: tuple[str, ...]

    @classmethod
    def from_json(cls, d: Any, where: str) -> CheckRecord:
        d = _obj(d, where)
        _only(d, {"ok", "platform", "contract", "undecided"}, where)
        _required(d, ("ok", "platform", "contract", "undecided"), where)
        return cls(_bool(d["ok"], f"{where}.ok"), _str(d["platform"], f"{where}.platform"),
                   _obj(d["contract"], f"{where}.contract"),
                   _strs(d["undecided"], f"{where}.undecided"))

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "platform": self.platform, "contract": dict(self.contract),
                "undecided": list(self.undecided)}


@dataclass(frozen=True)
class LinkTestRecord:
    """The link test the asset passed: flags, what linked, and the undefined symbols the
    consumer is trusted to provide (``allow_undefined``, absent when no recipe declared any)."""

    ok: bool
    flags: tuple[str, ...]
    linked: tuple[str, ...]
    allow_undefined: Mapping[str, tuple[str, ...]] | None = None

    @classmethod
    def from_json(cls, d: Any, where: str) -> LinkTestRecord:
        d = _obj(d, where)
        _only(d, {"ok", "flags", "linked", "allow_undefined"}, where)
        _required(d, ("ok", "flags", "linked"), where)
        allow = None
        if "allow_undefined" in d:
            au = _obj(d["allow_undefined"], f"{where}.allow_undefined")
            allow = {k: _strs(v, f"{where}.allow_undefined.{k}") for k, v in au.items()}
        return cls(_bool(d["ok"], f"{where}.ok"), _strs(d["flags"], f"{where}.flags"),
                   _strs(d["linked"], f"{where}.linked"), allow)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "flags": list(self.flags),
                               "linked": list(self.linked)}
        if self.allow_undefined is not None:
            out["allow_undefined"] = {k: list(v) for k, v in self.allow_undefined.items()}
        return out


@dataclass(frozen=True)
class VersionEvidence:
    """One place a recipe's install stated its version, which agreed with the pin."""

    file: str
    says: str
    version: str

    @classmethod
    def from_json(cls, d: Any, where: str) -> VersionEvidence:
        d = _obj(d, where)
        _only(d, {"file", "says", "version"}, where)
        _required(d, ("file", "says", "version"), where)
        return cls(_str(d["file"], f"{where}.file"), _str(d["says"], f"{where}.says"),
                   _str(d["version"], f"{where}.version"))

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "says": self.says, "version": self.version}


@dataclass(frozen=True)
class VersionRecord:
    """A recipe's pin and the version evidence its own install held (the version proof)."""

    pin: str
    evidence: tuple[VersionEvidence, ...]

    @classmethod
    def from_json(cls, d: Any, where: str) -> VersionRecord:
        d = _obj(d, where)
        _only(d, {"pin", "evidence"}, where)
        _required(d, ("pin", "evidence"), where)
        return cls(_str(d["pin"], f"{where}.pin"),
                   tuple(VersionEvidence.from_json(e, f"{where}.evidence[{i}]")
                         for i, e in enumerate(_list(d["evidence"], f"{where}.evidence"))))

    def to_json(self) -> dict[str, Any]:
        return {"pin": self.pin, "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class Guards:
    """The guards the asset passed before it was packaged; ``version`` is the version proof
    per recipe (absent in assets made before it existed)."""

    check: CheckRecord
    link_test: LinkTestRecord
    version: Mapping[str, VersionRecord] | None = None

    @classmethod
    def from_json(cls, d: Any, where: str = "guards") -> Guards:
        d = _obj(d, where)
        _only(d, {"check", "link_test", "version"}, where)
        _required(d, ("check", "link_test"), where)
        version = None
        if "version" in d:
            version = {k: VersionRecord.from_json(v, f"{where}.version.{k}")
                       for k, v in _obj(d["version"], f"{where}.version").items()}
        return cls(CheckRecord.from_json(d["check"], f"{where}.check"),
                   LinkTestRecord.from_json(d["link_test"], f"{where}.link_test"), version)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check.to_json(),
                               "link_test": self.link_test.to_json()}
        if self.version is not None:
            out["version"] = {k: v.to_json() for k, v in self.version.items()}
        return out


@dataclass(frozen=True)
class Manifest:
    """One asset's manifest (``share/prebake/manifest.json`` and the ``.json`` sidecar).

    ``recipes``, ``inputs``, ``guards`` and ``provenance`` are optional in the schema; ``None``
    means the key is absent (so a round trip keeps an empty list apart from a missing one).
    """

    name: str
    version: str
    platform: str
    input_hash: str
    toolchain: Toolchain
    facts: tuple[FactSummary, ...]
    files: tuple[FileEntry, ...]
    link_order: tuple[tuple[str, ...], ...]
    created_by: str
    recipes: tuple[RecipeEntry, ...] | None = None
    inputs: Mapping[str, str] | None = None
    guards: Guards | None = None
    provenance: Mapping[str, Any] | None = None
    schema_version: int = MANIFEST_SCHEMA_VERSION

    @property
    def named(self) -> tuple[str, str, str]:
        """(name, version, platform): what an asset's file name must agree with."""
        return (self.name, self.version, self.platform)

    @classmethod
    def from_json(cls, data: Any, source: str = "manifest") -> Manifest:
        """Validate ``data`` (parsed JSON) and type it; ``source`` names the file in the
        one-line :class:`ManifestError` an invalid manifest raises."""
        try:
            return cls._parse(data)
        except _Invalid as exc:
            raise ManifestError(source, str(exc)) from None

    @classmethod
    def _parse(cls, data: Any) -> Manifest:
        d = _obj(data, "the manifest")
        _required(d, _TOP_REQUIRED, "the manifest")
        _only(d, _TOP_KEYS, "the manifest")
        if d["schema_version"] != MANIFEST_SCHEMA_VERSION or isinstance(d["schema_version"],
                                                                        bool):
            raise _Invalid(f"schema_version is {d['schema_version']!r}, this prebake reads "
                           f"{MANIFEST_SCHEMA_VERSION}")
        order = tuple(_strs(g, f"link_order[{i}]")
                      for i, g in enumerate(_list(d["link_order"], "link_order")))
        if any(not g for g in order):
            raise _Invalid("link_order has an empty group")
        recipes = None
        if "recipes" in d:
            recipes = tuple(RecipeEntry.from_json(r, f"recipes[{i}]")
                            for i, r in enumerate(_list(d["recipes"], "recipes")))
        inputs = None
        if "inputs" in d:
            inputs = {k: _str(v, f"inputs.{k}") for k, v in _obj(d["inputs"], "inputs").items()}
        provenance = None
        if "provenance" in d:
            provenance = _obj(d["provenance"], "provenance")
            _required(provenance, ("buildType", "externalParameters", "resolvedDependencies"),
                      "provenance")
            _str(provenance["buildType"], "provenance.buildType")
            _obj(provenance["externalParameters"], "provenance.externalParameters")
            if "internalParameters" in provenance:
                _obj(provenance["internalParameters"], "provenance.internalParameters")
            for i, r in enumerate(_list(provenance["resolvedDependencies"],
                                        "provenance.resolvedDependencies")):
                _obj(r, f"provenance.resolvedDependencies[{i}]")
        return cls(
            name=_str(d["name"], "name", min_length=1),
            version=_str(d["version"], "version", min_length=1),
            platform=_str(d["platform"], "platform", min_length=1),
            input_hash=_hex64(d["input_hash"], "input_hash"),
            toolchain=Toolchain.from_json(d["toolchain"]),
            facts=tuple(FactSummary.from_json(f, f"facts[{i}]")
                        for i, f in enumerate(_list(d["facts"], "facts"))),
            files=tuple(FileEntry.from_json(f, f"files[{i}]")
                        for i, f in enumerate(_list(d["files"], "files"))),
            link_order=order,
            created_by=_str(d["created_by"], "created_by"),
            recipes=recipes,
            inputs=inputs,
            guards=Guards.from_json(d["guards"]) if "guards" in d else None,
            provenance=provenance,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "name": self.name,
            "version": self.version,
            "platform": self.platform,
            "input_hash": self.input_hash,
            "toolchain": self.toolchain.to_json(),
            "facts": [f.to_json() for f in self.facts],
            "files": [f.to_json() for f in self.files],
            "link_order": [list(g) for g in self.link_order],
            "created_by": self.created_by,
        }
        if self.recipes is not None:
            out["recipes"] = [r.to_json() for r in self.recipes]
        if self.inputs is not None:
            out["inputs"] = dict(self.inputs)
        if self.guards is not None:
            out["guards"] = self.guards.to_json()
        if self.provenance is not None:
            out["provenance"] = dict(self.provenance)
        return out



def parse_manifest(raw: bytes, source: str, limit: int = MAX_MANIFEST_BYTES) -> Manifest:
    """The one manifest loader: bounded, parsed, validated; ``source`` names the file in the
    one-line error (a store sidecar, an unpacked asset's ``share/prebake/manifest.json``)."""
    if len(raw) > limit:
        raise ManifestError(source, f"{len(raw)} bytes, more than the {limit} a manifest may have")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(source, f"not JSON ({exc})") from None
    return Manifest.from_json(data, source)


def read_manifest_file(path: Path, limit: int = MAX_MANIFEST_BYTES) -> Manifest:
    """:func:`parse_manifest` of a file, read no further than ``limit`` (a symlink to
    ``/dev/zero`` or a FIFO under a manifest's name is an error, not a hang)."""
    from prebake.bounded import read_bounded

    return parse_manifest(read_bounded(path, limit, "manifest"), str(path), limit)
