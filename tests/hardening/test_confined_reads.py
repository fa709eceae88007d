"""Readers that follow a name read only inside the input: a thin archive's members and the JS
glue next to a wasm module resolve inside the folder of the file that names them.

The hostile archives are real thin archives written byte by byte as GNU ar lays them out
(``!<thin>\\n``, a ``//`` long-name table, one header per member and no data): one names
``/etc/hostname``, one ``../../../../../../etc/hostname``, one a real ELF object of a folder
beside the archive's (whose symbol is a marker no output may show), one a link inside the
folder that leads out. Each goes through ``inspect``, ``check`` and ``fetch --contract``, as
a user would run them, and nothing of the named file may appear in any output.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import tarfile
from pathlib import Path

import pytest

from prebake.package.naming import sha256_line
from tests import support

PLATFORM = "linux-x86_64"
MARKER = "leak_marker_5f2c9a"  # the outside object's symbol: no output may ever show it
CONTRACT = 'arch = "x86_64"\n'


def _header(name: str, size: int) -> bytes:
    h = (name.ljust(16) + "0".ljust(12) + "0".ljust(6) + "0".ljust(6) + "644".ljust(8)
         + str(size).ljust(10) + "`\n").encode()
    assert len(h) == 60
    return h


def thin_archive(path: Path, *names: str, size: int = 3) -> Path:
    """A GNU thin archive whose members are ``names`` (every name is a ``/N`` reference into
    ``//``, as ``ar rcsT`` writes them)."""
    table = b"".join(n.encode() + b"/\n" for n in names)
    pad = b"\n" if len(table) % 2 else b""
    out = b"!<thin>\n" + _header("//", len(table)) + table + pad
    pos = 0
    for n in names:
        out += _header(f"/{pos}", size)
        pos += len(n) + 2
    path.write_bytes(out)
    return path


def _hostname_bytes() -> list[str]:
    """What /etc/hostname holds (what a leak would print), as text worth searching for."""
    try:
        text = Path("/etc/hostname").read_text().strip()
    except OSError:
        text = socket.gethostname()
    return [text] if len(text) >= 2 else []


@pytest.fixture(scope="module")
def outside_object() -> Path:
    """A real ELF object defining ``MARKER``, built where a hostile archive could name it."""
    folder = support.build("confined-outside",
                           {"leak.c": f"int {MARKER}(void) {{ return 42; }}\n"},
                           [["gcc", "-O2", "-c", "leak.c", "-o", "leak.o"]])
    return folder / "leak.o"


def _hostile(tmp_path: Path, outside: Path) -> dict[str, Path]:
    """Every hostile archive, each in a folder of its own."""
    cases: dict[str, Path] = {}
    for case, name in (("absolute", "/etc/hostname"),
                       ("climbing", "../../../../../../etc/hostname"),
                       ("absolute-object", str(outside)),
                       ("climbing-object", os.path.relpath(outside, tmp_path / "climbing-object"))):
        d = tmp_path / case
        d.mkdir()
        cases[case] = thin_archive(d / "libevil.a", name)
    d = tmp_path / "link"
    d.mkdir()
    (d / "inside.o").symlink_to(outside)
    cases["link"] = thin_archive(d / "libevil.a", "inside.o")
    return cases


def _leaks(text: str) -> list[str]:
    return [s for s in [MARKER, *_hostname_bytes()] if s in text]


def test_the_hostile_archives_are_real_thin_archives(tmp_path: Path, outside_object: Path) -> None:
    """GNU ar itself reads them as thin archives naming what the test says they name."""
    a = thin_archive(tmp_path / "libevil.a", "/etc/hostname")
    assert a.stat().st_size == 144
    listed = support.run(["ar", "t", a.name], tmp_path).stdout.split()
    assert listed == ["/etc/hostname"]
    b = thin_archive(tmp_path / "libup.a", "../../../../../../etc/hostname")
    assert support.run(["ar", "t", b.name], tmp_path).stdout.split() == [
        "../../../../../../etc/hostname"]
    assert b.stat().st_size == 160


@pytest.mark.parametrize("case", ["absolute", "climbing", "absolute-object", "climbing-object",
                                  "link"])
def test_inspect_and_check_refuse_a_member_outside_the_folder(
        tmp_path: Path, outside_object: Path, case: str) -> None:
    archive = _hostile(tmp_path, outside_object)[case]
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    runs = {
        "inspect --json": support.prebake("inspect", "--json", "--symbols", archive),
        "inspect": support.prebake("inspect", "--symbols", archive),
        "check": support.prebake("check", archive, "--contract", contract),
        "check --json": support.prebake("check", "--json", archive, "--contract", contract),
    }
    for what, proc in runs.items():
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, (what, out)
        assert not _leaks(out), (what, out)
        assert "Traceback" not in out
        if what == "inspect --json":  # the error is the result's, in the JSON
            [res] = json.loads(proc.stdout)["results"]
            assert res["path"] == str(archive) and "members" not in res
            assert "thin archive member" in res["error"], res
            continue
        assert str(archive) in proc.stderr and "thin archive member" in proc.stderr, (what, out)
        assert len(proc.stderr.strip().splitlines()) == 1, (what, proc.stderr)
        assert "ok" not in proc.stdout.lower().split(), (what, proc.stdout)


def test_check_of_a_folder_holding_a_hostile_archive_fails(tmp_path: Path,
                                                           outside_object: Path) -> None:
    """Found by a walk, the archive cannot be judged: a violation (exit 1), never "ok"."""
    archives = _hostile(tmp_path, outside_object)
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    for case, archive in archives.items():
        proc = support.prebake("check", "--json", archive.parent, "--contract", contract)
        assert proc.returncode == 1, (case, proc.stdout, proc.stderr)
        out = json.loads(proc.stdout)
        assert not out["ok"]
        [v] = [v for v in out["violations"] if v["rule"] == "inspect"]
        assert "thin archive member" in v["detail"] and v["path"] == str(archive)
        assert not _leaks(proc.stdout + proc.stderr), case


def test_a_thin_archive_with_a_member_missing_fails_the_check(tmp_path: Path,
                                                              outside_object: Path) -> None:
    """A member inside the folder that is not there cannot be judged either: the archive
    fails (exit 1) instead of passing on the members that could be read."""
    import shutil

    d = tmp_path / "lib"
    d.mkdir()
    shutil.copy(outside_object, d / "a.o")
    archive = thin_archive(d / "libhalf.a", "a.o", "gone.o")
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    proc = support.prebake("check", "--json", archive, "--contract", contract)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [v] = json.loads(proc.stdout)["violations"]
    assert v["rule"] == "inspect" and v["members"] == ["gone.o"], v
    (d / "gone.o").write_bytes((d / "a.o").read_bytes())
    proc = support.prebake("check", "--json", archive, "--contract", contract)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_thin_archive_reads_members_in_subfolders_of_its_own(tmp_path: Path,
                                                               outside_object: Path) -> None:
    """The rule refuses only what leaves the folder: ``obj/a.o`` and a link within are read."""
    import shutil

    (tmp_path / "lib" / "obj").mkdir(parents=True)
    shutil.copy(outside_object, tmp_path / "lib" / "obj" / "a.o")
    (tmp_path / "lib" / "b.o").symlink_to("obj/a.o")
    archive = thin_archive(tmp_path / "lib" / "libok.a", "obj/a.o", "b.o")
    proc = support.prebake("inspect", "--json", "--symbols", archive)
    assert proc.returncode == 0, proc.stderr
    [res] = json.loads(proc.stdout)["results"]
    assert [m["format"] for m in res["members"]] == ["elf", "elf"]
    assert MARKER in {d["name"] for d in res["defined"]}  # inside the folder: read


def _asset(store: Path, inner: dict[str, bytes]) -> str:
    """A release asset whose tree holds ``inner`` (path -> bytes) and a valid manifest."""
    filename = f"demo-1.0.0-{PLATFORM}.tar.xz"
    manifest = support.valid_manifest("demo", "1.0.0", PLATFORM)
    files = {**inner, "share/prebake/manifest.json": json.dumps(manifest).encode()}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    d = store / "continuous"
    d.mkdir(parents=True, exist_ok=True)
    data = buf.getvalue()
    (d / filename).write_bytes(data)
    (d / (filename + ".json")).write_text(json.dumps(manifest))
    (d / (filename + ".sha256")).write_text(sha256_line(hashlib.sha256(data).hexdigest(),
                                                        filename))
    return filename


@pytest.mark.parametrize("name", ["/etc/hostname", "../../../../../../etc/hostname", "LEAK"])
def test_fetch_with_a_contract_refuses_an_asset_with_a_hostile_thin_archive(
        tmp_path: Path, outside_object: Path, name: str) -> None:
    name = str(outside_object) if name == "LEAK" else name
    raw = thin_archive(tmp_path / "raw.a", name).read_bytes()
    _asset(tmp_path / "store", {"lib/libevil.a": raw})
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    proc = support.prebake(
        "fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", (tmp_path / "store").as_uri(),
        "--into", tmp_path / "into", "--release", "continuous", "--contract", contract,
        "--lock", tmp_path / "prebake.lock", env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    out = proc.stdout + proc.stderr
    assert proc.returncode in (1, 2), out
    assert "thin archive member" in out and "libevil.a" in out, out
    assert not _leaks(out), out
    assert not (tmp_path / "into").exists() and not (tmp_path / "prebake.lock").exists()


WAT = "(module (func (export \"f\") (result i32) i32.const 7))"
GLUE = "var Module; WebAssembly.Suspending; WebAssembly.promising; // emscripten\n"


@pytest.fixture(scope="module")
def module() -> Path:
    folder = support.build("confined-wasm", {"m.wat": WAT},
                           [["wat2wasm", "m.wat", "-o", "m.wasm"]])
    return folder / "m.wasm"


def _async(path: Path) -> tuple[object, dict[str, list[str]]]:
    proc = support.prebake("inspect", "--json", path)
    assert proc.returncode == 0, proc.stderr
    [res] = json.loads(proc.stdout)["results"]
    return res["abi"]["async"], res["evidence"]


def test_js_glue_is_read_only_inside_the_modules_folder(tmp_path: Path, module: Path) -> None:
    import shutil

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "m.js").write_text(GLUE)
    here = tmp_path / "here"
    here.mkdir()
    shutil.copy(module, here / "m.wasm")
    assert _async(here / "m.wasm")[0] is None  # no glue: not known
    (here / "m.js").symlink_to(outside / "m.js")
    found, evidence = _async(here / "m.wasm")
    assert found is None, "glue outside the folder was read"
    assert any("leads out of the module's folder" in e for e in evidence["glue"]), evidence
    (here / "m.js").unlink()
    (here / "glue").mkdir()
    (here / "glue" / "m.js").write_text(GLUE)
    (here / "m.js").symlink_to("glue/m.js")  # a link that stays inside: read
    assert _async(here / "m.wasm")[0] == "jspi"


WORKSPACE = support.platform_workspace("confined", PLATFORM, "linux", "x86_64",
                                       'cc = "gcc", cxx = "g++", ar = "ar"', 'arch = "x86_64"')


@pytest.mark.parametrize("name", ["/etc/hostname", "../../../../../../etc/hostname"])
def test_check_with_a_platform_never_says_ok(tmp_path: Path, name: str) -> None:
    """The report's own command: ``prebake check --platform linux-x86_64`` on the 144- and
    160-byte archives said "✓ ok: 1 file(s) satisfy the contract"."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prebake.toml").write_text(WORKSPACE)
    archive = thin_archive(ws / "libevil.a", name)
    for flags in ((), ("--json",)):
        proc = support.prebake("-C", ws, "check", *flags, "--platform", PLATFORM, archive)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert "ok" not in proc.stdout.lower() and "satisfy" not in out, out
        assert "thin archive member" in proc.stderr and not _leaks(out), out


def test_in_a_tree_being_checked_members_may_live_anywhere_inside_it(
        tmp_path: Path, outside_object: Path) -> None:
    """``ar rcsT lib/libt.a obj/a.o`` stores ``../obj/a.o``: checking the tree reads it, the
    archive alone (or its folder alone) does not reach it."""
    import shutil

    tree = tmp_path / "build"
    (tree / "lib").mkdir(parents=True)
    (tree / "obj").mkdir()
    shutil.copy(outside_object, tree / "obj" / "a.o")
    support.run(["ar", "rcsT", "lib/libt.a", "obj/a.o"], tree)
    assert support.run(["ar", "t", "libt.a"], tree / "lib").stdout.split() == ["../obj/a.o"]
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    assert support.prebake("check", tree, "--contract", contract).returncode == 0
    proc = support.prebake("inspect", "--json", "--symbols", tree)
    assert proc.returncode == 0, proc.stderr
    [lib] = [r for r in json.loads(proc.stdout)["results"] if r["path"].endswith("libt.a")]
    assert [m["format"] for m in lib["members"]] == ["elf"]
    for alone in (tree / "lib" / "libt.a", tree / "lib"):
        proc = support.prebake("check", alone, "--contract", contract)
        assert proc.returncode in (1, 2) and "climbs out" in proc.stdout + proc.stderr


def test_an_asset_may_hold_a_thin_archive_of_its_own_objects(tmp_path: Path,
                                                             outside_object: Path) -> None:
    """The unpacked asset is the tree: ``lib/libt.a`` naming ``../obj/a.o`` inside it is
    read and checked; the same archive naming a file outside the asset is refused."""
    raw = thin_archive(tmp_path / "raw.a", "../obj/a.o", size=outside_object.stat().st_size)
    _asset(tmp_path / "store", {"lib/libt.a": raw.read_bytes(),
                                "obj/a.o": outside_object.read_bytes()})
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    proc = support.prebake(
        "fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", (tmp_path / "store").as_uri(),
        "--into", tmp_path / "into", "--release", "continuous", "--contract", contract,
        "--lock", tmp_path / "prebake.lock", env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "into" / "lib" / "libt.a").is_file()
