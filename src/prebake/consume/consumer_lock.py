"""``prebake.lock``: what a consumer fetched, byte for byte (name, version, platform, sha256, url,
and the asset's size, which bounds the next download of it).

JSON through ``prebake.jsonio`` (sorted keys, entries sorted by name then platform, written
atomically), so the same fetches always give the same file and diffs stay one line per change.
One entry per (name, platform): a consumer may lock several platforms of one dependency.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prebake import jsonio
from prebake.bounded import read_bounded
from prebake.errors import PrebakeError
from prebake.names import name_problem
from prebake.package.naming import MAX_ASSET_BYTES

LOCK_NAME = "prebake.lock"
LOCK_SCHEMA_VERSION = 1
MAX_LOCK = 16 * 1024**2  # one short entry per locked dependency
_FIELDS = ("name", "version", "platform", "sha256", "url")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, order=True)
class LockEntry:
    name: str
    version: str
    platform: str
    sha256: str
    url: str
    release: str | None = None
    size: int | None = None  # the asset's bytes (locks written before it was recorded: None)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Lock:
    path: Path
    entries: dict[tuple[str, str], LockEntry] = field(default_factory=dict)

    def get(self, name: str, platform: str) -> LockEntry | None:
        return self.entries.get((name, platform))

    def put(self, entry: LockEntry) -> None:
        self.entries[(entry.name, entry.platform)] = entry

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": LOCK_SCHEMA_VERSION,
            "packages": [e.to_json() for _, e in sorted(self.entries.items())],
        }

    def write(self) -> None:
        jsonio.atomic_write_json(self.path, self.to_json())


def _entry(path: Path, i: int, raw: Any) -> LockEntry:
    where = f"{path}: packages[{i}]"
    if not isinstance(raw, dict):
        raise PrebakeError(f"{where}: not an object")
    missing = [k for k in _FIELDS if not isinstance(raw.get(k), str) or not raw.get(k)]
    if missing:
        raise PrebakeError(f"{where}: missing or empty {', '.join(missing)}")
    unknown = sorted(set(raw) - {*_FIELDS, "release", "size"})
    if unknown:
        raise PrebakeError(f"{where}: unknown key(s) {', '.join(unknown)}")
    if not _HEX64.fullmatch(raw["sha256"]):
        raise PrebakeError(f"{where}: sha256 {raw['sha256']!r} is not 64 lowercase hex digits")
    release = raw.get("release")
    if release is not None and not isinstance(release, str):
        raise PrebakeError(f"{where}: release must be a string")
    size = raw.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool)
                             or not 0 <= size < MAX_ASSET_BYTES):
        raise PrebakeError(f"{where}: size {size!r} is not a byte count below "
                           f"{MAX_ASSET_BYTES} (the largest asset prebake publishes)")
    for key in ("name", "version", "platform", "release"):  # they become cache and store paths
        if raw.get(key) is not None and (bad := name_problem(raw[key])) is not None:
            raise PrebakeError(f"{where}: {key} {bad}")
    return LockEntry(raw["name"], raw["version"], raw["platform"], raw["sha256"], raw["url"],
                     release if isinstance(release, str) else None, size)


def read_lock(path: Path, *, must_exist: bool = False) -> Lock:
    """The lock at ``path`` (empty if absent and not ``must_exist``); malformed locks raise."""
    path = Path(path)
    if not path.exists():
        if must_exist:
            raise PrebakeError(f"{path}: no such lock file")
        return Lock(path)

    try:
        data = json.loads(read_bounded(path, MAX_LOCK, "lock file"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PrebakeError(f"{path}: not a prebake lock (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("packages"), list):
        raise PrebakeError(f"{path}: not a prebake lock (no 'packages' list)")
    if data.get("schema_version") != LOCK_SCHEMA_VERSION:
        raise PrebakeError(f"{path}: lock schema_version {data.get('schema_version')!r}, "
                           f"this prebake reads {LOCK_SCHEMA_VERSION}")
    lock = Lock(path)
    for i, raw in enumerate(data["packages"]):
        e = _entry(path, i, raw)
        if (e.name, e.platform) in lock.entries:
            raise PrebakeError(f"{path}: packages[{i}]: {e.name} for {e.platform} locked twice")
        lock.put(e)
    return lock
