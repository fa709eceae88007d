"""Breaking means the public API, and a breaking diff blocks ``build --diff``.

A real C library built with gcc, three releases: 1.0.1 drops a global no header declares
(internal: compatible, published), 1.0.2 drops a function its header declares (breaking: the
build exits 1, publishes nothing, and the step summary still shows the diff), and
``--allow-breaking`` publishes it anyway.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests import support
from tests.integration.release_fixtures import hello_workspace, write_hello

EXTRA_DECL = "int hello_extra(void);\n"
EXTRA_DEF = "int hello_extra(void) { return 7; }\n"
INTERNAL_DEF = "int hello_internal_table[4] = {1, 2, 3, 4};\n"


def _build(ws: Path, *args: str, summary: Path) -> tuple[int, dict[str, object]]:
    proc = support.prebake("-C", ws, "build", "--diff", "--json", *args,
                           env={"GITHUB_STEP_SUMMARY": str(summary),
                                "PREBAKE_CACHE": str(ws.parent / "cache")})
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(proc.stdout + proc.stderr) from None


def _stored(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "releases").rglob("*.tar.xz"))


def _pin(ws: Path, version: str) -> None:
    proc = support.prebake("-C", ws, "pin", "hello", version)
    assert proc.returncode == 0, proc.stderr


def test_internal_removal_is_compatible_and_a_header_removal_blocks(tmp_path: Path) -> None:
    ws = hello_workspace(tmp_path / "ws")
    summary = tmp_path / "summary.md"
    write_hello(ws, header_extra=EXTRA_DECL, source_extra=EXTRA_DEF + INTERNAL_DEF)
    rc, _ = _build(ws, summary=summary)
    assert rc == 0 and _stored(ws) == ["hello-1.0.0-linux-x86_64.tar.xz"]
    assert "First release" in summary.read_text()

    # 1.0.1: an undeclared global is gone -> internal, not breaking; published
    _pin(ws, "1.0.1")
    write_hello(ws, header_extra=EXTRA_DECL, source_extra=EXTRA_DEF)
    rc, data = _build(ws, summary=summary)
    (unit,) = data["units"]  # type: ignore[misc]
    assert rc == 0, unit
    diff = unit["diff"]
    assert diff["breaking"] is False
    (gone,) = [c for c in diff["changes"] if c["subject"] == "hello_internal_table"]
    assert gone["breaking"] is False and gone["reason"].startswith("internal symbol removed")
    assert "hello-1.0.1-linux-x86_64.tar.xz" in _stored(ws)

    # 1.0.2: a function the header declares is gone -> breaking: exit 1, nothing published
    _pin(ws, "1.0.2")
    write_hello(ws)
    summary.write_text("")
    rc, data = _build(ws, summary=summary)
    (unit,) = data["units"]  # type: ignore[misc]
    assert rc == 1 and unit["state"] == "failed"
    assert "breaking change(s)" in unit["message"] and "nothing published" in unit["message"]
    assert [c["subject"] for c in unit["diff"]["changes"] if c["breaking"]] == ["hello_extra"]
    assert "hello-1.0.2-linux-x86_64.tar.xz" not in _stored(ws)
    text = summary.read_text()
    assert "hello_extra" in text and "breaking" in text  # the summary shows it either way

    # --allow-breaking publishes it, and still reports the diff
    rc, data = _build(ws, "--allow-breaking", summary=summary)
    (unit,) = data["units"]  # type: ignore[misc]
    assert rc == 0 and unit["state"] == "built" and unit["diff"]["breaking"] is True
    assert "hello-1.0.2-linux-x86_64.tar.xz" in _stored(ws)


def test_recipe_public_symbols_make_an_undeclared_export_api(tmp_path: Path) -> None:
    """``Outputs(public_symbols=…)`` lists exports that are API though no header names them."""
    ws = hello_workspace(tmp_path / "ws")
    recipe = ws / "recipes" / "hello.py"
    recipe.write_text(recipe.read_text().replace(
        'license="LICENSE"),', 'license="LICENSE", public_symbols=("hello_internal_*",)),'))
    summary = tmp_path / "summary.md"
    write_hello(ws, source_extra=INTERNAL_DEF)
    assert _build(ws, summary=summary)[0] == 0
    _pin(ws, "1.0.1")
    write_hello(ws)
    rc, data = _build(ws, summary=summary)
    (unit,) = data["units"]  # type: ignore[misc]
    assert rc == 1 and [c["subject"] for c in unit["diff"]["changes"] if c["breaking"]] == [
        "hello_internal_table"]
    assert _stored(ws) == ["hello-1.0.0-linux-x86_64.tar.xz"]
