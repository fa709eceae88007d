"""Load and validate ``prebake.toml``: every problem at once, each with key path and line.

Which keys exist, their types and allowed values are data (``SCHEMA`` below, the cibuildwheel
``defaults.toml`` idea); an unknown key gets a "did you mean". Cross-field rules (unknown recipe
in a stage, cycles in ``after``, pins a recipe reads but ``[pins]`` lacks, a stage in an alias
its ``never_in`` names…) are small functions that each append ``Problem``s.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prebake.bounded import read_bounded
from prebake.contract.platform import platform_contract
from prebake.errors import ConfigError, PrebakeError, Problem
from prebake.inspect.facts import ARCHES, OSES
from prebake.intake.lines import LineIndex
from prebake.machine_mirrors import is_root_url
from prebake.model.ci_defaults import ci_defaults
from prebake.model.families import family_of_argv
from prebake.model.recipe import Recipe
from prebake.model.workspace import (
    DEFAULT_STORE_URL,
    TOOLCHAIN_PREFIX_TOKEN,
    CiConfig,
    LinkTest,
    PackageMode,
    Platform,
    Project,
    Stage,
    StoreConfig,
    Toolchain,
    TrustSettings,
    Workspace,
    expand_argv,
)
from prebake.names import name_problem
from prebake.recipes import builtin_names, find_recipe, try_load_recipe, validate_recipe
from prebake.recipes.loader import BUILTIN_DIR, FOLDER_RECIPE, workspace_names
from prebake.registry_refs import ReferenceError, is_reference, parse, sample
from prebake.sources.lock import provided_pins
from prebake.sources.mirrors import parse_table
from prebake.toolchain.environment import environment_named

WORKSPACE_FILE = "prebake.toml"
PACKAGE_MODES = ("prefix", "per-recipe")
# Spellings other tools use, so the message can say what prebake calls them.
SYNONYMS: Mapping[str, str] = {
    "amd64": "x86_64", "x64": "x86_64", "x86-64": "x86_64", "arm64": "aarch64",
    "armv8": "aarch64", "wasm": "wasm32", "x86": "i686", "i386": "i686",
    "darwin": "macos", "osx": "macos", "mac": "macos", "win32": "windows", "win": "windows",
    "mingw": "windows", "web": "emscripten", "emsdk": "emscripten",
}
_PLATFORM_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9_]+)*$")
PROJECT_NAME = re.compile(r"^[A-Za-z0-9_.+]+(?:-[A-Za-z_][A-Za-z0-9_.+]*)*$")
_VERSION = re.compile(r"^[0-9][A-Za-z0-9_.+~]*$")


# ---- the schema, as data ------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """One key: how to check its value, a name for messages, required or not, allowed values."""

    check: Callable[[Any], bool]
    what: str
    required: bool = False
    choices: tuple[str, ...] = ()


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_table(v: Any) -> bool:
    return isinstance(v, dict)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_argv(v: Any) -> bool:
    return (isinstance(v, str) and bool(v.strip())) or (_is_str_list(v) and bool(v))


def _is_str_table(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


def _is_minutes(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 4320


STR = Spec(_is_str, "a string")
TABLE = Spec(_is_table, "a table")
STR_LIST = Spec(_is_str_list, "a list of strings")
ARGV = Spec(_is_argv, "a command (string or list of strings)")

SCHEMA: Mapping[str, Mapping[str, Spec]] = {
    "": {
        "project": Spec(_is_table, "a table", required=True),
        "pins": TABLE,
        "platforms": TABLE,
        "stages": TABLE,
        "aliases": TABLE,
        "stores": TABLE,
        "ci": TABLE,
        "trust": TABLE,
        "sources": TABLE,
        "mirrors": TABLE,
    },
    "sources": {"provided": Spec(_is_str_table, "a table of strings")},
    "project": {
        "name": Spec(_is_str, "a string", required=True),
        "version": Spec(_is_str, "a string", required=True),
        "description": STR,
    },
    "platform": {
        "os": Spec(_is_str, "a string", required=True, choices=OSES),
        "arch": Spec(_is_str, "a string", required=True, choices=ARCHES),
        "toolchain": Spec(_is_table, "a table", required=True),
        "contract": TABLE,
        "link_test": TABLE,
        "env_unset": STR_LIST,
        "env": Spec(_is_str_table, "a table of strings"),
        "runner": STR,
        "description": STR,
    },
    "toolchain": {
        "cc": Spec(_is_argv, "a command (string or list of strings)", required=True),
        "cxx": Spec(_is_argv, "a command (string or list of strings)", required=True),
        "ar": ARGV,
        "ranlib": ARGV,
        "nm": ARGV,
        "strip": ARGV,
        "windres": ARGV,
        "pin": STR,
        "cmake_toolchain": STR,
        "from_stage": STR,
        "environment": STR,
    },
    "link_test": {"flags": STR_LIST, "run": ARGV},
    "stage": {
        "recipes": Spec(_is_str_list, "a list of strings", required=True),
        "after": STR_LIST,
        "package": Spec(_is_str, "a string", choices=PACKAGE_MODES),
        "never_in": STR_LIST,
        "description": STR,
    },
    "ci": {
        "install": STR,
        "default_branch": STR,
        "store": STR,
        "python": STR,
        "timeout_minutes": Spec(_is_minutes, "a whole number of minutes (1-4320)"),
    },
    # prebake.trust: fetch refuses assets not signed by a key in this file (relative to root)
    "trust": {"allowed_signers": STR},
    "store": {
        "url": Spec(_is_str, "a string", required=True),
        "default": Spec(_is_bool, "true or false"),
        "description": STR,
    },
}


# Where each SCHEMA section sits in the file (NAME: any name the workspace chooses). The
# reference and schemas/prebake-toml.schema.json are generated from SCHEMA and this table.
SECTIONS: Mapping[str, str] = {
    "": "", "project": "project", "platform": "platforms.NAME",
    "toolchain": "platforms.NAME.toolchain", "link_test": "platforms.NAME.link_test",
    "stage": "stages.NAME", "ci": "ci", "trust": "trust", "store": "stores.NAME",
    "sources": "sources",
}
# Tables whose keys the workspace names, and what each value is (checked by code, not SCHEMA).
FREE_TABLES: Mapping[str, str] = {
    "pins.NAME": "version", "aliases.NAME": "stage-list", "platforms.NAME.contract": "contract",
    "mirrors.NAME": "mirror-list",
}


def _hint(word: str, choices: Any) -> str:
    if SYNONYMS.get(word) in choices:
        return f" (prebake calls it '{SYNONYMS[word]}')"
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(name: str) -> str:
    """A stage or platform name as one part of a key path: quoted (TOML's way) unless bare,
    so that ``stages."a.b"`` is one stage, not two tables, for the reader and for the lines."""
    return name if _BARE.fullmatch(name) else json.dumps(name)


class _Collector:
    """Problems located by key path; lines come from the text when the key can be found."""

    def __init__(self, index: LineIndex) -> None:
        self.index = index
        self.problems: list[Problem] = []

    def add(self, key: str, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(key, message, line or self.index.line_of(key)))

    def table(self, data: Mapping[str, Any], schema: str, where: str) -> dict[str, Any]:
        """Check ``data`` against ``SCHEMA[schema]``; return only the keys that passed."""
        specs = SCHEMA[schema]
        ok: dict[str, Any] = {}
        for key, value in data.items():
            path = f"{where}.{_key(key)}" if where else _key(key)
            spec = specs.get(key)
            if spec is None:
                self.add(path, f"unknown key{_hint(key, specs)}")
            elif not spec.check(value):
                self.add(path, f"must be {spec.what}; got {_describe(value)}")
            elif spec.choices and value not in spec.choices:
                self.add(path, f"must be one of {', '.join(spec.choices)}; got {value!r}"
                         f"{_hint(value, spec.choices)}")
            else:
                ok[key] = value
        for key, spec in specs.items():
            if spec.required and key not in data:
                self.add(f"{where}.{key}" if where else key, "required key is missing",
                         self.index.line_of(where) if where else None)
        return ok


def _describe(value: Any) -> str:
    kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "a list", dict: "a table"}
    return f"{kinds.get(type(value), type(value).__name__)} ({value!r})"[:120]


# ---- TOML syntax --------------------------------------------------------------------------

_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_TWICE = re.compile(r"Cannot declare \(([^)]*)\) twice")


MAX_WORKSPACE_FILE = 4 * 1024 * 1024


def _read_text(file: Path) -> str:
    data = read_bounded(file, MAX_WORKSPACE_FILE, WORKSPACE_FILE)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(str(file), [Problem("(encoding)", f"not UTF-8 text (byte "
                                              f"{exc.start}, line {line})", line)]) from None


def _parse_toml(text: str, file: Path, index: LineIndex) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT.search(msg)
        line = int(m[1]) if m else None
        twice = _TWICE.search(msg)
        if twice:
            parts = [p.strip().strip("'\"") for p in twice[1].split(",") if p.strip()]
            key = ".".join(parts)
            first = index.line_of(key)
            what = "platform" if parts[:1] == ["platforms"] else "table"
            message = (f"duplicate {what} name {parts[-1]!r}: declared again here"
                       + (f", first at line {first}" if first else ""))
            raise ConfigError(str(file), [Problem(key, message, line)]) from None
        bare = _AT.sub("", msg).strip()
        raise ConfigError(str(file), [Problem("(TOML syntax)", bare, line)]) from None


# ---- sections -----------------------------------------------------------------------------

def _argv(value: str | list[str]) -> tuple[str, ...]:
    return tuple(shlex.split(value)) if isinstance(value, str) else tuple(value)


def _spec_text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else shlex.join(value)


# The binutils a toolchain table may name beside ``ar`` (each defaults to the one beside it).
BINUTILS = ("ranlib", "nm", "strip", "windres")


def _default_ar(cc: tuple[str, ...]) -> tuple[str, ...]:
    """``ar`` that matches the compiler family (``prebake.model.families``) when the
    workspace does not say."""
    fam = family_of_argv(cc)
    return fam.default_ar(cc) if fam else ("ar",)


def _toolchain(data: Mapping[str, Any], where: str, c: _Collector) -> Toolchain | None:
    ok = c.table(data, "toolchain", where)
    if "cc" not in ok or "cxx" not in ok:
        return None
    cc, cxx = _argv(ok["cc"]), _argv(ok["cxx"])
    ar = _argv(ok["ar"]) if "ar" in ok else _default_ar(cc)
    spec: dict[str, str] = {k: _spec_text(ok[k]) for k in ("cc", "cxx", "ar", *BINUTILS)
                            if k in ok}
    from_stage = ok.get("from_stage")
    uses_prefix = [k for k in ("cc", "cxx", "ar") if k in ok
                   and TOOLCHAIN_PREFIX_TOKEN in _spec_text(ok[k])]
    if uses_prefix and from_stage is None:
        c.add(f"{where}.{uses_prefix[0]}", f"{TOOLCHAIN_PREFIX_TOKEN} needs from_stage = "
              "\"STAGE\" (the stage that installs the compiler)")
    if from_stage is not None and "pin" in ok:
        c.add(f"{where}.pin", "a toolchain from_stage is identified by that stage's input "
              "hash; it takes no pin")
    tools = {k: expand_argv(_argv(ok[k])) if k in ok else () for k in BINUTILS}
    environment = ok.get("environment")
    if environment is not None:
        try:
            environment_named(environment)
        except PrebakeError as exc:
            c.add(f"{where}.environment", str(exc))
        if from_stage is not None:
            c.add(f"{where}.environment", "a toolchain comes from a stage or from an "
                  "environment, not both")
    return Toolchain(expand_argv(cc), expand_argv(cxx), expand_argv(ar), ok.get("pin"),
                     ok.get("cmake_toolchain"), spec, from_stage, tools["ranlib"], environment,
                     nm=tools["nm"], strip=tools["strip"], windres=tools["windres"])


def _platform(name: str, data: Any, c: _Collector) -> Platform | None:
    where = f"platforms.{_key(name)}"
    if name_problem(name) is not None or not _PLATFORM_NAME.match(name):
        c.add(where, "platform names are lowercase letters, digits and '-' (used in asset names)")
    if not isinstance(data, dict):
        c.add(where, f"must be a table; got {_describe(data)}")
        return None
    ok = c.table(data, "platform", where)
    tc = _toolchain(ok["toolchain"], f"{where}.toolchain", c) if "toolchain" in ok else None
    contract, problems = platform_contract(ok.get("contract", {}), name, ok.get("os"),
                                           ok.get("arch"), f"{where}.contract")
    for p in problems:
        c.add(p.key, p.message)
    lt = c.table(ok.get("link_test", {}), "link_test", f"{where}.link_test")
    if tc is None or "os" not in ok or "arch" not in ok:
        return None
    run = expand_argv(_argv(lt["run"])) if "run" in lt else None
    return Platform(
        name=name, os=ok["os"], arch=ok["arch"], toolchain=tc, contract=contract,
        link_test=LinkTest(tuple(lt.get("flags", ())), run),
        env_unset=tuple(ok.get("env_unset", ())), env=dict(ok.get("env", {})),
        runner=ok.get("runner"), description=ok.get("description", ""),
    )


def _stage(name: str, data: Any, c: _Collector) -> Stage | None:
    where = f"stages.{_key(name)}"
    bad = name_problem(name)  # stage names become folders under .prebake/
    if bad is not None:
        c.add(where, f"stage name {bad}")
        return None
    if not isinstance(data, dict):
        c.add(where, f"must be a table; got {_describe(data)}")
        return None
    ok = c.table(data, "stage", where)
    if "recipes" not in ok:
        return None
    mode: PackageMode = "per-recipe" if ok.get("package") == "per-recipe" else "prefix"
    return Stage(name, tuple(ok["recipes"]), tuple(ok.get("after", ())), mode,
                 ok.get("description", ""), tuple(ok.get("never_in", ())))


def _stores(data: Mapping[str, Any], root: Path, c: _Collector
            ) -> tuple[dict[str, StoreConfig], str]:
    stores: dict[str, StoreConfig] = {}
    for name, value in data.items():
        where = f"stores.{name}"
        if not isinstance(value, dict):
            c.add(where, f"must be a table; got {_describe(value)}")
            continue
        ok = c.table(value, "store", where)
        if "url" in ok:
            stores[name] = StoreConfig(name, ok["url"], bool(ok.get("default", False)),
                                       ok.get("description", ""))
    defaults = [s for s in stores.values() if s.default]
    if len(defaults) > 1:
        c.add("stores", "more than one store has default = true: "
              + ", ".join(s.name for s in defaults))
    url = defaults[0].url if defaults else DEFAULT_STORE_URL
    return stores, resolve_store_url(url, root)


def resolve_store_url(url: str, root: Path) -> str:
    """``file://./releases`` (relative) becomes an absolute ``file://`` URL under ``root``."""
    if url.startswith("file://") and not url.startswith("file:///"):
        return "file://" + str((root / url[len("file://"):]).resolve())
    return url


def _ci(data: Mapping[str, Any], stores: Mapping[str, StoreConfig], c: _Collector) -> CiConfig:
    ok = c.table(data, "ci", "ci")
    store = ok.get("store")
    if store is not None and store not in stores:
        c.add("ci.store", f"unknown store {store!r}{_hint(store, stores)}")
    d = ci_defaults()
    return CiConfig(
        install=ok.get("install", ""),  # unset: `prebake ci github` decides or refuses
        default_branch=ok.get("default_branch", d.default_branch), store=store,
        python=ok.get("python", d.python), timeout_minutes=ok.get("timeout_minutes",
                                                                  d.timeout_minutes),
    )


def _trust(data: Mapping[str, Any], root: Path, c: _Collector) -> TrustSettings:
    """``[trust]`` as a typed setting; a value that cannot be used is a problem, never
    "no trust configured" (the file it names is judged when a fetch reads it)."""
    ok = c.table(data, "trust", "trust")
    value = ok.get("allowed_signers")
    if value is not None and not value.strip():
        c.add("trust.allowed_signers", "must name an allowed-signers file; got an empty string")
        value = None
    return TrustSettings(root / value if value else None)


def _sources(data: Mapping[str, Any], pins: Mapping[str, str], c: _Collector
             ) -> dict[str, str]:
    """``[sources.provided]``: upstream URL → the archive that provides it here. Each side is
    a downloadable URL or a registry reference (``debian:pool/…``, ``pypi:…``, ``npm:…``; the
    provider usually is one). A line may follow a pin (``{pins[ffmpeg]}`` on both sides: the
    bump is then one ``prebake pin``, no line to edit); it must read the same pins on both
    sides — a provider that stays while its upstream URL moves would stand for every release
    with one archive — and no other placeholder (a line names one file per release)."""
    ok = c.table(data, "sources", "sources")
    provided = dict(ok.get("provided", {}))
    for url, provider in provided.items():
        where = f"sources.provided.{_key(url)}"
        for value in (url, provider):
            if problem := source_name_problem(value):
                c.add(where, problem)
        try:
            read = [provided_pins(url), provided_pins(provider)]
        except ValueError as exc:
            c.add(where, f"{exc}: a line follows a pin with {{pins[NAME]}}, nothing else")
            continue
        if set(read[0]) != set(read[1]):
            c.add(where, f"the upstream URL reads pins {sorted(read[0])} but its provider "
                  f"{sorted(read[1])}: both sides must follow the same pins")
        for name in dict.fromkeys(read[0] + read[1]):
            if name not in pins:
                c.add(where, f"reads pin {name!r}, which [pins] does not set"
                      f"{_hint(name, pins)}")
    return provided


def source_name_problem(value: str) -> str | None:
    """What is wrong with a source's name (a registry reference or an http(s)/file URL, its
    placeholders not yet filled), or None."""
    if is_reference(value):
        try:
            parse(sample(value))
        except ReferenceError as exc:
            return str(exc)
        return None
    if not re.match(r"(https?|file)://", value) or not is_root_url(sample(value)):
        return (f"not a http(s) or file URL, nor a registry reference (debian:, pypi:, "
                f"npm:): {value!r}")
    return None


def _mirrors(data: Mapping[str, Any], c: _Collector) -> dict[str, tuple[str, ...]]:
    """``[mirrors]``: URL prefix → the mirrors that serve what is under it, in order."""
    table, problems = parse_table(data)
    for prefix, problem in problems:
        c.add(f"mirrors.{_key(prefix)}", problem)
    return table


# ---- cross-field rules --------------------------------------------------------------------

def _pins(data: Mapping[str, Any], c: _Collector) -> dict[str, str]:
    pins: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(value, str):
            c.add(f"pins.{name}", f"must be a version string (quoted); got {_describe(value)}")
        elif not _VERSION.match(value):
            c.add(f"pins.{name}", f"not a version (starts with a digit, no '-' or spaces): "
                  f"{value!r}")
        else:
            pins[name] = value
    return pins


def _check_after(stages: Mapping[str, Stage], c: _Collector) -> None:
    for st in stages.values():
        for i, dep in enumerate(st.after):
            if dep not in stages:
                c.add(f"stages.{_key(st.name)}.after[{i}]",
                      f"unknown stage {dep!r}{_hint(dep, stages)}")
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in stages[name].after:
            if dep not in stages:
                continue
            if state.get(dep) == 1:
                cycle = [*trail[trail.index(dep):], dep] if dep in trail else [name, dep]
                c.add(f"stages.{_key(name)}.after", f"cycle in after: {' -> '.join(cycle)}")
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[name] = 2

    for name in stages:
        if name not in state:
            visit(name, [name])


def _check_aliases(data: Mapping[str, Any], stages: Mapping[str, Stage], c: _Collector
                   ) -> dict[str, tuple[str, ...]]:
    aliases: dict[str, tuple[str, ...]] = {}
    for name, value in data.items():
        where = f"aliases.{name}"
        if not _is_str_list(value):
            c.add(where, f"must be a list of stage names; got {_describe(value)}")
            continue
        if name in stages:
            c.add(where, f"alias {name!r} has the name of a stage")
        for member in value:
            if member not in stages:
                c.add(where, f"unknown stage {member!r}{_hint(member, stages)}")
        for member in value:
            if member in stages and name in stages[member].never_in:
                c.add(where, f"{member!r} must never be part of {name!r} "
                      f"(stages.{member}.never_in)")
        aliases[name] = tuple(value)
    for st in stages.values():
        for i, alias in enumerate(st.never_in):
            if alias not in data:
                c.add(f"stages.{_key(st.name)}.never_in[{i}]",
                      f"unknown alias {alias!r}{_hint(alias, data)}")
    return aliases


def _load_recipes(root: Path, stages: Mapping[str, Stage], platforms: Mapping[str, Platform],
                  c: _Collector) -> dict[str, Recipe]:
    known = sorted({*workspace_names(root), *builtin_names()})
    recipes: dict[str, Recipe] = {}
    seen: dict[str, str] = {}
    for st in stages.values():
        for i, name in enumerate(st.recipes):
            where = f"stages.{_key(st.name)}.recipes[{i}]"
            if name in seen:
                c.add(where, f"recipe {name!r} is already in stage {seen[name]!r}")
                continue
            seen[name] = st.name
            bad = name_problem(name)  # recipe names become files and folders
            if bad is not None:
                c.add(where, f"recipe name {bad}")
                continue
            if st.package == "per-recipe" and name in stages:
                c.add(where, f"recipe {name!r} has the name of a stage (unit ids would clash)")
            try:
                path = find_recipe(name, root)
            except ConfigError as exc:  # both NAME.py and NAME/recipe.py
                c.problems.extend(exc.problems)
                continue
            if path is None:
                c.add(where, f"unknown recipe {name!r}{_hint(name, known)} "
                      f"(no recipes/{name}.py or recipes/{name}/recipe.py in the workspace "
                      "and no built-in)")
                continue
            recipe, problems = try_load_recipe(path)
            c.problems.extend(problems)
            if recipe is None:
                continue
            builtin = BUILTIN_DIR in path.parents
            shown = ("builtin/" if builtin else "recipes/") + (
                f"{name}/{path.name}" if path.name == FOLDER_RECIPE else path.name)
            c.problems.extend(validate_recipe(recipe, platforms=None if builtin else platforms,
                                              display=shown))
            recipes[name] = recipe
    return recipes


def _check_deps(stages: Mapping[str, Stage], recipes: Mapping[str, Recipe], ws_upstream:
                Callable[[str], tuple[str, ...]], c: _Collector) -> None:
    """A recipe's ``deps`` must be built before it: earlier in its stage, or in an upstream one."""
    for st in stages.values():
        before: list[str] = []
        for name in st.recipes:
            recipe = recipes.get(name)
            for dep in recipe.deps if recipe else ():
                upstream = [r for s in ws_upstream(st.name) for r in stages[s].recipes]
                if dep not in before and dep not in upstream:
                    c.add(f"stages.{_key(st.name)}.recipes",
                          f"recipe {name!r} depends on {dep!r}, which is not built before it "
                          f"(list it earlier in this stage or in a stage this one comes after)")
            before.append(name)


def _check_from_stage(platforms: Mapping[str, Platform], stages: Mapping[str, Stage],
                      upstream: Callable[[str], tuple[str, ...]], c: _Collector) -> None:
    """A toolchain built by a stage: that stage ships a prefix, and every other stage comes
    after it (or before it, building it), so the compiler exists before it is used."""
    for p in platforms.values():
        src = p.toolchain.from_stage
        if src is None:
            continue
        where = f"platforms.{_key(p.name)}.toolchain.from_stage"
        if src not in stages:
            c.add(where, f"unknown stage {src!r}{_hint(src, stages)}")
            continue
        if stages[src].package != "prefix":
            c.add(where, f"stage {src!r} ships per recipe; the toolchain stage must ship its "
                  "prefix (package = \"prefix\")")
        before = set(upstream(src))
        for st in stages:
            if st != src and st not in before and src not in upstream(st):
                c.add(f"stages.{_key(st)}.after", f"platform {p.name!r} builds with the toolchain "
                      f"stage {src!r} installs, so stage {st!r} must come after {src!r}")


def _check_pins(pins: Mapping[str, str], platforms: Mapping[str, Platform],
                recipes: Mapping[str, Recipe], stages: Mapping[str, Stage],
                c: _Collector) -> None:
    line = c.index.line_of("pins")
    for p in platforms.values():
        pin = p.toolchain.pin
        if pin and pin not in pins:
            c.add(f"pins.{pin}", f"missing: platform {p.name!r} toolchain reads this pin"
                  f"{_hint(pin, pins)}", line)
    for recipe in recipes.values():
        stage = next((s.name for s in stages.values() if recipe.name in s.recipes), "?")
        # only the platforms this workspace builds it for (a built-in may cover more)
        read = [pin for p in platforms if recipe.strategy_for(p) is not None
                for pin in recipe.pins_read(p)]
        for pin in dict.fromkeys([recipe.pin, *recipe.pins, *read]):
            if pin not in pins:
                c.add(f"pins.{pin}", f"missing: recipe {recipe.name!r} (stage {stage!r}) reads "
                      f"this pin{_hint(pin, pins)}", line)


def _check_cmake_toolchain(platforms: Mapping[str, Platform], root: Path,
                           c: _Collector) -> None:
    """A platform's own ``cmake_toolchain`` (included at the end of the file prebake writes)
    must exist: a missing file would only fail inside CMake, much later."""
    for name, p in platforms.items():
        extra = p.toolchain.cmake_toolchain
        if extra and not (root / extra).is_file():
            c.add(f"platforms.{_key(name)}.toolchain.cmake_toolchain",
                  f"no such file: {root / extra} (it is included at the end of the CMake "
                  "toolchain file prebake writes)")


# ---- entry point --------------------------------------------------------------------------

def _read_top(root: Path) -> tuple[Path, dict[str, Any], _Collector]:
    file = root / WORKSPACE_FILE
    if not file.is_file():
        raise PrebakeError(f"{file}: no such file (a workspace is a folder with {WORKSPACE_FILE})")
    text = _read_text(file)
    index = LineIndex(text)
    data = _parse_toml(text, file, index)
    c = _Collector(index)
    return file, c.table(data, "", ""), c


def load_platforms(root: Path) -> dict[str, Platform]:
    """Only the ``[platforms]`` of ``root/prebake.toml``, validated as ``load_workspace`` does.

    ``check --platform`` and ``link-test`` need a platform's contract and flags, not the
    recipes: a checkout without a recipe's local sources (a consumer's CI) can still check.
    """
    file, top, c = _read_top(Path(root).resolve())
    platforms = {n: p for n, v in top.get("platforms", {}).items()
                 if (p := _platform(n, v, c)) is not None}
    problems = [p for p in c.problems if p.key.startswith("platforms")]
    if problems:
        raise ConfigError(str(file), problems)
    return platforms


def load_pins(root: Path) -> dict[str, str]:
    """Only the ``[pins]`` of ``root/prebake.toml`` (``check --platform`` verifies the
    platform's compiler against its pin without loading the recipes)."""
    file, top, c = _read_top(Path(root).resolve())
    pins = _pins(top.get("pins", {}), c)
    problems = [p for p in c.problems if p.key.startswith("pins")]
    if problems:
        raise ConfigError(str(file), problems)
    return pins


def load_workspace(root: Path) -> Workspace:
    """Read ``root/prebake.toml`` and everything it names, or raise one ``ConfigError``."""
    root = Path(root).resolve()
    file, top, c = _read_top(root)
    proj = c.table(top.get("project", {}), "project", "project")
    for key, rx in (("name", PROJECT_NAME), ("version", _VERSION)):
        if key in proj and (name_problem(proj[key]) is not None or not rx.match(proj[key])):
            c.add(f"project.{key}", f"not usable in an asset name: {proj[key]!r}")
    pins = _pins(top.get("pins", {}), c)
    platforms = {n: p for n, v in top.get("platforms", {}).items()
                 if (p := _platform(n, v, c)) is not None}
    stages = {n: s for n, v in top.get("stages", {}).items() if (s := _stage(n, v, c)) is not None}
    _check_after(stages, c)
    aliases = _check_aliases(top.get("aliases", {}), stages, c)
    stores, default_store = _stores(top.get("stores", {}), root, c)
    ci = _ci(top.get("ci", {}), stores, c)
    trust = _trust(top.get("trust", {}), root, c)
    provided = _sources(top.get("sources", {}), pins, c)
    mirrors = _mirrors(top.get("mirrors", {}), c)
    recipes = _load_recipes(root, stages, platforms, c)
    _check_pins(pins, platforms, recipes, stages, c)
    _check_cmake_toolchain(platforms, root, c)
    if not c.problems:
        ws = replace(_assemble(root, file, proj, pins, platforms, stages, aliases, stores,
                               default_store, recipes), ci=ci, trust=trust,
                     provided=provided, mirrors=mirrors)
        _check_deps(stages, recipes, ws.upstream_stages, c)
        _check_from_stage(platforms, stages, ws.upstream_stages, c)
    if c.problems:
        raise ConfigError(str(file), c.problems)
    return ws


def _assemble(root: Path, file: Path, proj: Mapping[str, Any], pins: dict[str, str],
              platforms: dict[str, Platform], stages: dict[str, Stage],
              aliases: dict[str, tuple[str, ...]], stores: dict[str, StoreConfig],
              default_store: str, recipes: dict[str, Recipe]) -> Workspace:
    project = Project(proj["name"], proj["version"], proj.get("description", ""))
    return Workspace(root, file, project, pins, platforms, stages, aliases, stores,
                     default_store, recipes)

