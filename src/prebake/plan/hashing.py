"""Input hashes: derived from what can change a unit's output, never from hand-kept file lists.

A recipe unit's inputs are the recipe file's bytes, the files/patches it declares, the trees of
its local sources (relative path + content), the values of exactly the pins it reads, the
platform profile (contract, toolchain command lines as written, link-test flags, env policy)
and the toolchain identity (the toolchain pin's value, else the compiler's ``--version`` line).
Absolute paths, host names and times never enter a hash, so two machines agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from prebake.digest import file_sha256
from prebake.package import ASSET_FORMAT
from prebake.recipes.model import LocalSource, Recipe
from prebake.sources.lock import SourceLock, digest_of, url_refs
from prebake.workspace.model import PYTHON_TOKEN, Platform, Toolchain

# Bumped when the meaning of a hash changes (a new input kind), so every unit rebuilds once.
HASH_SCHEME = "prebake-input-hash-1"
_SKIP_DIRS = {".git", "__pycache__", ".hg", ".svn"}

Identify = Callable[[Toolchain, Mapping[str, str]], str]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_digest(obj: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace): stable across runs and machines."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_bytes(text.encode("utf-8"))


def tree_digest(root: Path) -> str:
    """Digest of a folder: every file's relative path, executable bit and content, sorted.

    ``os.scandir`` with plain strings: a source tree has thousands of files and this runs on
    every plan, so per-file overhead matters (benchmarks/bench_plan.py).
    """
    from prebake.walk import scandir_tree

    entries: list[tuple[str, str]] = []
    # iterative and depth-bounded: a source 1 200 folders deep is one clear error, not a crash
    for rel, entry in scandir_tree(str(root), skip=lambda e: e.name in _SKIP_DIRS):
        if entry.is_symlink():
            entries.append((rel, "link:" + str(Path(entry.path).readlink())))
        elif entry.is_file():
            mode = "x" if entry.stat().st_mode & 0o100 else "-"
            entries.append((rel, f"{mode}:{file_sha256(entry.path)}"))
    entries.sort()
    return canonical_digest(entries)


def _unexpand(argv: tuple[str, ...] | None) -> list[str] | None:
    if argv is None:
        return None
    return [PYTHON_TOKEN if a == sys.executable else a for a in argv]


def platform_profile(platform: Platform) -> dict[str, Any]:
    """What of a platform can change a build's output (the runner label cannot)."""
    tc = platform.toolchain
    return {
        "os": platform.os,
        "arch": platform.arch,
        "toolchain": {
            "cc": tc.spec.get("cc") or _unexpand(tc.cc),
            "cxx": tc.spec.get("cxx") or _unexpand(tc.cxx),
            "ar": tc.spec.get("ar") or _unexpand(tc.ar),
            "pin": tc.pin,
            "cmake_toolchain": tc.cmake_toolchain,
        },
        "contract": platform.contract.to_json(),
        "link_test": {"flags": list(platform.link_test.flags),
                      "run": _unexpand(platform.link_test.run)},
        "env_unset": sorted(platform.env_unset),
        "env": dict(sorted(platform.env.items())),
    }


class ToolchainIdentity:
    """The toolchain's identity, computed once per run: a pinned toolchain is its pin value;
    otherwise the first line of ``cc --version`` (the compiler release that matters)."""

    def __init__(self, run: Callable[[list[str]], str] | None = None) -> None:
        self._run = run or version_line
        self._cache: dict[tuple[str, ...], str] = {}

    def prefetch(self, toolchains: list[Toolchain]) -> None:
        """Run the ``--version`` of every unpinned compiler at once (each takes ~50 ms)."""
        todo = list(dict.fromkeys(t.cc for t in toolchains
                                  if not t.pin and t.cc not in self._cache))
        if len(todo) < 2:
            return
        with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
            for argv, line in zip(todo, pool.map(lambda a: self._run([*a, "--version"]), todo),
                                  strict=True):
                self._cache[argv] = line

    def __call__(self, toolchain: Toolchain, pins: Mapping[str, str]) -> str:
        if toolchain.pin:
            return f"pin {toolchain.pin}={pins.get(toolchain.pin, '?')}"
        key = toolchain.cc
        if key not in self._cache:
            self._cache[key] = self._run([*toolchain.cc, "--version"])
        return self._cache[key]


def version_line(argv: list[str]) -> str:
    """First line of a ``--version`` run, or ``unavailable (…)``: never raises."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR") if k in os.environ}
    env["LC_ALL"] = "C"
    try:
        # In a scratch folder: `zig cc -target *-macos --version` leaves an empty a.o behind.
        with tempfile.TemporaryDirectory(prefix="prebake-version-") as scratch:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env,
                                  stdin=subprocess.DEVNULL, check=False, cwd=scratch)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({type(exc).__name__})"
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    if proc.returncode != 0 or not lines:
        return f"unavailable (exit {proc.returncode})"
    return lines[0].strip()


def _memo(cache: dict[tuple[str, Path], str] | None, kind: str, path: Path,
          fn: Callable[[Path], str]) -> str:
    """``fn(path)``, remembered in ``cache`` for the rest of one plan."""
    if cache is None:
        return fn(path)
    key = (kind, path)
    if key not in cache:
        cache[key] = fn(path)
    return cache[key]


def recipe_inputs(recipe: Recipe, platform: Platform, pins: Mapping[str, str],
                  identify: Identify, cache: dict[tuple[str, Path], str] | None = None,
                  lock: SourceLock | None = None) -> dict[str, str]:
    """The named inputs of one recipe on one platform (what ``--explain`` shows).

    ``cache`` (one per plan) keeps file and tree digests, so a source tree is read once per
    plan, not once per platform. Each downloaded file counts by its resolved URL and the
    digest ``lock`` (``prebake.sources.lock``) holds for it: re-pinning changes the hash.
    """
    if recipe.path is None:
        raise ValueError(f"recipe {recipe.name!r} has no file")
    folder = recipe.path.parent
    inputs = {"hash-scheme": HASH_SCHEME, "asset-format": str(ASSET_FORMAT),
              "recipe-file": _memo(cache, "file", recipe.path, file_sha256)}
    for rel in recipe.files:
        inputs[f"file:{rel}"] = _memo(cache, "file", folder / rel, file_sha256)
    for i, src in enumerate(recipe.sources):
        if isinstance(src, LocalSource):
            inputs[f"source[{i}]:{src.path}"] = _memo(cache, "tree", folder / src.path,
                                                      tree_digest)
    for ref in url_refs(recipe, platform.name, platform.os, platform.arch, pins):
        digest = digest_of(ref, lock) if lock is not None else ref.literal_sha256 or None
        inputs[f"url:{ref.where}"] = f"{ref.url} sha256={digest or 'unlocked'}"
    for name in recipe.pins_read(platform.name, platform.toolchain.pin):
        inputs[f"pin:{name}"] = pins.get(name, "")
    inputs["platform-profile"] = canonical_digest(platform_profile(platform))
    inputs["toolchain"] = identify(platform.toolchain, pins)
    return inputs
