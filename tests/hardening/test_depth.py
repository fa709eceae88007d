"""Deep trees are one clear error, never ``RecursionError``: an asset member 1 500 folders deep
(fetch, inspect, check) and a local source 1 200 folders deep (plan, build)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from prebake.package.naming import sha256_line
from tests import support

PLATFORM = "linux-x86_64"
ASSET = f"demo-1.0.0-{PLATFORM}.tar.xz"


def _deep_asset(d: Path, depth: int) -> Path:
    deep = "/".join(["d"] * depth) + "/f.txt"
    manifest = json.dumps({"schema_version": 1, "name": "demo", "version": "1.0.0",
                           "platform": PLATFORM, "files": []}).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", format=tarfile.PAX_FORMAT) as tf:
        for name, data in ((deep, b"x"), ("share/prebake/manifest.json", manifest)):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    d.mkdir(parents=True, exist_ok=True)
    (d / ASSET).write_bytes(buf.getvalue())
    (d / (ASSET + ".json")).write_bytes(manifest)
    (d / (ASSET + ".sha256")).write_text(
        sha256_line(hashlib.sha256(buf.getvalue()).hexdigest(), ASSET))
    return d / ASSET


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)], cwd=cwd,
                          env=support.tool_env({"PREBAKE_CACHE": str(cwd / "cache")}),
                          capture_output=True, text=True, timeout=300)


def _clear(proc: subprocess.CompletedProcess[str]) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "RecursionError" not in out and "internal error" not in out, out[-2000:]
    assert "more than 256 nested folders" in proc.stderr, proc.stderr[-2000:]
    line = next(ln for ln in proc.stderr.splitlines() if "nested folders" in ln)
    assert len(line) < 600, f"a {len(line)}-character message"


@pytest.mark.parametrize("command", ["fetch", "inspect", "check"])
def test_asset_member_1500_folders_deep(tmp_path: Path, command: str) -> None:
    asset = _deep_asset(tmp_path / "store" / "continuous", 1500)
    contract = tmp_path / "contract.toml"
    contract.write_text('lto = "none"\n')
    args = {
        "fetch": ["fetch", "demo==1.0.0", "--platform", PLATFORM, "--store",
                  (tmp_path / "store").as_uri(), "--release", "continuous", "--into",
                  tmp_path / "into", "--lock", tmp_path / "prebake.lock"],
        "inspect": ["inspect", asset],
        "check": ["check", asset, "--contract", contract],
    }[command]
    _clear(_run(*args, cwd=tmp_path))
    assert not (tmp_path / "into").exists()


def _make_deep(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        f = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.close(f)
    finally:
        os.close(fd)


def _remove_deep(root: Path) -> None:
    """Bottom-up without recursion (shutil.rmtree itself recurses)."""
    chain = [root]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for p in folder.iterdir():
            if not p.is_dir():
                p.unlink()
        if folder != root:
            folder.rmdir()


@pytest.fixture
def deep_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "sdk"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns(".prebake", "releases"))
    deep_root = ws / "src" / "vecmath" / "deep"
    deep_root.mkdir()
    _make_deep(deep_root, 1200)
    yield ws
    _remove_deep(deep_root)


@pytest.mark.parametrize("command", ["plan", "build"])
def test_local_source_1200_folders_deep(tmp_path: Path, deep_ws: Path, command: str) -> None:
    args = ["-C", deep_ws, command]
    if command == "build":
        args += ["--platform", PLATFORM, "--stage", "core"]
    _clear(_run(*args, cwd=tmp_path))


def test_iterative_walk_handles_what_it_allows(tmp_path: Path) -> None:
    from prebake.plan.hashing import tree_digest

    _make_deep(tmp_path, 200)  # within the bound: walked, no recursion involved
    assert len(tree_digest(tmp_path)) == 64
    _remove_deep(tmp_path)
