"""The build guard's whole-archive step: every member of the unit's libraries must link.

The proof itself lives in ``prebake.link.whole``; this step feeds it the recipe's libraries
(relative names for messages), the dependencies' libraries and the recipe's
``link_test.allow_undefined``, logs the commands, and turns a failure into one message naming
each member and symbol.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.bake.result import GuardReport
    from prebake.recipes.model import Recipe
    from prebake.workspace.model import Platform


def whole_archive_guard(recipe: Recipe, platform: Platform, prefix: Path, paths: Sequence[Path],
                        dep_libs: Sequence[Path], workdir: Path, log: Any,
                        out: GuardReport) -> str | None:
    """Run the proof; record what it linked and allowed in ``out``; the failure text, if any."""
    from prebake.link.whole import prove_whole_archive

    allow = recipe.link_test.allow_undefined if recipe.link_test else ()
    libs = [(p, p.relative_to(prefix).as_posix() if p.is_relative_to(prefix) else p.name)
            for p in paths]
    log.write(f"# whole-archive proof for {recipe.name}: every member of "
              f"{', '.join(s for _p, s in libs)} links with the {platform.name} consumer flags"
              + (f"; the consumer provides {', '.join(allow)}" if allow else ""))
    proof = prove_whole_archive(libs, platform, workdir / "whole-archive" / recipe.name,
                                deps=dep_libs, allow_undefined=allow)
    for cmd in proof.commands:
        log.write("$ " + " ".join(cmd))
    log.write(proof.output or "")
    for pattern, names in proof.allowed.items():
        log.write(f"# allow_undefined {pattern}: " + (", ".join(names) or "matched nothing"))
    if not proof.ok:
        return (f"{recipe.name}: whole-archive link failed for {platform.name} (every member "
                "must link; list what the consumer provides in link_test.allow_undefined):\n"
                + "\n".join(proof.failures()))
    out.linked.extend(f"whole archive {s}" for _p, s in libs)
    out.allowed.update(proof.allowed)
    return None
