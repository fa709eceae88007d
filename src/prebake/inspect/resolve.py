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
  ``prebake.consume.unpack.safe_extract``'s rules (no escaping names or links, no devices,
  member and byte budgets) into a temporary folder, then walked like a folder. Archives found
  inside are unpacked the same way, ``MAX_NESTING`` deep, within one shared byte budget.

Each binary is named ``package!inner/path`` for what came out of a package, so messages point at
what the user passed, never at the temporary folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError

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
    """A file whose first bytes one of the inspector's readers claims (no parsing)."""
    from prebake.inspect import sniff

    if p.name.lower().endswith(TEXT_SUFFIXES):
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return bool(head) and sniff(head) is not None


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
        if not p.exists():
            raise PrebakeError(f"{p}: no such file or folder")
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
        from prebake.consume.unpack import safe_extract

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
        for f, rel in _tree(root, base, self.out.escapes, shown, package):
            real = f.resolve()
            name = (shown + rel) if package else str(root / rel)
            if real in self._seen:
                continue  # libfoo.so -> libfoo.so.1: one file, one verdict
            self._seen.add(real)
            if is_binary(f):
                self.out.binaries.append(Binary(f, name, rel, root=base))
            elif is_package(f) and depth < MAX_NESTING:
                self._package(f, name, depth)
            else:
                self.out.skipped.append(name)


def _tree(root: Path, base: Path, escapes: list[str], shown: str, package: bool
          ) -> Iterator[tuple[Path, str]]:
    """Every file below ``root`` (sorted, real files before links to them), following symlinks
    that resolve inside ``base``; the others are recorded in ``escapes``. Iterative, so a deep
    or looping tree cannot exhaust the stack; each real folder is entered once, and a tree
    deeper than ``prebake.walk.MAX_DEPTH`` is refused."""
    from prebake.walk import MAX_DEPTH, TooDeep

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
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[Path, str, int]] = []
        for e in entries:
            p = Path(e.path)
            rel = prefix + e.name
            if e.is_symlink():
                target = p.resolve()
                if not target.is_relative_to(base) or not target.exists():
                    label = (shown + rel) if package else str(root / rel)
                    escapes.append(f"{label} -> {p.readlink()}")
                    continue
                if target.is_dir():
                    subdirs.append((p, rel + "/", depth + 1))
                else:
                    files.append((True, rel, p))
            elif e.is_dir(follow_symlinks=False):
                subdirs.append((p, rel + "/", depth + 1))
            elif e.is_file(follow_symlinks=False):
                files.append((False, rel, p))
        stack.extend(reversed(subdirs))
    for _link, rel, p in sorted(files, key=lambda t: (t[0], t[1])):
        yield p, rel


def resolve(paths: list[Path], tmp: Path) -> Resolution:
    """The binaries of ``paths`` (see the module docstring)."""
    r = Resolver(tmp)
    for p in paths:
        r.add(Path(p))
    return r.out
