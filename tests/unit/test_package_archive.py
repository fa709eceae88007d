"""Deterministic assets: same tree, same bytes; sidecars; the 2 GiB refusal; atomic writes."""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import tarfile
from pathlib import Path

import jsonschema
import pytest

from prebake.errors import PrebakeError
from prebake.package import archive
from prebake.package.archive import (
    MANIFEST_PATH,
    ParallelXzWriter,
    collect_tree,
    write_asset,
    write_tar_xz,
)
from prebake.package.manifest_builder import make_manifest, schema_path
from prebake.package.naming import asset_id, parse_sha256_line

AID = asset_id("vecmath", "1.4.0", "linux-x86_64")


def make_prefix(root: Path) -> Path:
    p = root / "prefix"
    (p / "lib").mkdir(parents=True)
    (p / "include" / "vecmath").mkdir(parents=True)
    (p / "bin").mkdir()
    (p / "lib" / "libvecmath.a").write_bytes(os.urandom(4096) + b"\0" * 50_000)
    (p / "lib" / "libvecmath.so.1").write_bytes(b"\x7fELF" + os.urandom(100))
    (p / "lib" / "libvecmath.so").symlink_to("libvecmath.so.1")
    (p / "include" / "vecmath" / "vecmath.hpp").write_text("#pragma once\n")
    tool = p / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o700)
    long = p / "share" / ("x" * 120) / ("y" * 60)
    long.mkdir(parents=True)
    (long / "file.txt").write_text("long names go through GNU longlink headers\n")
    return p


def manifest() -> dict[str, object]:
    return make_manifest(AID, input_hash="ab" * 32,
                         toolchain={"cc": ["gcc"], "cxx": ["g++"], "ar": ["ar"], "pin": None,
                                    "pin_version": None, "version": "g++ 12"},
                         link_order=[["lib/libvecmath.a"]]).to_json()


def test_same_tree_same_bytes_regardless_of_times_modes_and_threads(tmp_path: Path) -> None:
    p = make_prefix(tmp_path)
    a = write_asset(p, AID, manifest(), tmp_path / "a", threads=1)
    hdr = p / "include" / "vecmath" / "vecmath.hpp"
    os.utime(hdr, (1_000_000, 1_000_000))
    hdr.chmod(0o600)
    b = write_asset(p, AID, manifest(), tmp_path / "b", threads=4)
    assert a.read_bytes() == b.read_bytes()
    # and the content is what the tree holds, with normalised headers
    with tarfile.open(a) as tf:
        members = tf.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        for m in members:
            assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", archive.FIXED_MTIME)
            assert not m.pax_headers
        modes = {m.name: m.mode for m in members}
        assert modes["bin/tool"] == 0o755
        assert modes["include/vecmath/vecmath.hpp"] == 0o644
        assert modes["lib"] == 0o755
        link = tf.getmember("lib/libvecmath.so")
        assert link.issym() and link.linkname == "libvecmath.so.1"
        assert any(n.endswith("/file.txt") and len(n) > 100 for n in names)


def test_changed_content_changes_bytes(tmp_path: Path) -> None:
    p = make_prefix(tmp_path)
    a = write_asset(p, AID, manifest(), tmp_path / "a").read_bytes()
    (p / "include" / "vecmath" / "vecmath.hpp").write_text("#pragma once // v2\n")
    assert write_asset(p, AID, manifest(), tmp_path / "b").read_bytes() != a


def test_sidecars_and_manifest_match_the_asset(tmp_path: Path) -> None:
    p = make_prefix(tmp_path)
    out = tmp_path / "out"
    asset = write_asset(p, AID, manifest(), out,
                        generated={"lib/pkgconfig/vecmath.pc": b"Name: vecmath\n"})
    digest = parse_sha256_line((out / AID.sha256_name).read_text(), AID.filename)
    assert digest == hashlib.sha256(asset.read_bytes()).hexdigest()
    sidecar = (out / AID.manifest_name).read_bytes()
    with tarfile.open(asset) as tf:
        inner = tf.extractfile(MANIFEST_PATH)
        assert inner is not None and inner.read() == sidecar
        data = json.loads(sidecar)
        files = {f["path"]: f for f in data["files"]}
        assert files["lib/pkgconfig/vecmath.pc"]["sha256"] == hashlib.sha256(
            b"Name: vecmath\n").hexdigest()
        assert files["lib/libvecmath.so"] == {"path": "lib/libvecmath.so",
                                              "link": "libvecmath.so.1"}
        for f in data["files"]:
            if "sha256" in f:
                member = tf.extractfile(f["path"])
                assert member is not None
                assert hashlib.sha256(member.read()).hexdigest() == f["sha256"]
    assert not (p / "lib" / "pkgconfig").exists(), "generated files never touch the prefix"
    assert sorted(x.name for x in out.iterdir()) == sorted(
        [AID.filename, AID.sha256_name, AID.manifest_name])
    schema = json.loads(schema_path().read_text())
    jsonschema.validate(json.loads(sidecar), schema)


def test_schema_rejects_a_broken_manifest() -> None:
    schema = json.loads(schema_path().read_text())
    bad = dict(manifest(), files=[{"path": "../etc/passwd", "sha256": "0" * 64, "size": 1}])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(manifest(), input_hash="nothex"), schema)


def test_blocks_are_independent_xz_streams_and_thread_count_does_not_matter() -> None:
    data = os.urandom(3000) * 200 + bytes(range(256)) * 3000
    outs = []
    for threads in (1, 3):
        buf = io.BytesIO()
        w = ParallelXzWriter(buf.write, threads=threads, block_size=100_000)
        for i in range(0, len(data), 7777):
            w.write(data[i:i + 7777])
        w.close()
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    assert lzma.decompress(outs[0]) == data  # concatenated streams decode as one file


def test_refuses_assets_at_the_limit_and_leaves_nothing(tmp_path: Path) -> None:
    p = make_prefix(tmp_path)
    (p / "lib" / "big.bin").write_bytes(os.urandom(300_000))
    buf = io.BytesIO()
    with pytest.raises(PrebakeError, match="2 GiB"):
        write_tar_xz(collect_tree(p), buf, limit=200_000)


def test_interrupted_write_leaves_no_asset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    p = make_prefix(tmp_path)
    out = tmp_path / "out"
    write_asset(p, AID, manifest(), out)
    before = {f.name: f.read_bytes() for f in out.iterdir()}

    def boom(*_a: object, **_k: object) -> tuple[str, int]:
        raise KeyboardInterrupt

    monkeypatch.setattr(archive, "write_tar_xz", boom)
    with pytest.raises(KeyboardInterrupt):
        write_asset(p, AID, manifest(), out)
    after = {f.name: f.read_bytes() for f in out.iterdir()}
    assert after == before, "the previous complete asset is untouched, no temp file remains"


def test_refuses_links_leaving_the_tree_and_special_files(tmp_path: Path) -> None:
    p = make_prefix(tmp_path)
    (p / "lib" / "evil").symlink_to("/etc/passwd")
    with pytest.raises(PrebakeError, match="outside the tree"):
        collect_tree(p)
    (p / "lib" / "evil").unlink()
    os.mkfifo(p / "lib" / "fifo")
    with pytest.raises(PrebakeError, match="not a regular file"):
        collect_tree(p)
