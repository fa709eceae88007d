"""An unpacked source tree kept from the earlier build, when it is proven to be what unpacking
the same archive again would write.

A warm rebuild unpacked every source again: onnxruntime's 38 MB ``.orig.tar.xz`` (113 MB
written) and 16 dependency archives, 3–5 s of a ~105 s unit (``docs/flagship.md``), and a tree
unpacked again is new to zig's cache, which trusts its files' stats. The earlier build's work
folder is still there (moved aside, deleted once the new sources are in), and a tree in it
stands in for a fresh unpack when:

- the record beside it (``.sources/<dest>.json`` in the work folder) names the same inputs:
  the archive's sha256, the paths stripped, taken and left out, every patch's bytes and the
  rules of this module and of the extractor (``key``). This is a fast path only: a record in
  the work folder is something a recipe command can rewrite, so it can send a tree to a fresh
  unpack, never keep one;
- the tree is proven against the archive (``prebake.sources.treeproof.prove``): the verified
  archive read again and every entry compared, byte for byte, with the patches applied on the
  side. A tree that fails is unpacked again, and the log names the first path that differs.

A recipe's commands may rewrite a file of the tree (onnxruntime's FetchContent step rewrites
``cmake/deps.txt`` to name the local archives), which would send every rebuild to a fresh
unpack. Such a file is learned: when a tree is unpacked again because a few small files
differed (``treeproof.MAX_LEARNED``), the record names them; next time, those that differ are
put back from the archive's own bytes read by the proof (``treeproof.put_back``: never through
a link), and the tree is kept. A record naming other files can only make the proof put back
more of the archive's bytes.

A recipe's commands may also add to its source tree (onnxruntime's ``emsdk`` stand-in writes
``cmake/external/emsdk``; Python writes ``__pycache__``): paths the unpack does not write are
removed once the proof passed, so the tree is then exactly the fresh unpack. The put-back's
own files carry a name no archive member may have (``treeproof.OWN_NAMES``, refused at the
unpack).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import prebake
from prebake.bounded import read_bounded
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_bytes
from prebake.sources import treeproof
from prebake.sources.treeproof import Origin, Proof

# Bumped whenever what an unpack writes changes (the extractor's modes, times, links) or what
# the record holds: a tree kept from before such a change would not be what a fresh unpack
# writes now.
RULES = 2
RECORDS = ".sources"
_MAX_RECORD = 1 << 20


def key(sha256: str, strip: int, members: Sequence[str], skip: Sequence[str],
        patches: Sequence[bytes]) -> str:
    """What made a tree, as one digest: the same key, the same tree from a fresh unpack."""
    parts = {"rules": RULES, "prebake": prebake.__version__, "archive": sha256, "strip": strip,
             "members": list(members), "skip": list(skip),
             "patches": [hashlib.sha256(p).hexdigest() for p in patches]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _record_path(work: Path, dest: str) -> Path:
    return work / RECORDS / (dest.replace("/", "--") + ".json")


def record(work: Path, dest: str, tree_key: str, learned: Sequence[str] = ()) -> None:
    """Note what made ``work/dest`` (just unpacked and patched), and the files the last
    build's commands rewrote (``learned``, put back next time)."""
    path = _record_path(work, dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps({"key": tree_key, "learned": sorted(learned)},
                                        separators=(",", ":")).encode())


def _load(path: Path) -> tuple[str, tuple[str, ...]] | None:
    try:
        data = json.loads(read_bounded(path, _MAX_RECORD, "source tree record"))
        learned, made = data.get("learned", []), data["key"]
        if not isinstance(learned, list) or not isinstance(made, str):
            return None
        return made, tuple(str(p) for p in learned[:treeproof.MAX_LEARNED])
    except (OSError, PrebakeError, ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass(frozen=True)
class Verdict:
    """Whether a kept tree stands in for a fresh unpack, and why (one line for the log); when
    not, the files that differed (for :func:`record` to learn)."""

    kept: bool
    why: str
    rewritten: tuple[str, ...] = ()


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def keep(earlier: Path, work: Path, dest: str, tree_key: str, origin: Origin,
         log: Callable[[str], None]) -> Verdict:
    """Move the earlier build's ``dest`` tree (``earlier/dest``) to ``work/dest`` when it is
    proven to be what a fresh unpack of ``origin`` writes, with what a command added removed
    and the learned files put back."""
    old = earlier / dest
    if not old.is_dir() or old.is_symlink():
        return Verdict(False, "no earlier tree")
    record_at = _record_path(earlier, dest)
    loaded = _load(record_at)
    if loaded is None or loaded[0] != tree_key:
        why = ("no readable record of the earlier tree" if loaded is None
               else "the earlier tree was made from other inputs")
        log(f"{dest}: unpacked again: {why}")
        return Verdict(False, why)
    learned = loaded[1]
    try:
        proof = treeproof.prove(old, origin, learned)
    except (OSError, PrebakeError) as exc:
        why = f"cannot prove it against {origin.archive.name}: {exc}"
        log(f"{dest}: unpacked again: {why}")
        return Verdict(False, why)
    if not proof.same:
        log(f"{dest}: unpacked again: {proof.why} (proof {proof.seconds:.2f} s)")
        return Verdict(False, proof.why, proof.differing)
    try:
        for rel in proof.added:
            treeproof.remove(old, rel)
        for rel, exp in sorted(proof.put_back.items()):
            treeproof.put_back(old, rel, exp)
    except OSError as exc:
        why = (f"cannot put the tree back as unpacked ({exc.filename or ''}: "
               f"{exc.strerror or exc})")
        log(f"{dest}: unpacked again: {why}")
        return Verdict(False, why, proof.differing)
    target = work / dest
    target.parent.mkdir(parents=True, exist_ok=True)
    old.rename(target)
    record(work, dest, tree_key, learned)
    log(f"{dest}: kept from the earlier build: {_kept_line(proof)}")
    return Verdict(True, _kept_line(proof))


def _kept_line(proof: Proof) -> str:
    why = (f"proven against its archive in {proof.seconds:.2f} s ({proof.entries} entries, "
           f"{_megabytes(proof.compared)} compared)")
    if proof.put_back:
        why += f"; put back from the archive: {', '.join(sorted(proof.put_back))}"
    if proof.added:
        why += f"; removed what the build added: {', '.join(proof.added[:3])}"
        why += f", … ({len(proof.added)} paths)" if len(proof.added) > 3 else ""
    return why
