"""Does an asset's toolchain suit the consumer's? Rules as data, applied at fetch and check.

The asset's manifest records the toolchain its build verified (``toolchain.verified``); the
consumer's platform compiler is asked the same way (``prebake.toolchain.verify``). Each rule
below names what it compares and what it does on a difference: ``refuse`` fails the fetch or the
check (nothing installed), ``report`` adds a note. Only a link proves a static archive usable
(``fetch --link-test``); these rules catch what is known to break before anything links.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prebake.model.families import release_tuple

Level = Literal["refuse", "report"]


@dataclass(frozen=True)
class CompatRule:
    """``compare``: which release (``llvm``: the LLVM that wrote/reads bitcode; ``version``: the
    family's own release); ``depth``: how many leading numbers count; ``when``:
    ``producer-newer`` (the asset's is newer than the consumer's) or ``differs``;
    ``families``: the families it applies to (empty: all); ``needs_bitcode``: only for an
    asset whose facts show LLVM bitcode."""

    name: str
    compare: Literal["llvm", "version"]
    when: Literal["producer-newer", "differs"]
    level: Level
    why: str
    depth: int = 3
    families: tuple[str, ...] = ()
    needs_bitcode: bool = False


RULES: tuple[CompatRule, ...] = (
    CompatRule(
        name="bitcode-producer", compare="llvm", when="producer-newer", level="refuse",
        needs_bitcode=True, depth=1,
        why="LLVM cannot read bitcode from a newer LLVM (an LLVM 19 archive cannot even be "
            "indexed by LLVM 14's llvm-ar: 'Opaque pointers are only supported in "
            "-opaque-pointers mode')",
    ),
    CompatRule(
        name="emscripten-drift", compare="version", when="differs", level="report", depth=2,
        families=("emscripten",),
        why="Emscripten gives no ABI guarantee between releases; relink and test",
    ),
)


@dataclass(frozen=True)
class Finding:
    rule: str
    level: Level
    message: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "level": self.level, "message": self.message}


def has_bitcode(manifest: Mapping[str, Any]) -> bool:
    """The asset's facts (read from its bytes at build time) show LLVM bitcode."""
    for fact in manifest.get("facts") or ():
        if not isinstance(fact, Mapping):
            continue
        abi = fact.get("abi")
        lto = abi.get("lto") if isinstance(abi, Mapping) else None
        if fact.get("format") == "llvm-bitcode" or lto in ("llvm-bitcode", "mixed"):
            return True
    return False


def compare(manifest: Mapping[str, Any], consumer: Mapping[str, Any],
            rules: Sequence[CompatRule] = RULES) -> list[Finding]:
    """Findings for an asset (its manifest) against the consumer's verified toolchain record
    (``Verdict.record()``). A side that does not say what a rule compares is reported, not
    guessed: the rule cannot decide."""
    tc = manifest.get("toolchain")
    verified = tc.get("verified") if isinstance(tc, Mapping) else None
    asset: Mapping[str, Any] | None = verified if isinstance(verified, Mapping) else None
    out: list[Finding] = []
    bitcode = has_bitcode(manifest)
    for rule in rules:
        if rule.needs_bitcode and not bitcode:
            continue
        fam = asset.get("family") if asset else None
        if rule.families and fam not in rule.families and consumer.get("family") \
                not in rule.families:
            continue
        theirs = asset.get(rule.compare) if asset else None
        ours = consumer.get(rule.compare)
        if not theirs or not ours:
            what = "the asset's manifest" if not theirs else "the consumer's compiler"
            out.append(Finding(rule.name, "report" if rule.level == "report" else "refuse",
                               f"{rule.name}: {what} does not say its {rule.compare} release; "
                               f"cannot decide ({rule.why})"))
            continue
        a, c = release_tuple(str(theirs))[:rule.depth], release_tuple(str(ours))[:rule.depth]
        hit = a > c if rule.when == "producer-newer" else a != c
        if hit:
            what = "LLVM" if rule.compare == "llvm" else (fam or "toolchain")
            out.append(Finding(rule.name, rule.level,
                               f"{rule.name}: built with {what} {theirs}, this consumer's "
                               f"compiler has {ours} ({rule.why})"))
    return out
