"""Whether the store already holds a unit's asset built from the same inputs.

The asset's ``.json`` manifest sidecar carries the ``input_hash`` it was built from: equal means
"built" (the unit is skipped), a different hash "stale", no asset "missing". A store that cannot
be reached (or not yet implemented) gives "unknown" rather than a guess.

A sidecar that is not a valid manifest (not JSON, or breaking ``schemas/manifest.schema.json``)
is "stale", never "built": the store holds an asset under the unit's name, but nothing trustworthy
says what it was built from, so a user expects it rebuilt and replaced ("unknown" is kept for a
store that could not be asked, which a rebuild would not fix).
"""

from __future__ import annotations

from pathlib import Path

from prebake.errors import PrebakeError
from prebake.manifest import Manifest, ManifestError, parse_manifest
from prebake.package.naming import MANIFEST_SUFFIX
from prebake.plan.units import Plan, Unit, asset_for
from prebake.redact import redact_text
from prebake.store import open_store
from prebake.store.base import Store

STATUSES = ("built", "stale", "missing", "unknown")


def _stored(store: Store, unit: Unit, release: str | None) -> Manifest | ManifestError | None:
    """The unit's stored manifest, the error that makes it invalid, or ``None`` when absent."""
    aid = asset_for(unit)
    data = store.read_sidecar(aid, MANIFEST_SUFFIX, release)
    if data is None:
        return None
    try:
        return parse_manifest(data, f"{aid.manifest_name} in {store.url}")
    except ManifestError as exc:
        return exc


def _lookup(store: Store, unit: Unit, release: str | None) -> str:
    return unit_status_from(unit, _stored(store, unit, release))


def unit_status_from(unit: Unit, manifest: Manifest | ManifestError | None) -> str:
    """"built" when the manifest's input hash is the unit's, "stale" if not (or if the sidecar
    is not a valid manifest), "missing" when there is none."""
    if manifest is None:
        return "missing"
    if isinstance(manifest, ManifestError):
        return "stale"
    return "built" if manifest.input_hash == unit.input_hash else "stale"


def unit_status(store: Store, unit: Unit, release: str | None = None) -> str:
    try:
        return _lookup(store, unit, release)
    except (PrebakeError, OSError):
        return "unknown"


def plan_statuses(plan: Plan, store_url: str, root: Path, release: str | None = None,
                  problems: list[str] | None = None) -> dict[str, str]:
    """Status per unit id, looked up in ``release`` (default: ``continuous``) of the store.

    A store URL prebake cannot open (unknown scheme, malformed) raises ``PrebakeError``: that
    is bad input, not an unknown status. After the first failed look-up (store unreachable,
    after its own retries) the remaining units are "unknown" at once instead of each retrying
    again, and the reason is appended to ``problems``.
    """
    statuses = {u.id: "unknown" for u in plan.units}
    store = open_store(store_url, root=root)
    try:
        for u in plan.units:
            statuses[u.id] = _lookup(store, u, release)
    except (PrebakeError, OSError) as exc:
        if problems is not None:
            problems.append(f"{store_url}: could not be asked ({exc}); statuses are unknown")
    return statuses


def stored_manifest(unit: Unit, store_url: str, root: Path, release: str | None = None
                    ) -> Manifest | ManifestError | None:
    """The manifest of the unit's asset in the store (any input hash), the error of an invalid
    one, ``None`` if absent.

    Raises ``PrebakeError``/``OSError`` when the store cannot be asked.
    """
    return _stored(open_store(store_url, root=root), unit, release)


def changed_inputs(unit: Unit, manifest: Manifest | ManifestError | None
                   ) -> list[tuple[str, str | None, str | None]] | None:
    """``(input, stored, now)`` for each input that differs from the stored asset's manifest.

    ``None`` when the manifest does not record its inputs (then only the hash can be compared).
    """
    if not isinstance(manifest, Manifest) or manifest.inputs is None:
        return None

    stored = manifest.inputs
    # the manifest records its inputs redacted (a source URL's token): compared the same way
    now = {n: redact_text(v) for n, v in unit.inputs.items()}
    names = sorted(set(stored) | set(now))
    return [(n, stored.get(n), now.get(n)) for n in names if stored.get(n) != now.get(n)]
