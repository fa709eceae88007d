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
    ok = isinstance(manifest, dict) and manifest.get("input_hash") == unit.input_hash
    return "built" if ok else "stale"


def unit_status(store: Store, unit: Unit, release: str | None = None) -> str:
    try:
        return _lookup(store, unit, release)
    except (PrebakeError, OSError):
        return "unknown"


def plan_statuses(plan: Plan, store_url: str, root: Path, release: str | None = None
                  ) -> dict[str, str]:
    """Status per unit id, looked up in ``release`` (default: ``continuous``) of the store.

    After the first failed look-up (store unreachable, after its own retries) the remaining
    units are "unknown" at once instead of each retrying again.
    """
    statuses = {u.id: "unknown" for u in plan.units}
    try:
        from prebake.store import open_store
    except ImportError:  # the store layer is optional at this level
        return statuses
    try:
        store = open_store(store_url, root=root)
        for u in plan.units:
            statuses[u.id] = _lookup(store, u, release)
    except (PrebakeError, OSError):
        pass
    return statuses
