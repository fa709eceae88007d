"""``inspect`` streams its output from a process pool: same content as the library says.

The reference is built in this process from the library API the command does not use for its
output (``Facts.to_json`` + ``json.dumps(indent=2, sort_keys=True)``, the code path of the
unstreamed command): the streamed JSON must be the same bytes. The command runs as a whole
process (its pool forks workers), once on every core and once pinned to one core (no pool).
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from prebake.inspect import ParseOptions, inspect
from prebake.inspect.demangle import demangle
from tests import support

LLVM = Path("/usr/lib/llvm-14/lib")
# small and large, C and C++, with and without weak and undefined-only members
ARCHIVES = [LLVM / n for n in ("libLLVMDemangle.a", "libLLVMSupport.a", "libLLVMBitstreamReader.a",
                               "libLLVMXCoreInfo.a")]
pytestmark = pytest.mark.skipif(not all(p.is_file() for p in ARCHIVES),
                                reason="needs Debian's llvm-14-dev")
SCHEMA = json.loads((support.ROOT / "schemas/inspect.schema.json").read_text())


def _run(*args: str | Path, one_core: bool = False) -> subprocess.CompletedProcess[bytes]:
    pre = None
    if one_core:
        def pre() -> None:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    return subprocess.run([sys.executable, "-m", "prebake", "inspect", *map(str, args)],
                          capture_output=True, check=False, preexec_fn=pre,
                          env=support.tool_env(None))


def _reference(paths: list[Path], symbols: bool) -> bytes:
    payload = {"schema_version": 1,
               "results": [inspect(p, ParseOptions(symbols=symbols))
                           .to_json(symbols=symbols, demangle=demangle) for p in paths]}
    return (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


@pytest.mark.parametrize("symbols", [True, False])
def test_streamed_json_is_the_documents_bytes(symbols: bool) -> None:
    flags = ["--json", "--symbols"] if symbols else ["--json"]
    proc = _run(*flags, *ARCHIVES)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _reference(ARCHIVES, symbols)
    jsonschema.validate(json.loads(proc.stdout), SCHEMA)
    # the pool and the serial path agree byte for byte
    assert _run(*flags, *ARCHIVES, one_core=True).stdout == proc.stdout


@pytest.mark.parametrize("flags", [["inspect", "--symbols"], ["inspect", "--symbols", "--json"],
                                   ["--debug", "inspect", "--json"]])
def test_a_reader_that_stops_early_ends_the_run_quietly(tmp_path: Path, flags: list[str]
                                                        ) -> None:
    """``prebake inspect --symbols big.a | head``: like a C tool that SIGPIPE ends (status
    141), no message and no traceback (not even with --debug), and the private folders
    the workers spilled their outputs into are gone."""
    env = {**support.tool_env(None), "TMPDIR": str(tmp_path)}
    paths = [*ARCHIVES, *sorted(LLVM.glob("libLLVMCodeGen.a")), *ARCHIVES]
    proc = subprocess.Popen([sys.executable, "-m", "prebake", *flags, *map(str, paths)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(4096)) == 4096
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, err
    assert err == b""
    assert list(tmp_path.iterdir()) == []


def test_symbol_lines_list_every_member_symbol_in_order() -> None:
    proc = _run("--symbols", *ARCHIVES)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    lines = [ln for ln in text.splitlines() if ln.startswith(("  T ", "  W ", "  U "))]
    want = []
    for p in ARCHIVES:
        for m in inspect(p, ParseOptions(symbols=True)).members or []:
            sy = m.symbols
            if sy is None:
                continue
            where = f"  ({m.details['member']})"
            for n in sy.defined:
                dm = demangle(n)
                want.append(f"  {'W' if n in sy.weak else 'T'} {n}" + (f"  {dm}" if dm else "")
                            + where)
            want += [f"  U {n}" + (f"  {demangle(n)}" if demangle(n) else "") + where
                     for n in sy.undefined]
    assert lines == want
    assert any("llvm::" in ln for ln in lines)  # demangled forms are there
    assert _run("--symbols", *ARCHIVES, one_core=True).stdout == proc.stdout


def test_human_table_names_every_archive_and_its_facts() -> None:
    proc = _run(*ARCHIVES)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    starts = [text.index(f"{p}  archive static-library linux x86_64") for p in ARCHIVES]
    assert starts == sorted(starts)  # input order
    support_facts = inspect(ARCHIVES[1])
    assert f"{len(support_facts.members or [])} members" in text
    assert "┃ member" in text and "… " in text  # the member table, cut at 60 rows


def test_folder_lists_its_binaries_and_errors_each_bad_one(tmp_path: Path) -> None:
    shutil.copy(ARCHIVES[0], tmp_path / "liba.a")
    (tmp_path / "bad.o").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    (tmp_path / "notes.txt").write_text("not a binary\n")
    proc = _run("--json", tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [r["path"] for r in results] == [str(tmp_path / "bad.o"), str(tmp_path / "liba.a")]
    assert "error" in results[0] and "error" not in results[1]


def _archive_of_tiny_members(path: Path, count: int, member: bytes) -> None:
    """A GNU ar archive of ``count`` copies of ``member`` (names via the ``//`` table)."""
    names = b"".join(b"m%06d.o/\n" % i for i in range(count))
    with open(path, "wb") as fh:
        fh.write(b"!<arch>\n")
        fh.write(b"%-16s%-12s%-6s%-6s%-8s%-10d`\n" % (b"//", b"0", b"0", b"0", b"0", len(names)))
        fh.write(names + (b"\n" if len(names) % 2 else b""))
        pad = b"\n" if len(member) % 2 else b""
        for i in range(count):
            fh.write(b"%-16s%-12s%-6s%-6s%-8s%-10d`\n" % (b"/%d" % (11 * i), b"0", b"0", b"0",
                                                          b"644", len(member)))
            fh.write(member + pad)


def _many(tmp_path: Path, count: int) -> list[Path]:
    """``count`` archives of 100 000 copies of one tiny real object each."""
    obj = support.build("tiny-member", {"t.c": "int t(void) { return 0; }\n"},
                        [["gcc", "-Os", "-c", "-fno-asynchronous-unwind-tables", "t.c"]]) / "t.o"
    ars = [tmp_path / f"libmany{i}.a" for i in range(count)]
    for ar in ars:
        _archive_of_tiny_members(ar, 100_000, obj.read_bytes())
    return ars


def _measured(paths: list[Path], out: Path) -> tuple[int, int]:
    """``inspect --json paths`` in a fresh process writing to ``out``: its own peak memory
    (VmHWM) and its largest worker's (the children's ru_maxrss), in kB.

    Not the process's own ru_maxrss: Linux folds the peak of the memory a process had before
    exec (pytest's, copied by fork) into it, which made a whole-suite run report pytest's
    541 MB for a child that used 215 MB. Workers fork from the small child, so theirs is
    honest."""
    code = ("import resource, sys\n"
            "from prebake.cli import main\n"
            f"sys.stdout = open({str(out)!r}, 'w')\n"
            f"rc = main(['inspect', '--json', *{[str(p) for p in paths]!r}])\n"
            "sys.stdout.close()\n"
            "hwm = [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM')]\n"
            "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
            "print(rc, hwm[0], kids, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=support.tool_env(None), check=False)
    assert proc.returncode == 0, proc.stderr
    rc, own_kb, worker_kb = map(int, proc.stderr.split())
    assert rc == 0
    return own_kb, worker_kb


def test_100k_tiny_members_stay_under_300_mb(tmp_path: Path) -> None:
    """A hostile shape: the JSON of 100 000 members is streamed, never held whole."""
    out = tmp_path / "out.json"
    rss_kb, _ = _measured(_many(tmp_path, 1), out)
    assert rss_kb < 300 * 1024, f"peak RSS {rss_kb} kB"  # VmHWM is in kB
    with open(out) as fh:
        doc = json.load(fh)
    [res] = doc["results"]
    assert len(res["members"]) == 100_000
    assert res["members"][-1]["details"]["member"] == "m099999.o"


def test_100k_tiny_members_twice_stay_under_300_mb_in_every_worker(tmp_path: Path) -> None:
    """The pooled path: two such archives, one per worker; each worker's peak and the
    parent's stay bounded, and both results are written whole."""
    out = tmp_path / "out.json"
    parent_kb, worker_kb = _measured(_many(tmp_path, 2), out)
    if len(os.sched_getaffinity(0)) > 1:
        assert worker_kb > 0  # a pool ran
    assert parent_kb < 300 * 1024 and worker_kb < 300 * 1024, (parent_kb, worker_kb)
    with open(out, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert mm[:16] == b'{\n  "results": ['
        assert mm[-24:].endswith(b'"schema_version": 1\n}\n')
        lasts, at = 0, mm.find(b'"member": "m099999.o"')
        while at >= 0:
            lasts, at = lasts + 1, mm.find(b'"member": "m099999.o"', at + 1)
    assert lasts == 2


def _targets() -> list:  # type: ignore[type-arg]
    from prebake.inspect.runner import Target

    return [Target(str(p), file=p, size=p.stat().st_size) for p in ARCHIVES]


@pytest.mark.skipif(sys.platform != "linux", reason="the forked workers are Linux's")
def test_an_error_in_a_forked_worker_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader's bug in a worker reaches the command as that exception (its type and words,
    as a pool's would), and the workers are reaped."""
    from contextlib import ExitStack

    from prebake.inspect import runner

    def broken(*_: object) -> None:
        raise ZeroDivisionError("a reader's bug")

    monkeypatch.setattr(runner, "usable_cores", lambda: 2)
    monkeypatch.setattr(runner, "job", broken)  # the children are forked with it
    mode = runner.Mode(symbols=False, deep=False, json=True, color=False)
    with ExitStack() as stack, pytest.raises(ZeroDivisionError, match="a reader's bug"):
        list(runner.results(_targets(), mode, stack))
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind


@pytest.mark.skipif(sys.platform != "linux", reason="the forked workers are Linux's")
def test_a_worker_that_dies_is_one_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import ExitStack

    from prebake.errors import PrebakeError
    from prebake.inspect import runner

    def killed(*_: object) -> None:
        os.kill(os.getpid(), 9)

    monkeypatch.setattr(runner, "usable_cores", lambda: 2)
    monkeypatch.setattr(runner, "job", killed)
    mode = runner.Mode(symbols=False, deep=False, json=True, color=False)
    with ExitStack() as stack, pytest.raises(PrebakeError, match=r"inspect worker \(pid \d+\) "
                                             r"ended before its results \(killed by signal 9\)"):
        list(runner.results(_targets(), mode, stack))
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_shares_deal_the_biggest_first_to_the_least_loaded() -> None:
    from prebake.inspect.runner import Target, shares

    sizes = [5, 100, 7, 60, 50, 3]
    got = shares([Target(str(i), size=s) for i, s in enumerate(sizes)], 2)
    assert got == [[1, 2, 0], [3, 4, 5]]  # 112 and 113 bytes
    assert sorted(i for s in got for i in s) == list(range(len(sizes)))
