"""S3 backend specifics against moto's server: layout, credentials errors, endpoint options."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.cli import main
from prebake.package.naming import asset_id
from prebake.store import open_store
from tests.servers.assets import make_asset
from tests.servers.backends import S3_ENV, MotoS3
from tests.servers.fixtures import moto_s3  # noqa: F401


def test_layout_and_releases(moto_s3: MotoS3, tmp_path: Path,  # noqa: F811
                             monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    bucket = moto_s3.new_bucket()
    url = f"s3://{bucket}/sdk/deps?endpoint={moto_s3.endpoint}"
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/a.h": b"a"})
    store = open_store(url)
    store.publish(asset, "v1.0.0")
    store.publish(asset)
    keys = sorted(o["Key"] for o in moto_s3.client().list_objects_v2(Bucket=bucket)["Contents"])
    assert keys == [f"sdk/deps/{tag}/demo-1.0.0-wasm.tar.xz{s}"
                    for tag in ("continuous", "v1.0.0") for s in ("", ".json", ".sha256")]
    assert store.releases() == ["continuous", "v1.0.0"]
    assert store.list_assets("v1.0.0") == [asset_id("demo", "1.0.0", "wasm")]
    assert store.asset_url(asset_id("demo", "1.0.0", "wasm"), "v1.0.0") == \
        f"s3://{bucket}/sdk/deps/v1.0.0/demo-1.0.0-wasm.tar.xz"
    # the endpoint can also come from boto3's own AWS_ENDPOINT_URL
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_s3.endpoint)
    assert open_store(f"s3://{bucket}/sdk/deps").list_assets() == [asset_id("demo", "1.0.0",
                                                                            "wasm")]


def test_missing_credentials_is_one_line(moto_s3: MotoS3, tmp_path: Path,  # noqa: F811
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    asset = make_asset(tmp_path / "o", "demo", "1.0.0", "wasm", {"include/a.h": b"a"})
    rc = main(["publish", str(asset), "--store", f"s3://b/p?endpoint={moto_s3.endpoint}"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "no AWS credentials" in err
