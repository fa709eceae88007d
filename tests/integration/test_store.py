"""Publish → fetch end to end on every backend (file, local GitHub API, moto S3, HTTP mirrors
whose first mirror is down), through the real CLI entry point."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.package.naming import asset_id
from prebake.store import open_store
from tests.servers.assets import make_asset
from tests.servers.backends import Backend
from tests.servers.fixtures import moto_s3, store_backend  # noqa: F401

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
FILES = {"include/demo.h": b"int demo(void);\n", "lib/libdemo.a": os.urandom(4096)}


def publish(b: Backend, *assets: Path, release: str | None = None) -> int:
    args = ["publish", *map(str, assets), "--store", b.publish_url]
    return main(args + (["--release", release] if release else []))


def fetch(b: Backend, tmp: Path, *extra: str, into: str = "prefix") -> int:
    return main(["fetch", "demo==1.0.0", "--platform", "linux-x86_64", "--store", b.fetch_url,
                 "--into", str(tmp / into), "--lock", str(tmp / "prebake.lock"), *extra])


def test_publish_then_fetch(store_backend: Backend, tmp_path: Path,  # noqa: F811
                            capsys: pytest.CaptureFixture[str]) -> None:
    b = store_backend
    asset = make_asset(tmp_path / "out", "demo", "1.0.0", "linux-x86_64", FILES)
    assert main(["publish", str(asset), "--store", b.publish_url, "--json"]) == 0
    published = json.loads(capsys.readouterr().out)
    jsonschema.validate(published, json.loads((SCHEMAS / "publish.schema.json").read_text()))
    assert published["published"][0]["asset"] == asset.name
    if b.name != "mirrors":
        listed = open_store(b.publish_url).list_assets()
        assert asset_id("demo", "1.0.0", "linux-x86_64") in listed

    assert fetch(b, tmp_path) == 0, capsys.readouterr().err
    prefix = tmp_path / "prefix"
    for rel, data in FILES.items():
        assert (prefix / rel).read_bytes() == data
    lock = json.loads((tmp_path / "prebake.lock").read_text())
    (entry,) = lock["packages"]
    digest = (asset.parent / (asset.name + ".sha256")).read_text().split()[0]
    assert (entry["name"], entry["version"], entry["platform"], entry["sha256"]) == \
        ("demo", "1.0.0", "linux-x86_64", digest)
    assert entry["url"].endswith("demo-1.0.0-linux-x86_64.tar.xz")

    # a second fetch with the lock is served from the verified cache, byte-identical
    (prefix / "include/demo.h").write_text("local edit\n")
    capsys.readouterr()
    assert fetch(b, tmp_path, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, json.loads((SCHEMAS / "fetch.schema.json").read_text()))
    jsonschema.validate(lock, json.loads((SCHEMAS / "lock.schema.json").read_text()))
    assert out["downloaded"] is False and out["sha256"] == digest
    assert (prefix / "include/demo.h").read_bytes() == FILES["include/demo.h"]


def test_tampered_asset_installs_nothing(store_backend: Backend, tmp_path: Path,  # noqa: F811
                                         capsys: pytest.CaptureFixture[str]) -> None:
    b = store_backend
    asset = make_asset(tmp_path / "out", "demo", "1.0.0", "linux-x86_64", FILES)
    assert publish(b, asset) == 0
    evil = make_asset(tmp_path / "evil", "demo", "1.0.0", "linux-x86_64",
                      {"include/demo.h": b"#error owned\n"})
    b.tamper(asset_id("demo", "1.0.0", "linux-x86_64"), "continuous", evil.read_bytes())
    capsys.readouterr()
    assert fetch(b, tmp_path) == 1
    err = capsys.readouterr().err
    assert "does not match" in err and "nothing was installed" in err
    assert not (tmp_path / "prefix").exists()
    assert not (tmp_path / "prebake.lock").exists()


def test_republish_replaces_and_lock_pins_the_old_bytes(
        store_backend: Backend, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    b = store_backend
    v1 = make_asset(tmp_path / "v1", "demo", "1.0.0", "linux-x86_64", FILES)
    assert publish(b, v1) == 0
    assert fetch(b, tmp_path) == 0
    locked = (tmp_path / "prebake.lock").read_bytes()

    v2 = make_asset(tmp_path / "v2", "demo", "1.0.0", "linux-x86_64",
                    {**FILES, "include/extra.h": b"// rebuilt\n"})
    if b.name == "mirrors":  # the mirror copies whatever its origin publishes
        assert publish(b, v2) == 0
    else:
        assert publish(b, v2) == 0
        assert open_store(b.publish_url).list_assets() == \
            [asset_id("demo", "1.0.0", "linux-x86_64")]
    capsys.readouterr()
    assert fetch(b, tmp_path, into="other") == 1
    assert "refusing to install other bytes than locked" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
    assert (tmp_path / "prebake.lock").read_bytes() == locked
    # without the lock the new bytes are fetched and locked
    (tmp_path / "prebake.lock").unlink()
    assert fetch(b, tmp_path, into="other") == 0
    assert (tmp_path / "other/include/extra.h").exists()


def test_tag_release_and_version_resolution(store_backend: Backend, tmp_path: Path,  # noqa: F811
                                            capsys: pytest.CaptureFixture[str]) -> None:
    b = store_backend
    tagged = make_asset(tmp_path / "t", "demo", "1.0.0", "linux-x86_64", FILES)
    rolling = make_asset(tmp_path / "r", "demo", "1.0.0", "linux-x86_64",
                         {"include/demo.h": b"// continuous\n"})
    assert publish(b, tagged, release="v1.0.0") == 0
    assert publish(b, rolling) == 0
    capsys.readouterr()
    assert fetch(b, tmp_path, "--json") == 0  # v<version> wins over continuous
    assert json.loads(capsys.readouterr().out)["release"] == "v1.0.0"
    assert (tmp_path / "prefix/lib/libdemo.a").exists()
    assert fetch(b, tmp_path, "--release", "continuous", "--json", "--update",
                 into="rolling") == 1  # the lock pins v1.0.0's bytes
    capsys.readouterr()
    (tmp_path / "prebake.lock").unlink()
    assert fetch(b, tmp_path, "--release", "continuous", into="rolling") == 0
    assert (tmp_path / "rolling/include/demo.h").read_text() == "// continuous\n"
