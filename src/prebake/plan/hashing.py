"""Input hashes: derived from what can change a unit's output, never from hand-kept file lists.

A recipe unit's inputs are the recipe file's bytes, the files/patches it declares, the trees of
its local sources (relative path + content), the values of exactly the pins it reads, the
platform profile (contract, toolchain command lines as written, link-test flags, env policy)
and the toolchain's measured identity (what the compiler reports: family, version line and
target, resolved through ``PATH`` as the build runs it; ``prebake.toolchain``).
Absolute paths, host names and times never enter a hash, so two machines agree.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from prebake import abikeys
from prebake.digest import file_sha256
from prebake.package import ASSET_FORMAT
from prebake.recipes.api import (
    Build,
    LocalSource,
    Recipe,
    UrlSource,
    host_tools_used,
    strategy_templates,
    template_fields,
)
from prebake.redact import redact_text
from prebake.sources.lock import SourceLock, digest_of, git_commit_of, git_refs, url_refs
from prebake.toolchain import configure, mesonfile, platformtools
from prebake.toolchain.cmakefile import portable
from prebake.toolchain.hosttools import HOST_TOOLS
from prebake.toolchain.probe import PROBER, Prober
from prebake.toolchain.verify import Verdict, verify_platform, verify_platforms
from prebake.variables import sanitized
from prebake.walk import scandir_tree
from prebake.workspace.model import PYTHON_TOKEN, Platform

# Bumped when the meaning of a hash changes (a new input kind), so every unit rebuilds once.
HASH_SCHEME = "prebake-input-hash-1"
_SKIP_DIRS = {".git", "__pycache__", ".hg", ".svn"}

Identify = Callable[[Platform, Mapping[str, str]], str]


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
            **({"ranlib": tc.spec.get("ranlib") or _unexpand(tc.ranlib)} if tc.ranlib else {}),
            # nm, strip and windres are not here: only a recipe given the tools folder runs
            # them, and its hash holds the folder's text (``configure-tools``); naming one in
            # the table rebuilds nothing else
            **({"from_stage": tc.from_stage} if tc.from_stage else {}),
        },
        "contract": _contract_set(platform),
        "link_test": {"flags": list(platform.link_test.flags),
                      "run": _unexpand(platform.link_test.run)},
        "env_unset": sorted(platform.env_unset),
        "env": dict(sorted(platform.env.items())),
    }


def _contract_set(platform: Platform) -> dict[str, Any]:
    """The keys the platform's contract sets (a key left unset is no rule): a key prebake
    gains, unset, changes no input hash and rebuilds nothing."""
    out = {}
    for k, v in platform.contract.to_json().items():
        if v is not None and (v != [] or abikeys.BY_NAME[k].empty_rule):
            out[k] = v
    return out


class ToolchainIdentity:
    """The measured toolchain identity, asked once per compiler per run.

    What the compiler reports — family, version line, target — resolved through ``PATH`` as
    the build runs it (``prebake.toolchain``). A pin does not stand in for it: the pin's value
    is an input of its own, and a compiler that contradicts it is refused by the build.
    """

    def __init__(self, prober: Prober | None = None,
                 caller_env: Mapping[str, str] | None = None) -> None:
        self._prober = prober or PROBER
        self._caller_env = caller_env
        self.caller_env = caller_env  # host tools are looked up with the same environment
        self._verdicts: dict[tuple[int, str], Verdict] = {}

    def prefetch(self, platforms: list[Platform], pins: Mapping[str, str]) -> None:
        """Ask every platform's compiler at once (each takes ~50 ms)."""
        todo = [p for p in platforms if (id(p), p.name) not in self._verdicts]
        for p, v in zip(todo, verify_platforms(todo, pins, self._prober, self._caller_env)
                        .values(), strict=True):
            self._verdicts[(id(p), p.name)] = v

    def verdict(self, platform: Platform, pins: Mapping[str, str]) -> Verdict:
        key = (id(platform), platform.name)
        if key not in self._verdicts:
            self._verdicts[key] = verify_platform(platform, pins, self._prober,
                                                  self._caller_env)
        return self._verdicts[key]

    def __call__(self, platform: Platform, pins: Mapping[str, str]) -> str:
        return self.verdict(platform, pins).identity


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
                  lock: SourceLock | None = None, *, shared_prefix: bool = False,
                  root: Path | None = None,
                  provided: Mapping[str, str] | None = None) -> dict[str, str]:
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
        elif isinstance(src, UrlSource):
            for rel in src.patches:
                inputs[f"patch:{rel}"] = _memo(cache, "file", folder / rel, file_sha256)
    for ref in url_refs(recipe, platform.name, platform.os, platform.arch, pins, provided):
        digest = digest_of(ref, lock) if lock is not None else ref.literal_sha256 or None
        inputs[f"url:{ref.where}"] = f"{ref.url} sha256={digest or 'unlocked'}"
    for gref in git_refs(recipe, platform.name, pins):  # a tag that moves is other code
        commit = git_commit_of(gref, lock) if lock is not None else None
        inputs[f"git:{gref.where}"] = f"{gref.url} {gref.ref} commit={commit or 'unlocked'}"
    for name in recipe.pins_read(platform.name, platform.toolchain.pin):
        inputs[f"pin:{name}"] = pins.get(name, "")
    inputs["platform-profile"] = canonical_digest(platform_profile(platform))
    inputs["toolchain"] = identify(platform, pins)
    inputs.update(host_tool_inputs(recipe, platform, identify))
    strategy = recipe.strategy_for(platform.name)
    fields = template_fields(strategy_templates(strategy)) if isinstance(strategy, Build) \
        else []
    if "cmake_toolchain" in fields:
        inputs.update(cmake_toolchain_inputs(platform, shared_prefix, root, cache))
    if "meson_cross" in fields:  # the Meson machine file as the hash sees it (portable text)
        inputs["meson-machine-file"] = sha256_bytes(meson_file(platform, shared_prefix).encode())
    if configure.uses_tools(fields):  # the tools folder as the hash sees it (portable text)
        named = configure.roles_named(fields)
        made = configure.portable(platform, named, [t.name for t in host_tools_used(
            recipe, platform.name) if t.name in named])
        inputs["configure-tools"] = sha256_bytes(made.rendered().encode())
    return inputs


# re-stated by build_inputs without their guard parts
_GUARD_INPUTS = {"recipe-file", "platform-profile"}


def _plain(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return {"type": type(obj).__name__, **asdict(obj)}
    return obj


def build_inputs(recipe: Recipe, platform: Platform, recipe_in: Mapping[str, str],
                 unit_inputs: Mapping[str, str]) -> dict[str, str]:
    """The named digests of what can change one recipe's build in a unit, not its guards
    (``recipe_in``: the recipe's inputs; ``unit_inputs``: the unit's): what a build stamp
    records and ``build --guards-only`` compares (``prebake.bake.stamp``). The platform's
    ``link_test``, its contract and the recipe's ``Outputs``/``Snippet`` are left out: they
    may change between a failed run and ``--guards-only``."""
    out = {k: v for k, v in recipe_in.items() if k not in _GUARD_INPUTS}
    out.update({k: v for k, v in unit_inputs.items() if k.startswith("unit:")})
    profile = platform_profile(platform)
    profile.pop("contract", None)
    profile.pop("link_test", None)
    out["platform-build-profile"] = canonical_digest(profile)
    strategy = recipe.strategy_for(platform.name)
    out["strategy"] = canonical_digest(json.loads(json.dumps(_plain(strategy), default=str)))
    out["sources"] = canonical_digest(json.loads(json.dumps(
        [_plain(s) for s in recipe.sources], default=str)))
    out["license"] = recipe.outputs.license or ""
    # the stamp stays in the work tree: a source URL's token is not kept there (a token that
    # changes is not another build)
    return {k: redact_text(v) for k, v in out.items()}


def host_tool_inputs(recipe: Recipe, platform: Platform, identify: Identify
                     ) -> dict[str, str]:
    """Each host tool the platform's commands name, as it reported itself (``protoc 3.21.12:
    libprotoc 3.21.12``): another protoc is another build. Looked up with the caller's
    environment the toolchain identity uses."""
    tools = host_tools_used(recipe, platform.name)
    if not tools:
        return {}
    caller = getattr(identify, "caller_env", None)
    env = sanitized(caller, platform_env=platform.env, unset=platform.env_unset)
    return {f"host-tool:{t.name}": HOST_TOOLS.find(t, env).identity for t in tools}


def meson_file(platform: Platform, shared_prefix: bool) -> str:
    """The Meson machine file's portable text (and its wrappers): what the hash reads."""
    tools = platformtools.portable(platform, shared_prefix=shared_prefix)
    return mesonfile.render(tools).rendered()


def cmake_toolchain_inputs(platform: Platform, shared_prefix: bool, root: Path | None,
                           cache: dict[tuple[str, Path], str] | None = None) -> dict[str, str]:
    """The generated CMake toolchain file as the hash sees it: its portable text (this
    machine's paths as tokens, no launcher), and the workspace's own included file's bytes."""
    made = portable(platform, shared_prefix=shared_prefix)
    out = {"cmake-toolchain": sha256_bytes(made.rendered().encode())}
    extra = platform.toolchain.cmake_toolchain
    if extra and root is not None:
        out[f"file:{extra}"] = _memo(cache, "file", root / extra, file_sha256)
    return out
