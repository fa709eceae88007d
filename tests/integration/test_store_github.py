"""GitHub Releases backend against the local release-API server: create races, transient
failures, auth, resume, a publisher killed mid-upload, the 2 GiB limit, token hygiene."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.package.naming import asset_id
from prebake.store.github import GitHubStore
from tests.servers.assets import make_asset
from tests.servers.github_api import GitHubServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[GitHubServer]:
    with GitHubServer() as server:
        monkeypatch.setenv("PREBAKE_GITHUB_API", server.api)
        monkeypatch.setenv("GH_TOKEN", server.state.token)
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        monkeypatch.setenv("PREBAKE_RETRY_BASE", "0.01")
        monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
        yield server


def store(gh: GitHubServer) -> GitHubStore:
    return GitHubStore("github://acme/sdk", "acme", "sdk", token=gh.state.token, api=gh.api)


def test_ten_parallel_publishers_leave_one_release_with_every_asset(
        gh: GitHubServer, tmp_path: Path) -> None:
    gh.state.tag_lag = 1.0  # a new release is invisible by tag for a while, as on github.com
    assets = [make_asset(tmp_path / f"a{i}", f"lib{i}", "1.0.0", "linux-x86_64",
                         {"include/x.h": f"// {i}\n".encode()}) for i in range(10)]
    barrier = threading.Barrier(10)
    errors: list[BaseException] = []

    def leg(path: Path) -> None:
        try:
            s = store(gh)
            assert s.client is not None  # build the HTTP client (CA bundle) before the start
            barrier.wait()
            s.publish(path, "continuous")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=leg, args=(a,)) for a in assets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert gh.state.calls["create"] >= 2  # the race really happened
    assert len(gh.state.releases) == 1
    (rel,) = gh.state.releases.values()
    assert rel.tag == "continuous" and rel.prerelease
    listed = store(gh).list_assets("continuous")
    assert listed == sorted(asset_id(f"lib{i}", "1.0.0", "linux-x86_64") for i in range(10))
    names = {gh.state.assets[i].name for i in rel.assets}
    assert not [n for n in names if n.endswith(".partial")]


def test_ten_publisher_processes_race_through_the_cli(gh: GitHubServer, tmp_path: Path) -> None:
    """The same race with ten separate ``prebake publish`` processes (as ten CI legs would)."""
    gh.state.tag_lag = 1.5
    assets = [make_asset(tmp_path / f"a{i}", "core", "1.0.0", f"plat{i}",
                         {"include/x.h": f"// {i}\n".encode()}) for i in range(10)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [subprocess.Popen([sys.executable, "-m", "prebake", "publish", str(a), "--store",
                               "github://acme/sdk", "--release", "v1.0.0", "--json"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for a in assets]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert len(gh.state.releases) == 1
    assert not next(iter(gh.state.releases.values())).prerelease  # a tag release
    assert store(gh).list_assets("v1.0.0") == sorted(
        asset_id("core", "1.0.0", f"plat{i}") for i in range(10))


def test_transient_failures_are_retried(gh: GitHubServer, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm",
                       {"include/d.h": b"x", "lib/r.bin": os.urandom(50_000)})
    gh.state.fail("create", 502, 2)
    gh.state.fail("upload", 503, 2)
    gh.state.fail("rename", 500, 1)
    gh.state.fail("list", 502, 1)
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 0, \
        capsys.readouterr().err
    assert store(gh).list_assets() == [asset_id("demo", "1.0.0", "wasm")]
    gh.state.fail("download", 502, 2)
    gh.state.drop_download_after = 1000  # then a cut connection: resumed with Range
    assert main(["fetch", "demo==1.0.0", "--platform", "wasm", "--store", "github://acme/sdk",
                 "--into", str(tmp_path / "p"), "--lock", str(tmp_path / "l.lock")]) == 0, \
        capsys.readouterr().err
    assert (tmp_path / "p/include/d.h").read_bytes() == b"x"
    ranges = [h.get("Range") for h in gh.state.seen_headers
              if h.get("Range") and h["Host"].startswith("localhost")]
    assert ranges == ["bytes=1000-"]  # one resumed request to the storage host


def test_persistent_failure_gives_up_in_one_line(gh: GitHubServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PREBAKE_RETRIES", "3")
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    gh.state.fail("create", 500, 10)
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gave up after 3 attempts" in err


def test_auth_failure_is_one_line_without_the_token(gh: GitHubServer, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    wrong = "ghp_wrong_but_secret_value"
    monkeypatch.setenv("GH_TOKEN", wrong)
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 2
    out = capsys.readouterr()
    assert len(out.err.strip().splitlines()) == 1
    assert "authentication failed" in out.err and "401" in out.err
    assert wrong not in out.err + out.out
    monkeypatch.delenv("GH_TOKEN")
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 2
    err = capsys.readouterr().err
    assert "GH_TOKEN or GITHUB_TOKEN" in err and len(err.strip().splitlines()) == 1
    assert not gh.state.releases


def test_refuses_2gib_before_any_request(gh: GitHubServer, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    small = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    big = make_asset(tmp_path / "o", "big", "1.0.0", "wasm", {"include/d.h": b"x"})
    with open(big, "r+b") as fh:  # sparse: 2 GiB on paper, nothing on disk
        fh.truncate(2 * 1024**3)
    before = sum(gh.state.calls.values())
    assert main(["publish", str(small), str(big), "--store", "github://acme/sdk"]) == 2
    err = capsys.readouterr().err
    assert "2 GiB or more are refused" in err
    assert sum(gh.state.calls.values()) == before and not gh.state.seen_headers


def test_token_is_not_sent_to_the_storage_host(gh: GitHubServer, tmp_path: Path) -> None:
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    s = store(gh)
    s.publish(asset)
    s.download(asset_id("demo", "1.0.0", "wasm"), tmp_path / "dl.tar.xz")
    assert (tmp_path / "dl.tar.xz").read_bytes() == asset.read_bytes()
    assert "ghp_test_secret_token" not in repr(s)


def test_tag_release_is_a_normal_release(gh: GitHubServer, tmp_path: Path) -> None:
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    s = store(gh)
    s.publish(asset, "v1.0.0")
    s.publish(asset, "v1.0.0")  # idempotent: republishing replaces, no duplicates
    s.publish(asset)
    rels = {r.tag: r for r in gh.state.releases.values()}
    assert not rels["v1.0.0"].prerelease and rels["continuous"].prerelease
    assert s.releases() == ["continuous", "v1.0.0"]
    assert sorted(gh.state.uploaded("v1.0.0")) == [
        "demo-1.0.0-wasm.tar.xz", "demo-1.0.0-wasm.tar.xz.json", "demo-1.0.0-wasm.tar.xz.sha256"]
    assert len(rels["v1.0.0"].assets) == 3


@pytest.mark.parametrize("replace", [False, True], ids=["fresh", "republish"])
def test_publisher_killed_mid_upload_leaves_nothing_complete(
        gh: GitHubServer, tmp_path: Path, replace: bool) -> None:
    aid = asset_id("demo", "1.0.0", "linux-x86_64")
    old = None
    if replace:
        old = make_asset(tmp_path / "old", "demo", "1.0.0", "linux-x86_64", {"a": b"old"})
        store(gh).publish(old)
    big = make_asset(tmp_path / "new", "demo", "1.0.0", "linux-x86_64",
                     {"lib/blob.bin": os.urandom(3 * 1024 * 1024)})
    gh.state.upload_delay = 0.05  # ~1.3 MB/s: the upload takes a few seconds
    gh.state.upload_started.clear()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "prebake", "publish", str(big),
                             "--store", "github://acme/sdk", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert gh.state.upload_started.wait(30)
        time.sleep(0.5)
        assert proc.poll() is None, "publish finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    gh.state.upload_delay = 0
    listed = store(gh).list_assets()
    assert aid not in listed  # old sidecar hidden first, the new one never committed
    assert store(gh).read_sidecar(aid, ".sha256") is None
    rc = main(["fetch", "demo==1.0.0", "--platform", "linux-x86_64", "--store",
               "github://acme/sdk", "--into", str(tmp_path / "p"), "--lock",
               str(tmp_path / "l.lock")])
    assert rc == 2 and not (tmp_path / "p").exists()
    # the debris: an interrupted upload ("starter") or a finished one still under its temporary
    # name (the kernel may have buffered the whole body before the kill); neither is listed
    debris = [a for a in gh.state.assets.values()
              if a.state != "uploaded" or a.name.endswith(".partial")]
    assert debris, "the kill should have interrupted the publish"
    # publishing again completes normally; debris older than an hour is swept, younger is kept
    # (it could be a publisher still uploading)
    young = debris[0]
    for a in debris[1:]:
        a.created -= 7200
    store(gh).publish(big)
    assert store(gh).list_assets() == [aid]
    remaining = {a.id for a in gh.state.assets.values()}
    assert young.id in remaining and not any(a.id in remaining for a in debris[1:])


def test_uploads_url_override_and_token_variables(gh: GitHubServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from prebake.store import open_store
    from prebake.store.github import token_from_env

    assert token_from_env({"GITHUB_TOKEN": "b"}) == "b"
    assert token_from_env({"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}) == "a"
    assert token_from_env({}) is None
    monkeypatch.delenv("GH_TOKEN")
    monkeypatch.setenv("GITHUB_TOKEN", gh.state.token)
    uploads_host = gh.api.replace("127.0.0.1", "localhost")  # not the release's upload_url
    monkeypatch.setenv("PREBAKE_GITHUB_UPLOADS", f"{uploads_host}/uploads")
    s = open_store("github://acme/sdk")
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    s.publish(asset)
    assert s.list_assets() == [asset_id("demo", "1.0.0", "wasm")]
    uploads = [h for h in gh.state.seen_headers if h.get("Content-Type") ==
               "application/octet-stream"]
    assert len(uploads) == 3
    assert all(h["Authorization"] == f"Bearer {gh.state.token}" for h in uploads)
    assert all(h["Host"].startswith("localhost:") for h in uploads)


def test_rate_limit_403_is_retried_but_forbidden_403_is_auth(
        gh: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/d.h": b"x"})
    gh.state.fail("create", 403, 2)  # "injected failure" without rate-limit hints: auth
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 2
    assert "authentication failed" in capsys.readouterr().err
    gh.state.failures.clear()
    gh.state.rate_limit_next = 2  # 403 + x-ratelimit-remaining: 0, as github.com sends
    assert main(["publish", str(asset), "--store", "github://acme/sdk"]) == 0, \
        capsys.readouterr().err
