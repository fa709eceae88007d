"""The whole-archive proof: every member of every shipped library links, not just the snippet's.

A snippet only pulls the members it references, so an undefined symbol in a member nobody in the
test calls (``helper.o`` needing ``thrower_backend_init``) stays hidden until a consumer's link
pulls that member. This proof links an empty ``main`` with the platform's compiler and consumer
flags against *every* member of the unit's static archives (``--whole-archive``; ``-force_load``
on macOS; ``--no-gc-sections`` for wasm so unused members' imports are not dropped), followed by
its shared libraries and the declared dependencies' libraries (linked normally: they only have to
resolve). The platform's system libraries are whatever the compiler driver adds — exactly what a
consumer gets. The real linker decides; prebake's own symbol tables only name, for each symbol the
linker reports undefined, the members that reference it.

What the consumer is expected to provide is declared, never guessed:
``Snippet(allow_undefined=("sym", "prefix*"))``. Each pattern is matched against the undefined
symbols of the members (raw and demangled names); every matched name gets a stand-in definition
for the proof link only — a weak one-byte object in C for native linkers (nothing in the shipped
library changes), a JS library function for Emscripten, an ``--allow-undefined-file`` entry for
plain wasm-ld. The report lists every pattern and the names it covered.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.archive import member_digests
from prebake.inspect.demangle import demangle
from prebake.link.test import (
    SHARED_SUFFIX,
    LinkPlatform,
    asm_name,
    consumer_env,
    error_lines,
    run_linker,
)

# How linkers name an undefined symbol (GNU ld, lld/wasm-ld, Emscripten's JS step, ld64, link.exe)
_UNDEFINED = (
    re.compile(r"undefined reference to [`'\"]([^'`\"]+)['`\"]"),
    re.compile(r"undefined symbol: ([^\s(]+)"),
    re.compile(r"^\s+\"([^\"]+)\", referenced from:", re.MULTILINE),
    re.compile(r"unresolved external symbol (\S+)"),
)
_C_NAME = re.compile(r"[A-Za-z0-9_.$@?]+")


@dataclass
class Undefined:
    """One symbol the linker could not resolve, and the members that reference it."""

    symbol: str
    members: list[str]  # "lib/libx.a(helper.o)"

    def message(self) -> str:
        where = ", ".join(self.members) if self.members else "(no member names it)"
        return f"{where}: undefined symbol {self.symbol}"


@dataclass
class WholeArchiveProof:
    """``ok`` when every member of every library linked with the consumer's flags."""

    ok: bool
    libraries: list[str]  # as named in the report (relative to the prefix when possible)
    commands: list[list[str]] = field(default_factory=list)
    output: str = ""
    undefined: list[Undefined] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the linker's own lines when no name parsed
    allowed: dict[str, list[str]] = field(default_factory=dict)  # pattern -> names it covered

    def failures(self) -> list[str]:
        if self.ok:
            return []
        return [u.message() for u in self.undefined] or self.errors or ["the link failed"]

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "libraries": self.libraries, "commands": self.commands,
                "undefined": [{"symbol": u.symbol, "members": u.members} for u in self.undefined],
                "errors": self.errors, "allowed": self.allowed}


def linker_undefined(output: str) -> list[str]:
    """Every symbol name a linker's output reports as undefined, first mention first."""
    names: list[str] = []
    for rx in _UNDEFINED:
        for m in rx.finditer(output):
            name = m.group(1).strip()
            if name and name not in names:
                names.append(name)
    return names


@dataclass
class _Tables:
    defined: set[str] = field(default_factory=set)
    # undefined name -> members referencing it
    users: dict[str, list[str]] = field(default_factory=dict)
    cxx: bool = False


def _tables(libraries: Sequence[tuple[Path, str]]) -> _Tables:
    out = _Tables()
    for path, shown in libraries:
        try:
            facts = inspect(path, ParseOptions(symbols=True))
        except PrebakeError:
            out.cxx = True  # unreadable: let the C++ driver link it, the linker will judge
            continue
        for leaf in facts.walk():
            if leaf.abi.cxx_stdlib not in (None, "none") or leaf.abi.eh not in (None, "none"):
                out.cxx = True
            sy = leaf.symbols
            if sy is None or leaf.members is not None:
                continue
            member = leaf.details.get("member")
            name = f"{shown}({member})" if member else shown
            out.defined.update(sy.defined)
            out.defined.update(sy.exports)
            for u in sy.undefined:
                out.users.setdefault(u, []).append(name)
                if u.startswith(("_Z", "__Z", "?")):
                    out.cxx = True
    return out


def _raw_name(name: str, tables: _Tables) -> str:
    """The members' raw name for a name a linker printed (GNU ld demangles by default)."""
    if name in tables.users:
        return name

    for raw in tables.users:
        if raw.startswith(("_Z", "__Z", "?")) and demangle(raw) == name:
            return raw
    return name


def _matches(name: str, pattern: str, demangled: str | None) -> bool:
    cands = [name, name[1:] if name.startswith("_") else name]
    if demangled:
        cands.append(demangled)
    return any(fnmatch.fnmatchcase(c, pattern) for c in cands)


def allowed_names(tables: _Tables, patterns: Sequence[str]) -> dict[str, list[str]]:
    """pattern -> the members' undefined names (not defined by any input) it covers."""
    out: dict[str, list[str]] = {p: [] for p in patterns}
    for name in sorted(tables.users):
        if name in tables.defined:
            continue
        dm = demangle(name) if name.startswith(("_Z", "__Z", "?")) else None
        for p in patterns:
            if _matches(name, p, dm):
                out[p].append(name)
    return out


def _stub_args(names: Sequence[str], os_name: str, workdir: Path,
               compiler: Sequence[str], flags: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Linker arguments giving each allowed name a stand-in definition (and commands to make
    them); the stand-ins exist only in this proof's link."""
    if not names:
        return [], []
    for n in names:
        if not _C_NAME.fullmatch(n):
            raise PrebakeError(f"allow_undefined: {n!r} is not a symbol name")
    if os_name == "emscripten":
        js = workdir / "allowed-undefined.js"
        body = ",\n".join(f'  "{n}": function() {{ abort("{n}: provided by the consumer"); }}'
                          for n in names)
        js.write_text("mergeInto(LibraryManager.library, {\n" + body + "\n});\n")
        return ["--js-library", str(js)], []
    if os_name == "wasi":
        f = workdir / "allowed-undefined.txt"
        f.write_text("".join(n + "\n" for n in names))
        return [f"-Wl,--allow-undefined-file={f}"], []
    src = workdir / "allowed_undefined.c"
    lines = ["/* prebake whole-archive proof: stand-ins for what the consumer provides */",
             "#define PREBAKE_STR2(x) #x", "#define PREBAKE_STR(x) PREBAKE_STR2(x)",
             "#define PREBAKE_PFX PREBAKE_STR(__USER_LABEL_PREFIX__)"]
    for i, n in enumerate(names):
        lines.append(f'__attribute__((weak)) char prebake_allowed_{i}[1] '
                     f'__asm__(PREBAKE_PFX "{asm_name(n, os_name)}");')
    src.write_text("\n".join(lines) + "\n")
    obj = workdir / ("allowed_undefined.obj" if os_name == "windows" else "allowed_undefined.o")
    return [str(obj)], [[*compiler, *flags, "-c", str(src), "-o", str(obj)]]


def _whole(lib: Path, os_name: str) -> list[str]:
    if os_name == "macos":
        return [f"-Wl,-force_load,{lib}"]
    return ["-Wl,--whole-archive", str(lib), "-Wl,--no-whole-archive"]


def _plain(lib: Path, os_name: str) -> list[str]:
    if SHARED_SUFFIX.search(lib.name) and os_name not in ("windows", "emscripten", "wasi"):
        return [str(lib), f"-Wl,-rpath,{lib.parent}"]
    return [str(lib)]


# Emscripten's initial memory for the whole-archive link (1 GiB: room for any library's data)
PROOF_MEMORY = 1 << 30


def _twin_holders(archives: Sequence[Path]) -> set[Path]:
    """The archives holding a member whose bytes an earlier archive also holds."""
    if len(archives) < 2:
        return set()
    seen: dict[str, Path] = {}
    out: set[Path] = set()
    for path in archives:
        # a thin or unreadable archive has none: its members are linked with the others
        digests = {d for ds in (member_digests(path) or {}).values() for d in ds}
        if any(seen.get(d, path) != path for d in digests):
            out.add(path)
        for d in digests:
            seen.setdefault(d, path)
    return out


def prove_whole_archive(libraries: Sequence[tuple[Path, str]], platform: LinkPlatform,
                        workdir: Path, *, deps: Sequence[Path] = (),
                        allow_undefined: Sequence[str] = (),
                        env: Mapping[str, str] | None = None,
                        timeout: float = 900) -> WholeArchiveProof:
    """Link every member of ``libraries`` (``(path, shown name)``) for ``platform``.

    ``deps`` are the declared dependencies' libraries (they resolve, they are not proven here:
    their own unit proved them). Raises ``PrebakeError`` when the platform has no compiler.
    """
    if not platform.toolchain.cc or not platform.toolchain.cxx:
        raise PrebakeError(f"platform {platform.name}: no toolchain.cc/cxx to link a consumer with")
    os_name = platform.os
    workdir.mkdir(parents=True, exist_ok=True)
    libs = [(Path(p).resolve(), shown) for p, shown in libraries]
    tables = _tables([*libs, *((Path(d).resolve(), Path(d).name) for d in deps)])
    own_users = _tables(libs).users
    tables.users = {k: v for k, v in tables.users.items() if k in own_users}
    allowed = allowed_names(tables, allow_undefined)
    stand_ins = sorted({n for names in allowed.values() for n in names})
    flags = list(platform.link_test.flags)
    src = workdir / "whole_archive_main.c"
    src.write_text("/* prebake whole-archive proof: every member is linked */\n"
                   "int main(void) { return 0; }\n")
    obj = "whole_archive_main.obj" if os_name == "windows" else "whole_archive_main.o"
    out_name = {"emscripten": "whole_archive.js", "windows": "whole_archive.exe",
                "wasi": "whole_archive.wasm"}.get(os_name, "whole_archive")
    stub_link, stub_cmds = _stub_args(stand_ins, os_name, workdir, platform.toolchain.cc, flags)
    linker = platform.toolchain.cxx if tables.cxx else platform.toolchain.cc
    archives = [p for p, _shown in libs if p.suffix in (".a", ".lib")
                and not p.name.endswith(".dll.a")]
    twins = _twin_holders(archives)

    def link(whole: Sequence[Path]) -> list[str]:
        lib_args: list[str] = []
        for p, _shown in libs:
            lib_args += _whole(p, os_name) if p in whole else _plain(p, os_name)
        if os_name in ("emscripten", "wasi"):
            lib_args += ["-Wl,--no-gc-sections", "-Wl,--error-limit=0"]
        if os_name == "emscripten":
            # every member at once holds more static data than a consumer pulls (FFmpeg's: 26
            # MB, over Emscripten's 16 MB): the memory's size is not what the proof proves
            lib_args += [f"-sINITIAL_MEMORY={PROOF_MEMORY}"]
        for d in deps:
            lib_args += _plain(Path(d).resolve(), os_name)
        return [*linker, *flags, obj, *lib_args, *stub_link, "-o", out_name]

    # An archive holding a member byte-identical to an earlier archive's (FFmpeg's half2float.o
    # in libavcodec.a and libswscale.a) is proven in a link of its own, the others plain: in
    # one link, both copies would be pulled and clash, where a consumer's linker takes one.
    commands = [
        [*platform.toolchain.cc, *flags, "-c", src.name, "-o", obj],
        *stub_cmds,
        link([p for p in archives if p not in twins]),
        *(link([p]) for p in archives if p in twins),
    ]
    run_env = consumer_env(platform, env)
    proof = WholeArchiveProof(True, [shown for _p, shown in libs], allowed=allowed)
    log: list[str] = []
    for cmd in commands:
        proof.commands.append(cmd)
        rc, text = run_linker(cmd, workdir, run_env, timeout)
        log.append(text)
        if rc != 0:
            proof.ok = False
            proof.output = "".join(log)
            names = [_raw_name(n, tables) for n in linker_undefined(proof.output)]
            proof.undefined = [Undefined(n, sorted(set(tables.users.get(n, []))))
                               for n in dict.fromkeys(names)]
            if not proof.undefined:
                proof.errors = error_lines(proof.output) or [f"{cmd[0]} exited with status {rc}"]
            return proof
    proof.output = "".join(log)
    return proof
