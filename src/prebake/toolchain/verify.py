"""Verification: a pinned toolchain is the one that builds, or the unit is refused.

For every platform, the compiler (resolved as the build runs it) is asked what it is; a pin the
compiler contradicts, a compiler that is missing, or a recipe's minimum the compiler does not
reach refuses the units before any command runs (exit 2, one line each). There is no switch
that turns a refusal into a warning: a label nobody checked is what this module exists to stop.
"""

from __future__ import annotations

import enum
import shlex
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from prebake.errors import PrebakeError
from prebake.recipes.api import Build, Recipe
from prebake.toolchain import environment as envs
from prebake.toolchain.families import BY_NAME, Family, at_least, family_of_argv, pin_matches
from prebake.toolchain.platformtools import host
from prebake.toolchain.probe import PROBER, Measured, Prober, resolve_argv
from prebake.variables import sanitized
from prebake.workspace.model import TOOLCHAIN_PREFIX_TOKEN, Platform, Toolchain


class Status(enum.Enum):
    OK = "ok"
    MISMATCH = "mismatch"
    MISSING = "missing"
    UNPINNED = "unpinned"


class ToolchainRefused(PrebakeError):
    """A unit's toolchain contradicts its pin, is missing, or is older than a recipe needs."""


@dataclass(frozen=True)
class Verdict:
    """One platform's toolchain: what the workspace pins and what the compiler reported."""

    platform: str
    family: str | None
    pin: str | None
    pinned: str | None
    cc: Measured
    cxx: Measured
    ar: tuple[str, ...]
    status: Status
    reason: str = ""
    # the toolchain environment's measured identity (its packages' versions), when it has one
    environment: str = ""

    @property
    def version(self) -> str | None:
        return self.cc.version

    @property
    def identity(self) -> str:
        """The measured identity that enters input hashes (both drivers when they differ)."""
        out = (self.cc.identity if self.cc.identity == self.cxx.identity
               else f"cc = {self.cc.identity}; cxx = {self.cxx.identity}")
        return f"{out}; environment = {self.environment}" if self.environment else out

    def to_json(self) -> dict[str, object]:
        return {
            "platform": self.platform, "family": self.family, "pin": self.pin,
            "pinned": self.pinned, "status": self.status.value, "reason": self.reason,
            "command": list(self.cc.argv), "resolved": self.cc.command,
            "version": self.cc.version, "version_line": self.cc.version_line,
            "target": self.cc.target, "llvm": self.cc.llvm,
            "cxx": {"command": list(self.cxx.argv), "resolved": self.cxx.command,
                    "version": self.cxx.version, "version_line": self.cxx.version_line},
        }

    def record(self) -> dict[str, object]:
        """What a manifest records: the verified identity (no machine paths)."""
        out: dict[str, object] = {
            "family": self.family, "version": self.cc.version,
            "version_line": self.cc.version_line, "target": self.cc.target,
            "llvm": self.cc.llvm, "status": self.status.value, "identity": self.identity}
        if self.environment:
            out["environment"] = self.environment
        return out


def platform_family(tc: Toolchain) -> Family | None:
    return family_of_argv(tc.cc)


def verify_platform(platform: Platform, pins: Mapping[str, str],
                    prober: Prober | None = None,
                    caller_env: Mapping[str, str] | None = None) -> Verdict:
    prober = prober or PROBER
    tc = platform.toolchain
    if tc.from_stage and any(TOOLCHAIN_PREFIX_TOKEN in a for a in (*tc.cc, *tc.cxx)):
        # the compiler does not exist before its stage ran: asked when a unit uses it
        none = Measured(tuple(tc.cc), None, None, None, "", "",
                        error=f"installed by stage {tc.from_stage}")
        return Verdict(platform.name, None, None, None, none,
                       replace(none, argv=tuple(tc.cxx)), tuple(tc.ar), Status.UNPINNED,
                       f"platform {platform.name}: its compiler is what stage "
                       f"{tc.from_stage} installs ({{toolchain_prefix}}); identified by that "
                       "stage's input hash")
    env = sanitized(caller_env, platform_env=platform.env, unset=platform.env_unset)
    fam = platform_family(tc)
    pinned = pins.get(tc.pin) if tc.pin else None
    elsewhere = foreign_host(fam)
    if elsewhere is not None:
        none = Measured(tuple(tc.cc), None, fam.name if fam else None, None, "", "",
                        error=elsewhere)
        return Verdict(platform.name, none.family, tc.pin, pinned, none,
                       replace(none, argv=tuple(tc.cxx)), tuple(tc.ar), Status.MISSING,
                       f"platform {platform.name}: {elsewhere}")
    cc_argv = resolve_argv(tc.cc, fam, pinned, tc.environment)
    cxx_argv = resolve_argv(tc.cxx, fam, pinned, tc.environment)
    ar = resolve_argv(tc.ar, fam, pinned, tc.environment)
    family = fam.name if fam else None
    if tc.environment:
        if not envs.environment_named(tc.environment).installed():
            none = Measured(tuple(tc.cc), None, None, None, "", "", error="not installed")
            return Verdict(platform.name, family, tc.pin, pinned, none,
                           replace(none, argv=tuple(tc.cxx)), ar, Status.MISSING,
                           f"platform {platform.name}: "
                           + envs.not_installed(tc.environment, platform.name))
        env_identity = envs.identity(tc.environment)
    else:
        env_identity = ""
    cc = prober.measure(cc_argv, env, fam)
    cxx = prober.measure(cxx_argv, env, fam)
    family = cc.family or family
    for m, what in ((cc, "cc"), (cxx, "cxx")):
        if not m.found:
            return Verdict(platform.name, family, tc.pin, pinned, cc, cxx, ar, Status.MISSING,
                           f"platform {platform.name}: toolchain {what} "
                           f"{' '.join(tc.spec.get(what, ' '.join(m.argv)).split()[:1])}: "
                           f"{m.error}")
    if tc.pin is None:
        return Verdict(platform.name, family, None, None, cc, cxx, ar, Status.UNPINNED,
                       environment=env_identity)
    for m, what in ((cc, "cc"), (cxx, "cxx")):
        if pinned is None or m.version is None or not pin_matches(pinned, m.version):
            return Verdict(platform.name, family, tc.pin, pinned, cc, cxx, ar, Status.MISMATCH,
                           f"platform {platform.name}: pin {tc.pin} = {pinned!r} but its {what} "
                           f"({m.argv[0]}) reports {m.version_line!r}",
                           environment=env_identity)
    return Verdict(platform.name, family, tc.pin, pinned, cc, cxx, ar, Status.OK,
                   environment=env_identity)


def foreign_host(fam: Family | None) -> str | None:
    """Why the family cannot run on this build machine (AppleClang off macOS), else None."""
    if fam is None or fam.host_os is None:
        return None

    here = host()[0]
    if here == fam.host_os:
        return None
    return (f"{fam.title} runs only on {fam.host_os} with {fam.requires or 'its SDK'}; this "
            f"machine is {here or 'another system'} (no {fam.requires or 'SDK'}, no "
            f"{fam.commands[0]}): the generated CI builds this leg on its {fam.host_os} runner")


def verify_platforms(platforms: Iterable[Platform], pins: Mapping[str, str],
                     prober: Prober | None = None,
                     caller_env: Mapping[str, str] | None = None) -> dict[str, Verdict]:
    """Every platform's verdict; compilers are asked in parallel (each takes ~50 ms)."""
    prober = prober or PROBER
    todo = list(platforms)
    jobs = []
    for p in todo:  # every distinct command at once; the verdicts then read the cache
        fam = platform_family(p.toolchain)
        pinned = pins.get(p.toolchain.pin) if p.toolchain.pin else None
        env = sanitized(caller_env, platform_env=p.env, unset=p.env_unset)
        for argv in (p.toolchain.cc, p.toolchain.cxx):
            jobs.append((resolve_argv(argv, fam, pinned, p.toolchain.environment), env, fam))
    if len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=min(8, len(jobs))) as pool:
            list(pool.map(lambda j: prober.measure(*j), jobs))
    return {p.name: verify_platform(p, pins, prober, caller_env) for p in todo}


def below_minimum(recipe: Recipe, verdict: Verdict) -> str | None:
    """Why the recipe cannot be built with this toolchain (its declared minimum, or the one
    family its leg builds with), or None."""
    strat = recipe.strategy_for(verdict.platform)
    if isinstance(strat, Build) and strat.toolchain_family and \
            strat.toolchain_family != verdict.family:
        fam = BY_NAME.get(strat.toolchain_family)
        title = fam.title if fam else strat.toolchain_family
        line = verdict.cc.version_line or verdict.reason or "nothing found"
        return (f"{recipe.name}/{verdict.platform}: builds only with {title}"
                f"{f' ({strat.toolchain_reason})' if strat.toolchain_reason else ''}; the "
                f"platform's compiler is {verdict.family or 'unknown'} ({line})")
    for need in recipe.toolchain_min:
        if need.family != verdict.family:
            continue
        have = verdict.cc.version
        if have is None or not at_least(have, need.version):
            fam = BY_NAME.get(need.family)
            title = fam.title if fam else need.family
            return (f"{recipe.name}/{verdict.platform}: needs {title} {need.version} or newer "
                    f"({need.reason}); the platform's compiler reports "
                    f"{verdict.cc.version_line!r}")
    return None


@dataclass(frozen=True)
class Refusal:
    """Units the build must not run, and the one line that says why."""

    units: tuple[str, ...]
    line: str


def refusals(units: Sequence[tuple[str, Sequence[Recipe], Platform]], verdicts:
             Mapping[str, Verdict]) -> list[Refusal]:
    """What the build must refuse, one line per platform (its units named) and one per unit
    below a recipe's minimum: ``units`` are (unit id, its recipes, its platform)."""
    out: list[Refusal] = []
    by_platform: dict[str, list[str]] = {}
    for uid, recipes, platform in units:
        v = verdicts[platform.name]
        if v.status in (Status.MISMATCH, Status.MISSING):
            by_platform.setdefault(platform.name, []).append(uid)
            continue
        for recipe in recipes:
            why = below_minimum(recipe, v)
            if why:
                out.append(Refusal((uid,), why))
    platform_lines = [Refusal(tuple(uids), f"{verdicts[name].reason} (refusing "
                                           f"{', '.join(uids)})")
                      for name, uids in by_platform.items()]
    return platform_lines + out


def resolved_toolchain(tc: Toolchain, v: Verdict) -> Toolchain:
    """The toolchain with the commands the verdict measured (what the build must run)."""
    return replace(tc, cc=v.cc.argv, cxx=v.cxx.argv, ar=v.ar)


def with_toolchain_prefix(platform: Platform, prefix: str) -> Platform:
    """``{toolchain_prefix}`` in cc/cxx/ar replaced by the folder holding the stage's files
    (a unit's prefix holds every earlier stage's files; the stage's own units, its own)."""
    tc = platform.toolchain
    if tc.from_stage is None:
        return platform

    def fill(argv: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(a.replace(TOOLCHAIN_PREFIX_TOKEN, prefix) for a in argv)

    return replace(platform, toolchain=replace(tc, cc=fill(tc.cc), cxx=fill(tc.cxx),
                                               ar=fill(tc.ar)))


def record(platform: Platform, pins: Mapping[str, str],
           caller_env: Mapping[str, str] | None = None) -> dict[str, object]:
    """The manifest's ``toolchain``: the spec as written, the pin, and what was verified."""
    tc = platform.toolchain
    v = verify_platform(platform, pins, caller_env=caller_env)
    spec = dict(tc.spec)
    return {
        "cc": shlex.split(spec.get("cc", shlex.join(tc.cc))),
        "cxx": shlex.split(spec.get("cxx", shlex.join(tc.cxx))),
        "ar": shlex.split(spec.get("ar", shlex.join(tc.ar))),
        "pin": tc.pin,
        "pin_version": pins.get(tc.pin) if tc.pin else None,
        "version": v.cxx.version_line or None,
        "verified": v.record(),
    }
