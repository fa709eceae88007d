"""The workspace as frozen data: what ``prebake.toml`` says once it has been validated.

Load → validate → select are separate steps: ``prebake.intake.loader`` turns the
TOML into these objects or raises one ``ConfigError`` listing every problem; nothing here reads
files or detects the host.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from prebake.contract import Contract
from prebake.errors import PrebakeError
from prebake.model.ci_defaults import ci_defaults
from prebake.model.recipe import Recipe
from prebake.names import did_you_mean

PackageMode = Literal["prefix", "per-recipe"]
PYTHON_TOKEN = "{python}"
TOOLCHAIN_PREFIX_TOKEN = "{toolchain_prefix}"
DEFAULT_STORE_URL = "file://./releases"


def expand_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """Replace the ``{python}`` token by this interpreter (zig ships as a PyPI package)."""
    return tuple(sys.executable if a == PYTHON_TOKEN else a for a in argv)


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    description: str = ""


@dataclass(frozen=True)
class Toolchain:
    """Compiler argv prefixes (``{python}`` already expanded) and what identifies them.

    ``spec`` keeps the TOML text as written (``{python}`` unexpanded): it goes into input hashes,
    the expanded paths do not (they differ between machines).
    ``pin`` names the pin whose release the compiler must report (e.g. ``emsdk``); either way
    what the compiler reports is its identity. ``from_stage`` names the stage that installs
    the compiler: ``{toolchain_prefix}`` in the argv is that stage's prefix, and the stage
    unit's input hash is the identity.
    """

    cc: tuple[str, ...]
    cxx: tuple[str, ...]
    ar: tuple[str, ...]
    pin: str | None = None
    cmake_toolchain: str | None = None
    spec: Mapping[str, str] = field(default_factory=dict)
    # a stage whose installed prefix holds the compiler (``{toolchain_prefix}`` in cc/cxx/ar)
    from_stage: str | None = None
    # ``ranlib`` as written (empty: the one beside ``ar``, prebake.toolchain.cmakefile)
    ranlib: tuple[str, ...] = ()
    # a Debian root prebake provisions (``prebake.toolchain.environment``) the compiler runs in
    environment: str | None = None
    # ``nm``, ``strip`` and ``windres`` as written (empty: the one beside ``ar`` where a rule
    # knows it, prebake.toolchain.cmakefile.beside_ar): what a configure script is given
    nm: tuple[str, ...] = ()
    strip: tuple[str, ...] = ()
    windres: tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkTest:
    """Consumer compile+link flags, and an optional runner for the linked program (e.g. node)."""

    flags: tuple[str, ...] = ()
    run: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Platform:
    name: str
    os: str
    arch: str
    toolchain: Toolchain
    contract: Contract
    link_test: LinkTest = field(default_factory=LinkTest)
    env_unset: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    runner: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Stage:
    name: str
    recipes: tuple[str, ...]
    after: tuple[str, ...] = ()
    package: PackageMode = "prefix"
    description: str = ""
    # aliases this stage must never be part of (``extra`` ships per recipe, never in ``full``)
    never_in: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoreConfig:
    name: str
    url: str
    default: bool = False
    description: str = ""


@dataclass(frozen=True)
class CiConfig:
    """``[ci]``: how ``prebake ci github`` sets up a runner and where its runs publish.

    ``install`` is the shell line that installs prebake on a runner (run in the workspace
    folder; ``""``: not stated, which only a workspace inside prebake's own repository may
    leave, ``prebake.ci.install`` says why); ``store`` names the ``[stores.NAME]`` the
    workflow publishes to (default: the first ``github://`` store, else the default store).
    """

    install: str = ""
    default_branch: str = field(default_factory=lambda: ci_defaults().default_branch)
    store: str | None = None
    python: str = field(default_factory=lambda: ci_defaults().python)
    timeout_minutes: int = field(default_factory=lambda: ci_defaults().timeout_minutes)


@dataclass(frozen=True)
class TrustSettings:
    """``[trust]``, read once by the loader: ``allowed_signers`` (absolute) makes every fetch
    in this workspace refuse assets without a valid signature from a key in that file."""

    allowed_signers: Path | None = None


@dataclass(frozen=True)
class Workspace:
    root: Path
    file: Path
    project: Project
    pins: Mapping[str, str]
    platforms: Mapping[str, Platform]
    stages: Mapping[str, Stage]
    aliases: Mapping[str, tuple[str, ...]]
    stores: Mapping[str, StoreConfig]
    default_store: str
    recipes: Mapping[str, Recipe]
    ci: CiConfig = field(default_factory=CiConfig)
    trust: TrustSettings = field(default_factory=TrustSettings)
    # [sources.provided]: the archive that provides an upstream source URL here
    provided: Mapping[str, str] = field(default_factory=dict)
    # [mirrors]: URL prefix -> the mirrors tried for what is under it, in order ("origin": the
    # URL itself); no part of an input hash (the lock pins the bytes)
    mirrors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def stage_names(self, selector: str | None = None) -> tuple[str, ...]:
        """Stages named by ``selector`` (a stage or an alias), in build order; all if ``None``."""
        order = self.stage_order()
        if selector is None:
            return order
        if selector in self.stages:
            return (selector,)
        if selector in self.aliases:
            wanted = set(self.aliases[selector])
            return tuple(s for s in order if s in wanted)
        known = [*self.stages, *self.aliases]
        raise PrebakeError(f"unknown stage or alias {selector!r}{did_you_mean(selector, known)}"
                           f" (known: {', '.join(known)})")

    def platform_names(self, selector: str | None = None) -> tuple[str, ...]:
        if selector is None:
            return tuple(self.platforms)
        if selector not in self.platforms:
            raise PrebakeError(f"unknown platform {selector!r}"
                               f"{did_you_mean(selector, self.platforms)}"
                               f" (known: {', '.join(self.platforms)})")
        return (selector,)

    def stage_order(self) -> tuple[str, ...]:
        """Stages with every ``after`` before its dependents; declaration order breaks ties."""
        done: list[str] = []
        pending = list(self.stages)
        while pending:
            for name in pending:
                if all(a in done for a in self.stages[name].after):
                    done.append(name)
                    pending.remove(name)
                    break
            else:  # validation refuses cycles; this only guards hand-built objects
                raise PrebakeError(f"cycle in stages' after: {', '.join(pending)}")
        return tuple(done)

    def upstream_stages(self, stage: str) -> tuple[str, ...]:
        """Every stage ``stage`` comes after, directly or not, in build order."""
        seen: set[str] = set()
        todo = list(self.stages[stage].after)
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo.extend(self.stages[s].after)
        return tuple(s for s in self.stage_order() if s in seen)

    def stage_of(self, recipe: str) -> str | None:
        for stage in self.stages.values():
            if recipe in stage.recipes:
                return stage.name
        return None
