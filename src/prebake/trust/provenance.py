"""SLSA provenance v1 in an in-toto Statement v1: where an asset came from.

Specs: in-toto Attestation Framework, Statement v1
(https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md) and SLSA Provenance v1
(https://slsa.dev/spec/v1.0/provenance). ``schemas/provenance.schema.json`` is the committed
structure both are checked against.

The predicate splits in two on purpose. ``buildDefinition`` says *what* was built from *what*:
the unit, platform and pins (``externalParameters``), and every input with a digest
(``resolvedDependencies``: sources with their URL and git commit or sha256, recipe files, the
platform profile, the toolchain identity). It is deterministic, so it is stored in the manifest
inside the asset and a ``--force`` rebuild keeps the same bytes. ``runDetails`` says *who* built
it and *when* (host or CI run URL, start and finish times); it lives only in the
``<asset>.intoto.json`` sidecar, whose ``subject`` is the asset's sha256.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prebake import __version__
from prebake.digest import file_sha256
from prebake.model.recipe import (
    GitSource,
    LocalSource,
    Recipe,
    Repackage,
    Source,
    UrlSource,
)
from prebake.model.workspace import Platform
from prebake.plan.hashing import canonical_digest, platform_profile, tree_digest
from prebake.redact import redact_json
from prebake.sources.fetch_source import FULL_COMMIT, render_source

# The buildType names the meaning of externalParameters; bumped (v2) when they change meaning.
BUILD_TYPE = "https://prebake.invalid/build-types/unit/v1"


def _rel_uri(path: Path, root: Path) -> str:
    """``file:recipes/x.py`` relative to the workspace (absolute paths differ per machine)."""
    try:
        return "file:" + path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return "file:" + path.name


def git_head(checkout: Path) -> str | None:
    """The commit a git checkout is at, or ``None`` when it is not one (no guessing)."""
    if not (checkout / ".git").exists():
        return None
    proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=False)
    head = proc.stdout.strip()
    return head if proc.returncode == 0 and FULL_COMMIT.fullmatch(head) else None


def source_descriptor(src: Source, *, recipe: Recipe, index: int, version: str,
                      pins: Mapping[str, str], work: Path | None, root: Path) -> dict[str, Any]:
    """One source as an in-toto ResourceDescriptor: git URL + commit, URL + sha256, or a local
    tree + its digest (the same tree digest the input hash uses)."""
    s = render_source(src, version, pins)
    name = f"{recipe.name}:source[{index}]"
    if isinstance(s, GitSource):
        commit = git_head(work / s.dest) if work is not None else None
        if commit is None and FULL_COMMIT.fullmatch(s.ref):
            commit = s.ref
        url = s.url if "://" in s.url or ":" in s.url.split("/", 1)[0] else Path(s.url).as_uri()
        out: dict[str, Any] = {"name": name, "uri": f"git+{url}@{s.ref}",
                               "annotations": {"ref": s.ref}}
        if commit is not None:
            out["digest"] = {"gitCommit": commit}
        return out
    if isinstance(s, UrlSource):
        return {"name": name, "uri": s.url, "digest": {"sha256": s.sha256}}
    assert isinstance(s, LocalSource)
    folder = recipe.folder / s.path
    return {"name": name, "uri": _rel_uri(folder, root),
            "digest": {"sha256": tree_digest(folder)}}


def recipe_dependencies(recipe: Recipe, platform: Platform, pins: Mapping[str, str],
                        work: Path | None, root: Path) -> list[dict[str, Any]]:
    """The recipe file, its declared files (patches), its sources and any upstream archive."""
    version = pins.get(recipe.pin, "")
    out: list[dict[str, Any]] = []
    if recipe.path is not None:
        out.append({"name": f"{recipe.name}:recipe", "uri": _rel_uri(recipe.path, root),
                    "digest": {"sha256": file_sha256(recipe.path)}})
        for rel in recipe.files:
            out.append({"name": f"{recipe.name}:file", "uri": _rel_uri(recipe.folder / rel, root),
                        "digest": {"sha256": file_sha256(recipe.folder / rel)}})
    strategy = recipe.strategy_for(platform.name)
    if isinstance(strategy, Repackage):
        out.append({"name": f"{recipe.name}:upstream", "uri": strategy.url.format(version=version),
                    "digest": {"sha256": strategy.sha256}})
    else:
        for i, src in enumerate(recipe.sources):
            out.append(source_descriptor(src, recipe=recipe, index=i, version=version, pins=pins,
                                         work=work, root=root))
    return out


def build_definition(*, unit: str, stage: str, recipes: Sequence[Recipe], platform: Platform,
                     pins: Mapping[str, str], input_hash: str, toolchain: Mapping[str, Any],
                     root: Path, work: Mapping[str, Path] | None = None) -> dict[str, Any]:
    """The deterministic half of the predicate (what goes into the manifest inside the asset).

    ``work`` maps a recipe name to the folder its sources were fetched into, so a git source's
    checked-out commit is read from the checkout itself rather than trusted from its ref.
    """
    read: dict[str, str] = {}
    for r in recipes:
        for name in r.pins_read(platform.name, platform.toolchain.pin):
            read[name] = pins.get(name, "")
    deps: list[dict[str, Any]] = []
    for r in recipes:
        deps.extend(recipe_dependencies(r, platform, pins, (work or {}).get(r.name), root))
    profile = _redacted(platform_profile(platform))  # before the digest: it covers what is shown
    deps.append({"name": f"platform:{platform.name}",
                 "digest": {"sha256": canonical_digest(profile)}, "annotations": profile})
    tc = _redacted(dict(toolchain))
    deps = [_redacted(d) for d in deps]
    deps.append({"name": f"toolchain:{platform.name}", "digest": {"sha256": canonical_digest(tc)},
                 "annotations": tc})
    return {
        "buildType": BUILD_TYPE,
        "externalParameters": {
            "unit": unit,
            "stage": stage,
            "platform": platform.name,
            "recipes": [{"name": r.name, "version": pins.get(r.pin, "")} for r in recipes],
            "pins": dict(sorted(read.items())),
        },
        "internalParameters": {"input_hash": input_hash, "prebake": __version__},
        "resolvedDependencies": deps,
    }


def _redacted(doc: Mapping[str, Any]) -> dict[str, Any]:
    out = redact_json(dict(doc))
    assert isinstance(out, dict)
    return out


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def builder_id(env: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(builder id, invocation id): the CI run URL on GitHub Actions, else this host."""
    env = os.environ if env is None else env
    server, repo, run = (env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"),
                         env.get("GITHUB_RUN_ID"))
    if server and repo and run:
        url = f"{server.rstrip('/')}/{repo}/actions/runs/{run}"
        attempt = env.get("GITHUB_RUN_ATTEMPT")
        return url, f"{url}/attempts/{attempt}" if attempt else url
    return f"urn:prebake:host:{socket.gethostname()}", None


def run_details(*, started: float, finished: float,
                env: Mapping[str, str] | None = None) -> dict[str, Any]:
    bid, invocation = builder_id(env)
    meta: dict[str, Any] = {"startedOn": _rfc3339(started), "finishedOn": _rfc3339(finished)}
    if invocation:
        meta["invocationId"] = invocation
    return _redacted({"builder": {"id": bid, "version": {"prebake": __version__}},
                      "metadata": meta})
