"""Every manifest a real build writes reads back as a ``Manifest`` and writes out unchanged."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import jsonschema

from prebake.manifest import Manifest, read_manifest_file
from prebake.package.manifest_builder import schema_path
from tests import support


def test_the_example_manifests_round_trip(tmp_path: Path) -> None:
    ws = tmp_path / "sdk"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns(".prebake", "releases"))
    proc = support.prebake("-C", ws, "build", "--stage", "core", "--platform", "linux-x86_64")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    schema = json.loads(schema_path().read_text())
    sidecars = sorted((ws / "releases").rglob("*.tar.xz.json"))
    assert sidecars, "the build wrote no manifest"
    for side in sidecars:
        data = json.loads(side.read_text())
        jsonschema.validate(data, schema)
        m = read_manifest_file(side)
        assert m.to_json() == data, side.name
        assert m.guards is not None and m.guards.check.ok and m.files and m.link_order
        with tarfile.open(side.with_name(side.name[:-len(".json")])) as tar:
            member = tar.extractfile("share/prebake/manifest.json")
            assert member is not None
            inner = json.loads(member.read())
        assert Manifest.from_json(inner, "inner").to_json() == inner == data
