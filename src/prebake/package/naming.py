"""Asset names and sidecars: the one place that knows how a release asset is spelled.

``<name>-<version>-<platform>.tar.xz`` with sidecars ``<asset>.sha256`` (``"<hex>  <asset>\\n"``,
the format ``sha256sum -c`` reads) and ``<asset>.json`` (the manifest, identical to the
``share/prebake/manifest.json`` inside the archive). Builds, stores and fetch all use this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prebake.errors import PrebakeError

ASSET_SUFFIX = ".tar.xz"
SHA256_SUFFIX = ".sha256"
MANIFEST_SUFFIX = ".json"
# Optional trust sidecars (prebake.trust): the in-toto provenance statement and the ssh signature
# over the asset's and the statement's sha256 lines. Stores carry them when next to an asset.
PROVENANCE_SUFFIX = ".intoto.json"
SIGNATURE_SUFFIX = ".sig"
TRUST_SIDECAR_SUFFIXES = (PROVENANCE_SUFFIX, SIGNATURE_SUFFIX)
MAX_ASSET_BYTES = 2 * 1024**3  # GitHub refuses release assets of 2 GiB or more

_NAME = r"[A-Za-z0-9_.+]+(?:-[A-Za-z_][A-Za-z0-9_.+]*)*"
_VERSION = r"[0-9][A-Za-z0-9_.+~]*"
_PLATFORM = r"[a-z0-9]+(?:-[a-z0-9_]+)*"
_ASSET_RE = re.compile(rf"^(?P<name>{_NAME})-(?P<version>{_VERSION})-(?P<platform>{_PLATFORM})"
                       + re.escape(ASSET_SUFFIX) + "$")


@dataclass(frozen=True, order=True)
class AssetId:
    name: str
    version: str
    platform: str

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{self.platform}{ASSET_SUFFIX}"

    @property
    def sha256_name(self) -> str:
        return self.filename + SHA256_SUFFIX

    @property
    def manifest_name(self) -> str:
        return self.filename + MANIFEST_SUFFIX

    def __str__(self) -> str:
        return self.filename


def asset_id(name: str, version: str, platform: str) -> AssetId:
    aid = AssetId(name, version, platform)
    if parse_asset_name(aid.filename) != aid:
        raise PrebakeError(
            f"cannot form an unambiguous asset name from name={name!r} version={version!r} "
            f"platform={platform!r}"
        )
    return aid


def parse_asset_name(filename: str) -> AssetId | None:
    """``onnxruntime-1.27.0-linux-x86_64.tar.xz`` -> AssetId; ``None`` if it is not one."""
    m = _ASSET_RE.match(filename)
    if not m:
        return None
    return AssetId(m["name"], m["version"], m["platform"])


def sha256_line(hexdigest: str, filename: str) -> str:
    return f"{hexdigest}  {filename}\n"


def parse_sha256_line(text: str, filename: str) -> str:
    """The hex digest of a ``.sha256`` sidecar; raises if malformed or naming another file."""
    parts = text.strip().split()
    if len(parts) not in (1, 2) or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
        raise PrebakeError(f"{filename}{SHA256_SUFFIX}: not a sha256 sidecar")
    if len(parts) == 2 and parts[1].lstrip("*") != filename:
        raise PrebakeError(
            f"{filename}{SHA256_SUFFIX}: names {parts[1]!r}, not {filename!r}"
        )
    return parts[0]
