"""Recipe validation: every problem at once, each naming the recipe file and field.

Cross-field rules live here as small functions (pyodide-build's spec checks are the model):
a templated URL takes its digest from the source lock and may not carry one, command
placeholders must exist, ``{deps_prefix}`` needs
declared ``deps`` (so the plan orders and hashes what the build reads).
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from prebake.contract.producer_rule import NONE, TOOLCHAIN, entry_problem
from prebake.errors import Problem
from prebake.recipes.api import (
    ANY_PLATFORM,
    MESON_TOOLS,
    PLACEHOLDERS,
    TOOL_ROLES,
    Build,
    Component,
    GitSource,
    HostTool,
    LicenseString,
    LicenseText,
    LocalSource,
    MinToolchain,
    Recipe,
    Repackage,
    Since,
    Snippet,
    UrlSource,
    VersionCheck,
    VersionString,
    kept_license_texts,
    strategy_templates,
    template_fields,
)
from prebake.recipes.locate import field_line
from prebake.recipes.types import type_problems
from prebake.registry_refs import ReferenceError, is_reference, parse, sample
from prebake.toolchain.families import BY_NAME, release_tuple

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.+]+(?:-[A-Za-z_][A-Za-z0-9_.+]*)*$")
_URL_FIELDS = ("version", "pins", "platform", "os", "arch")


def _hint(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _fields(template: str) -> Iterator[str]:
    """Placeholder names in a str.format template (``pins[x]`` yields ``pins[x]``)."""
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            yield name


def _check_template(template: str, allowed: Collection[str], where: str) -> list[Problem]:
    try:
        names = list(_fields(template))
    except ValueError as exc:
        return [Problem(where, f"bad placeholder syntax in {template!r}: {exc}")]
    problems = []
    for name in names:
        base, bracket, rest = name.partition("[")
        if base not in allowed:
            problems.append(Problem(where, f"unknown placeholder {{{name}}}{_hint(base, allowed)}"))
        elif base in ("pins", "release", "tools") and not (bracket and rest.endswith("]")
                                                  and len(rest) > 1):
            problems.append(Problem(where, f"write {base} as {{{base}[NAME]}}; got {{{name}}}"))
    return problems


def _reference_problem(url: object, where: str) -> list[Problem]:
    """A URL field written as a registry reference (``debian:pool/…``, ``pypi:…``, ``npm:…``)
    must be one, its placeholders aside."""
    if not isinstance(url, str) or not is_reference(url):
        return []
    try:
        parse(sample(url))
    except ReferenceError as exc:
        return [Problem(where, str(exc))]
    return []


def _sha_problem(sha: object, url: object, where: str) -> list[Problem]:
    """A templated URL names a new file whenever a pin moves, so its digest lives in
    ``prebake.sources.lock`` (``prebake pin`` writes it) and never next to the template."""
    if not isinstance(sha, str):
        return [Problem(where, f"must be a string; got {type(sha).__name__}")]
    if not sha:
        return []  # from the lock
    if isinstance(url, str) and "{" in url:
        return [Problem(where, f"a templated URL ({url}) takes its sha256 from "
                               "prebake.sources.lock: a digest written here cannot follow the "
                               "pin; remove it and run `prebake pin NAME VERSION`")]
    if not _SHA256.match(sha):
        return [Problem(where, f"not a sha256 (64 lowercase hex digits): {sha!r}")]
    return []


def _check_source(src: object, i: int, folder: Path | None, where: str) -> list[Problem]:
    w = f"{where}.sources[{i}]"
    if isinstance(src, UrlSource):
        out = _sha_problem(src.sha256, src.url, f"{w}.sha256")
        out += _check_template(src.url, _URL_FIELDS, f"{w}.url")
        out += _reference_problem(src.url, f"{w}.url")
        if src.provides:
            out.append(Problem(f"{w}.provides", "is set by the source lock, never by a recipe "
                               "(a workspace provides a URL in [sources.provided])"))
        if src.size != -1:
            out.append(Problem(f"{w}.size", "is set by the source lock, never by a recipe"))
        return out
    if isinstance(src, GitSource):
        if not src.url or not src.ref:
            return [Problem(w, "a git source needs url and ref (a tag or commit)")]
        if src.commit:
            return [Problem(f"{w}.commit", "is set by the source lock, never by a recipe (a "
                            "recipe names a commit as its ref)")]
        return _check_template(src.ref, _URL_FIELDS, f"{w}.ref")
    if isinstance(src, LocalSource):
        if folder is not None and not (folder / src.path).is_dir():
            return [Problem(f"{w}.path", f"no such folder: {folder / src.path}")]
        return []
    return [Problem(w, f"must be GitSource, UrlSource or LocalSource; got {type(src).__name__}")]


def _check_command(cmd: object, where: str) -> list[Problem]:
    if isinstance(cmd, str):
        parts: tuple[object, ...] = (cmd,)
    elif isinstance(cmd, tuple) and cmd:
        parts = cmd
    else:
        return [Problem(where, "a command is a string or a non-empty tuple of strings")]
    problems = []
    for part in parts:
        if not isinstance(part, str):
            problems.append(Problem(where, f"command parts must be strings; got {part!r}"))
            continue
        problems += _check_template(part, PLACEHOLDERS, where)
    return problems


# CMake settings that name a toolchain's tools: prebake's toolchain file sets them from the
# platform's table (with the target flags, the launcher and the prefix map); a recipe that sets
# them itself builds with another compiler than the one prebake verified, or fails at project()
# because ``{cc}`` is several words.
_CMAKE_TOOL = re.compile(r"-D\s*(CMAKE_(?:C|CXX|OBJC|OBJCXX|ASM)_COMPILER|CMAKE_AR|CMAKE_RANLIB)"
                         r"(?::\w+)?=")


# What a command must not do: (pattern, the problem, said with the pattern's first group).
_COMMAND_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_CMAKE_TOOL, "sets -D{}= itself: use -DCMAKE_TOOLCHAIN_FILE={{cmake_toolchain}} instead "
                  "(prebake's toolchain file sets the pinned compilers, their target flags, "
                  "ar/ranlib and the launcher)"),
    # Meson commands that would download: a build never does (``--wrap-mode=nodownload``
    # comes with ``{meson_cross}``); a subproject the project needs is a source of the recipe
    (re.compile(r"(--wrap-mode(?:=|\s+)(?!nodownload\b)\S+"
                r"|-Dwrap_mode=(?!nodownload\b)\S+"
                r"|\bsubprojects\s+(?:download|update|checkout)\b"
                r"|\bwrap\s+(?:install|update)\b)"),
     "runs `{}`: a build never downloads ({{meson_cross}} sets --wrap-mode=nodownload); give "
     "the subproject's source as one of the recipe's sources instead"),
)


def _command_problems(cmd: object, where: str) -> list[Problem]:
    parts = (cmd,) if isinstance(cmd, str) else cmd if isinstance(cmd, tuple) else ()
    text = " ".join(p for p in parts if isinstance(p, str))
    return [Problem(where, message.format(m[1])) for pattern, message in _COMMAND_RULES
            if (m := pattern.search(text))]


def _check_strategy(key: str, strat: object, deps: tuple[str, ...], where: str) -> list[Problem]:
    w = f"{where}.platforms[{key!r}]"
    if isinstance(strat, Build):
        out: list[Problem] = []
        if not strat.commands:
            out.append(Problem(w, "a Build needs at least one command"))
        for j, cmd in enumerate(strat.commands):
            out += _check_command(cmd, f"{w}.commands[{j}]")
            out += _command_problems(cmd, f"{w}.commands[{j}]")
        for k, v in strat.env.items():
            out += _check_template(v, PLACEHOLDERS, f"{w}.env[{k!r}]")
        if strat.toolchain_family and strat.toolchain_family not in BY_NAME:
            out.append(Problem(f"{w}.toolchain_family", f"unknown toolchain family "
                               f"{strat.toolchain_family!r} (known: {', '.join(BY_NAME)})"))
        if not deps and "deps_prefix" in template_fields(strategy_templates(strat)):
            out.append(Problem(w, "uses {deps_prefix} but the recipe declares no deps=(...)"))
        if strat.record and not strat.cmake_cache:
            out.append(Problem(f"{w}.record", "names CMake cache entries but no cmake_cache "
                               "(the CMakeCache.txt to read them from, e.g. "
                               "\"{build}/CMakeCache.txt\")"))
        if strat.cmake_cache:
            out += _check_template(strat.cmake_cache, PLACEHOLDERS, f"{w}.cmake_cache")
        if strat.config_log:
            out += _check_template(strat.config_log, PLACEHOLDERS, f"{w}.config_log")
        out += _check_import_libs(strat.import_libs, f"{w}.import_libs")
        return out
    if isinstance(strat, Repackage):
        out = _sha_problem(strat.sha256, strat.url, f"{w}.sha256")
        for j, url in enumerate((strat.url, *strat.mirrors)):
            out += _check_template(url, _URL_FIELDS, f"{w}.url" if j == 0 else f"{w}.mirrors")
            out += _reference_problem(url, f"{w}.url" if j == 0 else f"{w}.mirrors")
        if not strat.layout:
            out.append(Problem(f"{w}.layout", "a Repackage needs a layout (glob -> prefix folder)"))
        out += _check_import_libs(strat.import_libs, f"{w}.import_libs")
        return out
    return [Problem(w, f"must be Build or Repackage; got {type(strat).__name__}")]


def _check_import_libs(table: object, where: str) -> list[Problem]:
    """``{"bin/x.dll": ("lib/x.lib", "lib/libx.dll.a")}``: a DLL in bin/ (a glob may stand
    for a name that carries the ABI number), its import libraries in lib/."""
    out = []
    for dll, libs in dict(table).items() if isinstance(table, Mapping) else ():
        if not (isinstance(dll, str) and dll.startswith("bin/") and dll.endswith(".dll")):
            out.append(Problem(f"{where}[{dll!r}]", "the key is a DLL in bin/ (bin/NAME.dll, "
                                                     "a glob allowed)"))
        for lib in libs if isinstance(libs, tuple) else ():
            if not (isinstance(lib, str) and lib.startswith("lib/") and "*" not in lib
                    and lib.endswith((".lib", ".dll.a"))):
                out.append(Problem(f"{where}[{dll!r}]", f"{lib!r}: an import library is "
                                   "lib/NAME.lib (MSVC) or lib/libNAME.dll.a (MinGW)"))
    return out


def _check_platform_keys(recipe: Recipe, platforms: Collection[str], where: str
                         ) -> list[Problem]:
    problems = []
    for field_name, keys in (("platforms", recipe.platforms), ("kind", recipe.kind),
                             ("outputs.libs", recipe.outputs.libs)):
        for key in keys:
            if key != ANY_PLATFORM and key not in platforms:
                problems.append(Problem(f"{where}.{field_name}[{key!r}]",
                                        f"unknown platform{_hint(key, platforms)}"))
    return problems


_CMAKE_TARGET = re.compile(r"^[A-Za-z0-9_.+-]+::[A-Za-z0-9_.+-]+$")
_MACRO = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_version_check(recipe: Recipe, where: str) -> list[Problem]:
    out: list[Problem] = []
    multi = isinstance(recipe.version_check, tuple)
    libraries: list[str] = []
    for i, check in enumerate(recipe.version_checks):
        w = f"{where}[{i}]" if multi else where
        if isinstance(check, VersionString):
            try:
                groups = re.compile(check.pattern).groups
            except re.error as exc:
                out.append(Problem(f"{w}.pattern", f"not a regular expression: {exc}"))
                continue
            if groups == 0:
                out.append(Problem(f"{w}.pattern", "needs a group: the release it spells"))
            continue
        if not isinstance(check, VersionCheck):
            out.append(Problem(w, f"must be a VersionCheck or a VersionString; got "
                                  f"{type(check).__name__}"))
            continue
        if not check.headers or not all(isinstance(h, str) and h and not h.startswith("/")
                                        for h in check.headers):
            out.append(Problem(f"{w}.header", "a header path relative to the install prefix "
                                              "(or a tuple of them)"))
        if not check.macros:
            out.append(Problem(f"{w}.macros", "names no macro"))
        for macro in check.macros:
            if not isinstance(macro, str) or not _MACRO.match(macro):
                out.append(Problem(f"{w}.macros", f"not a C macro name: {macro!r}"))
        if check.library and (not _TOOL_NAME.match(check.library) or check.library in libraries):
            out.append(Problem(f"{w}.library", f"not a new library stem: {check.library!r}"))
        if check.abi is not False and (check.abi is not True or not check.library):
            out.append(Problem(f"{w}.abi", "True only with a library: the header spells "
                                           "that library's ABI version"))
        libraries.append(check.library)
    return out


_SPDX = re.compile(r"^[A-Za-z0-9.+-]+(?: (?:AND|OR|WITH) [A-Za-z0-9.+-]+)*$")


def _check_license_text(recipe: Recipe, where: str) -> list[Problem]:
    """A license prebake keeps the text of, and a license file to read it from."""
    check = recipe.license_check
    assert isinstance(check, LicenseText)
    out: list[Problem] = []
    kept = kept_license_texts()
    if check.spdx not in kept:
        out.append(Problem(f"{where}.spdx", f"{check.spdx!r}: prebake keeps no text of it to "
                                            f"prove it by (kept: {', '.join(kept)})"))
    if not recipe.outputs.license:
        out.append(Problem(where, "needs outputs.license: the shipped file whose text it is"))
    return out


def _check_license_check(check: LicenseString, where: str) -> list[Problem]:
    """Both patterns compile with a group; the table is non-empty, its texts distinct, its
    expressions SPDX-shaped, and its last row the default (no switches): a configuration
    no row selects would otherwise prove nothing."""
    out: list[Problem] = []
    for name in ("pattern", "configuration"):
        try:
            if re.compile(getattr(check, name)).groups == 0:
                out.append(Problem(f"{where}.{name}", "needs a group: the string it reads"))
        except re.error as exc:
            out.append(Problem(f"{where}.{name}", f"not a regular expression: {exc}"))
    if not check.table:
        return [*out, Problem(f"{where}.table", "names no license")]
    texts = [row.text for row in check.table]
    if len(set(texts)) != len(texts):
        out.append(Problem(f"{where}.table", "a license text appears twice"))
    for row in check.table:
        if not _SPDX.match(row.spdx):
            out.append(Problem(f"{where}.table", f"{row.text!r}: not an SPDX expression: "
                                                 f"{row.spdx!r}"))
    if check.table[-1].when:
        out.append(Problem(f"{where}.table", "its last row must be the default (no switches)"))
    return out


def validate_recipe(recipe: Recipe, *, platforms: Collection[str] | None = None,
                    display: str | None = None) -> list[Problem]:
    """Problems with ``recipe`` on its own; ``platforms`` (if given) are the names it may use.

    Built-in recipes pass ``platforms=None``: they may cover platforms a workspace lacks.
    """
    shown = display or (str(recipe.path) if recipe.path else f"recipe {recipe.name!r}")
    where = f"{shown}: RECIPE"
    folder = recipe.path.parent if recipe.path else None
    typed = type_problems(recipe, Recipe, where)
    if typed:  # the rules below read the values as their annotated types
        return [_located(p, recipe, shown, where) for p in typed]
    problems: list[Problem] = []
    if not isinstance(recipe.name, str) or not _NAME_RE.match(recipe.name):
        problems.append(Problem(f"{where}.name", f"not a valid asset name: {recipe.name!r}"))
    if not isinstance(recipe.pin, str) or not recipe.pin:
        problems.append(Problem(f"{where}.pin", "must name the pin holding the version"))
    for i, src in enumerate(recipe.sources):
        problems += _check_source(src, i, folder, where)
    if not recipe.platforms:
        problems.append(Problem(f"{where}.platforms", "names no platform (use '*' for all)"))
    for key, strat in recipe.platforms.items():
        problems += _check_strategy(key, strat, recipe.deps, where)
    for key, kind in recipe.kind.items():
        if kind not in ("static", "shared"):
            problems.append(Problem(f"{where}.kind[{key!r}]",
                                    f"must be 'static' or 'shared'; got {kind!r}"))
    if platforms is not None:
        problems += _check_platform_keys(recipe, platforms, where)
    for rel in recipe.files:
        if folder is not None and not (folder / rel).is_file():
            problems.append(Problem(f"{where}.files", f"no such file: {folder / rel}"))
    globs = recipe.outputs.public_symbols
    if not isinstance(globs, tuple) or not all(isinstance(g, str) and g for g in globs):
        problems.append(Problem(f"{where}.outputs.public_symbols",
                                f"must be a tuple of symbol globs (strings); got {globs!r}"))
    if recipe.link_test is not None and not isinstance(recipe.link_test, Snippet):
        problems.append(Problem(f"{where}.link_test", "must be a Snippet or None"))
    builds = [s for s in recipe.platforms.values() if isinstance(s, Build)]
    for comp in recipe.bundled:
        if not isinstance(comp, Component):
            problems.append(Problem(f"{where}.bundled", f"must hold Components; got {comp!r}"))
        elif not isinstance(comp.source, str) or not all(
                isinstance(v, str) and v for v in comp.versions):
            problems.append(Problem(f"{where}.bundled", f"{comp.name}: source must be a URL "
                                    "string and versions non-empty release strings"))
        elif comp.when and builds and not any(comp.when in b.record for b in builds):
            # the SBOM lists it only where a build records the option: it never would be (a
            # recipe that only repackages, such as the built-in one cut down to one upstream
            # archive, claims no optional component anywhere)
            problems.append(Problem(f"{where}.bundled", f"{comp.name}: when = {comp.when!r} "
                                    "is a CMake variable no platform's Build records"))
    problems += _check_toolchain_min(recipe, where)
    problems += _check_other_compilers(recipe, where)
    problems += _check_releases(recipe, where)
    problems += _check_host_tools(recipe, where)
    problems += _check_version_check(recipe, f"{where}.version_check")
    if isinstance(recipe.license_check, LicenseText):
        problems += _check_license_text(recipe, f"{where}.license_check")
    elif recipe.license_check is not None:
        problems += _check_license_check(recipe.license_check, f"{where}.license_check")
        declared = [e.rsplit("/", 1)[-1] for libs in recipe.outputs.libs.values() for e in libs]
        problems += [Problem(f"{where}.license_check.libraries",
                             f"{stem!r} names no library of outputs.libs on any platform")
                     for stem in recipe.license_check.libraries
                     if not any(name.startswith((f"lib{stem}.", f"{stem}.", f"{stem}-"))
                                for name in declared)]
    for target in recipe.outputs.cmake_targets:
        if not isinstance(target, str) or not _CMAKE_TARGET.match(target):
            problems.append(Problem(f"{where}.outputs.cmake_target",
                                    f"not a CMake target name (NAMESPACE::name): {target!r}"))
    return [_located(p, recipe, shown, where) for p in problems]


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def _check_host_tools(recipe: Recipe, where: str) -> list[Problem]:
    """Each host tool: a name, a release to verify, a pattern with a group; every
    ``{host_tools[NAME]}`` a strategy uses names one of them."""
    problems: list[Problem] = []
    names: list[str] = []
    for i, tool in enumerate(recipe.host_tools):
        key = f"{where}.host_tools[{i}]"
        if not isinstance(tool, HostTool):
            problems.append(Problem(key, f"must be a HostTool; got {tool!r}"))
            continue
        if not _TOOL_NAME.match(tool.name) or tool.name in names:
            problems.append(Problem(f"{key}.name", f"not a new program name: {tool.name!r}"))
        names.append(tool.name)
        if not release_tuple(tool.version):
            problems.append(Problem(f"{key}.version", f"names no release: {tool.version!r}"))
        try:
            groups = re.compile(tool.version_pattern).groups
        except re.error as exc:
            groups = -1
            problems.append(Problem(f"{key}.version_pattern", f"not a regular expression: {exc}"))
        if groups == 0:
            problems.append(Problem(f"{key}.version_pattern",
                                    "needs a group: the release the tool reports"))
    for key, strat in recipe.platforms.items():
        if not isinstance(strat, Build):
            continue
        fields = template_fields(strategy_templates(strat))
        # {meson_cross} brings prebake's pinned meson and ninja
        here = [*names, *(t.name for t in MESON_TOOLS)] if "meson_cross" in fields else names
        for name in fields:
            if name.startswith("tools[") and name[len("tools["):-1] not in (*TOOL_ROLES, *here):
                problems.append(Problem(f"{where}.platforms[{key!r}]",
                                        f"{{{name}}} is neither a tool of the platform "
                                        f"({', '.join(TOOL_ROLES)}) nor a host tool of this "
                                        f"recipe (declared: {', '.join(names) or 'none'})"))
            if name.startswith("host_tools") and name[len("host_tools["):-1] not in here:
                problems.append(Problem(f"{where}.platforms[{key!r}]",
                                        f"{{{name}}} names no host tool of this recipe "
                                        f"(host_tools=(HostTool(NAME, VERSION),) declares one; "
                                        f"declared: {', '.join(names) or 'none'})"))
    return problems


def _check_releases(recipe: Recipe, where: str) -> list[Problem]:
    """Every ``{release[NAME]}`` names a table, and every table covers every version (an
    entry ``Since("0")``), so no pin can leave a command without its arguments."""
    problems = []
    for name, table in recipe.releases.items():
        key = f"{where}.releases[{name!r}]"
        if not isinstance(table, tuple) or not table or not all(
                isinstance(s, Since) for s in table):
            problems.append(Problem(key, "must be a non-empty tuple of Since(VERSION, ARGV)"))
            continue
        for s in table:
            if not re.fullmatch(r"\d+(\.\d+)*", s.version) or not all(
                    isinstance(a, str) for a in s.argv):
                problems.append(Problem(key, f"Since({s.version!r}, ...): a version such as "
                                        "\"1.24\" and a tuple of strings"))
        if not any(s.version.strip("0.") == "" for s in table):
            problems.append(Problem(key, "has no Since(\"0\", ...) for the releases before "
                                    "its first entry"))
    for key, strat in recipe.platforms.items():
        for name in template_fields(strategy_templates(strat)):
            if name.startswith("release[") and name[len("release["):-1] not in recipe.releases:
                problems.append(Problem(f"{where}.platforms[{key!r}]",
                                        f"{{{name}}} names no table of this recipe's releases "
                                        f"(known: {', '.join(recipe.releases) or 'none'})"))
    return problems


def _check_other_compilers(recipe: Recipe, where: str) -> list[Problem]:
    """An exemption from the producer rule is explicit: files, what they may say, and why."""
    problems = []
    for i, entry in enumerate(recipe.other_compilers):
        key = f"{where}.other_compilers[{i}]"
        if not entry.files or not all(f and not f.startswith("/") for f in entry.files):
            problems.append(Problem(key, "files must be globs relative to the prefix"))
        bad = [g for g in entry.producers
               if g == TOOLCHAIN or (g not in ("*", NONE) and entry_problem(g) is not None)]
        if not entry.producers or bad:
            problems.append(Problem(key, "producers must be 'TOOL RELEASE' globs ('gcc 14.*', "
                                         f"'msvc *') or 'none'; got {list(entry.producers)}"))
        if not entry.why.strip():
            problems.append(Problem(key, "why must say why these files are another "
                                         "compiler's (it is reported with them)"))
    return problems


def _check_toolchain_min(recipe: Recipe, where: str) -> list[Problem]:
    problems = []
    for i, need in enumerate(recipe.toolchain_min):
        key = f"{where}.toolchain_min[{i}]"
        if not isinstance(need, MinToolchain):
            problems.append(Problem(key, f"must be a MinToolchain; got {need!r}"))
        elif need.family not in BY_NAME:
            problems.append(Problem(key, f"unknown toolchain family {need.family!r} (known: "
                                         f"{', '.join(BY_NAME)})"))
        elif not release_tuple(need.version) or not need.reason.strip():
            problems.append(Problem(key, "needs a release (e.g. '3.1.61') and a reason"))
    return problems


def _located(problem: Problem, recipe: Recipe, shown: str, where: str) -> Problem:
    """``recipes/x.py: RECIPE.sources[0]`` -> ``recipes/x.py:8: RECIPE.sources[0]``."""
    if recipe.path is None or not problem.key.startswith(where):
        return problem
    line = field_line(recipe.path, problem.key[len(where):])
    if line is None:
        return problem
    return Problem(f"{shown}:{line}: RECIPE{problem.key[len(where):]}", problem.message)
