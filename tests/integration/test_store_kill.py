"""A publisher killed with SIGKILL mid-upload leaves nothing a reader takes as complete, on the
file and S3 backends (GitHub: test_store_github.py). The publisher runs in a subprocess whose
progress callback sleeps per chunk — a slow disk or link — so the kill lands mid-transfer."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prebake.package.naming import asset_id, sha256_line
from prebake.store import open_store
from tests import support
from tests.servers.backends import Backend
from tests.servers.fixtures import moto_s3, store_backend  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
PUBLISHER = """
import sys, time
from pathlib import Path
from prebake.store import open_store
started = Path(sys.argv[3])
def slow(done, total):
    started.touch()
    time.sleep(0.15)
open_store(sys.argv[1]).publish(Path(sys.argv[2]), progress=slow)
"""


def raw_asset(out: Path, size: int, seed: bytes) -> Path:
    """An asset-shaped file with valid sidecars (publish checks names and checksums only)."""
    out.mkdir(parents=True, exist_ok=True)
    aid = asset_id("demo", "1.0.0", "linux-x86_64")
    data = hashlib.sha256(seed).digest() * (size // 32)
    path = out / aid.filename
    path.write_bytes(data)
    (out / aid.manifest_name).write_text(json.dumps(support.valid_manifest()))
    (out / aid.sha256_name).write_text(sha256_line(hashlib.sha256(data).hexdigest(),
                                                   aid.filename))
    return path


@pytest.mark.parametrize("store_backend", ["file", "s3"], indirect=True)
@pytest.mark.parametrize("replace", [False, True], ids=["fresh", "republish"])
def test_killed_publish_leaves_nothing_complete(store_backend: Backend,  # noqa: F811
                                                tmp_path: Path, replace: bool) -> None:
    b = store_backend
    aid = asset_id("demo", "1.0.0", "linux-x86_64")
    store = open_store(b.publish_url)
    if replace:
        store.publish(raw_asset(tmp_path / "old", 64 * 1024, b"old"))
        assert store.list_assets() == [aid]
    new = raw_asset(tmp_path / "new", 24 * 1024 * 1024, b"new")
    started = tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-c", PUBLISHER, b.publish_url, str(new),
                             str(started)], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.3)
        assert proc.poll() is None, "publish finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    reader = open_store(b.publish_url)
    assert aid not in reader.list_assets()
    assert reader.read_sidecar(aid, ".sha256") is None
    # and a clean re-run completes
    reader.publish(new)
    assert reader.list_assets() == [aid]
    reader.download(aid, tmp_path / "dl")
    assert (tmp_path / "dl").read_bytes() == new.read_bytes()
