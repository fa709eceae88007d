"""prebake.lock reading/writing and ``prebake agree`` across the locks of one host."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.consume.agree import agree
from prebake.consume.consumer_lock import LockEntry, read_lock
from prebake.errors import PrebakeError

A, B = "a" * 64, "b" * 64
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def schema(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return data


def write(path: Path, *entries: tuple[str, str, str, str]) -> Path:
    lock = read_lock(path)
    for name, version, platform, sha in entries:
        lock.put(LockEntry(name, version, platform, sha,
                           f"file:///s/{name}-{version}-{platform}.tar.xz", "continuous"))
    lock.write()
    return path


def test_round_trip_is_sorted_and_deterministic(tmp_path: Path) -> None:
    p1 = write(tmp_path / "1.lock", ("zlib", "1.3", "wasm", A), ("abseil", "2024", "wasm", B))
    p2 = write(tmp_path / "2.lock", ("abseil", "2024", "wasm", B), ("zlib", "1.3", "wasm", A))
    assert p1.read_bytes() == p2.read_bytes()
    data = json.loads(p1.read_text())
    jsonschema.validate(data, schema("lock"))
    assert [e["name"] for e in data["packages"]] == ["abseil", "zlib"]
    assert read_lock(p1).get("zlib", "wasm") == LockEntry(
        "zlib", "1.3", "wasm", A, "file:///s/zlib-1.3-wasm.tar.xz", "continuous")


@pytest.mark.parametrize(("text", "message"), [
    ("{", "invalid JSON"),
    ('{"packages": {}}', "no 'packages' list"),
    ('{"schema_version": 9, "packages": []}', "schema_version 9"),
    ('{"schema_version": 1, "packages": [{"name": "x"}]}', "missing or empty"),
    ('{"schema_version": 1, "packages": [{"name": "x", "version": "1", "platform": "p", '
     '"sha256": "XYZ", "url": "u"}]}', "not 64 lowercase hex"),
    ('{"schema_version": 1, "packages": [{"name": "x", "version": "1", "platform": "p", '
     f'"sha256": "{A}", "url": "u", "colour": "red"}}]}}', "unknown key(s) colour"),
])
def test_malformed_lock_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "prebake.lock"
    p.write_text(text)
    with pytest.raises(PrebakeError) as info:
        read_lock(p)
    assert message in str(info.value) and str(p) in str(info.value)
    assert "\n" not in str(info.value)


def test_agreeing_locks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.lock", ("ort", "1.27.0", "wasm", A))
    b = write(tmp_path / "b.lock", ("ort", "1.27.0", "wasm", A), ("zlib", "1.3", "wasm", B))
    assert agree([a, b]) == []
    assert main(["agree", str(a), str(b)]) == 0
    assert "2 lock(s) agree" in capsys.readouterr().out


def test_disagreements_are_each_reported(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a.lock", ("ort", "1.27.0", "wasm", A), ("zlib", "1.3", "wasm", A))
    b = write(tmp_path / "b.lock", ("ort", "1.26.0", "wasm", B), ("zlib", "1.3", "wasm", B))
    c = write(tmp_path / "c.lock", ("ort", "1.27.0", "wasm", A))
    found = agree([a, b, c])
    assert [(d.name, d.what) for d in found] == [("ort", "version"), ("zlib", "sha256")]
    assert found[0].values == {"1.27.0": sorted([str(a), str(c)]), "1.26.0": [str(b)]}
    assert main(["agree", str(a), str(b), str(c)]) == 1
    out = capsys.readouterr().out
    assert "ort: version differs: 1.26.0 in" in out and "zlib (wasm): sha256 differs" in out
    assert main(["agree", "--json", str(a), str(b)]) == 1
    payload = json.loads(capsys.readouterr().out)
    jsonschema.validate(payload, schema("agree"))
    assert payload["ok"] is False and len(payload["disagreements"]) == 2


def test_agree_missing_lock_is_usage_error(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agree", str(tmp_path / "nope.lock")]) == 2
    assert "no such lock file" in capsys.readouterr().err


def test_agree_names_lock_and_platform_on_each_side(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """One lock holding a dependency at two versions for two platforms: each side of the
    disagreement names the lock *and* the platform, so the two sides are told apart."""
    a = write(tmp_path / "a.lock", ("ort", "1.27.0", "linux-x86_64", A),
              ("ort", "1.30.0", "wasm", B))
    b = write(tmp_path / "b.lock", ("ort", "1.30.0", "wasm", B))
    found = agree([a, b])
    assert [(d.name, d.what) for d in found] == [("ort", "version")]
    assert found[0].where == {"1.27.0": [(str(a), "linux-x86_64")],
                              "1.30.0": sorted([(str(a), "wasm"), (str(b), "wasm")])}
    assert main(["agree", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert (f"ort: version differs: 1.27.0 in {a} (linux-x86_64); "
            f"1.30.0 in {a} (wasm), {b} (wasm)") in out
    assert main(["agree", "--json", str(a), str(b)]) == 1
    payload = json.loads(capsys.readouterr().out)
    jsonschema.validate(payload, schema("agree"))
    assert payload["disagreements"][0]["where"]["1.27.0"] == [
        {"lock": str(a), "platform": "linux-x86_64"}]
