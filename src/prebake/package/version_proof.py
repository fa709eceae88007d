"""Version proof: what a build says about its own version must agree with the pin.

An asset named ``zstd-1.5.7-…`` that was built from the 1.5.4 source says so itself, in
several places a build leaves behind: CMake's ``<pkg>ConfigVersion.cmake`` (``PACKAGE_VERSION``),
pkg-config's ``Version:``, a shared library's versioned file name or soname, a Mach-O dylib's
current version, and a header macro the recipe names (``version_check``). Every one of them
the recipe's own install holds is read and compared with the pin; one that disagrees fails
the unit, naming the file and what it says. Evidence is read *before* prebake writes its own
CMake and pkg-config files (which are made from the pin and so prove nothing).

A package or library named like one of the recipe's ``bundled`` components is compared with
that component's version instead (a library that ships its own copy of protobuf installs
protobuf's version, rightly).

A recipe whose libraries carry versions of their own (FFmpeg 7.1.5 ships libavcodec 61.19.101
and libavutil 59.39.100) names each library's header (``VersionCheck(library="avcodec")``):
that library's evidence — ``.pc``, file name, soname, and for a DLL its name
(``avcodec-61.dll``) and its version resource — is held to the header's version, and the
release itself to the pin by a string every library holds in its bytes (``VersionString``:
``"FFmpeg version 7.1.5"``). A library whose header spells its ABI version while its package
states the release (dav1d 1.5.4: ``DAV1D_API_VERSION_*`` 7.0.0 = ``libdav1d.so.7.0.0``, and
``dav1d.pc`` ``Version: 1.5.4``) says so (``VersionCheck(library="dav1d", abi=True)``): its
binary's evidence (file name, soname, DLL name and version resource, Mach-O current version,
a one-node symbol version) is held to the header, its ``.pc`` and CMake version files to the
pin.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.recipes.api import Recipe, VersionCheck, VersionString

MAX_TEXT = 4 << 20  # install text files are small; a bigger one is not read as evidence
_CMAKE_VERSION = re.compile(r'set\s*\(\s*PACKAGE_VERSION\s+"?([^"\s)]+)"?\s*\)', re.I)
_PC_VERSION = re.compile(r"^Version:\s*(\S+)", re.M)
_SO_NAME = re.compile(r"^lib(.+?)\.so\.(\d+(?:\.\d+)+)$")
_DYLIB_NAME = re.compile(r"^lib(.+?)\.(\d+(?:\.\d+)+)\.dylib$")
_SO_MAJOR = re.compile(r"^lib(.+?)\.so\.(\d+)$")
_DLL_NAME = re.compile(r"^(?:lib)?(.+?)-(\d+(?:\.\d+)*)\.dll$", re.I)
_NUMERIC = re.compile(r"^v?(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class Evidence:
    """One place the build states a version: ``lib/pkgconfig/libzstd.pc Version: 1.5.4``."""

    where: str  # file inside the prefix
    what: str  # ``PACKAGE_VERSION``, ``Version:``, ``soname``, a macro name…
    version: str
    package: str = ""  # the package or library the evidence is about (bundled lookups)
    partial: bool = False  # an ABI-style number (soname): compared as a leading part
    component: int | None = None  # the number states only this component of the version
    # the binary's own name or version (or a header naming its ABI), not its package's files
    abi: bool = False

    def render(self) -> str:
        return f"{self.where} {self.what} {self.version}"


@dataclass(frozen=True)
class Disagreement:
    evidence: Evidence
    expected: str


def components(version: str) -> tuple[int, ...] | None:
    """``1.5.4`` -> (1, 5, 4); ``20240722`` -> (20240722,); a non-numeric version -> None."""
    m = _NUMERIC.match(version.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def agrees(found: str, pin: str, *, partial: bool = False) -> bool:
    """Same version, trailing zeros aside (abseil's CMake says ``20240722`` for the pin
    ``20240722.0``); a non-numeric pin must match exactly. ``partial``: ``found`` is a
    leading part of the pin (a soname's ``1.5`` of ``1.5.4``)."""
    f, p = components(found), components(pin)
    if f is None or p is None:
        return found.strip() == pin.strip()
    if partial:
        padded = p + (0,) * max(0, len(f) - len(p))
        return padded[: len(f)] == f

    def strip(v: tuple[int, ...]) -> tuple[int, ...]:
        while len(v) > 1 and v[-1] == 0:
            v = v[:-1]
        return v

    return strip(f) == strip(p)


def _read_text(path: Path) -> str | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TEXT:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _cmake_package(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    for suffix in ("ConfigVersion.cmake", "-config-version.cmake"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def install_evidence(prefix: Path, files: Iterable[str],
                     shared: Mapping[str, dict[str, object]] | None = None,
                     libraries: Iterable[str] = (), abi: Iterable[str] = ()
                     ) -> list[Evidence]:
    """The version evidence among ``files`` (relative to ``prefix``): CMake version files,
    ``.pc`` files and versioned shared library names; ``shared`` maps a shared library's path
    to its inspected facts (``soname``, Mach-O ``details.current_version``, a DLL's ``stem``
    and ``details.file_version``). A DLL's name and version resource are evidence only for
    the ``libraries`` with versions of their own (a recipe's ``VersionCheck(library=…)``):
    elsewhere they hold a vendor's numbering (a DLL's file version) or a runtime's ABI
    (``libwinpthread-1.dll``). For the ``abi`` libraries (named by their ABI version, their
    package by the release) the version resource's ProductVersion is the release's."""
    own = {lib.lower() for lib in libraries}
    by_abi = {lib.lower() for lib in abi}
    out: list[Evidence] = []
    for rel in sorted(files):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(("ConfigVersion.cmake", "-config-version.cmake")):
            text = _read_text(prefix / rel)
            m = _CMAKE_VERSION.search(text or "")
            if m and "${" not in m.group(1):
                out.append(Evidence(rel, "PACKAGE_VERSION", m.group(1), _cmake_package(rel)))
        elif name.endswith(".pc"):
            text = _read_text(prefix / rel)
            m = _PC_VERSION.search(text or "")
            if m and "${" not in m.group(1):
                pkg = name[: -len(".pc")]
                out.append(Evidence(rel, "Version:", m.group(1),
                                    pkg[3:] if pkg.startswith("lib") else pkg))
        elif (m := _SO_NAME.match(name) or _DYLIB_NAME.match(name)) and not (
                prefix / rel).is_symlink():
            out.append(Evidence(rel, "file name", m.group(2), m.group(1), partial=True,
                                abi=True))
        elif (m := _DLL_NAME.match(name)) and m.group(1).lower() in own:
            out.append(Evidence(rel, "DLL name", m.group(2), m.group(1), partial=True,
                                abi=True))
    for rel, facts in sorted((shared or {}).items()):
        nodes = list(facts.get("version_nodes") or ())  # type: ignore[call-overload]
        # one node (VERS_1.21.0) is the library's own version; several (zlib's ZLIB_1.2.0 …
        # ZLIB_1.2.12) are the history of its ABI, not evidence of this release
        for node in nodes if len(nodes) == 1 else ():
            m = re.fullmatch(r"[A-Za-z_]*?_?(\d+(?:\.\d+)+)", str(node))
            if m:
                out.append(Evidence(rel, f"version node {node}", m.group(1),
                                    Path(rel).name.split(".")[0].removeprefix("lib"),
                                    abi=True))
        soname = facts.get("soname")
        base = soname.rsplit("/", 1)[-1] if isinstance(soname, str) else ""
        if m := _SO_NAME.match(base):
            out.append(Evidence(rel, "soname", m.group(2), m.group(1), partial=True,
                                abi=True))
        elif (m := _SO_MAJOR.match(base)) and m.group(1).lower() in own:
            # one number is an ABI's, except for a library with a version of its own, whose
            # major it is (libavcodec.so.61 of libavcodec 61.19.101)
            out.append(Evidence(rel, "soname", m.group(2), m.group(1), partial=True,
                                abi=True))
        details = facts.get("details")
        stem = facts.get("stem")
        cur = details.get("current_version") if isinstance(details, dict) else None
        if isinstance(cur, str) and cur not in ("0", "0.0.0") and components(cur):
            out.append(Evidence(rel, "current_version", cur,
                                stem if isinstance(stem, str) and stem.lower() in own
                                else Path(rel).stem.removeprefix("lib"), partial=True,
                                abi=True))
        resource = details.get("file_version") if isinstance(details, dict) else None
        if isinstance(resource, str) and isinstance(stem, str) and stem.lower() in own:
            out.append(Evidence(rel, "version resource FileVersion", resource, stem,
                                abi=True))
        product = details.get("product_version") if isinstance(details, dict) else None
        if isinstance(product, str) and isinstance(stem, str) and stem.lower() in by_abi:
            out.append(Evidence(rel, "version resource ProductVersion", product, stem))
    return out


def string_evidence(prefix: Path, libraries: Mapping[str, str], check: VersionString
                    ) -> tuple[list[Evidence], list[str]]:
    """Each library's release as its bytes spell it (every match, once), for the libraries
    (path -> stem) the check names; one without the string is a failure, never "no
    evidence", and so is a check none of whose libraries the recipe ships on this platform."""
    pattern = re.compile(check.pattern.encode("latin-1"))
    out: list[Evidence] = []
    wanted = {s.lower() for s in check.libraries}
    shipped = {stem.lower() for stem in libraries.values()}
    # a named library this platform does not build (FFmpeg's libavdevice on wasm) is not read
    # here; one of them at least must be
    problems = ([] if wanted & shipped or not wanted else
                [f"version_check: {check.pattern!r} names libraries {', '.join(sorted(wanted))}"
                 ", none of which the recipe ships here"])
    for rel, stem in libraries.items():
        if wanted and stem.lower() not in wanted:
            continue
        try:
            with open(prefix / rel, "rb") as fh:
                size = fh.seek(0, 2)
                found: set[str] = set()
                if size:
                    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                        found = {m.group(1).decode("latin-1") for m in pattern.finditer(mm)}
        except OSError as exc:
            problems.append(f"version_check: {rel}: cannot read it ({exc.strerror})")
            continue
        if not found:
            problems.append(f"version_check: {rel} holds no string matching "
                            f"{check.pattern!r}")
        out += [Evidence(rel, f"bytes {check.pattern!r}", v) for v in sorted(found)]
    return out, problems


def header_evidence(prefix: Path, check: VersionCheck) -> tuple[list[Evidence], list[str]]:
    """The version a header's macros spell (one macro holding ``"1.5.4"`` or one macro per
    component, searched in the check's headers in order); a missing header or macro is a
    failure, never "no evidence"."""
    shown = " + ".join(check.headers)
    texts = [_read_text(prefix / h) for h in check.headers]
    missing = [h for h, t in zip(check.headers, texts, strict=True) if t is None]
    if missing:
        return [], [f"version_check: {', '.join(missing)} is not in the install"]
    values: list[tuple[str, str]] = []
    problems: list[str] = []
    for macro in check.macros:
        m = next((hit for text in texts if (hit := re.search(
            rf"^\s*#\s*define\s+{re.escape(macro)}\s+(.+?)\s*(?://.*|/\*.*)?$",
            text or "", re.M))), None)
        if not m:
            problems.append(f"version_check: {shown} defines no {macro}")
            continue
        values.append((macro, m.group(1).strip().strip('"')))
    if problems:
        return [], problems
    if check.component is not None:
        macro, value = values[0]
        if not value.isdigit():
            return [], [f"version_check: {shown}: {macro} is not a number: {value!r}"]
        return [Evidence(shown, macro, value, check.library, component=check.component,
                         abi=check.abi)], []
    if len(values) == 1:
        macro, value = values[0]
        return [Evidence(shown, macro, value, check.library, abi=check.abi)], []
    bad = [f"{macro} {value!r}" for macro, value in values if not value.isdigit()]
    if bad:
        return [], [f"version_check: {shown}: not a number: {', '.join(bad)}"]
    version = ".".join(v for _m, v in values)
    what = ", ".join(f"{m} {v}" for m, v in values)
    return [Evidence(shown, what, version, check.library, abi=check.abi)], []


@dataclass
class Proof:
    """Every piece of version evidence read for one recipe, and what disagreed."""

    pin: str
    evidence: list[Evidence]
    disagreements: list[Disagreement]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.disagreements and not self.problems

    def failure(self, recipe: str) -> str:
        lines = [f"{recipe}: the build's own version evidence disagrees with the pin "
                 f"({self.pin}):"]
        lines += [f"  {d.evidence.render()} (expected {d.expected})" for d in self.disagreements]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)

    def to_json(self) -> list[dict[str, str]]:
        return [{"file": e.where, "says": e.what, "version": e.version} for e in self.evidence]


def prove(recipe: Recipe, pin_version: str, prefix: Path, files: Iterable[str],
          shared: Mapping[str, dict[str, object]] | None = None,
          libraries: Mapping[str, str] | None = None) -> Proof:
    """Judge the evidence among ``files`` (what this recipe installed) against the pin; a
    library with a version of its own against its header's (``VersionCheck(library=…)``;
    with ``abi``, only that library's binary evidence: its package's states the release).
    ``libraries`` are the recipe's library files and their stems (a ``VersionString`` reads
    their bytes)."""
    checks = recipe.version_checks
    own = [c.library for c in checks if isinstance(c, VersionCheck) and c.library]
    abi = {c.library.lower() for c in checks if isinstance(c, VersionCheck) and c.abi}
    evidence = install_evidence(prefix, files, shared, own, abi)
    problems: list[str] = []
    versions: dict[str, str] = {}  # library stem -> its header's version
    shipped = {stem.lower() for stem in (libraries or {}).values()}
    for check in checks:
        if (isinstance(check, VersionCheck) and check.library and libraries is not None
                and check.library.lower() not in shipped):
            continue  # a library this platform does not build: no version of its own here
        if isinstance(check, VersionString):
            found, said = string_evidence(prefix, libraries or {}, check)
        else:
            found, said = header_evidence(prefix, check)
            if check.library and found:
                versions[check.library.lower()] = found[0].version
        evidence += found
        problems += said
    # a library named by its ABI has its release stated by its package: a build that states
    # it nowhere proves no release
    problems += [f"version_check: nothing the build installed states {lib}'s release (its "
                 f"header and binary state its ABI version)" for lib in sorted(abi)
                 if lib in versions and not any(e.package.lower() == lib and not e.abi
                                                for e in evidence)]
    bundled = {c.name.lower(): c.version for c in recipe.bundled_for(pin_version)}
    bad: list[Disagreement] = []
    for e in evidence:
        pkg = e.package.lower()
        if pkg in abi and not e.abi:
            expected = pin_version  # the package of a library named by its ABI: the release
        else:
            expected = (versions.get(pkg) or bundled.get(pkg, pin_version) if pkg
                        else pin_version)
        if e.component is not None:
            parts = components(expected) or ()
            want = str(parts[e.component]) if e.component < len(parts) else "?"
            if e.version != want:
                bad.append(Disagreement(e, f"{want} (component {e.component} of {expected})"))
            continue
        if not agrees(e.version, expected, partial=e.partial):
            bad.append(Disagreement(e, expected))
    return Proof(pin_version, evidence, bad, problems)


def summary(proofs: Sequence[tuple[str, Proof]]) -> dict[str, object]:
    """The manifest's record of what proved each recipe's version."""
    return {name: {"pin": p.pin, "evidence": p.to_json()} for name, p in proofs}
