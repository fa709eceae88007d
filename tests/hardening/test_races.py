"""Publishing to a ``file://`` store is atomic per asset name under concurrency, dead
publishers' temporary files go with the next publish, and a killed fetch leaves nothing beside
``--into`` that the next fetch does not clean. Real processes, real SIGKILL."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from prebake.package.naming import asset_id, parse_sha256_line, sha256_line
from tests import support
from tests.servers.assets import make_asset

AID = asset_id("demo", "1.0.0", "linux-x86_64")
PUBLISH = """
import sys, time
from pathlib import Path
from prebake.store import open_store
slow = float(sys.argv[3])
def progress(done, total):
    if slow:
        Path(sys.argv[4]).touch()
        time.sleep(slow)
open_store(sys.argv[1]).publish(Path(sys.argv[2]), progress=progress)
"""


def _variant(out: Path, i: int, size: int) -> Path:
    """An asset-shaped file with valid sidecars; the manifest records which variant it is."""
    out.mkdir(parents=True, exist_ok=True)
    block = hashlib.sha256(f"variant {i}".encode()).digest()
    data = block * (size // len(block))
    path = out / AID.filename
    path.write_bytes(data)
    (out / AID.manifest_name).write_text(json.dumps(
        support.valid_manifest(created_by=f"variant {i}")))
    (out / AID.sha256_name).write_text(sha256_line(hashlib.sha256(data).hexdigest(),
                                                   AID.filename))
    return path


def _publisher(store: Path, asset: Path, slow: float = 0, marker: Path | None = None
               ) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", PUBLISH, store.as_uri(), str(asset),
                             str(slow), str(marker or "")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _consistent(d: Path, digests: dict[str, int]) -> int:
    """The variant that the asset, its .sha256 and its .json all belong to; fails otherwise."""
    digest = parse_sha256_line((d / AID.sha256_name).read_text(), AID.filename)
    actual = hashlib.sha256((d / AID.filename).read_bytes()).hexdigest()
    assert actual == digest, "the .sha256 belongs to another upload than the bytes"
    variant = int(json.loads((d / AID.manifest_name).read_text())["created_by"].split()[-1])
    assert digests[actual] == variant, "the .json belongs to another upload than the bytes"
    return int(variant)


@pytest.mark.parametrize("round_", range(2))
def test_eight_racing_publishers_of_one_name(tmp_path: Path, round_: int) -> None:
    from prebake.store.local import name_lock

    store = tmp_path / "store"
    variants = [_variant(tmp_path / f"v{i}", i, 20 * 1024**2) for i in range(8)]
    digests = {hashlib.sha256(v.read_bytes()).hexdigest(): i for i, v in enumerate(variants)}
    seen: list[int] = []
    broken: list[BaseException] = []
    stop = threading.Event()
    d = store / "continuous"

    def reader() -> None:  # what any reader sees, under the store's shared lock per name
        try:
            while not stop.is_set():
                if (d / AID.sha256_name).exists():
                    with name_lock(d, AID.filename, exclusive=False):
                        if (d / AID.sha256_name).exists():
                            seen.append(_consistent(d, digests))
                time.sleep(0.01)
        except BaseException as exc:  # an inconsistent set: the test's failure, not a thread's
            broken.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    procs = [_publisher(store, v) for v in variants]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    # on a loaded machine the eight uploads can end before the reader's first look: it
    # always gets one at the end (the check is that every set it sees is whole)
    deadline = time.monotonic() + 30
    while not seen and not broken and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    t.join()
    assert not broken, broken
    assert [p.returncode for p in procs] == [0] * 8, errs
    final = _consistent(d, digests)
    assert final in range(8) and seen, "the reader saw complete sets"
    proc = support.prebake("fetch", "demo==1.0.0", "--platform", "linux-x86_64",
                           "--store", store.as_uri(), "--into", tmp_path / "into",
                           "--lock", tmp_path / "prebake.lock",
                           env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    # not a prebake asset (no manifest inside): refused for that, not as "tampered"
    assert "tampered" not in proc.stderr and "does not match" not in proc.stderr, proc.stderr


def test_temporary_files_of_a_killed_publisher_go_with_the_next_publish(tmp_path: Path
                                                                        ) -> None:
    store = tmp_path / "store"
    big = _variant(tmp_path / "big", 1, 24 * 1024**2)
    marker = tmp_path / "started"
    proc = _publisher(store, big, slow=0.2, marker=marker)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)  # mid-copy: a real signal, no clean-up handler runs
    proc.wait()
    d = store / "continuous"
    stale = [p.name for p in d.glob(".*.tmp")]
    assert stale, "the killed publisher left its temporary copy"
    small = _variant(tmp_path / "small", 2, 64 * 1024)
    again = _publisher(store, small)
    assert again.wait(timeout=120) == 0
    assert not list(d.glob(".*.tmp")), "the next publish of the name removed it"
    assert _consistent(d, {hashlib.sha256(small.read_bytes()).hexdigest(): 2}) == 2


def test_killed_fetch_leaves_nothing_the_next_fetch_does_not_clean(tmp_path: Path) -> None:
    files = {f"share/data/{i:04}.txt": (f"{i}\n" * 4000).encode() for i in range(1500)}
    make_asset(tmp_path / "store" / "continuous", "demo", "1.0.0", "linux-x86_64", files)
    into = tmp_path / "deps" / "into"
    cmd = [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform",
           "linux-x86_64", "--store", (tmp_path / "store").as_uri(), "--release",
           "continuous", "--into", str(into), "--lock", str(tmp_path / "prebake.lock")]
    env = support.tool_env({"PREBAKE_CACHE": str(tmp_path / "cache")})
    killed = False
    for _ in range(5):  # the kill must land while the tree is being extracted
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if list(into.parent.glob(".into.extract-*")) if into.parent.exists() else []:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
            time.sleep(0.001)
        proc.wait()
        if killed:
            break
        import shutil

        shutil.rmtree(into, ignore_errors=True)
    assert killed, "could not kill the fetch mid-extraction"
    assert list(into.parent.glob(".into.*")), "the killed fetch left its temporary tree"
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in into.parent.iterdir()) == ["into"]
    assert (into / "share" / "data" / "0000.txt").is_file()


def test_a_fetch_during_a_publish_installs_one_upload_whole(tmp_path: Path) -> None:
    """The ``.sha256`` and the bytes are two reads: a publish landing between them makes the
    fetch start over from the new upload — never "tampered", never a mix of the two."""
    from prebake.consume.fetch import FetchRequest, fetch
    from prebake.digest import ProgressFn
    from prebake.package.naming import AssetId
    from prebake.store.local import LocalStore
    from tests.servers.assets import make_asset

    old = make_asset(tmp_path / "old", "demo", "1.0.0", "linux-x86_64", {"lib/v.txt": b"old\n"})
    new = make_asset(tmp_path / "new", "demo", "1.0.0", "linux-x86_64", {"lib/v.txt": b"new\n"})
    root = tmp_path / "store"
    LocalStore(root.as_uri(), root).publish(old)

    class PublishedUnder(LocalStore):
        """The real file store, whose first download comes right after a real publish."""

        raced = False

        def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                     progress: ProgressFn | None = None, limit: int | None = None) -> Path:
            if not self.raced:
                self.raced = True
                LocalStore(self.url, self.path).publish(new)
            return super().download(asset, dest, release, progress=progress, limit=limit)

    store = PublishedUnder(root.as_uri(), root)
    result = fetch(FetchRequest("demo", "1.0.0", "linux-x86_64", store=store,
                                into=tmp_path / "into", cache_dir=tmp_path / "cache"))
    assert store.raced
    assert (tmp_path / "into" / "lib" / "v.txt").read_bytes() == b"new\n"
    assert result.sha256 == hashlib.sha256(new.read_bytes()).hexdigest()
