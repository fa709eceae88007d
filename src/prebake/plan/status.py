"""Whether the store already holds a unit's asset built from the same inputs.

The asset's ``.json`` manifest sidecar carries the ``input_hash`` it was built from: equal means
"built" (the unit is skipped), a different hash "stale", no asset "missing". A store that cannot
be reached (or not yet implemented) gives "unknown" rather than a guess.
"""

from __future__ import annotations

import json
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.package.naming import MANIFEST_SUFFIX
from prebake.plan.model import Plan, Unit, asset_for
from prebake.store.base import Store

STATUSES = ("built", "stale", "missing", "unknown")


def _lookup(store: Store, unit: Unit, release: str | None) -> str:
    data = store.read_sidecar(asset_for(unit), MANIFEST_SUFFIX, release)
    if data is None:
        return "missing"
    try:
        manifest = json.loads(data)
    except ValueError:
        return "stale"
    return unit_status_from(unit, manifest if isinstance(manifest, dict) else {})


def unit_status_from(unit: Unit, manifest: dict[str, object] | None) -> str:
    """"built" when the manifest's input hash is the unit's, "stale" if not, "missing"."""
    if manifest is None:
        return "missing"
    return "built" if manifest.get("input_hash") == unit.input_hash else "stale"


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
    from prebake.store import open_store

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
                    ) -> dict[str, object] | None:
    """The manifest of the unit's asset in the store (any input hash), ``None`` if absent.

    Raises ``PrebakeError``/``OSError`` when the store cannot be asked.
    """
    from prebake.store import open_store

    data = open_store(store_url, root=root).read_sidecar(asset_for(unit), MANIFEST_SUFFIX,
                                                         release)
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError:
        return {}
    return manifest if isinstance(manifest, dict) else {}


def changed_inputs(unit: Unit, manifest: dict[str, object] | None
                   ) -> list[tuple[str, str | None, str | None]] | None:
    """``(input, stored, now)`` for each input that differs from the stored asset's manifest.

    ``None`` when the manifest does not record its inputs (then only the hash can be compared).
    """
    stored = manifest.get("inputs") if manifest else None
    if not isinstance(stored, dict):
        return None
    names = sorted(set(stored) | set(unit.inputs))
    return [(n, _str_or_none(stored.get(n)), unit.inputs.get(n)) for n in names
            if _str_or_none(stored.get(n)) != unit.inputs.get(n)]


def _str_or_none(v: object) -> str | None:
    return None if v is None else str(v)
