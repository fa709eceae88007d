"""Upstream packages judged as they come: the npm ``.tgz`` of onnxruntime-web 1.30.0 and the
PyPI wheel of onnxruntime 1.27.0 (manylinux_2_28 x86_64), both downloaded once and cached.
``inspect``, ``check`` and ``diff`` take the package itself and walk every binary inside with
the safe-extraction rules; nothing needs a manual unpack."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from tests import support

CHECK_SCHEMA = json.loads((support.ROOT / "schemas" / "check.schema.json").read_text())
WASMS = ("ort-wasm-simd-threaded.asyncify.wasm", "ort-wasm-simd-threaded.jsep.wasm",
         "ort-wasm-simd-threaded.jspi.wasm", "ort-wasm-simd-threaded.wasm")


def _ws(tmp: Path) -> Path:
    return support.wasm_check_workspace(tmp, "consumer", 'eh = "wasm"')


def test_check_an_npm_package_reports_each_wasm_with_its_verdict(
        ort_web_tgz: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _ws(tmp_path)
    assert main(["-C", str(ws), "check", "--platform", "wasm", str(ort_web_tgz)]) == 1
    out = capsys.readouterr().out
    lines = {w: [ln for ln in out.splitlines() if f"!package/dist/{w}" in ln.split(":")[0]
                 or ln.endswith(f"!package/dist/{w}")] for w in WASMS}
    assert all(len(v) == 1 for v in lines.values()), out
    assert lines["ort-wasm-simd-threaded.jspi.wasm"][0].startswith("✓")
    for w in set(WASMS) - {"ort-wasm-simd-threaded.jspi.wasm"}:
        assert lines[w][0].startswith("✗") and "eh: required wasm, found emscripten-legacy" in \
            lines[w][0]
    assert "prebake-check-" not in out, "evidence names the package, not the temporary folder"
    assert main(["-C", str(ws), "check", "--platform", "wasm", str(ort_web_tgz), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, CHECK_SCHEMA)
    assert [Path(p).name for p in data["passed"]] == ["ort-wasm-simd-threaded.jspi.wasm"]
    assert sorted(Path(v["path"]).name for v in data["violations"]) == sorted(
        set(WASMS) - {"ort-wasm-simd-threaded.jspi.wasm"})
    assert all(f.startswith(f"{ort_web_tgz}!package/") for f in data["files"])


def test_inspect_a_wheel_finds_the_library_and_its_glibc_floor(
        ort_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json", str(ort_wheel)]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    lib = next(r for r in results if r["path"].endswith("!onnxruntime/capi/"
                                                        "libonnxruntime.so.1.27.0"))
    assert lib["format"] == "elf" and lib["kind"] == "shared-library"
    assert lib["arch"] == "x86_64" and lib["soname"] == "libonnxruntime.so.1"
    assert lib["abi"]["glibc_max"] == "2.27"  # the wheel's manylinux_2_27 tag, read from bytes
    assert main(["inspect", str(ort_wheel)]) == 0
    assert "libonnxruntime.so.1.27.0" in capsys.readouterr().out


def test_diff_takes_packages_and_a_zip_nested_in_a_folder(
        ort_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the same wheel, renamed .zip and nested in a folder beside a tar.gz of its library
    folder = tmp_path / "upstream" / "nested"
    folder.mkdir(parents=True)
    (folder / "onnxruntime.zip").write_bytes(ort_wheel.read_bytes())
    assert main(["diff", str(ort_wheel), str(tmp_path / "upstream"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["breaking"] is False
    assert main(["inspect", "--json", str(tmp_path / "upstream")]) == 0
    paths = [r["path"] for r in json.loads(capsys.readouterr().out)["results"]]
    assert f"{folder}/onnxruntime.zip!onnxruntime/capi/libonnxruntime.so.1.27.0" in paths


def test_a_hostile_package_is_refused_whole(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    evil = tmp_path / "evil.tgz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        ti = tarfile.TarInfo("../escape.so")
        ti.size = 4
        tf.addfile(ti, io.BytesIO(b"\x7fELF"))
    evil.write_bytes(buf.getvalue())
    c = tmp_path / "c.toml"
    c.write_text('lto = "none"\n')
    assert main(["check", "--contract", str(c), str(evil)]) == 2
    err = capsys.readouterr().err
    assert "evil.tgz" in err and "../escape.so" in err and "Traceback" not in err
    assert not (tmp_path / "escape.so").exists()


def test_inspect_names_the_suffixes_the_resolver_unpacks() -> None:
    from prebake.commands.inspect import ASSET_SUFFIXES
    from prebake.inspect.resolve import PACKAGE_SUFFIXES

    assert ASSET_SUFFIXES == PACKAGE_SUFFIXES
