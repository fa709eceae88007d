"""License proof: the license an asset states is the one its libraries' own bytes state.

A dependency whose configuration decides its license (FFmpeg: LGPL 2.1 or later by default,
GPL with ``--enable-gpl``, unredistributable with ``--enable-nonfree``) compiles two witnesses
into each library: the license text (``avutil_license()``) and the configure line
(``avutil_configuration()``). The recipe names both patterns and the table from configure
switches to license text to SPDX expression (``LicenseString``); this module reads every named
library and fails closed unless each holds exactly one text and one line, the text is in the
table, the line's switches select that same text, and every library agrees. Only then is the
row's SPDX expression the asset's license, written into the manifest and the SBOM and judged
by the contract's ``allowed_licenses``.

Both witnesses are needed: the text alone would trust whatever the library says, the line alone
would trust that the table knows configure's rules. A library whose two disagree was built from
a configure the table does not describe (or was tampered with), and is refused.

The reads are bounded: each match is cut at ``MAX_MATCH`` bytes and a library holding more than
``MAX_DISTINCT`` different values of a witness is refused as ambiguous, so a hostile or
truncated file costs one pass over its bytes and yields one line.
"""

from __future__ import annotations

import mmap
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.recipes.api import (
    LICENSE_TEXTS,
    Licensed,
    LicenseString,
    LicenseText,
    kept_license_texts,
)

MAX_LICENSE_FILE = 256 * 1024  # a license file is a few KiB; a bigger one is not read
_VARIABLE = re.compile(r"<<([a-z]+):([0-9]+)>>")
# the copyright notices above a license's first clause: the holders' own, never compared
_NOTICE = re.compile(r"\s*(?:copyright\b|\(c\)|\u00a9|all rights reserved)", re.I)
MAX_MATCH = 64 * 1024  # a configure line of thousands of components fits; a witness is shorter
MAX_DISTINCT = 8  # distinct values of one witness read before the library is ambiguous


@dataclass(frozen=True)
class LibraryLicense:
    """What one library's bytes say: its license text and the switches of the table its
    configure line has on (the line itself stays in the library; the switches decide)."""

    path: str  # relative to the prefix
    text: str
    spdx: str
    switches: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"file": self.path, "says": self.text, "configured": list(self.switches)}


@dataclass(frozen=True)
class LicenseProof:
    """A recipe's license as every library it names proved it."""

    recipe: str
    spdx: str
    text: str
    libraries: tuple[LibraryLicense, ...]

    def to_json(self) -> dict[str, object]:
        return {"spdx": self.spdx, "text": self.text,
                "evidence": [lib.to_json() for lib in self.libraries]}


def _matches(data: bytes | mmap.mmap, pattern: re.Pattern[bytes]) -> list[str] | None:
    """The distinct first groups of ``pattern`` in ``data`` (each cut at ``MAX_MATCH``),
    or ``None`` when there are more than ``MAX_DISTINCT``."""
    found: dict[str, None] = {}
    for m in pattern.finditer(data):
        found[m.group(1)[:MAX_MATCH].decode("latin-1")] = None
        if len(found) > MAX_DISTINCT:
            return None
    return list(found)


def switch_on(words: Sequence[str], switch: str) -> bool:
    """Whether a configure line has ``switch`` on: present, and for ``--enable-X`` not turned
    off by a later ``--disable-X`` (configure takes the last of the two)."""
    off = "--disable-" + switch.removeprefix("--enable-") if switch.startswith(
        "--enable-") else None
    state = False
    for word in words:
        if word == switch:
            state = True
        elif word == off:
            state = False
    return state


def selected(table: Sequence[Licensed], words: Sequence[str]) -> Licensed | None:
    """The row a configure line selects: the first whose switches are all on."""
    return next((row for row in table if all(switch_on(words, s) for s in row.when)), None)


def read_library(data: bytes | mmap.mmap, rel: str, check: LicenseString
                 ) -> tuple[LibraryLicense | None, str | None]:
    """``(what the library says, None)`` or ``(None, why it proves nothing)``: one line."""
    texts = _matches(data, re.compile(check.pattern.encode("latin-1")))
    lines = _matches(data, re.compile(check.configuration.encode("latin-1")))
    if not texts:
        return None, (f"{rel} holds no license string matching {check.pattern!r}"
                      if texts is not None else f"{rel} holds more than {MAX_DISTINCT} "
                      "different license strings: it cannot say which applies")
    if len(texts) > 1:
        return None, f"{rel} holds several license strings: {', '.join(map(repr, texts))}"
    text = texts[0]
    row = next((r for r in check.table if r.text == text), None)
    if row is None:
        return None, (f"{rel} says its license is {text!r}, which the recipe's table does not "
                      "map to an SPDX expression")
    if not lines or len(lines) > 1:
        many = "no configuration string" if lines == [] else "several configuration strings"
        return None, (f"{rel} holds {many} matching {check.configuration!r}: its license "
                      f"{text!r} cannot be checked against how it was configured")
    try:
        words = shlex.split(lines[0])
    except ValueError as exc:
        return None, f"{rel}: its configuration string cannot be read as a configure line ({exc})"
    chosen = selected(check.table, words)
    switches = tuple(s for s in dict.fromkeys(w for r in check.table for w in r.when)
                     if switch_on(words, s))
    if chosen is None or chosen.text != text:
        said = chosen.text if chosen is not None else "no row of the recipe's table"
        on = ", ".join(switches) or "none of the table's switches"
        return None, (f"{rel} says its license is {text!r} but its configuration ({on}) "
                      f"selects {said!r}")
    return LibraryLicense(rel, text, row.spdx, switches), None


def prove_license(recipe: str, check: LicenseString, prefix: Path,
                  libraries: Mapping[str, str]) -> tuple[LicenseProof | None, list[str]]:
    """Read every library (path -> stem) the check names; the proof, or every problem (one
    line each, naming the library). A named library this platform does not ship is not read
    (FFmpeg's libavdevice is not built for wasm; a name no platform ships is refused when the
    recipe is validated), but at least one must be."""
    wanted = {s.lower() for s in check.libraries}
    problems: list[str] = []
    found: list[LibraryLicense] = []
    for rel, stem in sorted(libraries.items()):
        if wanted and stem.lower() not in wanted:
            continue
        try:
            with open(prefix / rel, "rb") as fh:
                if fh.seek(0, 2) == 0:
                    problems.append(f"{rel} is empty: it holds no license string")
                    continue
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    lib, why = read_library(mm, rel, check)
        except OSError as exc:
            problems.append(f"{rel}: cannot read it ({exc.strerror})")
            continue
        if lib is None:
            problems.append(str(why))
        else:
            found.append(lib)
    if not found and not problems:
        problems.append("license_check: none of the libraries it names ("
                        + (", ".join(check.libraries) or "any") + ") is shipped here")
    spdx = sorted({lib.spdx for lib in found})
    if len(spdx) > 1:
        problems.append("its libraries disagree on the license: " + ", ".join(
            f"{lib.path} {lib.spdx}" for lib in found))
    if problems:
        return None, [f"{recipe}: license: {p}" for p in problems]
    # the libraries in the order the check names them: the first is the one a refusal names
    order = [s.lower() for s in check.libraries]
    found.sort(key=lambda lib: order.index(libraries[lib.path].lower()) if order else 0)
    return LicenseProof(recipe, found[0].spdx, found[0].text, tuple(found)), []



def _normal(text: str) -> str:
    """A license text as it is compared: one space for any run of white space, lower case,
    the typographic quotes and dashes as ASCII ones (SPDX's matching guidelines)."""
    for fancy, plain in (("\u201c", '"'), ("\u201d", '"'), ("\u2018", "'"), ("\u2019", "'"),
                         ("\u2013", "-"), ("\u2014", "-")):
        text = text.replace(fancy, plain)
    return " ".join(text.split()).lower()


def text_pattern(spdx: str) -> re.Pattern[str] | None:
    """The kept text of ``spdx`` as a pattern over a normalised text (``None``: prebake keeps
    no text of it): each ``<<name:N>>`` is at most N characters, none of them ``;``, ``:``
    or ``"`` (a holder's name, a bullet; never a sentence of its own)."""
    path = LICENSE_TEXTS / f"{spdx}.txt"
    if not path.is_file():
        return None
    template = _normal(path.read_text(encoding="utf-8"))
    parts, pos = [], 0
    for m in _VARIABLE.finditer(template):
        parts += [re.escape(template[pos:m.start()]), f'[^;:"]{{0,{int(m.group(2))}}}?']
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.S)


def prove_text(recipe: str, check: LicenseText, prefix: Path, rel: str | None
               ) -> tuple[LicenseProof | None, list[str]]:
    """The shipped license file ``rel`` (relative to ``prefix``) against the kept text of the
    check's license, after the copyright notices above its first clause (each line of them
    starts with ``Copyright``, ``(c)``, ``©`` or ``All rights reserved``): the proof, or the
    one problem (naming the file)."""
    where = f"{recipe}: license:"
    pattern = text_pattern(check.spdx)
    if pattern is None:
        return None, [f"{where} prebake keeps no text of {check.spdx} to prove it by (kept: "
                      f"{', '.join(kept_license_texts())})"]
    if rel is None:
        return None, [f"{where} the recipe ships no license file (Outputs.license) to read "
                      f"{check.spdx} from"]
    path = prefix / rel
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_LICENSE_FILE:
            return None, [f"{where} {rel} is not a license file of at most "
                          f"{MAX_LICENSE_FILE} bytes in the install"]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return None, [f"{where} {rel}: cannot read it ({exc.strerror})"]
    lines = text.splitlines()
    while lines and (not lines[0].strip() or _NOTICE.match(lines[0])):
        lines.pop(0)  # the copyright notices: each line of them starts like one
    if pattern.fullmatch(_normal("\n".join(lines))) is None:
        return None, [f"{where} {rel} is not the text of {check.spdx} (a clause added, "
                      "removed or changed: prebake proves only the license it states)"]
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    return LicenseProof(recipe, check.spdx, first,
                        (LibraryLicense(rel, first, check.spdx, ()),)), []
