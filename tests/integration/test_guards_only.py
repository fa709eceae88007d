"""``prebake build --guards-only UNIT``: after a guard failure, fix only a guard input (here
the snippet's ``allow_undefined``) and re-run inspect, contract and link proofs on the unit's
existing build tree — no build command runs, and the asset published is the one a full build
gives. A tree built from other non-guard inputs (a changed command) is refused, exit 2."""

from __future__ import annotations

from pathlib import Path

from tests import support
from tests.integration import guard_workspace as gw

UNIT = "core/linux-x86_64"
ALLOW = 'allow_undefined=("thrower_backend_*",),'


def _fix_snippet(ws: Path) -> None:
    recipe = ws / "recipes" / "thrower.py"
    text = recipe.read_text()
    assert "SNIPPET_EXTRA" not in text
    recipe.write_text(text.replace('"int main() {', '"int main() {', 1).replace(
        "\n    ),\n)\n", f"\n        {ALLOW}\n    ),\n)\n"))
    assert ALLOW in recipe.read_text()


def _sha(ws: Path, store: str = "releases") -> str:
    side = next((ws / store).rglob("guarded-core-1.0.0-linux-x86_64.tar.xz.sha256"))
    return side.read_text().split()[0]


def test_guards_only_retries_the_guards_without_building_and_publishes_the_same_asset(
        tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws")
    rc, data, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1 and "undefined symbol thrower_backend_init" in data["units"][0]["message"]
    obj = next((ws / ".prebake" / "work").rglob("thrower.o"))
    built_at = obj.stat().st_mtime_ns

    _fix_snippet(ws)  # a guard input only: the recipe file's Snippet
    rc, data, proc = gw.build_json(ws, "--guards-only", UNIT)
    assert rc == 0, (data, proc.stderr)
    (unit,) = data["units"]
    assert unit["state"] == "built"
    log = Path(unit["log"]).read_text()
    assert "--guards-only, reusing the build tree" in log
    assert "make_directory" not in log and "thrower.cpp" not in log  # no build command ran
    assert obj.stat().st_mtime_ns == built_at
    m = gw.manifest(ws, "linux-x86_64")
    assert m["guards"]["link_test"]["allow_undefined"] == {
        "thrower_backend_*": ["thrower_backend_init"]}
    assert m["input_hash"] == unit["input_hash"]

    # a full build from the same (fixed) workspace gives the same input hash and bytes
    rc, full, _ = gw.build_json(ws, "--platform", "linux-x86_64", "--force",
                                "--store", "file://./releases-full")
    assert rc == 0, full
    assert full["units"][0]["input_hash"] == unit["input_hash"]
    assert _sha(ws, "releases-full") == _sha(ws) == unit["sha256"]


def test_guards_only_refuses_a_tree_built_from_another_command(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws")
    rc, _, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    _fix_snippet(ws)
    recipe = ws / "recipes" / "thrower.py"
    recipe.write_text(recipe.read_text().replace('"-O2 -fPIC"', '"-O1 -fPIC"'))
    before = sorted(p for p in (ws / ".prebake").rglob("*") if "logs" not in p.parts)
    proc = support.prebake("-C", ws, "build", "--guards-only", UNIT)
    assert proc.returncode == 2, proc
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "strategy changed" in line and "thrower" in line
    assert "Traceback" not in proc.stderr
    assert sorted(p for p in (ws / ".prebake").rglob("*") if "logs" not in p.parts) == before
    assert gw.assets(ws) == []


def test_guards_only_on_a_unit_never_built_is_one_clear_error(tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws", snippet_extra=ALLOW)
    proc = support.prebake("-C", ws, "build", "--guards-only", UNIT)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "no build tree of this unit" in proc.stderr and UNIT in proc.stderr
    assert gw.assets(ws) == []
    proc = support.prebake("-C", ws, "build", "--guards-only", "core/nowhere")
    assert proc.returncode == 2 and "no such unit" in proc.stderr


def test_guards_only_refuses_an_edited_tree_and_a_still_failing_guard_stays_retryable(
        tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws")
    rc, _, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    # the guard input unchanged: the retry fails the same way (exit 1), nothing published
    rc, data, _ = gw.build_json(ws, "--guards-only", UNIT)
    assert rc == 1 and "undefined symbol thrower_backend_init" in data["units"][0]["message"]
    assert gw.assets(ws) == []
    header = next((ws / ".prebake" / "work").rglob("prefix/include/thrower.hpp"))
    header.write_text(header.read_text() + "// edited by hand\n")
    _fix_snippet(ws)
    proc = support.prebake("-C", ws, "build", "--guards-only", UNIT)
    assert proc.returncode == 2 and "include/thrower.hpp changed" in proc.stderr, proc
    assert gw.assets(ws) == []


def test_a_changed_link_test_flag_and_contract_are_guard_inputs_a_changed_env_is_not(
        tmp_path: Path) -> None:
    ws = gw.make(tmp_path / "ws")
    rc, _, _ = gw.build_json(ws, "--platform", "linux-x86_64")
    assert rc == 1
    _fix_snippet(ws)
    toml = ws / "prebake.toml"
    text = toml.read_text()
    toml.write_text(text.replace('flags = ["-pthread"]', 'flags = ["-pthread", "-O1"]')
                    .replace('cxx_stdlib = "libstdc++"', 'cxx_stdlib = "libstdc++"\n'
                             'allow_unknown = ["lto"]'))
    assert toml.read_text() != text
    rc, data, proc = gw.build_json(ws, "--guards-only", UNIT)
    assert rc == 0, (data, proc.stderr)
    # a platform env var reaches the build commands: not a guard input
    toml.write_text(toml.read_text().replace(
        'env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]',
        'env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]\nenv = { FOO = "1" }'))
    proc = support.prebake("-C", ws, "build", "--guards-only", UNIT, "--force")
    assert proc.returncode == 2 and "platform-build-profile changed" in proc.stderr, proc
