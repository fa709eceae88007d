"""The proof that a source tree is what unpacking its verified archive (and applying the recipe's
patches) writes: every entry compared with the archive, byte for byte, each time.

A kept tree (``prebake.sources.reuse``) stands in for a fresh unpack only on this proof. The
archive is the one the source lock names, its sha256 verified by the source cache just before;
it is read as an unpack reads it (``prebake.extract.written_entries``: the same names, strip,
``members``/``skip``, permission bits, modification times) and each member compared with the
tree: the kind (a file, folder or symlink, never followed), the permission bits, the size, the
modification time, a symlink's target, that a file has no second name (a hard link) and every
byte. A file the patches touch is compared
with the patches applied to the archive's own copy of it, in a folder of its own (the real
``patch``, as the unpack ran it). What the tree holds beyond the unpack is listed (a build's
``__pycache__``, onnxruntime's emsdk stand-in), for the caller to remove.

Nothing else is trusted: not the record beside the tree (a recipe command can rewrite it: one
that edited a file and rewrote the record shipped the edit), not the identities of its entries,
not a copy of a file. Measured on onnxruntime 1.21.0's source (38 MB ``.tar.xz``, 319 MB of
tar, 8555 entries and 113 MB compared; docs/measurements.md): 1.7 s, against 2.3–5.1 s for
unpacking it again and 0.22 s for hashing the tree against digests cached on the side — which
a build's command could rewrite as well.

A file the build is known to rewrite (learned: the record names it, ``learned``) may differ:
its expected bytes are kept from the archive (or the patched copy) and :func:`put_back` writes
them into the tree, relative to the tree's own folder descriptors, never through a link: a
fresh file of prebake's own name (``O_EXCL``, ``O_NOFOLLOW``) beside it, renamed over whatever
is in its place (a symlink or hard link replaced, never written through; a folder removed
first, without following what it holds).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.extract import Written, written_entries

#: files put back from the archive instead of unpacking again: at most this many, each this
#: small (onnxruntime's cmake/deps.txt is 3 KB); what a proof names as differing, to learn
MAX_LEARNED = 16
MAX_PUT_BACK = 1 << 20
#: bytes of the archive's files a recipe's patches touch, held to patch them on the side
MAX_PATCHED = 64 << 20
#: the names prebake writes inside a source tree (a put-back's file, renamed into place): an
#: archive member named so is refused by name at the unpack (``prebake.sources.unpack``)
PUT_BACK_PREFIX = ".prebake-put-back-"
OWN_NAMES = "*prebake-put-back*"
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Origin:
    """What a tree is unpacked from: the verified archive, the unpack's options, and the
    recipe's patches with the function that applies them to a folder."""

    archive: Path
    strip: int = 0
    members: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    patches: tuple[Path, ...] = ()
    apply_patches: Callable[[Path], None] = field(default=lambda _folder: None)


@dataclass(frozen=True)
class Expected:
    """What a fresh unpack holds at a path: the kind, the permission bits (``None``: a folder
    no member names, whose bits are the umask's), the modification time in ns (``None``: not
    fixed, as for a patched file or a hard link's copy) and, where kept, the bytes."""

    kind: str  # "file" | "dir" | "symlink"
    mode: int | None
    mtime_ns: int | None
    size: int = 0
    target: str = ""
    data: bytes | None = None


@dataclass(frozen=True)
class Proof:
    """The verdict: ``same`` when the tree is the fresh unpack once ``put_back`` is written
    and ``added`` removed; else ``why``, the first difference, one line naming the path.
    ``differing`` are the small files that differ (what a build rewrote, to learn)."""

    same: bool
    why: str
    seconds: float
    entries: int = 0
    compared: int = 0  # bytes
    differing: tuple[str, ...] = ()
    put_back: Mapping[str, Expected] = field(default_factory=dict)
    added: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Seen:
    kind: str
    mode: int
    size: int
    mtime_ns: int
    target: str
    links: int = 1


def _kind(mode: int) -> str:
    return ("symlink" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode)
            else "file" if stat.S_ISREG(mode) else "other")


def walk(root: Path) -> dict[str, _Seen]:
    """Every entry below ``root`` as ``lstat`` sees it; no link is followed."""
    seen: dict[str, _Seen] = {}
    stack = [("", str(root))]
    while stack:
        rel, path = stack.pop()
        with os.scandir(path) as it:
            for entry in it:
                name = f"{rel}/{entry.name}" if rel else entry.name
                st = entry.stat(follow_symlinks=False)
                kind = _kind(st.st_mode)
                target = str(Path(entry.path).readlink()) if kind == "symlink" else ""
                seen[name] = _Seen(kind, stat.S_IMODE(st.st_mode), st.st_size,
                                   st.st_mtime_ns, target, st.st_nlink)
                if kind == "dir":
                    stack.append((name, entry.path))
    return seen


def patch_targets(patches: Sequence[Path]) -> set[str] | None:
    """The paths (``-p1``) the unified diffs in ``patches`` name, or ``None`` when a patch
    names none it can be held to (then the tree cannot be proven on the side)."""
    out: set[str] = set()
    for patch in patches:
        found = set()
        for line in patch.read_bytes().decode("utf-8", "surrogateescape").splitlines():
            if line.startswith(("--- ", "+++ ")):
                name = line[4:].split("\t", 1)[0].strip()
                if name != "/dev/null":
                    parts = [p for p in name.split("/") if p not in ("", ".")][1:]
                    if not parts or ".." in parts:
                        return None
                    found.add("/".join(parts))
            elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
                found.add(line.split(" ", 2)[2].strip())
        if not found:
            return None
        out |= found
    return out


def _expected(w: Written, data: bytes | None = None) -> Expected:
    if w.kind == "symlink":
        return Expected("symlink", None, None, target=w.target)
    mtime = None if w.mtime is None else round(w.mtime * 1_000_000_000)
    return Expected("dir" if w.kind == "dir" else "file", w.mode, mtime, w.size, data=data)


def _read_member(w: Written, limit: int) -> bytes:
    assert w.open is not None
    with w.open() as fh:
        data = fh.read(limit + 1)
    if len(data) != w.size:
        raise PrebakeError(f"{w.name}: its member holds {len(data)} bytes, its header "
                           f"{w.size}")
    return data


def _mismatch(exp: Expected, seen: _Seen | None) -> str | None:
    """How the tree's entry differs from what the unpack writes (not the bytes), or None."""
    if seen is None:
        return "missing"
    if seen.kind != exp.kind:
        return f"a {seen.kind} where the archive has a {exp.kind}"
    if exp.kind == "symlink" and seen.target != exp.target:
        return f"links to {seen.target!r}, the archive's member to {exp.target!r}"
    if exp.mode is not None and seen.mode != exp.mode:
        return f"mode {seen.mode:04o}, the unpack's {exp.mode:04o}"
    if exp.kind == "file" and seen.size != exp.size:
        return f"{seen.size} bytes, the archive's member {exp.size}"
    if exp.kind == "file" and seen.links != 1:  # the unpack writes a file of its own
        return f"a hard link ({seen.links} names of one file)"
    if exp.kind == "file" and exp.mtime_ns is not None and \
            abs(seen.mtime_ns - exp.mtime_ns) > 1000:
        return "another modification time than the archive's member"
    return None


def _same_bytes(path: Path, chunks: Iterator[bytes]) -> bool:
    """Whether the file at ``path`` (never through a link) holds exactly ``chunks``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        for chunk in chunks:
            if fh.read(len(chunk)) != chunk:
                return False
        return fh.read(1) == b""


def _once(data: bytes) -> Iterator[bytes]:
    yield data


def _member_chunks(w: Written) -> Iterator[bytes]:
    assert w.open is not None
    with w.open() as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def _file_chunks(path: Path) -> Iterator[bytes]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


class _Judge:
    """The comparison's state: what the unpack writes, what differs, what may be put back."""

    def __init__(self, tree: Path, seen: Mapping[str, _Seen], learned: Collection[str]) -> None:
        self.tree, self.seen, self.learned = tree, seen, frozenset(learned)
        self.expected: dict[str, Expected] = {}
        self.failed: list[tuple[str, str]] = []
        self.differing: list[str] = []
        self.put_back: dict[str, Expected] = {}
        self.compared = 0

    def differs(self, name: str, exp: Expected, why: str) -> None:
        small = exp.kind == "file" and exp.size <= MAX_PUT_BACK
        if small and len(self.differing) < MAX_LEARNED:
            self.differing.append(name)
        if small and name in self.learned and exp.data is not None:
            self.put_back[name] = exp
        else:
            self.failed.append((name, why))

    def judge(self, name: str, exp: Expected, chunks: Callable[[], Iterator[bytes]]) -> None:
        """``name`` against ``exp``; ``chunks`` gives the expected bytes of a file."""
        self.expected[name] = exp
        why = _mismatch(exp, self.seen.get(name))
        if why is None and exp.kind == "file":
            self.compared += exp.size
            if not _same_bytes(self.tree / name, chunks()):
                why = "other bytes than the archive's member"
        if why is not None:
            self.differs(name, exp, why)

    @property
    def hopeless(self) -> bool:
        return len(self.failed) > MAX_LEARNED


def _parents(name: str) -> Iterator[str]:
    parts = name.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


def prove(tree: Path, origin: Origin, learned: Collection[str] = ()) -> Proof:
    """Whether ``tree`` is what unpacking ``origin`` writes (see the module)."""
    t0 = time.monotonic()
    targets = patch_targets(origin.patches) if origin.patches else set()
    if targets is None:
        return Proof(False, "its patches name no file this proof can hold them to",
                     time.monotonic() - t0)
    try:
        seen = walk(tree)
    except OSError as exc:
        return Proof(False, f"cannot read {exc.filename}: {exc.strerror or exc}",
                     time.monotonic() - t0)
    judge = _Judge(tree, seen, learned)
    captured: dict[str, tuple[Written, bytes | None]] = {}
    hardlinks: list[Written] = []
    held = 0
    with written_entries(origin.archive, strip_components=origin.strip,
                         members=origin.members or None, skip=origin.skip) as entries:
        for w in entries:
            for parent in _parents(w.name):
                judge.expected.setdefault(parent, Expected("dir", None, None))
            if w.name in targets:
                data = _read_member(w, MAX_PATCHED - held) if w.kind == "file" else None
                held += len(data or b"")
                captured[w.name] = (w, data)
                continue
            if w.kind == "hardlink":
                hardlinks.append(w)
                continue
            keep = w.kind == "file" and w.name in judge.learned and w.size <= MAX_PUT_BACK
            data = _read_member(w, MAX_PUT_BACK) if keep else None
            judge.judge(w.name, _expected(w, data),
                        partial(_once, data) if data is not None else partial(_member_chunks, w))
            if judge.hopeless:
                break
    for w in hardlinks:  # a copy of its target, as the unpack makes it
        src = judge.expected.get(w.target)
        if src is None or src.kind != "file":
            judge.failed.append((w.name, f"a hard link to {w.target!r}, not a file the "
                                         "proof holds"))
            continue
        exp = Expected("file", src.mode, None, src.size, data=src.data)
        judge.judge(w.name, exp, partial(_once, src.data) if src.data is not None
                    else partial(_file_chunks, tree / w.target))
    if targets and not judge.hopeless:
        why = _judge_patched(judge, origin, captured, targets)
        if why is not None:
            return Proof(False, why, time.monotonic() - t0)
    return _verdict(judge, seen, time.monotonic() - t0)


def _verdict(judge: _Judge, seen: Mapping[str, _Seen], seconds: float) -> Proof:
    for name in sorted(set(judge.expected) - set(seen)):
        exp = judge.expected[name]
        if name not in judge.put_back and not any(f[0] == name for f in judge.failed):
            judge.differs(name, exp, "missing")
    if judge.failed:
        name, why = min(judge.failed)
        more = f" (and {len(judge.failed) - 1} more)" if len(judge.failed) > 1 else ""
        return Proof(False, f"{name}: {why}{more}", seconds, len(judge.expected),
                     judge.compared, tuple(judge.differing))
    added = sorted(n for n in seen if n not in judge.expected
                   and not any(p not in judge.expected for p in _parents(n)))
    return Proof(True, "", seconds, len(judge.expected), judge.compared,
                 tuple(judge.differing), dict(judge.put_back), tuple(added))


def _judge_patched(judge: _Judge, origin: Origin,
                   captured: Mapping[str, tuple[Written, bytes | None]],
                   targets: set[str]) -> str | None:
    """The patched files: the patches applied to the archive's copies of them alone, in a
    folder beside the tree, and each result compared with the tree."""
    with tempfile.TemporaryDirectory(prefix=".prebake-patched-",
                                     dir=judge.tree.parent) as tmp:
        side = Path(tmp)
        for name, (w, data) in captured.items():
            path = side / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if w.kind == "dir":
                path.mkdir(exist_ok=True)
            elif w.kind == "symlink":
                path.symlink_to(w.target)
            elif data is not None:
                path.write_bytes(data)
                path.chmod(w.mode)
        try:
            origin.apply_patches(side)
        except PrebakeError as exc:
            return f"its patches do not apply to the archive's files alone ({exc})"
        after = walk(side)
        for name in targets - set(after):  # a file the patches remove
            if name in judge.seen:
                judge.failed.append((name, "there, and the patches remove it"))
        for name, s in sorted(after.items()):
            if s.kind == "dir":
                judge.expected.setdefault(name, Expected("dir", None, None))
                continue
            data = (side / name).read_bytes() if s.kind == "file" else None
            exp = Expected(s.kind, s.mode if s.kind == "file" else None, None, s.size,
                           s.target, data)
            judge.judge(name, exp, partial(_once, data or b""))
    return None


# ---- writing into the tree, never through a link ---------------------------------------------

@contextmanager
def _parent_fd(tree: Path, rel: str) -> Iterator[tuple[int, str]]:
    """A descriptor of ``rel``'s folder, opened component by component from ``tree`` without
    following a link, and ``rel``'s last name."""
    parts = rel.split("/")
    fd = os.open(tree, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _clear(fd: int, name: str) -> None:
    """A folder at ``name`` removed (its own entries, no link followed)."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=fd)


def remove(tree: Path, rel: str) -> None:
    """``tree/rel`` removed: a folder with what it holds, a file or link itself."""
    with _parent_fd(tree, rel) as (fd, name):
        _clear(fd, name)
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)


def put_back(tree: Path, rel: str, exp: Expected) -> None:
    """``tree/rel`` as the unpack writes it: ``exp``'s bytes, bits and time, in a new file
    beside it renamed over whatever is there."""
    assert exp.data is not None
    with _parent_fd(tree, rel) as (fd, name):
        _clear(fd, name)
        tmp = PUT_BACK_PREFIX + secrets.token_hex(8)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb", closefd=False) as fh:
                fh.write(exp.data)
            os.fchmod(out, exp.mode if exp.mode is not None else 0o644)
            if exp.mtime_ns is not None:
                os.utime(out, ns=(exp.mtime_ns, exp.mtime_ns))
            os.close(out)
            out = -1
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            if out >= 0:
                os.close(out)
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=fd)
            raise
