"""What a rebuild shares with the build it checks: no compiler cache, no launcher, no cache
folder of the caller's.

A compiler cache serves the entry it holds for a key, whatever made it: ccache leaves
``prefix_command`` (``CCACHE_PREFIX``) out of its key, so an entry made through one serves
every later build with the same key — the build's and, when the check shares the cache (what
``actions/cache`` restores into ``CCACHE_DIR``), the check's too, which then says "same bytes"
of the poisoned object. So a rebuild runs with none of the caller's launcher and
cache variables (``PREBAKE_COMPILER_LAUNCHER``, every ``CCACHE_*`` and ``SCCACHE_*``), and with
empty cache folders of its own, inside its fresh folder, where the toolchain keeps one:

- zig: ``ZIG_GLOBAL_CACHE_DIR`` and ``ZIG_LOCAL_CACHE_DIR`` (always: a recipe's commands may
  run zig themselves);
- Emscripten: ``EM_CACHE`` (a toolchain environment's own Emscripten reads
  ``PREBAKE_ENV_EM_CACHE``, which ``toolchain.enter`` hands it as ``EM_CACHE`` inside the
  root) — except where the cache is frozen (Debian's packages: ``FROZEN_CACHE = True`` in its
  config), which refuses to build into an empty folder; there the toolchain's own frozen cache
  is used, as its package installed it (the caller's ``EM_CACHE``, perhaps a writable copy,
  never), and trusted as the toolchain itself is.

Nothing else of the caller's reaches it that the allow-list of ``prebake.variables`` does not
already pass; the report lists what was left out and each cache used.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.model.workspace import Platform
from prebake.toolchain.enter import ENV_EM_CACHE
from prebake.toolchain.environment import environment_named
from prebake.toolchain.launcher import LAUNCHER_VARIABLE
from prebake.toolchain.probe import resolve_argv
from prebake.toolchain.verify import platform_family

ZIG_CACHES = ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR")
#: the caller's variables a rebuild never sees: a launcher, and every compiler cache's
DROPPED = (LAUNCHER_VARIABLE, *ZIG_CACHES, "EM_CACHE", ENV_EM_CACHE)
DROPPED_PREFIXES = ("CCACHE_", "SCCACHE_")
_FROZEN = re.compile(r"^\s*FROZEN_CACHE\s*=\s*True\b", re.M)
_MAX_CONFIG = 1 << 20


@dataclass(frozen=True)
class Cache:
    """One toolchain cache of the rebuild: the variable that names it, the folder (``None``:
    the toolchain's default), whether it is new and empty, and what it is."""

    name: str
    path: str | None
    fresh: bool
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "fresh": self.fresh, "note": self.note}


@dataclass(frozen=True)
class Isolation:
    """What the rebuild was given: never a launcher; the caller's variables left out; its
    caches."""

    dropped: tuple[str, ...]
    caches: tuple[Cache, ...]
    launcher: None = None

    def to_json(self) -> dict[str, Any]:
        return {"launcher": None, "dropped": list(self.dropped),
                "caches": [c.to_json() for c in self.caches]}

    def line(self) -> str:
        """One line for the human report."""
        dropped = (f"the caller's {', '.join(self.dropped)} left out" if self.dropped
                   else "no cache variable of the caller's to leave out")
        caches = "; ".join(f"{c.name}: {c.path}" if c.fresh else f"{c.name}: {c.note}"
                           for c in self.caches)
        return f"no compiler launcher; {dropped}; caches {caches}"


def _emscripten_config(platform: Platform, pins: Mapping[str, str],
                       caller: Mapping[str, str]) -> Path | None:
    """The config file the platform's Emscripten reads (emscripten's own order: ``EM_CONFIG``,
    then the ``.emscripten`` beside its ``emcc``: the pinned emsdk's, or the one on
    ``PATH``), or None when none is found."""
    tc = platform.toolchain
    if tc.environment:
        return environment_named(tc.environment).root / "usr/share/emscripten/.emscripten"
    if caller.get("EM_CONFIG"):
        return Path(caller["EM_CONFIG"])
    argv = resolve_argv(tc.cc, platform_family(tc), pins.get(tc.pin) if tc.pin else None)
    found = shutil.which(argv[0], path=caller.get("PATH")) if argv else None
    if found is None:
        return None
    return Path(found).resolve().parent / ".emscripten"


def frozen_cache(config: Path | None) -> bool:
    """Whether an Emscripten config sets ``FROZEN_CACHE = True`` (an unreadable or missing
    config: not frozen, so the rebuild gets an empty cache, and a frozen one then fails the
    rebuild in words rather than sharing a cache)."""
    if config is None:
        return False
    try:
        with open(config, "rb") as fh:
            text = fh.read(_MAX_CONFIG).decode("utf-8", "replace")
    except OSError:
        return False
    return bool(_FROZEN.search(text))


def isolated(caller: Mapping[str, str], folder: Path, platform: Platform,
             pins: Mapping[str, str]) -> tuple[dict[str, str], Isolation]:
    """The environment a rebuild in ``folder`` of a unit of ``platform`` (with the
    workspace's ``pins``) runs with (see the module), and what it says about it."""
    env = {k: v for k, v in caller.items()
           if k not in DROPPED and not k.startswith(DROPPED_PREFIXES)}
    dropped = tuple(sorted(set(caller) - set(env)))
    caches_at = folder / "caches"
    caches: list[Cache] = []
    for name in ZIG_CACHES:
        path = caches_at / name.lower().removesuffix("_cache_dir").replace("_", "-")
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
        caches.append(Cache(name, str(path), True, "zig's, empty"))
    fam = platform_family(platform.toolchain)
    if fam is not None and fam.name == "emscripten":
        config = _emscripten_config(platform, pins, caller)
        name = ENV_EM_CACHE if platform.toolchain.environment else "EM_CACHE"
        if frozen_cache(config):
            caches.append(Cache(name, None, False,
                                f"Emscripten's frozen cache, as its package installed it "
                                f"(FROZEN_CACHE in {config})"))
        else:
            path = caches_at / "emscripten"
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
            caches.append(Cache(name, str(path), True, "Emscripten's, empty"))
    return env, Isolation(dropped, tuple(caches))
