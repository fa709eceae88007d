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

A recipe's commands may also rewrite a file of the tree (onnxruntime's FetchContent step
rewrites ``cmake/deps.txt`` to name the local archives), which made every rebuild unpack
onnxruntime's whole archive again (2.4 s). Such a file is learned: when a tree is unpacked again
because some of its files changed, the record of the fresh tree keeps a copy of each of those
files as unpacked (a few small files: ``_MAX_PRISTINE``). The next time only such files have
changed, each is put back from its copy (checked against the sha256 recorded with it, its
permission bits and modification time as unpacked) and the tree is kept; a copy that does not
match, or any other change, and the tree is unpacked afresh.

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
from prebake.jsonio import atomic_write_bytes

# Bumped whenever what an unpack writes changes (the extractor's modes, times, links): a tree
# kept from before such a change would not be what a fresh unpack writes now.
RULES = 1
RECORDS = ".sources"
_MAX_RECORD = 256 << 20  # a record of the 100 000 entries the extractor allows is ~10 MB
#: files put back from a copy instead of unpacking again: at most this many, each this small
_MAX_PRISTINE = (16, 1 << 20)

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


def _pristine_folder(record_at: Path) -> Path:
    return record_at.with_name(record_at.name.removesuffix(".json") + ".pristine")


def record(work: Path, dest: str, tree_key: str, rewritten: Sequence[str] = ()) -> None:
    """Note what ``work/dest`` holds now, right after it was unpacked and patched, with a copy
    of each of the ``rewritten`` files (what the last build's commands changed)."""
    entries, _ = _walk(work / dest)
    path = _record_path(work, dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    copies: dict[str, str] = {}
    folder = _pristine_folder(path)
    shutil.rmtree(folder, ignore_errors=True)
    for rel in sorted(rewritten)[:_MAX_PRISTINE[0]]:
        ident = entries.get(rel)
        if ident is None or ident[0] != "file" or ident[2] > _MAX_PRISTINE[1]:
            continue
        data = (work / dest / rel).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / digest).write_bytes(data)
        copies[rel] = digest
    _write_record(path, tree_key, entries, copies)


def _write_record(path: Path, tree_key: str, entries: dict[str, Identity],
                  pristine: dict[str, str]) -> None:
    atomic_write_bytes(path, json.dumps({"key": tree_key, "entries": entries,
                                         "pristine": pristine}, separators=(",", ":")).encode())


@dataclass(frozen=True)
class Verdict:
    """Whether a kept tree stands in for a fresh unpack, and why (one line for the log); when
    not, the files the last build changed (for :func:`record` to keep copies of)."""

    kept: bool
    why: str
    rewritten: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Earlier:
    """A tree whose recorded entries are all there: those changed since, and paths added."""

    recorded: dict[str, Identity]
    changed: list[str]
    added: list[str]
    pristine: dict[str, str]


def _load(path: Path) -> tuple[str, dict[str, Identity], dict[str, str]] | None:
    try:
        data = json.loads(read_bounded(path, _MAX_RECORD, "source tree record"))
        entries = {str(k): tuple(v) for k, v in data["entries"].items()}
        pristine = {str(k): str(v) for k, v in data.get("pristine", {}).items()}
        return str(data["key"]), entries, pristine
    except (OSError, PrebakeError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _put_back(tree: Path, rel: str, ident: Identity, copy: Path, digest: str) -> bool:
    """``tree/rel`` as it was unpacked, from ``copy`` once it is proven to hold those bytes."""
    try:
        data = read_bounded(copy, _MAX_PRISTINE[1], "pristine copy")
    except (OSError, PrebakeError):
        return False
    if len(data) != ident[2] or hashlib.sha256(data).hexdigest() != digest:
        return False
    target = tree / rel
    if target.is_symlink() or not target.is_file():
        return False
    tmp = target.with_name(target.name + ".prebake-put-back")
    tmp.write_bytes(data)
    tmp.chmod(ident[1])
    os.utime(tmp, ns=(ident[5], ident[5]))
    tmp.replace(target)
    return True


def keep(earlier: Path, work: Path, dest: str, tree_key: str,
         log: Callable[[str], None]) -> Verdict:
    """Move the earlier build's ``dest`` tree (``earlier/dest``) to ``work/dest`` when it is
    provably what a fresh unpack would write, removing what a command added to it."""
    old = earlier / dest
    if not old.is_dir() or old.is_symlink():
        return Verdict(False, "no earlier tree")
    record_at = _record_path(earlier, dest)
    verdict = _judge(old, tree_key, record_at)
    if isinstance(verdict, Verdict):
        log(f"{dest}: unpacked again: {verdict.why}")
        return verdict
    recorded, added = verdict.recorded, verdict.added
    learned = verdict.changed
    unlearned = next((p for p in learned if p not in verdict.pristine), None)
    bad = unlearned or next((p for p in learned if not _put_back(
        old, p, recorded[p], _pristine_folder(record_at) / verdict.pristine[p],
        verdict.pristine[p])), None)
    if bad is not None:
        why = (f"{bad} changed since it was unpacked" if bad == unlearned
               else f"{bad}: its copy as unpacked does not match its record")
        log(f"{dest}: unpacked again: {why}")
        return Verdict(False, why, tuple(learned))
    for p in learned:  # its new inode and change time, for the record that moves with it
        recorded[p] = _identity_of(old / p)
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
    if _pristine_folder(record_at).is_dir():
        _pristine_folder(record_at).rename(_pristine_folder(rec))
    if learned:  # the record with the put-back files' new identities
        _write_record(rec, tree_key, recorded, verdict.pristine)
        record_at.unlink()
    else:
        record_at.rename(rec)
    why = f"unchanged since it was unpacked ({len(recorded)} entries)"
    if learned:
        why = (f"as unpacked once {', '.join(learned)} {'was' if len(learned) == 1 else 'were'}"
               f" put back ({len(recorded)} entries)")
    if added:
        why += f"; removed what the build added: {', '.join(sorted(added)[:3])}"
        why += f", … ({len(added)} paths)" if len(added) > 3 else ""
    log(f"{dest}: kept from the earlier build: {why}")
    return Verdict(True, why)


def _identity_of(path: Path) -> Identity:
    with os.scandir(path.parent) as it:
        return next(_identity(e) for e in it if e.name == path.name)


def _judge(old: Path, tree_key: str, record_at: Path) -> Verdict | _Earlier:
    """The recorded entries, those changed and the paths added since, or why the tree cannot
    be kept."""
    loaded = _load(record_at)
    if loaded is None:
        return Verdict(False, "no readable record of the earlier tree")
    was_key, recorded, pristine = loaded
    if was_key != tree_key:
        return Verdict(False, "the earlier tree was made from other inputs")
    try:
        seen, added = _walk(old, recorded)
    except OSError as exc:
        return Verdict(False, f"cannot read {exc.filename}: {exc.strerror or exc}")
    missing = next((p for p in sorted(recorded) if p not in seen), None)
    if missing is not None:
        return Verdict(False, f"{missing} was removed since it was unpacked")
    changed = [p for p in sorted(seen) if seen[p] != recorded[p]]
    # a file put back keeps its kind; anything else changed means a fresh unpack
    odd = next((p for p in changed if recorded[p][0] != "file" or seen[p][0] != "file"), None)
    if odd is not None:
        return Verdict(False, f"{odd} changed since it was unpacked")
    return _Earlier(recorded, changed, added, pristine)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()
