"""The asset manifest as a typed value: what an asset is, how it was made, every file it holds.

Every reader of a manifest — the store's sidecar reader, ``plan`` status, ``diff``, ``report``,
``fetch`` and trust — goes through :func:`parse_manifest` (bounded read, JSON parse, validation)
and gets a :class:`Manifest`, so no reader guesses at a key with ``.get`` and a hostile or
truncated manifest is one error naming the file, never a ``KeyError`` three modules later.

The dataclasses below are the one statement of the format (``prebake.records``): the committed
``schemas/manifest.schema.json`` is generated from them (:func:`schema_text`, written by
``python -m prebake.reference``; a test fails when it is stale), and a manifest read from a store
or an asset is checked against that same schema (``prebake.records.checker``) before it is
typed. Parts the schema leaves open (a toolchain's identity, a fact's ABI, a contract, the
provenance) keep their JSON as it was read, so ``Manifest.from_json(d).to_json() == d`` for every
manifest prebake writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from prebake.bounded import read_bounded
from prebake.errors import PrebakeError
from prebake.records import DRAFT, Record, checker, load, problem, rule, schema_of

MANIFEST_SCHEMA_VERSION = 1
#: a manifest lists files and facts; 100 000 files fit easily
MAX_MANIFEST_BYTES = 64 * 1024**2
#: the generated schema, relative to the repository (a checkout file, not shipped)
SCHEMA_FILE = Path("schemas") / "manifest.schema.json"

#: a lowercase sha256; maxLength because Python's ``$`` also matches before a final newline
_HEX64: dict[str, Any] = {"pattern": "^[0-9a-f]{64}$", "maxLength": 64}

class ManifestError(PrebakeError):
    """A manifest that is not JSON or breaks the manifest schema (exit code 2, one line)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: invalid manifest: {reason}")
        self.source = source
        self.reason = reason


class _Part(Record):
    @classmethod
    def from_json(cls, data: Any, source: str = "manifest") -> Self:
        """Check ``data`` (parsed JSON) against this record's schema and type it; ``source``
        names the file in the one-line :class:`ManifestError` an invalid one raises."""
        kind: type = cls
        wrong = problem(checker(kind), data)
        if wrong is not None:
            raise ManifestError(source, wrong)
        return load(cls, data)


@dataclass(frozen=True)
class FileEntry(_Part):
    """One archived file (``sha256`` and ``size``) or symlink (``link``), relative to the prefix."""

    # anyOf whose first branch holds for a regular file, and `false` for a key that must be
    # absent: a validator then raises nothing on the common path (a 2 000-file manifest is
    # checked in 15 ms; with oneOf, not or if/else it takes twenty times that)
    SCHEMA: ClassVar[Mapping[str, Any]] = {
        "description": "a file (sha256 and size) or a symlink (link, without sha256)",
        "anyOf": [{"required": ["sha256", "size"], "properties": {"link": False}},
                  {"required": ["link"], "properties": {"sha256": False}}]}

    # not absolute, no `..` segment (`[\s\S]`: across newlines too)
    path: str = field(metadata=rule(
        "a path relative to the prefix that stays inside it", minLength=1,
        pattern="^(?!/)(?![\\s\\S]*(^|/)\\.\\.(/|$))"))
    sha256: str | None = field(default=None, metadata=rule(**_HEX64))
    size: int | None = field(default=None, metadata=rule(minimum=0))
    link: str | None = field(default=None, metadata=rule("a symlink's target"))


@dataclass(frozen=True)
class VerifiedToolchain(_Part):
    """What the platform's compiler reported when the unit was built."""

    SCHEMA: ClassVar[Mapping[str, Any]] = {"description": (
        "what the platform's compiler reported when the unit was built (prebake.toolchain); the "
        "build refuses a pin it contradicts, so status is ok or unpinned")}

    family: str | None = field(metadata=rule("a row of the family table"))
    version: str | None
    version_line: str
    target: str
    llvm: str | None = field(metadata=rule(
        "the LLVM release its bitcode is written with (LLVM-based families)"))
    status: Literal["ok", "unpinned"]
    identity: str = field(metadata=rule("the measured identity in the unit's input hash"))
    environment: str | None = field(default=None, metadata=rule(
        "the toolchain environment's identity: its Debian suite and the versions of its "
        "identity packages"))


@dataclass(frozen=True)
class Toolchain(_Part):
    """The identity of the toolchain that built the asset. Open (toolchain families record more
    than argv and versions): ``raw`` keeps the JSON whole, the fields are what readers compare."""

    SCHEMA: ClassVar[Mapping[str, Any]] = {"description": (
        "toolchain identity: argv prefixes as written, the pin, and what the compiler reported "
        "(verified before the build ran)")}

    cc: tuple[str, ...] | None = None
    cxx: tuple[str, ...] | None = None
    ar: tuple[str, ...] | None = None
    pin: str | None = field(default=None, metadata=rule(null=True))
    pin_version: str | None = field(default=None, metadata=rule(null=True))
    version: str | None = field(default=None, metadata=rule(null=True))
    verified: VerifiedToolchain | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class FactSummary(_Part):
    """The contract-relevant facts of one shipped library (``Facts.summary``); ``abi`` and any
    key the schema leaves open are kept as read."""

    path: str
    format: str | None
    kind: str | None
    os: str | None
    arch: str | None
    abi: Mapping[str, Any]
    needed: tuple[str, ...] | None = field(default=None, metadata=rule(null=True))
    delay_needed: tuple[str, ...] | None = field(default=None, metadata=rule(null=True))
    soname: str | None = field(default=None, metadata=rule(null=True))
    members: int | None = field(default=None, metadata=rule(null=True, minimum=0))
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class RecipeEntry(_Part):
    """A recipe the asset holds, at its pinned version."""

    name: str
    version: str
    public_symbols: tuple[str, ...] | None = field(default=None, metadata=rule(
        "globs of exports that are API beyond what the headers declare "
        "(Outputs(public_symbols=...))"))
    build_settings: Mapping[str, str] | None = field(default=None, metadata=rule(
        "what the build enabled: the CMake cache entries the recipe records (Build.record), "
        "read from its CMakeCache.txt"))
    license: str | None = field(default=None, metadata=rule(
        "the SPDX expression of the license its configuration selected, proven from its "
        "libraries' bytes (guards.license); absent: the recipe proves none"))
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class CheckRecord(_Part):
    """The contract check the asset passed before it was packaged."""

    ok: bool
    platform: str
    contract: Mapping[str, Any]
    undecided: tuple[str, ...] = field(metadata=rule(
        "'rule: library' where the inspector had no evidence either way"))


@dataclass(frozen=True)
class LinkTestRecord(_Part):
    """The link test the asset passed: flags, what linked, and the undefined symbols the
    consumer is trusted to provide (``allow_undefined``, absent when no recipe declared any)."""

    ok: bool
    flags: tuple[str, ...]
    linked: tuple[str, ...] = field(metadata=rule(
        "'snippet', 'symbol NAME', and 'whole archive LIB' for each library whose every member "
        "linked"))
    allow_undefined: Mapping[str, tuple[str, ...]] | None = field(default=None, metadata=rule(
        "the recipes' link_test.allow_undefined patterns (what the consumer provides) -> the "
        "undefined symbols each covered"))


@dataclass(frozen=True)
class VersionEvidence(_Part):
    """One place a recipe's install stated its version, which agreed with the pin."""

    file: str
    says: str
    version: str


@dataclass(frozen=True)
class VersionRecord(_Part):
    """A recipe's pin and the version evidence its own install held (the version proof)."""

    pin: str
    evidence: tuple[VersionEvidence, ...]


@dataclass(frozen=True)
class LicenseEvidence(_Part):
    """One library's own word on its license: the text its bytes hold and the switches of the
    recipe's table its compiled-in configure line has on (which select that same text)."""

    file: str
    says: str
    configured: tuple[str, ...]


@dataclass(frozen=True)
class LicenseRecord(_Part):
    """A recipe's license as its libraries proved it (``Recipe.license_check``)."""

    spdx: str = field(metadata=rule(minLength=1))
    text: str
    evidence: tuple[LicenseEvidence, ...] = field(metadata=rule(minItems=1))


@dataclass(frozen=True)
class OtherCompiledRecord(_Part):
    """A file a recipe ships from another compiler on purpose (``Recipe.other_compilers``)."""

    recipe: str
    file: str
    says: tuple[str, ...] = field(metadata=rule(
        "the compilers its bytes name (abi.producer); empty: it names none"))
    allowed: tuple[str, ...] = field(metadata=rule("the globs the recipe allows it"))
    why: str = field(metadata=rule(minLength=1))


@dataclass(frozen=True)
class ProducerRecord(_Part):
    """What the contract's ``producer`` rule held every binary to: the verified toolchain."""

    toolchain: str = field(metadata=rule(
        "the platform's verified compiler, as family and release ('zig 0.17.1 (clang "
        "22.1.8)'), or why there was none (the rule then stayed undecided)"))
    own: tuple[str, ...] = field(metadata=rule(
        "what that compiler writes into its objects ('clang 14.0.6', 'llvm 14.0.6')"))
    runtime: tuple[str, ...] = field(metadata=rule(
        "what its own runtime objects carry, which a linked image may name besides"))
    runtime_from: tuple[str, ...] = field(metadata=rule(
        "each runtime object read and what it says"))
    other_compilers: tuple[OtherCompiledRecord, ...] = field(metadata=rule(
        "the files exempt from the toolchain by their recipe, each with what it says"))


@dataclass(frozen=True)
class Guards(_Part):
    """The guards the asset passed before it was packaged; ``version`` is the version proof
    per recipe (absent in assets made before it existed)."""

    SCHEMA: ClassVar[Mapping[str, Any]] = {"description": (
        "the guards the asset passed before it was packaged (an asset exists only when every "
        "guard passed)")}

    check: CheckRecord
    link_test: LinkTestRecord
    version: Mapping[str, VersionRecord] | None = field(default=None, metadata=rule(
        "per recipe: its pin and every piece of version evidence its own install held (CMake "
        "ConfigVersion, pkg-config Version:, versioned shared library names and sonames, the "
        "recipe's version_check header macros), each of which agreed with the pin"))
    license: Mapping[str, LicenseRecord] | None = field(default=None, metadata=rule(
        "per recipe with a license_check: the SPDX expression, the license text and each "
        "library's evidence (its text, and the switches its compiled-in configure line has "
        "on), which all agreed; the contract's allowed_licenses allowed it"))
    producer: ProducerRecord | None = field(default=None, metadata=rule(
        "the verified toolchain the contract's producer rule held every binary to, and the "
        "files their recipes exempted (absent: the contract has no producer rule)"))


@dataclass(frozen=True)
class Provenance(_Part):
    """The deterministic half of the asset's SLSA provenance; open, kept as written."""

    SCHEMA: ClassVar[Mapping[str, Any]] = {"description": (
        "the deterministic SLSA v1 buildDefinition (prebake.trust; the full in-toto statement "
        "with builder and times is the .intoto.json sidecar, see provenance.schema.json)")}

    build_type: str = field(metadata=rule(json="buildType"))
    external_parameters: Mapping[str, Any] = field(metadata=rule(json="externalParameters"))
    resolved_dependencies: tuple[Mapping[str, Any], ...] = field(
        metadata=rule(json="resolvedDependencies"))
    internal_parameters: Mapping[str, Any] | None = field(
        default=None, metadata=rule(json="internalParameters"))
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Manifest(_Part):
    """One asset's manifest (``share/prebake/manifest.json`` and the ``.json`` sidecar).

    ``recipes``, ``inputs``, ``guards`` and ``provenance`` are optional in the schema; ``None``
    means the key is absent (so a round trip keeps an empty list apart from a missing one).
    """

    schema_version: Literal[1]
    name: str = field(metadata=rule(minLength=1))
    version: str = field(metadata=rule(minLength=1))
    platform: str = field(metadata=rule(minLength=1))
    input_hash: str = field(metadata=rule(**_HEX64))
    toolchain: Toolchain
    facts: tuple[FactSummary, ...]
    files: tuple[FileEntry, ...]
    link_order: tuple[tuple[str, ...], ...] = field(metadata=rule(
        "groups of library paths (relative to the prefix) in link order; a group of more than "
        "one is a cycle", items={"minItems": 1}))
    created_by: str
    recipes: tuple[RecipeEntry, ...] | None = None
    inputs: Mapping[str, str] | None = field(default=None, metadata=rule(
        "the inputs that make up input_hash (name -> digest or value), as prebake plan "
        "--explain shows them"))
    guards: Guards | None = None
    provenance: Provenance | None = None

    @property
    def named(self) -> tuple[str, str, str]:
        """(name, version, platform): what an asset's file name must agree with."""
        return (self.name, self.version, self.platform)


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of a manifest, from the dataclasses above."""
    return {"$schema": DRAFT,
            "$id": "https://prebake.invalid/schemas/manifest.schema.json",
            "title": "prebake asset manifest (share/prebake/manifest.json and the .json sidecar)",
            "description": "Generated from the dataclasses of prebake.manifest by `python -m "
                           "prebake.reference`; do not edit by hand.",
            **schema_of(Manifest)}


def schema_text() -> str:
    """``schemas/manifest.schema.json`` as the generator writes it."""
    return json.dumps(manifest_schema(), indent=2, ensure_ascii=False) + "\n"


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
    return parse_manifest(read_bounded(path, limit, "manifest"), str(path), limit)
