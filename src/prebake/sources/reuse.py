"""An unpacked source tree kept from the earlier build, when it provably is what unpacking the
same archive again would write.

A warm rebuild unpacked every source again: onnxruntime's 38 MB ``.orig.tar.xz`` (113 MB
written) and 16 dependency archives, 3–5 s of a ~105 s unit (``docs/flagship.md``). The earlier
build's work folder is still there (moved aside, deleted once the new sources are in), and a
tree in it can stand in for a fresh unpack when two things hold:

- it was made from the same thing: the record beside it names the archive's sha256 (verified
  when it was unpacked), the paths stripped, taken and left out, every patch's bytes and the
  rules of this module and of the extractor (``key``);
- nothing changed in it since: right after the unpack (and its patches) every entry's identity
  is recorded — kind, permission bits, size, device and inode, the modification time and the
  *change* time (``st_ctime_ns``), which no process can set: writing a file's bytes, changing
  its mode or times, replacing or renaming it sets it to the clock's now. The tree is walked
  again before reuse; any recorded entry missing or with another identity, and the tree is
  unpacked afresh.

A recipe's commands may add to its source tree (onnxruntime's ``emsdk`` stand-in writes
``cmake/external/emsdk``; Python writes ``__pycache__``): paths the record does not hold are
removed before reuse, after every recorded one was found unchanged, so the tree is then exactly
the recorded one. The record lives in the work folder beside the trees (``.sources/``), which
only the unit's own build writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import prebake
from prebake.bounded import read_bounded
from prebake.errors import PrebakeError

# Bumped whenever what an unpack writes changes (the extractor's modes, times, links): a tree
# kept from before such a change would not be what a fresh unpack writes now.
RULES = 1
RECORDS = ".sources"
_MAX_RECORD = 256 << 20  # a record of the 100 000 entries the extractor allows is ~10 MB

Identity = tuple[str, int, int, int, int, int, int, str]


def key(sha256: str, strip: int, members: Sequence[str], skip: Sequence[str],
        patches: Sequence[bytes]) -> str:
    """What made a tree, as one digest: the same key, the same tree from a fresh unpack."""
    parts = {"rules": RULES, "prebake": prebake.__version__, "archive": sha256, "strip": strip,
             "members": list(members), "skip": list(skip),
             "patches": [hashlib.sha256(p).hexdigest() for p in patches]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _identity(entry: os.DirEntry[str]) -> Identity:
    st = entry.stat(follow_symlinks=False)
    kind = ("link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
            else "file" if stat.S_ISREG(st.st_mode) else "other")
    target = str(Path(entry.path).readlink()) if kind == "link" else ""
    if kind == "dir":  # its entries are compared one by one; its times move when they do
        return (kind, stat.S_IMODE(st.st_mode), 0, st.st_dev, st.st_ino, 0, 0, "")
    return (kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns,
            st.st_ctime_ns, target)


def _walk(root: Path, known: dict[str, Identity] | None = None
          ) -> tuple[dict[str, Identity], list[str]]:
    """Every entry below ``root`` with its identity, and (given ``known``) the paths that are
    not in it, whose subtrees are not walked."""
    seen: dict[str, Identity] = {}
    added: list[str] = []
    stack = [("", str(root))]
    while stack:
        rel, path = stack.pop()
        with os.scandir(path) as it:
            for entry in it:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if known is not None and name not in known:
                    added.append(name)
                    continue
                ident = _identity(entry)
                seen[name] = ident
                if ident[0] == "dir":
                    stack.append((name, entry.path))
    return seen, added


def _record_path(work: Path, dest: str) -> Path:
    return work / RECORDS / (dest.replace("/", "--") + ".json")


def record(work: Path, dest: str, tree_key: str) -> None:
    """Note what ``work/dest`` holds now, right after it was unpacked and patched."""
    entries, _ = _walk(work / dest)
    path = _record_path(work, dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"key": tree_key, "entries": entries}, separators=(",", ":")))
    tmp.replace(path)


@dataclass(frozen=True)
class Verdict:
    """Whether a kept tree stands in for a fresh unpack, and why (one line for the log)."""

    kept: bool
    why: str


def _load(path: Path) -> tuple[str, dict[str, Identity]] | None:
    try:
        data = json.loads(read_bounded(path, _MAX_RECORD, "source tree record"))
        entries = {str(k): tuple(v) for k, v in data["entries"].items()}
        return str(data["key"]), entries
    except (OSError, PrebakeError, ValueError, KeyError, TypeError, AttributeError):
        return None


def keep(earlier: Path, work: Path, dest: str, tree_key: str,
         log: Callable[[str], None]) -> Verdict:
    """Move the earlier build's ``dest`` tree (``earlier/dest``) to ``work/dest`` when it is
    provably what a fresh unpack would write, removing what a command added to it."""
    old = earlier / dest
    if not old.is_dir() or old.is_symlink():
        return Verdict(False, "no earlier tree")
    verdict = _judge(old, tree_key, _record_path(earlier, dest))
    if isinstance(verdict, Verdict):
        log(f"{dest}: unpacked again: {verdict.why}")
        return verdict
    recorded, added = verdict
    try:
        for rel in sorted(added):
            _remove(old / rel)
    except OSError as exc:
        log(f"{dest}: unpacked again: cannot remove what the build added to the earlier "
            f"tree ({exc.filename}: {exc.strerror or exc})")
        return Verdict(False, "could not remove what the build added")
    target = work / dest
    target.parent.mkdir(parents=True, exist_ok=True)
    old.rename(target)
    rec = _record_path(work, dest)
    rec.parent.mkdir(parents=True, exist_ok=True)
    _record_path(earlier, dest).rename(rec)
    why = f"unchanged since it was unpacked ({len(recorded)} entries)"
    if added:
        why += f"; removed what the build added: {', '.join(sorted(added)[:3])}"
        why += f", … ({len(added)} paths)" if len(added) > 3 else ""
    log(f"{dest}: kept from the earlier build: {why}")
    return Verdict(True, why)


def _judge(old: Path, tree_key: str, record_at: Path
           ) -> Verdict | tuple[dict[str, Identity], list[str]]:
    """The recorded entries and the paths added since, or why the tree cannot be kept."""
    loaded = _load(record_at)
    if loaded is None:
        return Verdict(False, "no readable record of the earlier tree")
    was_key, recorded = loaded
    if was_key != tree_key:
        return Verdict(False, "the earlier tree was made from other inputs")
    try:
        seen, added = _walk(old, recorded)
    except OSError as exc:
        return Verdict(False, f"cannot read {exc.filename}: {exc.strerror or exc}")
    changed = next((p for p in sorted(seen) if seen[p] != recorded[p]), None)
    if changed is not None:
        return Verdict(False, f"{changed} changed since it was unpacked")
    missing = next((p for p in sorted(recorded) if p not in seen), None)
    if missing is not None:
        return Verdict(False, f"{missing} was removed since it was unpacked")
    return recorded, added


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()
