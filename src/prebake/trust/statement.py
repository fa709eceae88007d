"""The in-toto Statement v1 with the SLSA provenance v1 predicate, as a document: made from a
build definition and run details, checked against an asset's bytes, summarised for
``inspect``. What the predicate says about a build is ``provenance``'s; a consumer that checks
a statement (``fetch``, ``inspect``) needs only this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prebake.errors import PrebakeError

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"


def statement(filename: str, sha256: str, definition: Mapping[str, Any],
              details: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": filename, "digest": {"sha256": sha256}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {"buildDefinition": dict(definition), "runDetails": dict(details)},
    }


def check_statement(data: Any, filename: str, sha256: str, where: str) -> dict[str, Any]:
    """The statement if it is one and its subject is exactly this asset's bytes; else raises."""
    if not isinstance(data, dict) or data.get("_type") != STATEMENT_TYPE:
        raise PrebakeError(f"{where}: not an in-toto Statement v1")
    if data.get("predicateType") != PREDICATE_TYPE:
        raise PrebakeError(f"{where}: predicateType is {data.get('predicateType')!r}, "
                           f"not SLSA provenance v1")
    subjects = data.get("subject")
    if not isinstance(subjects, list) or not any(
            isinstance(s, dict) and s.get("name") == filename
            and isinstance(s.get("digest"), dict) and s["digest"].get("sha256") == sha256
            for s in subjects):
        raise PrebakeError(f"{where}: its subject is not {filename} with sha256 {sha256}")
    return data


def summary(data: Mapping[str, Any]) -> dict[str, Any]:
    """What ``inspect`` shows: builder, times, parameters, and each input with one digest."""
    pred = data.get("predicate", {})
    bd, rd = pred.get("buildDefinition", {}), pred.get("runDetails", {})
    inputs = []
    for d in bd.get("resolvedDependencies", []):
        digest = d.get("digest", {})
        alg = next(iter(sorted(digest)), None)
        inputs.append({"name": d.get("name"), "uri": d.get("uri"),
                       "digest": f"{alg}:{digest[alg]}" if alg else None})
    return {
        "buildType": bd.get("buildType"),
        "builder": rd.get("builder", {}).get("id"),
        "startedOn": rd.get("metadata", {}).get("startedOn"),
        "finishedOn": rd.get("metadata", {}).get("finishedOn"),
        "externalParameters": bd.get("externalParameters", {}),
        "inputs": inputs,
    }


def schema_path() -> Path:
    return Path(__file__).resolve().parents[3] / "schemas" / "provenance.schema.json"
