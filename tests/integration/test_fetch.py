"""``prebake fetch`` beyond the happy path: wrong locks, consumer contracts (from --contract and
from the consumer's own prebake.toml), hostile assets, mirrors that are down or cut off."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.consume.fetch import FetchRequest, fetch
from prebake.digest import file_sha256
from prebake.errors import CheckFailed, PrebakeError
from prebake.package.naming import sha256_line
from prebake.store import open_store
from tests import support
from tests.servers.assets import demo_prefix, make_asset
from tests.servers.static_http import StaticServer, closed_port_url


def consumer_toml(arch: str) -> str:
    """A consumer's workspace: its one platform, linux-x86_64, is for ``arch``."""
    return support.platform_workspace("addon", "linux-x86_64", "linux", arch,
                                      'cc = "gcc", cxx = "g++"', f'arch = "{arch}"')


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PREBAKE_RETRY_BASE", "0.01")
    monkeypatch.delenv("PREBAKE_STORE", raising=False)
    return tmp_path


@pytest.fixture
def store_url(env: Path) -> str:
    url = (env / "store").as_uri()
    asset = make_asset(env / "out", "demo", "1.0.0", "linux-x86_64", prefix=demo_prefix())
    open_store(url).publish(asset)
    return url


def _fetch(tmp: Path, store: str, *extra: str) -> int:
    return main(["fetch", "demo==1.0.0", "--platform", "linux-x86_64", "--store", store,
                 "--into", str(tmp / "prefix"), "--lock", str(tmp / "prebake.lock"), *extra])


def test_lock_with_wrong_sha256_fails(env: Path, store_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    lock = {"schema_version": 1, "packages": [{
        "name": "demo", "version": "1.0.0", "platform": "linux-x86_64", "sha256": "0" * 64,
        "url": "file:///elsewhere/demo-1.0.0-linux-x86_64.tar.xz"}]}
    (env / "prebake.lock").write_text(json.dumps(lock))
    before = (env / "prebake.lock").read_bytes()
    assert _fetch(env, store_url) == 1
    assert "refusing to install other bytes than locked" in capsys.readouterr().err
    assert not (env / "prefix").exists()
    assert (env / "prebake.lock").read_bytes() == before


def test_lock_pins_the_version(env: Path, store_url: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert _fetch(env, store_url) == 0
    asset2 = make_asset(env / "out2", "demo", "1.1.0", "linux-x86_64", prefix=demo_prefix())
    open_store(store_url).publish(asset2)
    args = ["fetch", "demo==1.1.0", "--platform", "linux-x86_64", "--store", store_url,
            "--into", str(env / "prefix"), "--lock", str(env / "prebake.lock")]
    capsys.readouterr()
    assert main(args) == 2
    assert "locks demo 1.0.0" in capsys.readouterr().err
    assert main([*args, "--update"]) == 0
    (entry,) = json.loads((env / "prebake.lock").read_text())["packages"]
    assert entry["version"] == "1.1.0" and entry["sha256"] == file_sha256(asset2)


def test_lock_file_is_deterministic(env: Path, store_url: str) -> None:
    assert _fetch(env, store_url) == 0
    first = (env / "prebake.lock").read_bytes()
    assert _fetch(env, store_url) == 0
    assert (env / "prebake.lock").read_bytes() == first
    assert first.endswith(b"}\n")


@pytest.mark.parametrize(("arch", "rc"), [("x86_64", 0), ("aarch64", 1)])
def test_contract_from_file(env: Path, store_url: str, arch: str, rc: int,
                            capsys: pytest.CaptureFixture[str]) -> None:
    contract = env / "contract.toml"
    contract.write_text(f'arch = "{arch}"\nos = "linux"\n')
    assert _fetch(env, store_url, "--contract", str(contract)) == rc
    err = capsys.readouterr().err
    if rc:
        assert "arch" in err and "aarch64" in err and "demo.o" in err
        # named inside the asset, not by the temporary folder it was unpacked to
        assert "demo-1.0.0-linux-x86_64.tar.xz!lib/libdemo.a" in err and "extract" not in err
        assert not (env / "prefix").exists() and not (env / "prebake.lock").exists()
    else:
        assert (env / "prefix/lib/libdemo.a").exists()


@pytest.mark.parametrize(("arch", "rc"), [("x86_64", 0), ("aarch64", 1)])
def test_contract_from_consumer_workspace(env: Path, store_url: str, arch: str, rc: int,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ws = env / "addon"
    ws.mkdir()
    (ws / "prebake.toml").write_text(consumer_toml(arch))
    monkeypatch.chdir(ws)
    code = main(["fetch", "demo==1.0.0", "--platform", "linux-x86_64", "--store", store_url,
                 "--json"])
    out = capsys.readouterr()
    assert code == rc, out.err
    if rc == 0:
        result = json.loads(out.out)
        assert result["contract_checked"] is True and result["schema_version"] == 1
        assert (ws / "prebake_deps/demo-linux-x86_64/lib/libdemo.a").exists()
        assert (ws / "prebake.lock").exists()
    else:
        assert "breaks this consumer's contract" in out.err
        assert not (ws / "prebake_deps").exists() and not (ws / "prebake.lock").exists()


def test_store_from_consumer_workspace(env: Path, store_url: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ws = env / "addon"
    ws.mkdir()
    (ws / "prebake.toml").write_text(consumer_toml("x86_64") + f"""
[stores.deps]
url = "{store_url}"
default = true
""")
    monkeypatch.chdir(env)
    assert main(["-C", str(ws), "fetch", "demo==1.0.0", "--platform", "linux-x86_64"]) == 0
    assert (ws / "prebake_deps/demo-linux-x86_64/include/demo.h").exists()
    (entry,) = json.loads((ws / "prebake.lock").read_text())["packages"]
    assert entry["url"].startswith(store_url)


def _publish_raw(store_dir: Path, filename: str, data: bytes) -> None:
    """Put bytes in a file store as a complete asset (valid sidecars): a hostile publisher."""
    rel = store_dir / "continuous"
    rel.mkdir(parents=True, exist_ok=True)
    (rel / filename).write_bytes(data)
    name, version, platform = "demo", "6.6.6", "linux-x86_64"
    (rel / f"{filename}.json").write_text(json.dumps(
        {"schema_version": 1, "name": name, "version": version, "platform": platform}))
    (rel / f"{filename}.sha256").write_text(sha256_line(file_sha256(rel / filename), filename))


def test_hostile_asset_with_valid_checksum_is_rejected(env: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name in ("include/ok.h", "../../escaped.h"):
            ti = tarfile.TarInfo(name)
            ti.size = 2
            tf.addfile(ti, io.BytesIO(b"x\n"))
    _publish_raw(env / "store", "demo-6.6.6-linux-x86_64.tar.xz", buf.getvalue())
    into = env / "site" / "prefix"
    into.mkdir(parents=True)
    rc = main(["fetch", "demo==6.6.6", "--platform", "linux-x86_64", "--store",
               (env / "store").as_uri(), "--into", str(into), "--lock", str(env / "l.lock")])
    assert rc == 2
    assert "'..' path traversal" in capsys.readouterr().err
    assert list(into.iterdir()) == [] and sorted(p.name for p in (env / "site").iterdir()) == \
        ["prefix"]
    assert not (env / "escaped.h").exists() and not (env / "l.lock").exists()


def test_refuses_to_replace_a_folder_it_did_not_fetch(env: Path, store_url: str) -> None:
    into = env / "mine"
    into.mkdir()
    (into / "notes.txt").write_text("mine\n")
    with pytest.raises(PrebakeError, match="not a prefix prebake fetched"):
        fetch(FetchRequest("demo", "1.0.0", "linux-x86_64", store=store_url, into=into))
    assert [p.name for p in into.iterdir()] == ["notes.txt"]


def test_mirrors_first_down_second_404_third_serves_with_resume(
        env: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(store_url[len("file://"):])
    empty = env / "empty-mirror"
    empty.mkdir()
    with StaticServer(empty) as m404, StaticServer(root) as good:
        good.drop_after = 200  # the asset download is cut once, then resumed with Range
        mirrors = f"{closed_port_url()},{m404.url},{good.url}"
        assert _fetch(env, mirrors) == 0, capsys.readouterr().err
        assert (env / "prefix/lib/libdemo.a").exists()
        assert any("demo-1.0.0-linux-x86_64.tar.xz.sha256" in r for r in m404.requests)
        assert good.drop_after is None
        assert any(r.endswith(".tar.xz bytes=200-") for r in good.requests)
    (entry,) = json.loads((env / "prebake.lock").read_text())["packages"]
    assert entry["url"].startswith(good.url)
    # publishing to a mirror is refused: they are read-only
    asset = make_asset(env / "o", "demo", "1.0.0", "wasm", {"a": b"b"})
    assert main(["publish", str(asset), "--store", mirrors]) == 2
    assert "read-only" in capsys.readouterr().err


def test_missing_asset_is_one_line(env: Path, store_url: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["fetch", "demo==9.9.9", "--platform", "linux-x86_64", "--store", store_url,
               "--into", str(env / "p"), "--lock", str(env / "l.lock")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "no complete demo-9.9.9-linux-x86_64.tar.xz" in err


def test_library_api_raises_integrity_error(env: Path, store_url: str) -> None:
    stored = Path(store_url[len("file://"):]) / "continuous/demo-1.0.0-linux-x86_64.tar.xz"
    stored.write_bytes(stored.read_bytes()[:-10])
    with pytest.raises(CheckFailed, match="does not match"):
        fetch(FetchRequest("demo", "1.0.0", "linux-x86_64", store=store_url, into=env / "p",
              lock_path=env / "l.lock"))
    assert not (env / "p").exists()


def test_stale_partial_download_is_redone_from_scratch(env: Path, store_url: str) -> None:
    """A ``.part`` left from an earlier, interrupted fetch of bytes since re-published: the
    resumed file fails its sha256, so the download is redone once from the start."""
    staging = env / "cache/downloads/continuous/demo-1.0.0-linux-x86_64.tar.xz.part"
    staging.parent.mkdir(parents=True)
    staging.write_bytes(b"stale bytes of an older upload")
    with StaticServer(Path(store_url[len("file://"):])) as mirror:
        result = fetch(FetchRequest("demo", "1.0.0", "linux-x86_64", store=mirror.url,
                                    into=env / "p"))
        asset_gets = [r for r in mirror.requests if r.split()[0].endswith(".tar.xz")]
    assert asset_gets == ["/continuous/demo-1.0.0-linux-x86_64.tar.xz bytes=30-",
                          "/continuous/demo-1.0.0-linux-x86_64.tar.xz"]
    assert result.downloaded and (env / "p/lib/libdemo.a").exists()
    assert not staging.exists()


def test_asset_published_under_another_name_is_refused(env: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """demo 1.0.0's bytes re-published as demo 6.6.6, with checksums that match: the manifest
    inside the archive (covered by the sha256) gives it away."""
    real = make_asset(env / "o", "demo", "1.0.0", "linux-x86_64", prefix=demo_prefix())
    _publish_raw(env / "store", "demo-6.6.6-linux-x86_64.tar.xz", real.read_bytes())
    rc = main(["fetch", "demo==6.6.6", "--platform", "linux-x86_64", "--store",
               (env / "store").as_uri(), "--into", str(env / "deps/p"), "--lock",
               str(env / "l.lock")])
    assert rc == 1
    assert "names ('demo', '1.0.0', 'linux-x86_64')" in capsys.readouterr().err
    assert not (env / "deps").exists() and not (env / "l.lock").exists()
