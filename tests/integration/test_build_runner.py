"""The build runner's pieces: the sanitised environment, placeholder expansion, the immutability
snapshot and the process runner (real processes, no toolchain)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from prebake.bake.process import BuildLog, Context, expand, run_logged
from prebake.bake.stamp import compare, snapshot
from prebake.errors import PrebakeError
from prebake.variables import FLAG_VARIABLES, dropped, sanitized

CALLER = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "CFLAGS": "-flto", "CXXFLAGS": "-flto",
          "LDFLAGS": "-flto", "EMCC_CFLAGS": "-flto", "CPPFLAGS": "-DX", "CC": "clang",
          "MAKEFLAGS": "-j64", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "GH_TOKEN": "ghp_x",
          "NODE_PATH": "/usr/share/nodejs"}


def test_env_is_an_allowlist_never_the_callers_environment() -> None:
    env = sanitized(CALLER)
    assert env["PATH"] == "/usr/bin:/bin" and env["HOME"] == "/home/u"
    assert env["NODE_PATH"] == "/usr/share/nodejs"
    for k in (*FLAG_VARIABLES, "AWS_SECRET_ACCESS_KEY", "GH_TOKEN"):
        assert k not in env, k
    assert env["SOURCE_DATE_EPOCH"] == "315532800" and env["TZ"] == "UTC"
    assert set(dropped(CALLER, env)) >= {"CFLAGS", "CXXFLAGS", "LDFLAGS", "EMCC_CFLAGS", "CC"}


def test_platform_and_recipe_env_apply_and_env_unset_wins() -> None:
    env = sanitized(CALLER, platform_env={"CFLAGS": "-O2", "EM_CACHE": "/c"},
                     recipe_env={"CXXFLAGS": "-O3"}, unset=["CFLAGS"])
    assert "CFLAGS" not in env
    assert env["CXXFLAGS"] == "-O3" and env["EM_CACHE"] == "/c"


def test_placeholders_expand_argv_tokens_and_pins() -> None:
    ctx = Context(values={"src": "/w/src", "prefix": "/w/p", "jobs": "2"},
                  pins={"emsdk": "5.0.5"},
                  argv={"cxx": ("/py", "-m", "ziglang", "c++", "-target", "x"), "cc": ("gcc",)})
    argv = expand("{cxx} -c {src}/a.cpp --emsdk_version {pins[emsdk]} -j{jobs}", ctx, "t")
    assert argv == ["/py", "-m", "ziglang", "c++", "-target", "x", "-c", "/w/src/a.cpp",
                    "--emsdk_version", "5.0.5", "-j2"]
    assert expand(("CC={cc}", "{prefix}/lib dir"), ctx, "t") == ["CC=gcc", "/w/p/lib dir"]
    with pytest.raises(PrebakeError, match="unknown placeholder"):
        expand("{nope}", ctx, "recipe x command 1")


def test_snapshot_compare_names_changed_and_deleted(tmp_path: Path) -> None:
    p = tmp_path / "prefix"
    (p / "lib").mkdir(parents=True)
    (p / "lib" / "a.a").write_bytes(b"a")
    (p / "lib" / "b.a").write_bytes(b"b")
    (p / "lib" / "l.so").symlink_to("a.a")
    before = snapshot(p)
    (p / "lib" / "a.a").write_bytes(b"A")
    (p / "lib" / "b.a").unlink()
    (p / "lib" / "c.a").write_bytes(b"c")
    (p / "lib" / "l.so").unlink()
    (p / "lib" / "l.so").symlink_to("c.a")
    diff = compare(before, snapshot(p))
    assert diff.changed == ["lib/a.a", "lib/l.so"] and diff.deleted == ["lib/b.a"]
    assert diff.added == ["lib/c.a"] and not diff.ok
    assert "changed: lib/a.a" in diff.render("media")


def test_run_logged_records_output_and_status(tmp_path: Path) -> None:
    log = BuildLog(tmp_path / "u.log")
    rc = run_logged(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path / "b",
                    env={"PATH": "/usr/bin:/bin"}, log=log)
    log.close()
    text = (tmp_path / "u.log").read_text()
    assert rc == 3 and "out\n" in text and "err\n" in text and "# exit status 3" in text
    assert "$ cd " in text and "exit 3" in text


def test_cancel_kills_the_whole_process_group(tmp_path: Path) -> None:
    log = BuildLog(tmp_path / "u.log")
    cancel = threading.Event()
    pidfile = tmp_path / "child.pid"
    threading.Timer(0.5, cancel.set).start()
    t0 = time.monotonic()
    rc = run_logged(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], cwd=tmp_path,
                    env={"PATH": "/usr/bin:/bin"}, log=log, cancel=cancel)
    log.close()
    assert rc == -1 and time.monotonic() - t0 < 10
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(
        f"/proc/{child}/stat").read_text().split()[2], "the grandchild was killed too"


def test_missing_tool_is_exit_127(tmp_path: Path) -> None:
    log = BuildLog(tmp_path / "u.log")
    assert run_logged(["no-such-tool-xyz"], cwd=tmp_path, env={"PATH": "/usr/bin"},
                      log=log) == 127


def test_one_build_per_workspace_at_a_time(tmp_path: Path) -> None:
    import fcntl
    import shutil

    from prebake.bake import Options, build
    from prebake.intake import load_workspace
    from tests import support

    ws_dir = tmp_path / "sdk"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws_dir,
                    ignore=shutil.ignore_patterns(".prebake", "releases"))
    ws = load_workspace(ws_dir)
    lock = ws_dir / ".prebake" / "build.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        with pytest.raises(PrebakeError, match="another prebake build is running"):
            build(ws, [], Options())
        assert build(ws, [], Options(dry_run=True)) == [], "a dry run needs no lock"
    assert build(ws, [], Options()) == []
