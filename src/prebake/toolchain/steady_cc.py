#!/usr/bin/env python3
"""Run one compiler process so that its output cannot depend on the build's folder or on where
the kernel placed its memory (Emscripten's ``EM_COMPILER_WRAPPER``: ``[this, clang, ARGS…]``).

Why: LLVM 21's WebAssembly backend iterates hash maps keyed by pointers when it places the
``try_table`` blocks of code that unwinds (``WebAssemblyCFGStackify``'s
``UnwindDestToTryRanges`` and ``EHPadToUnwindDest``; llvm/llvm-project#204883, fixed by #205184
after the 21 releases). Which of two nested blocks comes first follows the addresses of the
machine basic blocks. Measured on onnxruntime's ``cumsum.cc``: with address-space
randomisation, three compiles in one folder gave three objects; without it, one object in
one folder and another in any other, because the heap's layout follows the length of every
string the compiler holds — include paths, the source path, even ``-o`` and ``-MT``.

So a compile runs with randomisation off (``personality(ADDR_NO_RANDOMIZE)``, which the
``exec`` of the compiler inherits) and, where a private mount namespace can be made, sees one
folder layout in every checkout: a private tmpfs at :data:`FIXED` with the unit's work folder
bound at :data:`INNER` (its arguments, working folder and ``$PWD`` name that path), and its
outputs written to :data:`OUT` under names that do not depend on the folder, then copied to
where the build asked for them, the dependency file turned back to the real paths for make
and ninja, and its messages too. ``-ffile-prefix-map`` keeps the folder out of the object
either way. A compile that cannot have the namespace (no privilege, or something it needs
under :data:`FIXED`) still runs without randomisation, in its own folder.

A compiler cache (ccache, :data:`LAUNCHER_VARIABLE`) runs inside the namespace, but not as
the compiler's parent with its own argument list: ccache runs the compiler with its arguments
reordered and ``-fcolor-diagnostics`` added (its preprocessor's options first, then the
dependency options, ``-o`` and the source last), and that longer, reordered list is another
heap again — the flagship's archive differed in 5 of 713 members between a build through ccache
and one without. So ccache is given this file as its ``prefix_command``, with the list this
wrapper meant in :data:`EXEC_VARIABLE`: ccache's run of the compiler comes back here, and the
compiler is run with that list once it is proven to be ccache's with only its reordering and
its additions undone. ccache's entries are in a namespace of their own (:data:`CACHE_NAMESPACE`)
so an object compiled from the rewritten list before is never handed back.

Standalone on purpose: it runs inside a toolchain environment under that root's own
``python3``, once per compile, so it imports nothing of prebake and nothing slow (no
``dataclasses``, ``subprocess`` or ``shutil``: 60 ms of imports a compile, measured on a loaded
machine, against 20 ms for the interpreter itself; ``json`` is 1.1 ms).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import sys

ROOT_VARIABLE = "PREBAKE_STEADY_ROOT"  # the unit's work folder (set by the build)
LAUNCHER_VARIABLE = "PREBAKE_STEADY_LAUNCHER"  # a compiler cache to run inside (ccache)
#: set for ccache's own run of the compiler: the argument list this wrapper meant, as JSON
EXEC_VARIABLE = "PREBAKE_STEADY_EXEC"
#: what ccache adds to a compile (it captures the compiler's messages and colours them itself)
CACHE_ADDS = frozenset({"-fcolor-diagnostics", "-fdiagnostics-color"})
#: ccache's namespace for these compiles: none of the entries made before the list was restored
CACHE_NAMESPACE = "prebake-steady-2"
#: what ccache puts in its compiler's environment, taken out again
CACHE_ENV = ("UNCACHED_ERR_FD", "CCACHE_PREFIX", "CCACHE_NAMESPACE", EXEC_VARIABLE,
             LAUNCHER_VARIABLE)
#: a private tmpfs per compile (FHS: "a temporarily mounted file system"); nothing outside the
#: one compiler process sees it
FIXED = "/mnt"
INNER = FIXED + "/w"  # the unit's work folder, as every compile sees it
OUT = FIXED + "/o"  # the compile's outputs, before they are copied to their real place
#: the -MT target a compile is given (the real one, which names the folder, goes back in)
TARGET = OUT + "/target"
ADDR_NO_RANDOMIZE = 0x0040000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
# options whose value is an output file, joined (-oFILE) or not (-o FILE)
OUTPUT_OPTIONS = ("-o", "-MF")
TARGET_OPTIONS = ("-MT", "-MQ")
# a path in an argument starts at its beginning, after a separator, or after an option
# spelled with letters (-I/x, -isystem/x)
_LEFT = re.compile(r"(?:|.*[=:;,\s\"'@]|-[A-Za-z][A-Za-z-]*)", re.DOTALL)
_RIGHT = r"(?![^/\s=:;,\"'])"  # and ends where a path component ends


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # no dynamic libc: nothing can be switched
        return None


def no_randomisation(libc: ctypes.CDLL | None) -> bool:
    """Switch off address-space randomisation for the programs this process ``exec``\\ s."""
    if libc is None or not hasattr(libc, "personality"):
        return False
    current = libc.personality(0xFFFFFFFF)
    if current == -1:
        return False
    return bool(current & ADDR_NO_RANDOMIZE) or \
        libc.personality(current | ADDR_NO_RANDOMIZE) != -1


def spellings(root: str) -> list[str]:
    """The folder as given and as resolved, longest first (either can reach a compiler)."""
    out = {os.path.abspath(root).rstrip("/"), os.path.realpath(root).rstrip("/")}
    return sorted((s for s in out if len(s) > 1), key=len, reverse=True)


class Translator:
    """Spells the work folder as :data:`INNER` wherever an argument names it as a path."""

    def __init__(self, root: str) -> None:
        alts = "|".join(re.escape(s) for s in spellings(root))
        self._pattern = re.compile(f"(?:{alts}){_RIGHT}")

    def __call__(self, text: str) -> str:
        def one(m: re.Match[str]) -> str:
            return INNER if _LEFT.fullmatch(m.string[:m.start()]) else m.group(0)
        return self._pattern.sub(one, text)

    def names(self, text: str) -> bool:
        return self(text) != text


class Plan:
    """One compile as it runs in the namespace, and how its outputs go back."""

    def __init__(self, argv: list[str], cwd: str,
                 copies: list[tuple[str, str]] | None = None,
                 depfile: tuple[str, str] | None = None,
                 targets: list[str] | None = None,
                 given: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.cwd = cwd
        self.copies = copies or []  # (under OUT, real path through INNER)
        self.depfile = depfile
        # the real targets as the compiler writes them, in order: -MT's verbatim, -MQ's
        # quoted for make
        self.targets = targets or []
        self.given = given or {}  # an output under OUT -> its name as the compile gave it


def compiles(args: list[str]) -> bool:
    """Code generation happens (the only step whose output follows pointer values)."""
    return ("-c" in args or "-S" in args) and "-E" not in args


def plan(args: list[str], cwd: str, root: str) -> Plan | None:
    """The compile with every folder-dependent string replaced; ``None`` when it is not one
    (or names an output it cannot place: stdout, a file outside the work folder)."""
    tr = Translator(root)
    if not compiles(args) or not tr.names(cwd):
        return None
    inner_cwd = tr(cwd)
    out = Plan(argv=[], cwd=inner_cwd)
    i = 0
    while i < len(args):
        a = args[i]
        opt = next((o for o in (*OUTPUT_OPTIONS, *TARGET_OPTIONS)
                    if a == o or (a.startswith(o) and len(a) > len(o))), None)
        if opt is None:
            inner = tr(a)
            # the folder's two spellings (as given, resolved) give two prefix maps where they
            # differ and one where not: once translated, the same flag once
            if not (inner in out.argv and "prefix-map=" in inner and inner != a):
                out.argv.append(inner)
            i += 1
            continue
        value = a[len(opt):] if a != opt else (args[i + 1] if i + 1 < len(args) else None)
        if value is None:
            return None
        i += 1 if a != opt else 2
        if opt in TARGET_OPTIONS:
            out.targets.append(make_quoted(value) if opt == "-MQ" else value)
            out.argv += [opt, TARGET]
            continue
        real = os.path.join(inner_cwd, tr(value))
        if value == "-" or not real.startswith(INNER + "/"):
            return None
        mine = f"{OUT}/{'dep' if opt == '-MF' else 'out'}{os.path.splitext(value)[1]}"
        out.argv += [opt, mine]
        if opt == "-MF":
            out.depfile = (mine, real)
        else:
            out.copies.append((mine, real))
            out.given[mine] = value
    if out.depfile is None and ("-MD" in args or "-MMD" in args):
        return None  # the default name beside -o: rare, and not worth guessing
    return out


def hides_something(args: list[str], root: str) -> bool:
    """Whether the tmpfs over :data:`FIXED` would hide a file the compile needs (a compiler,
    a cache, a working folder there): then the compile keeps the real folder."""
    tr = Translator(root)
    names = [*args, os.environ.get("CCACHE_DIR", ""), os.environ.get(LAUNCHER_VARIABLE, "")]
    under = re.compile(re.escape(FIXED) + r"(?:/|$)")
    return any(under.search(tr(a).replace(INNER, "")) for a in names)


def make_private(libc: ctypes.CDLL) -> bool:
    """Every mount of this (new) namespace private: nothing mounted here reaches the caller's
    namespace or another compile's, whatever the propagation it was made with (systemd makes
    every mount shared, and an unshared namespace's copies stay peers of the caller's).

    In a chroot (a toolchain environment's root, or anyone's) ``/`` is no mount point and
    cannot be changed (EINVAL), while the mount the root lies on stays shared: the
    namespace's own root is reached by stepping out of the chroot (root may: a chroot into a
    folder below the current one, then ``..`` up from outside it), made private there, and
    the chroot entered again through a descriptor of it."""
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
        return True
    if ctypes.get_errno() != errno.EINVAL:
        return False
    here = os.getcwd()
    chroot = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir("/")
        os.chroot(FIXED)  # the working folder (the chroot's root) is now outside the root
        for _ in range(4096):
            here_st, up = os.stat("."), os.stat("..")
            if (here_st.st_dev, here_st.st_ino) == (up.st_dev, up.st_ino):
                break  # the namespace's root: its .. is itself
            os.chdir("..")
        os.chroot(".")
        made = bool(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0)
        os.fchdir(chroot)
        os.chroot(".")
    except OSError:
        made = False
        os.fchdir(chroot)
        os.chroot(".")  # back where the compile was started, whatever failed
    finally:
        os.close(chroot)
    os.chdir(here)
    return made


def enter_namespace(libc: ctypes.CDLL | None, root: str) -> bool:
    """A private mount namespace: a tmpfs at :data:`FIXED`, ``root`` bound at :data:`INNER`
    (needs the privilege the toolchain environment's own ``unshare --mount`` has). A
    namespace whose mounts cannot all be made private is not used (``False``): then two
    overlapping compiles would mount over each other's :data:`FIXED`."""
    if libc is None or not os.path.isdir(FIXED) or not os.path.isdir(root):
        return False
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if not make_private(libc):
        return False
    # opened before the tmpfs hides FIXED (the folder may lie under it) and after the unshare
    # (a bind's source must be a mount of the namespace it is made in)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if libc.mount(b"tmpfs", FIXED.encode(), b"tmpfs", 0, b"mode=0755") != 0:
            return False
        os.mkdir(INNER)
        os.mkdir(OUT)
        source = f"/proc/self/fd/{fd}".encode()
        return bool(libc.mount(source, INNER.encode(), None, MS_BIND | MS_REC, None) == 0)
    finally:
        os.close(fd)


def finish(p: Plan, root: str) -> str:
    """Copy the outputs to where the build asked for them; the dependency file with the real
    targets and folder again, spelt as the compiler would have written them there: the
    folder escaped for make and ninja (``\\ `` for a space, ``$$``, ``\\#``), which the
    compiler could not do for a folder it never saw. Returns what went wrong (an output
    the compile that succeeded did not leave where it wrote it): never an exit status 0
    without the object."""
    for mine, real in p.copies:
        if not os.path.exists(mine):
            return f"steady_cc: the compile succeeded but left no {back(real, root)}"
        _copy(mine, real)
    if p.depfile is None or not os.path.exists(p.depfile[0]):
        return ""
    with open(p.depfile[0], encoding="utf-8", errors="surrogateescape") as fh:
        text = fh.read()
    for t in p.targets:
        text = text.replace(TARGET, t, 1)
    for mine, real in p.copies:  # a depfile without -MT names the output, quoted
        text = text.replace(mine, make_quoted(p.given.get(mine, os.path.relpath(real, p.cwd))))
    text = back(text, make_quoted(root))
    with open(p.depfile[1], "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
    return ""


def make_quoted(path: str) -> str:
    """``path`` as GCC and clang write it into a dependency file (``-MQ``, every prerequisite):
    a space or tab after its backslashes doubled and one more, ``$`` doubled, ``#`` after a
    backslash; make and ninja read it back as the path."""
    out: list[str] = []
    slashes = 0
    for ch in path:
        if ch in " \t":
            out.append("\\" * (slashes + 1))
        elif ch == "$":
            out.append("$")
        elif ch == "#":
            out.append("\\")
        out.append(ch)
        slashes = slashes + 1 if ch == "\\" else 0
    return "".join(out)


def _copy(src: str, dest: str) -> None:
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        while chunk := fin.read(1 << 20):
            fout.write(chunk)


def run(cmd: list[str], env: dict[str, str], capture: bool) -> tuple[int, bytes]:
    """Run the compiler; with ``capture``, its standard error is returned, not passed on."""
    if not capture:
        pid = os.fork()
        if pid == 0:
            _exec(cmd, env)
        return _status(pid), b""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 2)
        os.close(w)
        _exec(cmd, env)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    return _status(pid), b"".join(chunks)


def _exec(cmd: list[str], env: dict[str, str]) -> None:
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as exc:
        os.write(2, f"steady_cc: {cmd[0]}: {exc.strerror}\n".encode())
    os._exit(127)


def _status(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by a signal: as a shell says it


def back(text: str, root: str) -> str:
    """``text`` with :data:`INNER` spelled as ``root`` (the real folder) again."""
    return re.sub(re.escape(INNER) + r"(?=/|\b|$)", lambda _: root, text)


def note_once(wrapper: str, text: str) -> None:
    """Say once per unit (a marker beside the wrapper) why its compiles may differ elsewhere:
    the build log gets one line, not one per object."""
    marker = os.path.join(os.path.dirname(os.path.abspath(wrapper)), "steady-cc.noted")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError:
        return
    sys.stderr.write(f"prebake steady_cc: {text}\n")


def restored(given: list[str], meant: list[str]) -> bool:
    """Whether ``given`` (ccache's run of the compiler) is ``meant`` reordered, with only
    ccache's own additions."""
    kept = [a for a in given if a not in CACHE_ADDS or a in meant]
    return len(given) - len(kept) <= len(CACHE_ADDS) and sorted(kept) == sorted(meant)


def exec_meant(argv: list[str]) -> int:
    """ccache's run of the compiler (``argv[1:]``): run the list the wrapper meant instead,
    when it is the same compile (else ccache's own, and say why once)."""
    env = dict(os.environ)
    meant = json.loads(env[EXEC_VARIABLE])
    for name in CACHE_ENV:
        env.pop(name, None)
    cmd = meant if restored(argv[1:], meant) else argv[1:]
    if cmd is not meant:
        note_once(argv[0], "the compiler cache's run of a compile is not the compile this "
                           "wrapper meant: its objects may differ from a build without it")
    _exec(cmd, env)
    return 127


def main(argv: list[str]) -> int:
    if EXEC_VARIABLE in os.environ:
        return exec_meant(argv)
    if len(argv) < 2:
        sys.stderr.write("usage: steady_cc.py COMPILER [ARG...]\n")
        return 2
    libc = _libc()
    if not no_randomisation(libc):
        note_once(argv[0], "address-space randomisation could not be switched off: objects "
                           "of LLVM's wasm backend may differ from one compile to the next")
    args = argv[1:]
    env = dict(os.environ)
    root = os.path.abspath(env.get(ROOT_VARIABLE, "") or "/").rstrip("/")
    p = plan(args, os.getcwd(), root) if root else None
    if p is not None and (hides_something(args, root) or not enter_namespace(libc, root)):
        note_once(argv[0], f"no private mount namespace for {FIXED} (needs the privilege of "
                           "`unshare --mount`, mounts that can all be made private, and "
                           "nothing the compile needs there): objects of LLVM's wasm backend "
                           "may differ in another folder")
        p = None
    me = ""  # this wrapper as ccache's prefix_command sees it, in the namespace
    if p is not None:
        os.chdir(p.cwd)
        tr = Translator(root)
        me = tr(os.path.abspath(argv[0]))
        env = {k: tr(v) for k, v in env.items()}
        env["PWD"] = p.cwd  # LLVM takes $PWD for the current folder when it names one
        args = p.argv
    launcher = env.get(LAUNCHER_VARIABLE, "")
    cmd = [launcher, *args] if launcher else args
    if launcher and me.startswith(INNER + "/") and not re.search(r"\s", me):
        env.update({"CCACHE_PREFIX": me, "CCACHE_NAMESPACE": CACHE_NAMESPACE,
                    EXEC_VARIABLE: json.dumps(args)})
    rc, err = run(cmd, env, capture=p is not None)
    if p is None:
        return rc
    sys.stderr.write(back(err.decode("utf-8", "surrogateescape"), root))
    if rc == 0 and (lost := finish(p, root)):
        sys.stderr.write(lost + "\n")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
