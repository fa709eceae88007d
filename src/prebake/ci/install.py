"""How a runner gets prebake: the ``[ci] install`` line, judged before a workflow is written.

prebake is not published under a name anyone owns: a bare ``pip install prebake`` would install
whatever someone uploads under that name and run it with the job's token. So the line must say
exactly what it installs — a version (``prebake==0.1.0``), a git URL pinned to a full commit, or
a path (a checkout or a wheel file in the repository) — and a workspace inside prebake's own
repository that states nothing gets that checkout. A line that cannot be judged is refused, like
one that names no version: a guard that cannot decide fails.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.model.workspace import Workspace

KEY = "ci.install"
_COMMIT = re.compile(r"@[0-9a-f]{40}(?:#.*)?$")
_PINNED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?===?[A-Za-z0-9][\w.+!-]*")
# a versioned file name at the end of a URL: name-1.2.3….whl / .tar.gz / .zip
_VERSIONED_FILE = re.compile(r"/[^/]+-\d[^/]*\.(?:whl|tar\.gz|zip)(?:#.*)?$")
_SEPARATORS = {"&&", "||", ";", "|", "&"}
# pip options whose next word is a value, not a requirement
_VALUE_OPTIONS = {"-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
                  "--find-links", "-t", "--target", "--prefix", "--root", "--python",
                  "--cache-dir", "--src", "--platform", "--python-version"}


def _why_unpinned(word: str) -> str | None:
    """Why one requirement of the line does not pin what it installs (None: it does)."""
    if "://" in word:
        url = word.split("@", 1)[1].strip() if re.match(r"^[\w.\[\],-]+\s*@", word) else word
        if url.startswith("git+"):
            return None if _COMMIT.search(url) else (
                f"{word!r} is a git URL without a full 40-hex commit (…@<commit>)")
        return None if _VERSIONED_FILE.search(url) else (
            f"{word!r} is a URL that names no versioned file")
    if word.startswith((".", "/", "~")) or "/" in word:
        return None  # a checkout or a wheel file: exactly that tree
    if _PINNED_NAME.fullmatch(word):
        return None
    return f"{word!r} names no version (write NAME==VERSION)"


def why_unpinned(line: str) -> str | None:
    """Why an install line does not say exactly which prebake it installs (None: it does)."""
    if "${{" in line:
        return "holds a GitHub expression (${{ … }}), which a run script must not expand"
    try:
        words = shlex.split(line.replace("\n", " ; "), comments=True)
    except ValueError as exc:
        return f"cannot be read as a shell line ({exc})"
    found = False
    i = 0
    while i < len(words):
        if words[i] != "install":
            i += 1
            continue
        found = True
        i += 1
        while i < len(words) and words[i] not in _SEPARATORS:
            word = words[i]
            if word in ("-r", "--requirement") or word.startswith("--requirement="):
                return "installs from a requirements file (-r), which cannot be judged here"
            if word in _VALUE_OPTIONS:
                i += 2
                continue
            if word.startswith("-") and word not in ("-e", "--editable"):
                i += 1
                continue
            if word in ("-e", "--editable"):
                i += 1
                continue
            if word == "@" or (i + 1 < len(words) and words[i + 1] == "@"):
                word = " ".join(words[i:i + 3])
                i += 2
            why = _why_unpinned(word)
            if why:
                return why
            i += 1
    if not found:
        return "runs no `… install`, so which prebake it installs cannot be judged"
    return None


def _prebake_checkout(ws: Workspace, repo: Path) -> Path | None:
    """The folder of prebake's own source (its pyproject.toml names project ``prebake``)
    holding the workspace, up to the repository root; None outside prebake's repository."""
    for d in (ws.root, *ws.root.parents):
        pyproject = d / "pyproject.toml"
        if pyproject.is_file() and pyproject.stat().st_size < 1 << 20:
            try:
                name = tomllib.loads(pyproject.read_text(encoding="utf-8")
                                     ).get("project", {}).get("name")
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                name = None
            if name == "prebake":
                return d
        if d == repo:
            break
    return None


def install_line(ws: Workspace, repo: Path) -> str:
    """The line the workflow's jobs run to install prebake, or a refusal naming the key."""
    where = f"{ws.root / 'prebake.toml'}: {KEY}"
    stated = ws.ci.install.strip()
    if not stated:
        own = _prebake_checkout(ws, repo)
        if own is None:
            raise PrebakeError(
                f"{where} is not set, and prebake has no published name a runner can trust: "
                "state a version (python -m pip install prebake==X), a git URL pinned to a "
                "commit (…@<40-hex commit>) or a path")
        return f"python -m pip install {shlex.quote(os.path.relpath(own, ws.root))}"
    why = why_unpinned(stated)
    if why:
        raise PrebakeError(f"{where}: {stated!r} {why}")
    return stated
