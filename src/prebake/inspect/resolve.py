"""The one answer to "which binaries does this path hold?", for every command that judges bytes.

``inspect``, ``check``, ``fetch``, ``diff``, ``report`` and the build guards all ask it, so a
binary one of them sees, all of them see. A path is:

* a binary (ELF, Mach-O, PE/COFF, wasm, LLVM bitcode, static archive): itself;
* a folder: every binary anywhere below it — ``lib/``, ``lib64/``, ``bin/``, ``share/`` alike.
  Symlinks are followed while they stay inside the folder (a linked folder is walked, a linked
  file is the file it names, each real file once); a symlink that leaves the folder is refused
  and listed in ``escapes``, never followed;
* a package or archive — a release asset (``.tar.xz``), an npm ``.tgz``, a PyPI ``.whl``, any
  ``.tar.gz``/``.tar.xz``/``.tar.bz2``/``.tar``/``.zip`` — unpacked with
  ``prebake.extract.safe_extract``'s rules (no escaping names or links, no devices,
  member and byte budgets) into a temporary folder, then walked like a folder. Archives found
  inside are unpacked the same way, ``MAX_NESTING`` deep, within one shared byte budget.

Each binary is named ``package!inner/path`` for what came out of a package, so messages point at
what the user passed, never at the temporary folder.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.extract import safe_extract
from prebake.inspect.dispatch import special_kind
from prebake.inspect.registry import sniff
from prebake.walk import MAX_DEPTH, TooDeep

PACKAGE_SUFFIXES = (".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar", ".whl",
                    ".zip")  # prebake.commands.inspect.ASSET_SUFFIXES repeats it (a test says)
# Text a magic-less COFF sniff could misread, never binaries
TEXT_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inc", ".inl", ".ipp", ".tcc", ".cmake",
                 ".pc", ".json", ".txt", ".md", ".sha256", ".log", ".js", ".mjs", ".cjs", ".ts",
                 ".map", ".py", ".pyi", ".html", ".css", ".toml", ".yml", ".yaml", ".xml")
MAX_NESTING = 2  # a package inside a package inside what was named
MAX_PACKAGE_BYTES = 4 * 1024**3  # unpacked bytes over every package of one resolution


def is_package(p: Path) -> bool:
    return p.name.lower().endswith(PACKAGE_SUFFIXES)


def is_binary(p: Path) -> bool:
    """A regular file whose first bytes one of the inspector's readers claims (no parsing);
    False for anything that cannot be read (``head`` says why)."""
    try:
        return _claimed(p)
    except OSError:
        return False


def _claimed(p: Path) -> bool:
    """``is_binary``, raising ``OSError`` when the file cannot be read (``Unreadable``'s
    caller names it). A FIFO or device is never read: the open does not block and what was
    opened must be a regular file."""
    if p.name.lower().endswith(TEXT_SUFFIXES):
        return False
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = fh.read(64)
    return bool(head) and sniff(head) is not None


def _kind(p: Path) -> str | None:
    """None for a regular file or a folder (followed through links), else why it is not
    read: what special file it is, or why it cannot be looked at (a symlink loop)."""
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        return _why(exc)
    except RuntimeError:  # Python < 3.13 spells a loop that way in places
        return LOOP
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return f"is {special_kind(mode)}, not a regular file; not read"


LOOP = "symlink loop (too many levels of symbolic links); not followed"


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return LOOP
    return f"cannot be read: {exc.strerror or exc}"


@dataclass
class Binary:
    """One binary to judge: where its bytes are and how to name it."""

    path: Path  # the file on disk (inside a temporary unpack for packages)
    shown: str  # what messages call it: the given path, or ``package!inner/path``
    rel: str  # its path relative to the folder or package it was found in ("" when named)
    explicit: bool = False  # named on the command line itself (not found by a walk)
    root: Path | None = None  # the (resolved) folder or unpacked package it was found in


@dataclass
class Resolution:
    """The binaries the command-line paths name, and what was left out and why."""

    binaries: list[Binary] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that are not binaries
    escapes: list[str] = field(default_factory=list)  # "shown -> target": symlinks leaving it
    # (shown, reason): what could not be looked at, so no verdict may pass over it: a file or
    # folder that cannot be read, a FIFO, socket or device, a symlink loop
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # packages unpacked (shown names)
    # (temporary folder + "/", shown name + "!"): how to name what a package held
    labels: list[tuple[str, str]] = field(default_factory=list)

    def relabel(self, text: str) -> str:
        """``text`` with every temporary unpack folder replaced by the package it came from
        (evidence such as "JS glue …/x.mjs" names the package, not a folder that is gone)."""
        for tmp, shown in sorted(self.labels, key=lambda t: -len(t[0])):
            text = text.replace(tmp, shown)
        return text


class Resolver:
    """Resolves paths into binaries; packages are unpacked below ``tmp`` (the caller's
    temporary folder, removed by the caller)."""

    def __init__(self, tmp: Path, *, max_bytes: int = MAX_PACKAGE_BYTES) -> None:
        self.tmp = tmp
        self.budget = max_bytes
        self.out = Resolution()
        self._seen: set[Path] = set()
        self._n = 0

    def add(self, path: Path, shown: str | None = None) -> None:
        """A path named by the user: a binary, a folder or a package."""
        p = Path(path)
        shown = shown if shown is not None else str(p)
        if not p.exists() and not p.is_symlink():
            raise PrebakeError(f"{p}: no such file or folder")
        why = _kind(p)
        if why is not None:
            raise PrebakeError(f"{p}: {why}")
        if p.is_dir():
            self._walk(p, shown, depth=0)
        elif is_package(p) and not is_binary(p):
            self._package(p, shown, depth=0)
        else:
            real = p.resolve()
            if real not in self._seen:
                self._seen.add(real)
                self.out.binaries.append(Binary(p, shown, "", explicit=True))

    def _package(self, p: Path, shown: str, depth: int) -> None:
        self._n += 1
        dest = self.tmp / f"pkg{self._n}"
        safe_extract(p, dest, max_bytes=max(1, self.budget))
        self.budget -= sum(f.stat().st_size for f in dest.rglob("*") if f.is_file()
                           and not f.is_symlink())
        self.out.packages.append(shown)
        self.out.labels.append((str(dest) + "/", shown + "!"))
        if dest.resolve() != dest:
            self.out.labels.append((str(dest.resolve()) + "/", shown + "!"))
        self._walk(dest, shown + "!", depth=depth + 1, package=True)

    def _walk(self, root: Path, shown: str, *, depth: int,
              package: bool = False) -> None:
        base = root.resolve()
        for f, rel in _tree(root, base, self.out, shown, package):
            real = f.resolve()
            name = (shown + rel) if package else str(root / rel)
            if real in self._seen:
                continue  # libfoo.so -> libfoo.so.1: one file, one verdict
            self._seen.add(real)
            try:
                binary = _claimed(f)
            except OSError as exc:
                self.out.unreadable.append((name, _why(exc)))
                continue
            if binary:
                self.out.binaries.append(Binary(f, name, rel, root=base))
            elif is_package(f) and depth < MAX_NESTING:
                self._package(f, name, depth)
            else:
                self.out.skipped.append(name)


def _tree(root: Path, base: Path, out: Resolution, shown: str, package: bool
          ) -> Iterator[tuple[Path, str]]:
    """Every regular file below ``root`` (sorted, real files before links to them), following
    symlinks that resolve inside ``base``; the others are recorded in ``out.escapes``, and
    what cannot be looked at (a folder or link that cannot be read, a link loop, a FIFO,
    socket or device) in ``out.unreadable``. Iterative, so a deep or looping tree cannot
    exhaust the stack; each real folder is entered once, and a tree deeper than
    ``prebake.walk.MAX_DEPTH`` is refused."""
    escapes = out.escapes

    def label(rel: str) -> str:
        return (shown + rel) if package else str(root / rel)

    visited: set[Path] = set()
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    files: list[tuple[bool, str, Path]] = []
    while stack:
        folder, prefix, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TooDeep(f"{root}: more than {MAX_DEPTH} nested folders (at {prefix[:60]}…); "
                          "refusing a tree this deep")
        real_folder = folder.resolve()
        if real_folder in visited:
            continue
        visited.add(real_folder)
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            # a folder that cannot be listed may hold anything: named, never passed over
            out.unreadable.append((label(prefix.rstrip("/")) if prefix else
                                   (shown.rstrip("!") if package else str(root)),
                                   "folder " + _why(exc)))
            continue
        subdirs: list[tuple[Path, str, int]] = []
        for e in entries:
            p = Path(e.path)
            rel = prefix + e.name
            if e.is_symlink():
                try:
                    target = p.resolve()
                    why = _kind(target) if target.exists() else None
                except (OSError, RuntimeError) as exc:  # 3.11 raises RuntimeError for a loop
                    target, why = None, (_why(exc) if isinstance(exc, OSError) else LOOP)
                if target is not None and why is None and (
                        not target.is_relative_to(base) or not target.exists()):
                    escapes.append(f"{label(rel)} -> {p.readlink()}")
                    continue
                if why is not None or target is None:
                    out.unreadable.append((label(rel), f"{why or LOOP} (a symlink to "
                                                       f"{_target(p)})"))
                    continue
                if target.is_dir():
                    subdirs.append((p, rel + "/", depth + 1))
                else:
                    files.append((True, rel, p))
            elif e.is_dir(follow_symlinks=False):
                subdirs.append((p, rel + "/", depth + 1))
            elif e.is_file(follow_symlinks=False):
                files.append((False, rel, p))
            else:
                out.unreadable.append((label(rel), _kind(p) or "is not a regular file; not read"))
        stack.extend(reversed(subdirs))
    for _link, rel, p in sorted(files, key=lambda t: (t[0], t[1])):
        yield p, rel


def _target(p: Path) -> str:
    try:
        return str(p.readlink())
    except OSError:
        return "?"


def resolve(paths: list[Path], tmp: Path) -> Resolution:
    """The binaries of ``paths`` (see the module docstring)."""
    r = Resolver(tmp)
    for p in paths:
        r.add(Path(p))
    return r.out
