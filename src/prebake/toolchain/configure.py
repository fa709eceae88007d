"""The tools folder: how a ``configure`` script and ``make`` build with the platform's pinned
tools, and only with them — what the CMake toolchain file (``prebake.toolchain.cmakefile``) is
for CMake recipes.

A ``configure`` script is told its tools by name (``--cc=…``, ``CC=…``, ``--host=…``) and
*records* what it was told: autoconf in ``config.status``, FFmpeg in every library
(``avutil_configuration()`` returns its whole command line). A tool of several words (``python
-m ziglang cc -target aarch64-linux-gnu.2.28``), or any name with a folder in it, would put
this machine's paths into the asset (the relocation guard refuses them) and breaks the scripts
that split ``$CC`` on spaces. And what the script was *not* told it looks for on ``PATH``
(FFmpeg's host compiler defaults to ``gcc``, its ``nm`` to ``nm``; autoconf falls back to
``gcc``/``cc``), which would silently build with a compiler the platform does not pin.

So a recipe that names ``{tools[ROLE]}`` or ``{triple}`` gets one folder per unit
(``<work>/toolchain/tools``), first on its commands' ``PATH``:

- ``<triple>-cc``, ``<triple>-c++`` (and the ``<triple>-gcc``/``-g++`` autoconf looks for with
  ``--host``), ``<triple>-ar``, ``-ranlib``, ``-nm``, ``-strip``, ``-windres`` (Windows): one
  word each, a two-line script running the platform's pinned tool with its target flags, the
  compiler launcher (ccache), ``-ffile-prefix-map`` and the platform's ABI flags (wasm:
  ``-fwasm-exceptions -sWASM_LEGACY_EXCEPTIONS=0 -pthread -msimd128`` as its contract says) —
  the words ``{tools[cc]}``… expand to;
- ``<triple>-pkg-config`` (and ``pkg-config``): the build machine's pkg-config finding only the
  unit's prefix and its dependencies' (``PKG_CONFIG_LIBDIR``), never the build machine's
  libraries — CMake's find roots, for a configure script;
- each host tool the commands name as ``{tools[NAME]}`` (``nasm``): the verified program
  (``prebake.toolchain.hosttools``) under its own name;
- ``make``: the build machine's (a toolchain environment's own ``make`` runs inside its root,
  where this folder is not on ``PATH``);
- refusers under every name of a compiler, preprocessor, assembler, linker or binutil the
  platform does not pin (``prebake.toolchain.refusers``: the generic names a script falls back
  to, ``cc gcc c++ clang cpp as ld ar nm strip``…, and every versioned or triple-prefixed one
  on the build's ``PATH``: ``gcc-12``, ``x86_64-linux-gnu-gcc-12``, ``ld.lld-14``): they exit
  127 with one line saying which program was asked for, so a fallback or a compiler named to
  ``configure`` fails loudly instead of building with whatever the build machine has (a decoy
  ``gcc`` on the caller's ``PATH`` is never reached). The pinned tools' wrappers run with the
  folder off ``PATH``, and ``as``/``ld`` stay the pinned GCC or Clang driver's own.

``{triple}`` is the target's GNU triple (``aarch64-linux-gnu``, ``x86_64-w64-mingw32``,
``wasm32-unknown-emscripten``), ``{build_triple}`` the build machine's: ``--host={triple}
--build={build_triple}`` is how an autotools project cross-compiles. The same rendering with
tokens instead of this machine's paths (``portable``) enters the unit's input hash. The
scripts are rendered from the unit's :class:`~prebake.toolchain.platformtools.PlatformTools`,
the value the CMake toolchain file and the Meson machine file are rendered from too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.model.families import family_of_argv
from prebake.model.recipe import TOOL_ROLES
from prebake.model.workspace import Platform
from prebake.toolchain import platformtools, refusers, shellscript
from prebake.toolchain.platformtools import TRIPLES, PlatformTools, host

# The platform's tools by role, and each one's word after ``<triple>-``.
ROLES = TOOL_ROLES
# What autoconf's AC_PROG_CC/AC_PROG_CXX look for first with --host=TRIPLE.
ALIASES: Mapping[str, tuple[str, ...]] = {"cc": ("gcc",), "cxx": ("g++",)}
FOLDER = "tools"  # below the unit's toolchain folder (<work>/toolchain/tools)
# The compiler families whose driver runs ``as`` and ``ld`` by name (``-print-prog-name=``).
GNU_DRIVERS = frozenset({"gcc", "clang", "mingw"})
REFUSED_EXIT = 127  # "command not found": configure scripts move on to their error message


class ToolsError(PrebakeError):
    """The platform cannot give a recipe the tool it names (one line says which and why)."""


def triple(os_name: str, arch: str) -> str:
    got = TRIPLES.get((os_name, arch))
    if got is None:
        raise ToolsError(f"no GNU triple known for os {os_name!r} and arch {arch!r} "
                         f"(known: {', '.join(sorted({f'{o}/{a}' for o, a in TRIPLES}))})")
    return got


def build_triple() -> str:
    os_name, arch = host()
    return triple(os_name or "unknown", arch or "unknown")


def triples(platform: Platform) -> dict[str, str]:
    """``{triple}`` and ``{build_triple}`` (empty where prebake knows no triple: a recipe
    that names them then fails when it writes the folder, not when it is loaded)."""
    try:
        return {"triple": triple(platform.os, platform.arch), "build_triple": build_triple()}
    except ToolsError:
        return {"triple": "", "build_triple": ""}


def uses_tools(fields: Sequence[str]) -> bool:
    """Whether a strategy's placeholders (``template_fields``) ask for the tools folder.
    ``{meson_cross}`` does too: in a cross build Meson also probes for a compiler of the
    build machine (``cc``, ``gcc``… on ``PATH``), which the folder's refusers answer, so a
    project that needs one fails naming it instead of building with an unpinned compiler."""
    return any(f.startswith("tools[") or f in ("triple", "build_triple", "meson_cross")
               for f in fields)


def roles_named(fields: Sequence[str]) -> tuple[str, ...]:
    """``{tools[NAME]}`` names among a strategy's placeholders, in order, once each."""
    return tuple(dict.fromkeys(f[len("tools["):-1] for f in fields
                               if f.startswith("tools[") and f.endswith("]")))


def words(platform: Platform, host_tools: Sequence[str] = ()) -> dict[str, str]:
    """``{tools[NAME]}``: the one word each role (and each named host tool) is on PATH."""
    t = triples(platform)["triple"] or platform.name
    out = {role: f"{t}-{suffix}" for role, suffix in ROLES.items()}
    out.update({name: name for name in host_tools})
    return out


@dataclass(frozen=True)
class ToolsFolder:
    """The folder's scripts: file name -> text."""

    platform: str
    scripts: Mapping[str, str] = field(default_factory=dict)
    refused: tuple[str, ...] = ()  # names answered by a refuser (``refuser``)
    own: Mapping[str, str] = field(default_factory=dict)  # as/ld: the pinned driver's own
    policy: str = ""  # what is refused, as text: the portable form's, in place of the scan

    def write(self, folder: Path) -> Path:
        """Write every script into ``folder`` (replacing an earlier copy's)."""
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for name, text in sorted(self.scripts.items()):
            shellscript.write_file(folder / name, text, 0o755)
        for name in self.refused:
            shellscript.write_file(folder / name, refuser(name, self.platform), 0o755)
        return folder

    def rendered(self) -> str:
        """Every script as one text (the build log, the input hash's portable form); the
        refusers as one line of names and one script's text."""
        parts = [f"# ---- {FOLDER}/{name} ----\n{text}"
                 for name, text in sorted(self.scripts.items())]
        if self.policy:
            parts.append(self.policy)
        if self.refused:
            parts.append(refusers.summary(self.refused, self.own))
            parts.append(f"# ---- {FOLDER}/NAME (each refused name) ----\n"
                         + refuser("NAME", self.platform))
        return "\n".join(parts)


def refuser(name: str, platform: str) -> str:
    return ("#!/bin/sh\n"
            f"echo \"prebake: '{name}' is not a tool platform {platform} pins; this build "
            "fell back to it because it was not told the platform's own (give it "
            f"{{tools[…]}}: CC=… or --cc=…)\" >&2\n"
            f"exit {REFUSED_EXIT}\n")


def render(pt: PlatformTools, named: Sequence[str] = (),
           host_tools: Mapping[str, str] | None = None, make: str | None = None,
           path: str | None = None, own: Mapping[str, str] | None = None) -> ToolsFolder:
    """The folder's scripts from the unit's platform tools: every role the platform pins
    that is installed (``cc``, ``cxx`` and the roles the commands ``named`` must be), the
    host tools the commands name (name -> program), ``make``, and refusers: the bare names
    ``prebake.toolchain.refusers`` lists, and with ``path`` (the build's ``PATH``) every
    compiler's name found on it (``path`` without this folder: ``render_for_unit``);
    ``own``, the pinned driver's ``as``/``ld``, stay reachable. Without ``path`` (the
    portable form) the refusal policy stands as text instead."""
    t = triple(pt.machine.os, pt.machine.arch)
    for role in dict.fromkeys(("cc", "cxx", *named)):
        if role in ROLES:
            pt.need(role, f"the commands name {{tools[{role}]}}", ToolsError)
    scripts: dict[str, str] = {}
    for role in ROLES:
        argv = pt.with_launcher(role)
        if argv is None or role == "pkg_config":
            continue
        if role in ("cc", "cxx"):  # a configure script has no other place for the ABI's flags
            argv = (*argv, *pt.abi_flags)
        script = shellscript.wrapper_script(pt.machine.arch, argv, role,
                                            unshadow=_folder_of(pt))
        for suffix in (ROLES[role], *ALIASES.get(role, ())):
            scripts[f"{t}-{suffix}"] = script
    pkg_config = pt.get("pkg_config")
    if pkg_config is not None:
        scripts[f"{t}-pkg-config"] = scripts["pkg-config"] = shellscript.exec_script(
            pkg_config[0], {"PKG_CONFIG_LIBDIR": ":".join(pt.pkg_config_dirs()),
                            "PKG_CONFIG_PATH": ""},
            "only the unit's prefix and its dependencies: never the build machine's")
    for name, program in (host_tools or {}).items():
        scripts[name] = shellscript.exec_script(program)
    if make is not None:
        scripts.setdefault("make", shellscript.exec_script(make))
    for name, program in (own or {}).items():
        scripts.setdefault(name, shellscript.exec_script(
            program, comment="the pinned compiler's own (it runs this one by name)"))
    names = refusers.refused(path or "", {*pt.pinned_names, *scripts})
    return ToolsFolder(pt.name, scripts, names, dict(own or {}),
                       policy=refusers.describe() if path is None else "")


def _folder_of(pt: PlatformTools) -> str:
    """The tools folder's path as the unit's PATH names it (``{work}``… in the portable
    form)."""
    return f"{pt.folder}/{FOLDER}"


def portable(platform: Platform, named: Sequence[str] = (), host_tools: Sequence[str] = ()
             ) -> ToolsFolder:
    """The folder with ``{python}``, ``{work}``… for this machine's paths and no launcher:
    the text the input hash reads."""
    return render(platformtools.portable(platform), named,
                  {n: f"{{host_tools[{n}]}}" for n in host_tools}, make="make")


def for_unit(platform: Platform, *, named: Sequence[str], host_tools: Mapping[str, str],
             env: Mapping[str, str], launcher: str | None, flags: Sequence[str],
             prefix: Path, deps: Path, work_root: Path | None = None) -> ToolsFolder:
    """The folder one unit's commands use, with this machine's paths (see ``render``);
    ``make`` as the build machine has it."""
    pt = platformtools.for_unit(platform, work_root=work_root or prefix.parent, prefix=prefix,
                                deps=deps, env=env, launcher=launcher, flags=flags)
    return render_for_unit(pt, named, host_tools, env)


def render_for_unit(pt: PlatformTools, named: Sequence[str], host_tools: Mapping[str, str],
                    env: Mapping[str, str]) -> ToolsFolder:
    """``render`` with the build machine's ``make`` (found on ``env``'s ``PATH``), every
    compiler's name on that ``PATH`` refused, and the pinned driver's own ``as``/``ld``."""
    path = refusers.without(env.get("PATH", ""), _folder_of(pt))
    cc = pt.get("cc") or ()
    fam = family_of_argv(cc)
    own = refusers.own_by_name(cc, {**env, "PATH": path}, cross=pt.cross,
                               gnu_driver=fam is None or fam.name in GNU_DRIVERS)
    return render(pt, named, host_tools, make=shutil.which("make", path=path), path=path,
                  own=own)


def tools_folder(work_root: Path) -> Path:
    """Where a unit's tools folder lives (first on its commands' ``PATH``)."""
    return work_root / "toolchain" / FOLDER


def path_with(work_root: Path, path: str) -> str:
    return f"{tools_folder(work_root)}:{path}"


# ---- nm reads the target's objects ------------------------------------------------------------

NM_PROBE = "prebake_nm_probe"
NM_TIMEOUT = 300  # one compile of a one-line file (zig's first one builds nothing: warmed)


def prove_nm(folder: Path, platform: Platform, env: Mapping[str, str]) -> str:
    """Compile a one-line object with the folder's ``cc`` and list it with its ``nm``: the
    symbol must come out as the target's objects spell it (``_prebake_nm_probe`` in Mach-O).
    An ``nm`` that cannot read the target's format prints nothing for it, and FFmpeg's
    configure then takes the wrong symbol prefix without a word (its only use of ``nm`` on
    Linux and macOS). Returns the line for the build log; raises ``ToolsError``."""
    t = triple(platform.os, platform.arch)
    scratch = folder.parent / "nm-probe"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    (scratch / "probe.c").write_text(f"int {NM_PROBE} = 1;\n")
    nm = f"{t}-nm"
    try:
        cc = subprocess.run([f"{t}-cc", "-c", "probe.c", "-o", "probe.o"], cwd=scratch,
                            env=dict(env), capture_output=True, text=True, errors="replace",
                            timeout=NM_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
        if cc.returncode != 0:
            raise ToolsError(f"platform {platform.name}: its cc cannot compile a one-line C "
                             f"file: {(cc.stderr or cc.stdout).strip()[-300:]}")
        facts = inspect(scratch / "probe.o", ParseOptions(symbols=True))
        spelled = [s for s in (facts.symbols.defined if facts.symbols else ()) if NM_PROBE in s]
        out = subprocess.run([nm, "probe.o"], cwd=scratch, env=dict(env), capture_output=True,
                             text=True, errors="replace", timeout=NM_TIMEOUT, check=False,
                             stdin=subprocess.DEVNULL)
    except ToolsError:
        raise
    except (OSError, subprocess.TimeoutExpired, PrebakeError) as exc:
        raise ToolsError(f"platform {platform.name}: cannot run its cc or nm, or read what "
                         f"they made: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    listed = [line.split()[-1] for line in out.stdout.splitlines() if line.split()]
    if out.returncode != 0 or not spelled or spelled[0] not in listed:
        said = (out.stderr or out.stdout).strip().splitlines()
        raise ToolsError(
            f"platform {platform.name}: its nm ({nm}) does not read the target's objects: "
            f"{NM_PROBE} is {spelled[0] if spelled else 'unknown'} in them, nm printed "
            f"{said[-1][:200] if said else 'nothing'!r} (exit {out.returncode}); set nm in "
            f"[platforms.{platform.name}.toolchain] to one that reads them (llvm-nm reads "
            "every format)")
    return f"{nm} reads the target's objects ({spelled[0]})"


# ---- a configure script that failed -------------------------------------------------------------

CONFIG_LOG_TAIL = 256 << 10  # the end of a config.log holds its verdict and the test before it
_AUTOCONF_ERROR = re.compile(r"^configure:\d+: error: (.+)$")
_CAUSE = re.compile(r"\berror\b|not found|fatal|cannot|undefined reference|^prebake: ", re.I)
_NOT_A_CAUSE = re.compile(r"^\s*\d+\s|^(?:END|BEGIN) |^check_|^test_|^[a-z_]+=|^configure:\d+: ")


def last_error(text: str) -> str:
    """The one line that says why a configure script gave up, from its log's end: autoconf's
    ``configure:NNN: error: …`` (the last one), else the script's own last words (FFmpeg's
    ``die`` message ends ``ffbuild/config.log``: "C compiler test failed.") with the last
    error line of the test before them ("gcc: error: unrecognized command-line option …")."""
    lines = [x.rstrip() for x in text.splitlines() if x.strip()]
    if not lines:
        return "its log is empty"
    end = next((i for i in range(len(lines) - 1, -1, -1) if _AUTOCONF_ERROR.match(lines[i])),
               None)
    if end is not None:
        verdict = _AUTOCONF_ERROR.match(lines[end]).group(1).strip()  # type: ignore[union-attr]
    else:
        end, verdict = len(lines) - 1, lines[-1].strip()
    cause = next((x.strip() for x in reversed(lines[max(0, end - 40):end])
                  if _CAUSE.search(x) and not _NOT_A_CAUSE.match(x)), "")
    return f"{verdict} ({cause})" if cause and cause != verdict else verdict


