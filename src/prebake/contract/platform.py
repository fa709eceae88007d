"""A platform's contract: the ``[platforms.NAME.contract]`` table (or the preset it extends),
held to the os and arch the platform itself names, with those two filled in where it names
neither. The workspace loader only hands the table over; what a contract means stays here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from prebake.contract.terms import Contract, os_problems, parse_contract
from prebake.errors import Problem


def platform_contract(raw: Mapping[str, Any], platform: str, os: str | None, arch: str | None,
                      where: str) -> tuple[Contract, list[Problem]]:
    """The contract binaries for ``platform`` are held to, and every problem with it (keys
    under ``where``). A preset for another os or arch is one problem, named at ``extends``."""
    contract, problems = parse_contract(raw, where)
    named = {"os": os, "arch": arch}
    for key in ("os", "arch"):
        value, own = getattr(contract, key), named[key]
        if value is not None and own is not None and value != own:
            source = (f"preset {raw['extends']!r}" if key not in raw and "extends" in raw
                      else "the contract")
            problems.append(Problem(f"{where}.{key if key in raw else 'extends'}",
                                    f"{source} is for {key} {value!r}; platform {platform!r} "
                                    f"has {key} {own!r}"))
            break  # a preset for another os is for another arch too: one line says it
    else:
        if os is not None:
            for p in os_problems(contract, os, platform, where):
                key = p.key.rsplit(".", 1)[1]
                problems.append(Problem(p.key if key in raw or "extends" not in raw
                                        else f"{where}.extends", p.message))
    if os is None or arch is None:
        return contract, problems
    # a binary for this platform has its os and arch, whatever else the contract says; such an
    # implied rule cannot fail closed where the format records no os (a wasm object says
    # neither emscripten nor wasi), so it is listed in allow_unknown — visibly, in every
    # report and manifest; writing the key in the contract makes it strict
    implied = tuple(k for k in ("arch", "os") if getattr(contract, k) is None
                    and k not in contract.allow_unknown)
    contract = replace(contract, arch=arch if contract.arch is None else contract.arch,
                       os=os if contract.os is None else contract.os)
    if implied:
        contract = replace(contract, allow_unknown=(*contract.allow_unknown, *implied))
    return contract, problems
