"""Hostile names: every name that becomes a path is checked where it enters, by
``prebake.names``; hostile names are exit 2 with nothing written or deleted outside the
workspace's ``.prebake/``, the cache, ``--into`` or the store (a walk of the whole test folder
before and after each run proves it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prebake.errors import ConfigError, PrebakeError
from tests import support
from tests.hardening.walk import Tree
from tests.servers.assets import make_asset
from tests.servers.static_http import StaticServer

EXAMPLE = support.ROOT / "examples" / "sdk"
PLATFORM = "linux-x86_64"
HOSTILE = ["..", ".", "../x", "a/b", "a\\b", "", "x\n", "v1\x1b[31m", "-rf", ".hidden",
           "a\0b", "x" * 200, "é", "a b", "/abs"]


@pytest.mark.parametrize("bad", HOSTILE)
def test_the_one_validator_refuses_what_is_not_one_path_component(bad: str) -> None:
    from prebake.names import check_name, name_problem

    assert name_problem(bad) is not None
    with pytest.raises(PrebakeError) as info:
        check_name(bad, "--release")
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("good", ["continuous", "v1.27.0", "1.27.0", "core", "linux-x86_64",
                                  "kiln-sdk", "abseil_cpp", "1.0.0+build.2", "2024~rc1"])
def test_ordinary_names_pass(good: str) -> None:
    from prebake.names import check_name

    assert check_name(good, "x") == good


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(".prebake", "releases"))
    return ws


def test_hostile_stage_name_is_refused_before_any_delete(tmp_path: Path) -> None:
    """``[stages."../../../../victim"]`` with a per-recipe stage: today's main deletes and
    refills ``<outside>/victim-pixelbuf/prefix`` and exits 0."""
    ws = _workspace(tmp_path)
    text = (ws / "prebake.toml").read_text()
    text = text.replace('[stages.media]\nrecipes = ["pixelbuf"]\nafter = ["core"]\n'
                        'package = "prefix"',
                        '[stages."../../../../victim"]\nrecipes = ["pixelbuf"]\n'
                        'after = ["core"]\npackage = "per-recipe"')
    text = text.replace('full = ["core", "media"]', 'full = ["core"]')
    text = text.replace('[stages.extra]\nrecipes = ["onnxruntime"]\nafter = ["core"]\n'
                        'package = "per-recipe"', "")  # only the two quick stages
    assert "onnxruntime\"]" not in text
    (ws / "prebake.toml").write_text(text)
    for victim in (tmp_path / "victim-pixelbuf" / "prefix", tmp_path / "victim" / "prefix"):
        victim.mkdir(parents=True)
        (victim / "precious.txt").write_text("keep me\n")
    before = Tree.of(tmp_path, [ws / ".prebake"])
    proc = support.prebake("-C", ws, "build", "--platform", PLATFORM, "-j", "1",
                           env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "stages." in proc.stderr and "not a plain name" in proc.stderr
    assert "Traceback" not in proc.stderr
    # one line naming the file, the line and what is wrong
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"prebake: error: {ws / 'prebake.toml'}:"), line
    assert before.changes(Tree.of(tmp_path, [ws / ".prebake", tmp_path / "cache"])) == []
    assert (tmp_path / "victim-pixelbuf" / "prefix" / "precious.txt").is_file()


@pytest.mark.parametrize("where", ["stage", "recipe", "project", "platform"])
def test_loader_refuses_hostile_names_of_each_kind(tmp_path: Path, where: str) -> None:
    from prebake.intake import load_workspace

    bad = "../../up"
    body = {
        "stage": f'[stages."{bad}"]\nrecipes = ["tiny"]\n',
        "recipe": '[stages.core]\nrecipes = ["../../tiny"]\n',
        "project": "",
        "platform": f'[platforms."{bad}"]\nos = "linux"\narch = "x86_64"\n'
                    '[platforms."{bad}".toolchain]\ncc = "gcc"\ncxx = "g++"\n'.replace(
                        "{bad}", bad),
    }[where]
    name = bad if where == "project" else "p"
    (tmp_path / "prebake.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "1.0.0"\n\n' + body)
    with pytest.raises(ConfigError) as info:
        load_workspace(tmp_path)
    assert any(where in p.key or where in p.message for p in info.value.problems), \
        info.value


def _mirror(tmp_path: Path) -> Path:
    store = tmp_path / "srv" / "store"
    make_asset(store / "v1.0.0", "demo", "1.0.0", PLATFORM, {"lib/libdemo.a": b"!<arch>\n"})
    return store


def _fetch(tmp_path: Path, store_url: str, *args: str, cwd: Path | None = None
           ) -> tuple[int, str]:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform", PLATFORM,
         "--store", store_url, "--into", str(tmp_path / "deep" / "into"), *args],
        cwd=cwd or tmp_path / "deep", env=support.tool_env(
            {"PREBAKE_CACHE": str(tmp_path / "deep" / "er" / "cache"),
             "PREBAKE_RETRY_BASE": "0.01"}),
        capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stderr


ALLOWED = ("deep/into", "deep/er/cache", "srv")


def _allowed(tmp_path: Path) -> list[Path]:
    return [tmp_path / a for a in ALLOWED]


@pytest.mark.parametrize("tag", ["../../../X", "..", "a/../../../X", "v1\nX", "v1\x1b[2J",
                                 "x" * 4000])
def test_release_tag_with_traversal_or_control_characters_against_an_http_mirror(
        tmp_path: Path, tag: str) -> None:
    """Today: ``.lock`` and ``.part`` land outside ``$PREBAKE_CACHE``; newline and ESC pass."""
    store = _mirror(tmp_path)
    (tmp_path / "deep").mkdir()
    before = Tree.of(tmp_path, _allowed(tmp_path))
    with StaticServer(store) as srv:
        rc, err = _fetch(tmp_path, srv.url, "--release", tag)
    assert rc == 2, err
    assert err.count("\n") == 1 and "\x1b" not in err and len(err) < 400, err
    assert "--release" in err
    assert before.changes(Tree.of(tmp_path, _allowed(tmp_path))) == []


@pytest.mark.parametrize("field", ["release", "platform", "name", "version"])
def test_hostile_fields_of_an_edited_lock_are_refused(tmp_path: Path, field: str) -> None:
    store = _mirror(tmp_path)
    deep = tmp_path / "deep"
    deep.mkdir()
    entry = {"name": "demo", "version": "1.0.0", "platform": PLATFORM, "sha256": "0" * 64,
             "url": "http://x/demo", "release": "v1.0.0"}
    entry[field] = "../../../X"
    (deep / "prebake.lock").write_text(json.dumps({"schema_version": 1, "packages": [entry]}))
    before = Tree.of(tmp_path, _allowed(tmp_path))
    with StaticServer(store) as srv:
        rc, err = _fetch(tmp_path, srv.url, "--lock", str(deep / "prebake.lock"))
    assert rc == 2, err
    assert "prebake.lock" in err and field in err and err.count("\n") == 1, err
    assert before.changes(Tree.of(tmp_path, _allowed(tmp_path))) == []


def test_a_good_fetch_through_the_mirror_still_works(tmp_path: Path) -> None:
    """The control: the same mirror, a plain tag, lands in --into and the cache only."""
    store = _mirror(tmp_path)
    (tmp_path / "deep").mkdir()
    with StaticServer(store) as srv:
        rc, err = _fetch(tmp_path, srv.url, "--release", "v1.0.0", "--lock",
                         str(tmp_path / "deep" / "into.lock"))
    assert rc == 0, err
    assert (tmp_path / "deep" / "into" / "lib" / "libdemo.a").is_file()


def test_publish_refuses_a_hostile_release(tmp_path: Path) -> None:
    asset = make_asset(tmp_path / "out", "demo", "1.0.0", PLATFORM, {"lib/a": b"a"})
    before = Tree.of(tmp_path)
    proc = support.prebake("publish", asset, "--store", (tmp_path / "store").as_uri(),
                           "--release", "../../escape")
    assert proc.returncode == 2 and "--release" in proc.stderr, proc.stderr
    assert before.changes(Tree.of(tmp_path)) == []
