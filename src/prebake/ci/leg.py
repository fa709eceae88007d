"""One CI leg (stage × platform): skip it when the store has every unit, else stage its inputs.

The hash-skip compares each unit's input hash with the manifest of its asset in the store, so
an unchanged leg ends in seconds. When the leg must build, the assets of the stages it comes
after must be in the local default store: handed over as artifacts by this run's earlier legs,
or — when those legs were skipped — copied from the store here.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.model.workspace import Workspace
from prebake.package.naming import AssetId
from prebake.plan import asset_for, make_plan, unit_status
from prebake.store import open_store
from prebake.store.base import Store


@dataclass
class LegResult:
    stage: str
    platform: str
    statuses: dict[str, str]
    fetched: list[str] = field(default_factory=list)

    @property
    def skip(self) -> bool:
        return bool(self.statuses) and all(s == "built" for s in self.statuses.values())


def _copy_asset(src_store: Store, dest_store: Store, aid: AssetId, release: str | None
                ) -> None:
    with tempfile.TemporaryDirectory(prefix="prebake-leg-") as tmp:
        path = Path(tmp) / aid.filename
        src_store.download(aid, path, release)
        for suffix, name in ((".sha256", aid.sha256_name), (".json", aid.manifest_name)):
            data = src_store.read_sidecar(aid, suffix, release)
            if data is None:
                raise PrebakeError(f"{aid.filename}: the store has no {suffix} sidecar")
            (Path(tmp) / name).write_bytes(data)
        dest_store.publish(path)


def prepare_leg(ws: Workspace, stage: str, platform: str, store_url: str,
                release: str | None = None) -> LegResult:
    """Look the leg's units up in ``store_url``; if one is missing, stage upstream assets."""
    plan = make_plan(ws, stage, platform)
    remote = open_store(store_url, root=ws.root)
    result = LegResult(stage, platform, {u.id: unit_status(remote, u, release)
                                         for u in plan.units})
    if result.skip:
        return result
    local = open_store(ws.default_store, root=ws.root)
    have = set(local.list_assets())
    wanted = {d for u in plan.units for d in u.deps}
    upstream = {up.id: up for u in plan.units for up in u.upstream}  # the plan resolved them
    for unit in upstream.values():
        if unit.id not in wanted:
            continue
        aid = asset_for(unit)
        if aid in have:
            continue
        if unit_status(remote, unit, release) != "built":
            continue  # built by this run's earlier leg, or it will fail loudly in the build
        _copy_asset(remote, local, aid, release)
        result.fetched.append(aid.filename)
    return result
