"""The verified toolchain as the ``producer`` rule holds binaries to it: a ``ProducerPin``.

From a platform's ``Verdict`` (what its compiler reported, ``prebake.toolchain.verify``) and
its family's row (``Family.producers``: what that compiler writes into its objects, at which
measured release), plus the producers of its own runtime: each of ``Family.runtime_objects``
found by the compiler itself (``cc -print-file-name=crtbeginS.o``) and read by the inspector,
so that what a linked image may carry beyond its own code is measured on this machine, never
assumed (docs/toolchains.md, "Who compiled it").
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from prebake.contract.producer_rule import Allowed, ProducerPin
from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.model.families import BY_NAME, Family
from prebake.toolchain.verify import Verdict

PRINT_TIMEOUT = 30
_APPLE_BUILD = re.compile(r"\(clang-(\d+(?:\.\d+)*)\)")


def own_producers(family: Family, verdict: Verdict) -> tuple[str, ...]:
    """``tool release`` of each producer the family's compiler writes, at the releases the
    verdict measured (one it could not measure is left out)."""
    out = []
    for tool, source in family.producers:
        release = (verdict.cc.version if source == "version" else verdict.cc.llvm
                   if source == "llvm" else _apple_build(verdict.cc.version_line))
        if release:
            out.append(f"{tool} {release}")
    return tuple(out)


def _apple_build(line: str) -> str | None:
    m = _APPLE_BUILD.search(line)
    return m.group(1) if m else None


def pin_for(verdict: Verdict, env: Mapping[str, str],
            allowed: Mapping[str, Allowed] | None = None) -> ProducerPin | None:
    """The pin of a verified toolchain (None: its family is unknown or its compiler reported
    no release, so nothing says what its objects must name)."""
    family = BY_NAME.get(verdict.family or "")
    if family is None or not verdict.cc.found:
        return None
    own = own_producers(family, verdict)
    if not own:
        return None
    runtime, runtime_from = runtime_producers(verdict.cc.argv, family.runtime_objects,
                                              tuple(sorted(env.items())))
    label = f"{family.name} {verdict.cc.version}"
    if own[0].split()[0] != family.name:  # zig 0.17.1 (clang 22.1.8): what its objects say
        label += f" ({own[0]})"
    return ProducerPin(label, own, tuple(p for p in runtime if p not in own), runtime_from,
                       dict(allowed or {}))


@functools.cache
def runtime_producers(argv: tuple[str, ...], names: tuple[str, ...],
                      env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, ...],
                                                                 tuple[str, ...]]:
    """The producers each runtime object the compiler finds for ``names`` carries, and where
    each was read (``crtbeginS.o: .comment 'GCC: (Debian 12.2.0-14+deb12u1) 12.2.0'``). A name the
    driver does not find (it prints the bare name back) adds nothing."""
    found: dict[str, None] = {}
    where: list[str] = []
    for name in names:
        try:
            proc = subprocess.run([*argv, f"-print-file-name={name}"], capture_output=True,
                                  text=True, errors="replace", timeout=PRINT_TIMEOUT,
                                  env=dict(env), stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        path = Path(proc.stdout.strip())
        if proc.returncode != 0 or not path.is_absolute() or not path.is_file():
            continue
        try:
            facts = inspect(path, ParseOptions(symbols=False))
        except PrebakeError:
            continue
        for p in facts.abi.producer or ():
            found.setdefault(p)
        texts = [e for e in facts.evidence.get("producer", []) if e.startswith(".")]
        where.append(f"{name}: {'; '.join(texts) or 'no producer record'}")
    return tuple(found), tuple(where)
