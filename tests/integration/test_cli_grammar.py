"""One CLI grammar: global options before or after the command, one error prefix, a failed path
prints only its error; ``check --platform`` needs only the platform, not the recipes' sources."""

from __future__ import annotations

import io
import json
import lzma
import shutil
import tarfile
from pathlib import Path

import pytest

from tests import support

SDK = support.ROOT / "examples" / "sdk"


def _json(proc: object) -> object:
    return json.loads(proc.stdout)  # type: ignore[attr-defined]


def test_workspace_and_json_before_or_after_the_command() -> None:
    forms = [
        ("-C", SDK, "plan", "--json"),
        ("plan", "-C", SDK, "--json"),
        ("--json", "-C", SDK, "plan"),
        ("plan", "--json", f"--workspace={SDK}"),
    ]
    outputs = []
    for form in forms:
        proc = support.prebake(*form)
        assert proc.returncode == 0, (form, proc.stderr)
        outputs.append(_json(proc))
    assert all(o == outputs[0] for o in outputs[1:])
    assert outputs[0]["units"]  # type: ignore[index]


def test_debug_after_the_command_shows_the_traceback(tmp_path: Path) -> None:
    plain = support.prebake("plan", "-C", tmp_path)
    assert plain.returncode == 2
    assert plain.stderr.startswith("prebake: error: ") and "Traceback" not in plain.stderr
    debug = support.prebake("plan", "-C", tmp_path, "--debug")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_usage_errors_use_the_one_prefix() -> None:
    proc = support.prebake("inspect")  # PATH is required
    assert proc.returncode == 2
    assert "prebake: error: " in proc.stderr
    assert "prebake inspect: error" not in proc.stderr
    proc = support.prebake("--json", "cmake-module-path")
    assert proc.returncode == 2
    assert "prebake: error: cmake-module-path has no --json output" in proc.stderr


def test_a_truncated_asset_prints_only_its_error(tmp_path: Path) -> None:
    payload = b"\x7fELF" + b"\0" * 60_000
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("lib/libx.so")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    whole = lzma.compress(buf.getvalue())
    asset = tmp_path / "x-1.0.0-linux-x86_64.tar.xz"
    asset.write_bytes(whole[: len(whole) // 2])
    proc = support.prebake("inspect", asset)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"prebake: error: {asset}: "), proc.stderr
    assert "provenance" not in proc.stdout and "sha256" not in proc.stdout, proc.stdout


@pytest.fixture(scope="module")
def host_object() -> Path:
    out = support.build("grammar-obj", {"a.c": "int answer(void) { return 42; }\n"},
                        [["gcc", "-O2", "-c", "a.c", "-o", "a.o"]])
    return out / "a.o"


def test_check_platform_needs_no_recipe_sources(tmp_path: Path, host_object: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(SDK / "prebake.toml", ws / "prebake.toml")
    shutil.copytree(SDK / "recipes", ws / "recipes")  # recipes name ../src/…, which is absent
    assert support.prebake("plan", "-C", ws).returncode == 2  # the whole workspace needs them
    proc = support.prebake("check", host_object, "--platform", "linux-x86_64", "-C", ws, "--json")
    assert proc.returncode == 0, proc.stderr
    report = _json(proc)
    assert report["ok"] is True  # type: ignore[index]
    wrong = support.prebake("check", host_object, "--platform", "linux-x86_46", "-C", ws)
    assert wrong.returncode == 2
    assert "did you mean 'linux-x86_64'?" in wrong.stderr
