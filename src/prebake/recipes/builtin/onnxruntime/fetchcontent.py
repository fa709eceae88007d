"""Supply a CMake project's FetchContent dependencies from verified archives, not its URLs.

onnxruntime lists its third-party code in ``cmake/deps.txt`` (``name;url;sha1``) and CMake's
FetchContent downloads each URL — from GitHub, which the build machine may not reach and which
prebake does not verify. A recipe's dependency table (``take`` per name, see
``recipes/builtin/onnxruntime/deps.toml``) names the same URLs; prebake downloads each from the
archive the workspace says provides it, checks its sha256 against ``prebake.sources.lock`` and
places it under ``{work}/deps``. This step, run as a build command, then:

- checks that the source's ``deps.txt`` names exactly the table's URL for every dependency (a
  table written for another release fails here, naming the entry), and
- rewrites ``deps.txt`` to point at the placed archives (their own SHA1, so FetchContent still
  verifies and onnxruntime's patches still apply), and writes a CMake script of cache settings
  (``FETCHCONTENT_SOURCE_DIR_<NAME>`` for unpacked trees, other variables) that the configure
  step includes before ``project()`` (``CMAKE_PROJECT_INCLUDE_BEFORE``);
- for a dependency no registry serves (``take = "absent"``, with the ``reason`` and the
  ``cache`` settings that switch its use off), points FetchContent at an empty project of one
  INTERFACE target of that name, so the build links nothing for it and downloads nothing.

The table's values reach CMake code, so they are data there, never code: a dependency's name
and a cache variable's name must be plain identifiers, a ``reason`` one line, a folder a
relative path that stays inside its archive, and every value is written as a quoted argument
with CMake's escapes (``${…}`` stays literal, a quote or a newline cannot end it).

``python -m prebake.recipes.builtin.onnxruntime.fetchcontent TABLE VERSION DEPS_TXT DEPS_DIR
OUT_CMAKE``
"""

from __future__ import annotations

import hashlib
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.cmake.quoting import cmake_quote
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_text
from prebake.names import shown

TAKES = ("archive", "source-dir", "variables", "absent")
# what CMake reads unquoted: a dependency's name (a target, a FETCHCONTENT_SOURCE_DIR_ suffix)
# and a variable's name
_DEP_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_DEPS_TXT = 1 << 20
EMPTY_PROJECT = """# Written by prebake (onnxruntime/fetchcontent): {name} is not built ({reason})
cmake_minimum_required(VERSION 3.16)
project({name}_absent LANGUAGES NONE)
add_library({name} INTERFACE)
"""


@dataclass(frozen=True)
class Dep:
    name: str
    url: str
    take: str
    subdir: str = ""
    variables: tuple[tuple[str, str], ...] = ()  # (CMake variable, folder in the archive)
    patches: tuple[str, ...] = ()
    cache: tuple[tuple[str, str], ...] = ()  # plain CMake cache settings (NAME, value)
    reason: str = ""  # why an "absent" dependency is not built
    # what the SBOM calls it where it is compiled in: (name, the version this URL holds)
    component: tuple[str, str] | None = None
    when: str = ""  # the CMake cache variable that is ON in a build that compiles it
    members: tuple[str, ...] = ()  # the paths of the archive to unpack (empty: all)

    @property
    def fetched(self) -> bool:
        """An absent dependency has no archive to download."""
        return self.take != "absent"


def load_table(path: Path) -> dict[str, tuple[Dep, ...]]:
    """The table per version, validated (unknown keys and takes are errors)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PrebakeError(f"{path}: not a readable dependency table ({exc})") from None
    out: dict[str, tuple[Dep, ...]] = {}
    for version, deps in data.items():
        rows = []
        for name, row in deps.items():
            rows.append(_dep(path, version, name, row))
        out[version] = tuple(rows)
    return out


def _dep(path: Path, version: str, name: str, row: Mapping[str, Any]) -> Dep:
    where = f"{path}: [{version}.{name}]"
    unknown = set(row) - {"url", "take", "subdir", "variables", "patches", "cache", "reason",
                          "component", "when", "members"}
    if unknown:
        raise PrebakeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    take = row.get("take")
    if take not in TAKES or not isinstance(row.get("url"), str):
        raise PrebakeError(f"{where}: needs url and take = one of {', '.join(TAKES)}")
    variables = row.get("variables", {})
    if take == "variables" and (not isinstance(variables, dict) or not variables):
        raise PrebakeError(f"{where}: take = \"variables\" needs variables = {{NAME = "
                           "\"subdir\"}}")
    cache = row.get("cache", {})
    if not isinstance(cache, dict):
        raise PrebakeError(f"{where}: cache must be a table {{NAME = \"value\"}}")
    if take == "absent" and not (row.get("reason") and cache):
        raise PrebakeError(f"{where}: take = \"absent\" needs a reason and the cache settings "
                           "that switch the dependency off")
    _check_cmake_values(where, name, variables, cache, row)
    component = row.get("component")
    if component is not None and not (isinstance(component, list) and len(component) == 2
                                      and all(isinstance(c, str) and c for c in component)):
        raise PrebakeError(f"{where}: component must be [\"name\", \"version\"]")
    when = row.get("when", "")
    if not isinstance(when, str) or (when and component is None):
        raise PrebakeError(f"{where}: when names the CMake cache variable of a component")
    members = row.get("members", [])
    if not (isinstance(members, list) and all(isinstance(m, str) and m for m in members)) \
            or (members and take == "archive"):
        raise PrebakeError(f"{where}: members must be a list of paths in an archive prebake "
                           "unpacks (not take = \"archive\")")
    return Dep(name, row["url"], take, str(row.get("subdir", "")),
               tuple((str(k), str(v)) for k, v in variables.items()),
               tuple(row.get("patches", ())),
               tuple((str(k), str(v)) for k, v in cache.items()), str(row.get("reason", "")),
               (component[0], component[1]) if component is not None else None, when,
               tuple(members))


def _check_cmake_values(where: str, name: str, variables: Mapping[str, Any],
                        cache: Mapping[str, Any], row: Mapping[str, Any]) -> None:
    """What of the entry becomes CMake code: names CMake reads unquoted, values of one line
    or (folders) relative paths inside the archive."""
    if not _DEP_NAME.fullmatch(name):
        raise PrebakeError(f"{where}: the dependency name {shown(name)} is not a CMake name "
                           "(letters, digits, _ . + -)")
    for key in (*variables, *cache):
        if not _VARIABLE.fullmatch(str(key)):
            raise PrebakeError(f"{where}: {shown(str(key))} is not a CMake variable name "
                               "(letters, digits, _)")
    for key, value in cache.items():
        if not isinstance(value, str | int | bool) or _CONTROL.search(str(value)):
            raise PrebakeError(f"{where}: cache.{key} must be one line of text")
    reason = row.get("reason", "")
    if not isinstance(reason, str) or _CONTROL.search(reason):
        raise PrebakeError(f"{where}: reason must be one line of text")
    for key, sub in (("subdir", row.get("subdir", "")),
                     *((f"variables.{k}", v) for k, v in variables.items())):
        if not isinstance(sub, str) or _CONTROL.search(sub) or sub.startswith("/") \
                or ".." in sub.split("/") or "\\" in sub:
            raise PrebakeError(f"{where}: {key} must be a relative folder inside the archive "
                               f"(no '..'), not {shown(str(sub))}")


def parse_deps_txt(text: str) -> dict[str, tuple[int, str, str]]:
    """``name -> (line index, url, sha1)`` of a ``deps.txt``; comments and blanks skipped."""
    out = {}
    for i, line in enumerate(text.splitlines()):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(";")
        if len(parts) == 3:
            out[parts[0]] = (i, parts[1], parts[2])
    return out


def _sha1(path: Path) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def supply(deps: Sequence[Dep], deps_txt: Path, deps_dir: Path) -> tuple[str, list[str]]:
    """Rewrite ``deps_txt``; return the CMake cache script and one line per dependency."""
    try:
        with open(deps_txt, "rb") as fh:
            text = fh.read(MAX_DEPS_TXT + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PrebakeError(f"{deps_txt}: not readable ({exc})") from None
    listed = parse_deps_txt(text)
    lines = text.splitlines()
    script = ["# Written by prebake (onnxruntime/fetchcontent): deps from verified archives"]
    said = []
    for dep in deps:
        if dep.name not in listed:
            raise PrebakeError(f"{deps_txt}: names no {dep.name!r}; the recipe's table expects "
                               f"{dep.url}")
        index, url, _ = listed[dep.name]
        if url != dep.url:
            raise PrebakeError(f"{deps_txt}: {dep.name} is {url}, the recipe's table says "
                               f"{dep.url}: the table was written for another release")
        for var, value in dep.cache:
            script.append(f"set({var} {cmake_quote(value)} CACHE STRING \"prebake\" FORCE)")
            said.append(f"{dep.name}: {var} = {value}")
        if dep.take == "absent":
            folder = deps_dir / dep.name
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(folder / "CMakeLists.txt", EMPTY_PROJECT.format(name=dep.name,
                                                                              reason=dep.reason))
            script.append(f"set(FETCHCONTENT_SOURCE_DIR_{dep.name.upper()} "
                          f"{cmake_quote(folder.as_posix())} CACHE PATH \"prebake\" FORCE)")
            said.append(f"{dep.name}: absent, an empty INTERFACE target ({dep.reason})")
            continue
        if dep.take == "archive":
            found = sorted(p for p in deps_dir.glob(f"{dep.name}.*") if p.is_file())
            if len(found) != 1:
                raise PrebakeError(f"{deps_dir}: expected one archive {dep.name}.*, found "
                                   f"{len(found)}")
            lines[index] = f"{dep.name};{found[0]};{_sha1(found[0])}"
            said.append(f"{dep.name}: archive {found[0].name}")
            continue
        settings = (dep.variables if dep.take == "variables"
                    else ((f"FETCHCONTENT_SOURCE_DIR_{dep.name.upper()}", dep.subdir),))
        for var, sub in settings:
            folder = deps_dir / dep.name / sub if sub else deps_dir / dep.name
            if not folder.is_dir():
                raise PrebakeError(f"{folder}: {dep.name}'s folder is missing from its archive")
            script.append(f"set({var} {cmake_quote(folder.as_posix())} CACHE PATH \"prebake\" "
                          "FORCE)")
            said.append(f"{dep.name}: {var} = {folder}")
    atomic_write_text(deps_txt, "\n".join(lines) + "\n")
    return "\n".join(script) + "\n", said


def main(argv: Sequence[str]) -> int:
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    table, version, deps_txt, deps_dir, out = argv
    try:
        deps = load_table(Path(table)).get(version)
        if deps is None:
            text = (f"# {Path(table).name} has no table for {version}: onnxruntime's CMake "
                    "downloads deps.txt's URLs itself (SHA1-checked)\n")
            said = [text.strip("# \n")]
        else:
            text, said = supply(deps, Path(deps_txt), Path(deps_dir))
        atomic_write_text(Path(out), text)
    except PrebakeError as exc:
        print(f"fetchcontent: {exc}", file=sys.stderr)
        return 2
    for line in said:
        print(f"fetchcontent: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
