"""The contract key ``producer``: what may have compiled a binary, and the judgement of one.

The key lists what every binary may be built by: ``toolchain``, the platform's verified
compiler (a ``ProducerPin``: its family's producers at its measured release, and the
producers its own runtime objects carry), and globs over ``tool release`` (``gcc 12.*``).
Files a recipe ships on purpose from another compiler (``Recipe.other_compilers``) are held
to that entry's globs instead (``Allowed``), and the report says so.

An object is judged by each producer it names: every one must be the toolchain's own or match
a glob. A linked image also carries what its runtime objects say (a clang-linked ELF library
holds GCC's ``.ident`` from ``crtbeginS.o``, docs/toolchains.md): those are accepted there,
and only there, and the image must still name the toolchain's own compiler (or a glob) —
otherwise nothing of its own code says the pinned compiler built it. A binary that names no
producer cannot be judged (the rule's unknown: fails closed unless ``allow_unknown`` or the
allowance says ``none``); an import library's members are the linker's stubs and hold no code.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prebake.inspect.facts import Facts

TOOLCHAIN = "toolchain"  # the contract word for the platform's verified compiler
NONE = "none"  # in an allowance: a file whose format carries no producer record
IMAGE_KINDS = ("shared-library", "executable", "module")
_WORD = re.compile(r"^\S+ \S+$")


@dataclass(frozen=True)
class Allowed:
    """One recipe's ``other_compilers`` entry as the check applies it to a file."""

    recipe: str
    producers: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class ProducerPin:
    """What ``toolchain`` means for one check: the compiler the platform's toolchain was
    verified to be (``toolchain``, for messages), the producers it writes (``own``: ``clang
    14.0.6``, and ``llvm 14.0.6`` for its bitcode), those its own runtime objects carry
    (``runtime``, with where each was read: ``runtime_from``), and the files exempt by a
    recipe's allowance (``allowed``: the path as the check names it)."""

    toolchain: str
    own: tuple[str, ...]
    runtime: tuple[str, ...] = ()
    runtime_from: tuple[str, ...] = ()
    allowed: Mapping[str, Allowed] = field(default_factory=dict)


@dataclass(frozen=True)
class Requirement:
    """What one file's binaries are held to: ``globs``, and ``pin`` when the contract says
    ``toolchain`` (``allowed``: the file is a recipe's other compiler's, globs are its)."""

    globs: tuple[str, ...]
    pin: ProducerPin | None = None
    allowed: Allowed | None = None

    def describe(self) -> str:
        if self.allowed is not None:
            return (f"{' or '.join(self.globs)} ({self.allowed.recipe}'s other_compilers: "
                    f"{self.allowed.why})")
        parts = []
        if self.pin is not None:
            parts.append(f"{self.pin.toolchain} (the platform's verified compiler"
                         + (f"; {', '.join(self.pin.runtime)} from its runtime in a linked "
                            "image" if self.pin.runtime else "") + ")")
        parts += self.globs
        return " or ".join(parts)


def entry_problem(entry: str) -> str | None:
    """Why a contract's ``producer`` entry is neither ``toolchain`` nor a ``TOOL RELEASE``
    glob, or None."""
    if entry == TOOLCHAIN or _WORD.match(entry):
        return None
    return (f"{entry!r} is neither {TOOLCHAIN!r} (the platform's verified compiler) nor a "
            "'TOOL RELEASE' glob such as 'gcc 12.*'")


def requirement(entries: Sequence[str], pin: ProducerPin | None, path: str
                ) -> Requirement | None:
    """The requirement for the file ``path`` (as the check names it), or None when the
    contract asks for the toolchain and no pin says what it is (undecided)."""
    if pin is not None and path in pin.allowed:
        allowed = pin.allowed[path]
        return Requirement(allowed.producers, None, allowed)
    globs = tuple(e for e in entries if e != TOOLCHAIN)
    if TOOLCHAIN in entries:
        return None if pin is None else Requirement(globs, pin)
    return Requirement(globs)


def has_code(leaf: Facts) -> bool:
    """Whether a compiler made the leaf: not an import library's linker-written stub."""
    return leaf.format is not None and leaf.kind != "import-library"


def same_release(a: str, b: str) -> bool:
    """``14.0.6`` and ``14.0.6``, ``12`` (MinGW's ``12-win32``) and ``12.2.0``: equal on the
    numbers both state (at least the major)."""
    ta = tuple(int(x) for x in re.findall(r"\d+", a))
    tb = tuple(int(x) for x in re.findall(r"\d+", b))
    n = min(len(ta), len(tb))
    return n > 0 and ta[:n] == tb[:n]


def _own(producer: str, pin: ProducerPin) -> bool:
    tool, _, release = producer.partition(" ")
    return any(tool == t and same_release(release, r)
               for t, _, r in (o.partition(" ") for o in pin.own))


def _glob(producer: str, globs: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(producer, g) for g in globs if g != NONE)


def judge(req: Requirement, leaf: Facts) -> tuple[str, list[str]] | None:
    """``(found, evidence)`` when the leaf breaks the requirement, else None (also when it
    names no producer: that is ``undecided``)."""
    found = leaf.abi.producer
    if not has_code(leaf) or not found:
        return None
    pin = req.pin
    image = leaf.kind in IMAGE_KINDS
    runtime = set(pin.runtime) if pin is not None and image else set()

    def accepted(p: str) -> bool:
        return _glob(p, req.globs) or (pin is not None and _own(p, pin))

    evidence = list(leaf.evidence.get("producer", []))
    bad = [p for p in found if not accepted(p) and p not in runtime]
    if bad:
        return ", ".join(bad), evidence
    if pin is not None and not any(accepted(p) for p in found):
        # an image whose every producer is its runtime's: none of its own code says so
        return (f"only its runtime's {', '.join(found)}",
                [f"no record names {pin.toolchain}", *evidence, *pin.runtime_from])
    return None


def undecided(req: Requirement, leaf: Facts) -> bool:
    """The leaf holds code but names no producer, and its requirement does not accept that."""
    return has_code(leaf) and leaf.abi.producer is None and NONE not in req.globs
