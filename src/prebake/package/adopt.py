"""What prebake does with a recipe's own install before adding its files: prove the version the
install states (``version_proof``) and keep the install's CMake packages, adding the asset's
``<name>::<name>`` beside them (``upstream_cmake``). One call per recipe, from the build."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.elf import version_nodes
from prebake.model.recipe import Recipe
from prebake.package import upstream_cmake, version_proof
from prebake.package.libs import Library


class AdoptFailed(Exception):
    """The install contradicts the pin, or its CMake packages do not fit the recipe."""


@dataclass
class Adopted:
    proof: version_proof.Proof
    generate_cmake: bool  # False: the install's own CMake package serves the asset's name
    changed: list[str] = field(default_factory=list)


def _shared_facts(prefix: Path, libs: Sequence[Library]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for lib in libs:
        if lib.kind != "shared":
            continue
        try:
            facts = inspect(prefix / lib.path, ParseOptions(symbols=False))
        except PrebakeError:
            continue  # the guards already failed the unit on an unreadable library
        out[lib.path] = {"soname": facts.soname, "details": dict(facts.details),
                         "version_nodes": version_nodes(prefix / lib.path), "stem": lib.stem}
    return out


def adopt_install(recipe: Recipe, version: str, arch: str | None, prefix: Path,
                  installed: Iterable[str], libs: Sequence[Library]) -> Adopted:
    """``installed``: the files this recipe's build added to ``prefix`` (relative paths)."""
    files = sorted(installed)
    proof = version_proof.prove(recipe, version, prefix, files, _shared_facts(prefix, libs),
                                {lib.path: lib.stem for lib in libs})
    if not proof.ok:
        raise AdoptFailed(proof.failure(recipe.name))
    packages = upstream_cmake.find_packages(prefix, files)
    try:
        plan = upstream_cmake.plan(recipe.name, version, arch, packages,
                                   recipe.outputs.cmake_targets)
    except upstream_cmake.UpstreamCMakeError as exc:
        raise AdoptFailed(str(exc)) from None
    changed = upstream_cmake.apply(prefix, plan)
    return Adopted(proof, plan.generate_own, changed)
