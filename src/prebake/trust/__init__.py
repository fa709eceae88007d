"""Trust: where an asset came from (SLSA provenance), what it contains (CycloneDX SBOM), and
that nobody swapped it after the build (OpenSSH signatures checked against an allowed-signers
file, the way git verifies signed commits).

- ``statement``: the in-toto Statement v1 as a document (made, checked against an asset's
  sha256, summarised), all a consumer needs.
- ``provenance``: an in-toto Statement v1 with the SLSA provenance v1 predicate. Its
  deterministic half (``buildDefinition``) goes into the asset's manifest; the whole statement,
  with builder and times, is the ``<asset>.intoto.json`` sidecar (times never enter the tar.xz,
  so a ``--force`` rebuild stays byte-identical).
- ``sbom``: ``share/prebake/sbom.cdx.json`` inside the asset.
- ``sign``: ``<asset>.sig`` over ``sha256sum``-style lines of the asset and its statement.
- ``hooks``: what ``build`` calls (provenance, SBOM, the statement sidecar).
- ``consumer``: what ``fetch`` and ``inspect`` check (signature, statement).
"""

from __future__ import annotations

from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX

NAMESPACE = "prebake"  # ssh-keygen -Y namespace: a prebake signature never verifies as a git one

__all__ = ["NAMESPACE", "PROVENANCE_SUFFIX", "SIGNATURE_SUFFIX"]
