"""Never ok on bytes prebake did not read: what a linker or loader would use is either read or
makes the verdict fail.

Each case is a real toolchain's output edited as an attacker would, and each is first shown
to work for the tool that consumes it (GNU ld and lld link the hidden object, ld.so loads the
hidden library), so the test proves a real hole is closed, not a made-up one:

* an archive whose symbol index points inside a text member's data, at an embedded member
  header and an object that throws: the linkers link it, ``check`` with ``eh = "none"`` must
  fail, naming the index entry;
* a tree holding a mode-000 object and a mode-000 folder, checked as an unprivileged user
  (the test drops root itself: CI runs as root, who reads everything): the check fails, naming
  both, and ``inspect`` still gives the readable file's facts as valid JSON;
* a shared library whose ``.dynamic``, ``.gnu.version_r`` and ``.gnu.version`` section headers
  are retyped, hiding ``NEEDED libm.so.6`` and ``GLIBC_2.34`` from a reader of sections, never
  from the loader (which reads ``PT_DYNAMIC``): ``check`` with ``glibc_max = "2.28"`` and
  ``allowed_needed = ["libc.so.6"]`` must fail, naming both.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support

THROWER = ("extern \"C\" int hidden_throw(int x) {\n"
           "  try { if (x) throw x; } catch (int e) { return e + 1; }\n"
           "  return 0;\n}\n")
PLAIN = "int plain_fn(void) { return 1; }\n"
MAIN = ("extern \"C\" int hidden_throw(int);\n"
        "int main() { return hidden_throw(41) == 42 ? 0 : 1; }\n")
NO_EH = 'arch = "x86_64"\neh = "none"\n'


def _header(name: str, size: int) -> bytes:
    h = (name.ljust(16) + "0".ljust(12) + "0".ljust(6) + "0".ljust(6) + "644".ljust(8)
         + str(size).ljust(10) + "`\n").encode()
    assert len(h) == 60
    return h


def _pad(data: bytes) -> bytes:
    return data + (b"\n" if len(data) % 2 else b"")


@pytest.fixture(scope="module")
def objects() -> Path:
    return support.build("unread-index", {"thrower.cc": THROWER, "plain.c": PLAIN,
                                          "main.cc": MAIN},
                         [["g++", "-O2", "-c", "thrower.cc", "-o", "thrower.o"],
                          ["gcc", "-O2", "-c", "plain.c", "-o", "plain.o"],
                          ["g++", "-O2", "-c", "main.cc", "-o", "main.o"]])


def hidden_member_archive(path: Path, plain: bytes, hidden: bytes) -> Path:
    """``plain.o`` and a text member ``note.txt`` whose data is a member header and the
    object ``hidden``; the GNU index names ``plain_fn`` at ``plain.o`` and ``hidden_throw``
    at the header inside ``note.txt``'s data (a member walk never sees it)."""
    names = b"plain_fn\0hidden_throw\0"
    index_size = 4 + 2 * 4 + len(names)
    plain_at = 8 + 60 + index_size + index_size % 2
    note_at = plain_at + 60 + len(_pad(plain))
    note = _header("thrower.o/", len(hidden)) + hidden
    index = struct.pack(">III", 2, plain_at, note_at + 60) + names
    out = (b"!<arch>\n" + _header("/", len(index)) + _pad(index)
           + _header("plain.o/", len(plain)) + _pad(plain)
           + _header("note.txt/", len(note)) + _pad(note))
    path.write_bytes(out)
    return path


def _check(*args: str | Path, as_user: list[str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    cmd = [*(as_user or []), sys.executable, "-m", "prebake", *map(str, args)]
    return subprocess.run(cmd, env=support.tool_env(), capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("linker", ["bfd", "lld"])
def test_the_linkers_link_the_object_the_index_hides(tmp_path: Path, objects: Path,
                                                     linker: str) -> None:
    """The hole is real: GNU ld and lld follow the index into the text member's data."""
    if linker == "lld" and shutil.which("ld.lld") is None:
        pytest.skip("no ld.lld")
    lib = hidden_member_archive(tmp_path / "libhide.a", (objects / "plain.o").read_bytes(),
                                (objects / "thrower.o").read_bytes())
    prog = tmp_path / "prog"
    subprocess.run(["g++", f"-fuse-ld={linker}", str(objects / "main.o"), str(lib),
                    "-o", str(prog)], check=True, capture_output=True)
    assert subprocess.run([str(prog)]).returncode == 0  # hidden_throw(41) threw and caught


def test_check_refuses_an_index_pointing_inside_a_member(tmp_path: Path, objects: Path) -> None:
    """Named, the archive is an error (exit 2); found in a folder, a violation (exit 1):
    never ok, and the message names the entry and the offset it points at."""
    d = tmp_path / "lib"
    d.mkdir()
    lib = hidden_member_archive(d / "libhide.a", (objects / "plain.o").read_bytes(),
                                (objects / "thrower.o").read_bytes())
    contract = tmp_path / "contract.toml"
    contract.write_text(NO_EH)
    named = _check("check", lib, "--contract", contract)
    assert named.returncode == 2, named.stdout + named.stderr
    assert "symbol index entry 1 ('hidden_throw') points at offset" in named.stderr
    assert len(named.stderr.strip().splitlines()) == 1
    folder = _check("check", "--json", d, "--contract", contract)
    assert folder.returncode == 1, folder.stdout + folder.stderr
    [v] = json.loads(folder.stdout)["violations"]
    assert v["rule"] == "inspect" and "'hidden_throw'" in v["detail"], v
    # the same archive without the hidden entry passes: the refusal is about the index
    plain = hidden_member_archive(d / "libhide.a", (objects / "plain.o").read_bytes(), b"text")
    data = bytearray(plain.read_bytes())
    at = 8 + 60 + 4 + 4  # the second offset: point it at plain.o's header as well
    data[at : at + 4] = data[at - 4 : at]
    plain.write_bytes(bytes(data))
    ok = _check("check", plain, "--contract", contract)
    assert ok.returncode == 0, ok.stdout + ok.stderr


# --- unreadable files and folders, as an unprivileged user ---------------------------------


def _unprivileged() -> list[str]:
    """The command prefix that runs as ``nobody`` (root reads mode-000 files, so the test
    must leave root itself), or [] when the test already runs unprivileged."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and no setpriv to drop privileges")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's tmp_path is root's alone)."""
    d = Path(tempfile.mkdtemp(prefix="prebake-unread-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(d)


def test_unreadable_file_and_folder_fail_the_check(public_tmp: Path, objects: Path) -> None:
    tree = public_tmp / "tree"
    (tree / "locked").mkdir(parents=True)
    shutil.copy(objects / "plain.o", tree / "good.o")
    shutil.copy(objects / "thrower.o", tree / "secret.o")
    shutil.copy(objects / "thrower.o", tree / "locked" / "inner.o")
    contract = public_tmp / "contract.toml"
    contract.write_text(NO_EH)
    for p in (tree, tree / "good.o", contract):
        p.chmod(p.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if p.is_dir() else 0))
    (tree / "secret.o").chmod(0)
    (tree / "locked").chmod(0)
    user = _unprivileged()
    proc = _check("check", "--json", tree, "--contract", contract, as_user=user)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert not out["ok"]
    unread = {v["path"]: v["detail"] for v in out["violations"] if v["rule"] == "inspect"}
    assert set(unread) == {str(tree / "secret.o"), str(tree / "locked")}, out
    assert all("cannot be read" in d for d in unread.values()), unread
    human = _check("check", tree, "--contract", contract, as_user=user)
    assert human.returncode == 1 and "✓" not in human.stdout, human.stdout
    # inspect: the readable file's facts, each unreadable path its error, one valid JSON
    shown = _check("inspect", "--json", tree, as_user=user)
    assert shown.returncode == 0, shown.stderr
    results = {r["path"]: r for r in json.loads(shown.stdout)["results"]}
    assert results[str(tree / "good.o")].get("error") is None
    assert "cannot be read" in results[str(tree / "secret.o")]["error"]
    assert "cannot be read" in results[str(tree / "locked")]["error"]
    # named directly, an unreadable file is bad input
    named = _check("check", tree / "secret.o", "--contract", contract, as_user=user)
    assert named.returncode == 2 and "secret.o" in named.stderr, named.stderr


# --- sections retyped to hide what the loader reads ----------------------------------------

LIBM = ("#include <math.h>\n#include <pthread.h>\n"
        "double grow(double x) { return exp(x); }\n"
        "static void *run(void *p) { return p; }\n"
        "int spawn(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }\n")
SHT_PROGBITS = 1
HIDE = (".dynamic", ".gnu.version_r", ".gnu.version")


def _retype(path: Path, names: tuple[str, ...], to: int = SHT_PROGBITS) -> None:
    """Set the ``sh_type`` of the named sections of a little-endian ELF64 file to ``to``
    (what an attacker with a hex editor does; the segments stay as the loader reads them)."""
    data = bytearray(path.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    str_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    hit = set()
    for i in range(shnum):
        at = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", data, at)
        end = data.index(b"\0", str_off + name_off)
        name = data[str_off + name_off : end].decode()
        if name in names:
            struct.pack_into("<I", data, at + 4, to)
            hit.add(name)
    assert hit == set(names), hit
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module", params=["gcc", "clang-lld"])
def libm_user(request: pytest.FixtureRequest) -> Path:
    cc = (["gcc"] if request.param == "gcc" else ["clang", "-fuse-ld=lld"])
    folder = support.build(f"unread-dynamic-{request.param}", {"lib.c": LIBM},
                           [[*cc, "-O2", "-shared", "-fPIC", "lib.c", "-o", "libgrow.so",
                             "-Wl,--no-as-needed", "-lm", "-pthread"]])
    return folder / "libgrow.so"


def test_retyped_sections_hide_nothing_from_the_check(tmp_path: Path, libm_user: Path) -> None:
    contract = tmp_path / "contract.toml"
    contract.write_text('arch = "x86_64"\nglibc_max = "2.28"\nallowed_needed = ["libc.so.6"]\n')
    honest = _check("check", "--json", libm_user, "--contract", contract)
    assert honest.returncode == 1, honest.stdout + honest.stderr
    rules = {v["rule"] for v in json.loads(honest.stdout)["violations"]}
    assert {"glibc_max", "allowed_needed"} <= rules
    lib = tmp_path / "libgrow.so"
    shutil.copy(libm_user, lib)
    _retype(lib, HIDE)
    # the loader does not care: it reads PT_DYNAMIC, loads libm and checks GLIBC_2.34
    probe = ("import ctypes, sys; ctypes.CDLL(sys.argv[1]); "
             "print(open('/proc/self/maps').read())")
    loaded = subprocess.run([sys.executable, "-c", probe, str(lib)], capture_output=True,
                            text=True, check=True)
    assert "libm.so.6" in loaded.stdout
    edited = _check("check", lib, "--contract", contract)
    assert edited.returncode != 0, edited.stdout + edited.stderr
    line = edited.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "PT_DYNAMIC" in line and "'.dynamic' (type PROGBITS)" in line, line
    assert "disagree" in line
    # in a folder: a violation naming it, exit 1
    d = tmp_path / "tree"
    d.mkdir()
    shutil.copy(lib, d / "libgrow.so")
    folder = _check("check", "--json", d, "--contract", contract)
    assert folder.returncode == 1
    assert any("PT_DYNAMIC" in v["detail"] for v in json.loads(folder.stdout)["violations"])


@pytest.mark.parametrize("names", [(".gnu.version_r",), (".gnu.version",),
                                   (".gnu.version_r", ".gnu.version")])
def test_each_retyped_version_section_is_named(tmp_path: Path, libm_user: Path,
                                               names: tuple[str, ...]) -> None:
    lib = tmp_path / "libgrow.so"
    shutil.copy(libm_user, lib)
    _retype(lib, names)
    proc = _check("inspect", "--json", lib)
    assert proc.returncode == 2
    [r] = json.loads(proc.stdout)["results"]
    assert f"'{names[0]}' (type PROGBITS)" in r["error"] or "DT_VER" in r["error"], r["error"]
    assert "disagree" in r["error"]


def test_loader_view_gives_the_sections_facts_when_they_agree(libm_user: Path) -> None:
    """Unedited, the loader's view is what the sections said: needed, versions, symbols."""
    from prebake.inspect import ParseOptions, inspect

    f = inspect(libm_user, ParseOptions(symbols=True))
    assert f.needed is not None and "libm.so.6" in f.needed and "libc.so.6" in f.needed
    assert f.abi.glibc_max is not None and f.abi.glibc_max >= "2.34"
    assert f.symbols is not None and {"grow", "spawn"} <= set(f.symbols.exports)
    assert f.symbols.versions.get("pthread_create") == "GLIBC_2.34"


def test_a_separate_debug_file_is_no_loadable_image(tmp_path: Path, libm_user: Path) -> None:
    """``objcopy --only-keep-debug`` keeps the program headers with a ``PT_DYNAMIC`` of no
    file bytes (the sections are NOBITS): glibc refuses to load it ("object file has no
    dynamic section"), so it holds nothing the loader reads and is no disagreement."""
    debug = tmp_path / "libgrow.so.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(libm_user), str(debug)], check=True)
    refused = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                              str(debug)], capture_output=True, text=True)
    assert refused.returncode != 0 and "no dynamic section" in refused.stderr
    from prebake.inspect import inspect

    f = inspect(debug)
    assert f.error is None and f.needed == [] and f.abi.glibc_max is None
