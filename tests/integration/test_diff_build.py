"""``prebake build --diff``: a version bump shows its consumer impact in the build summary,
computed against the store's current asset before the new one replaces anything."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests import support

TOML = support.gcc_workspace("demo-sdk", 'demo = "{version}"', "libs", '["demo"]',
                             more=support.PLAIN_LINK)
RECIPE = '''from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="demo",
    pin="demo",
    sources=(LocalSource("../src"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {build} {prefix}/lib {prefix}/include",
        "{cc} -O2 -fPIC -c {src}/demo.c -o {build}/demo.o",
        "{ar} rcs {prefix}/lib/libdemo.a {build}/demo.o",
        "cmake -E copy {src}/demo.h {prefix}/include/demo.h",
    ))},
    outputs=Outputs(libs={"*": ("lib/libdemo.a",)}, headers=("include/demo.h",)),
    kind={"*": "static"},
    link_test=Snippet(code="#include <demo.h>\\nint main(void) { return foo(1) - 2; }\\n",
                      lang="c", symbols=("foo",)),
)
'''
V1 = "int foo(int x) { return x + 1; }\nint gone(void) { return 7; }\n"
# v2 drops ``gone`` and calls close_range (glibc 2.34): still links on this host's glibc,
# so the build's own link test passes while the floor goes up.
V2 = ("extern int close_range(unsigned int, unsigned int, int);\n"
      "int foo(int x) { return x + 1 + 0 * close_range(~0u, ~0u, 0); }\n")


def workspace(root: Path, version: str, source: str) -> Path:
    (root / "recipes").mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(exist_ok=True)
    (root / "prebake.toml").write_text(TOML.replace("{version}", version))
    (root / "recipes" / "demo.py").write_text(RECIPE)
    (root / "src" / "demo.c").write_text(source)
    (root / "src" / "demo.h").write_text("int foo(int);\n")
    return root


def _pythonpath() -> dict[str, str]:
    """Keep ``PYTHONPATH`` when the suite runs against a checkout other than the installed one."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def build(ws: Path, summary: Path) -> tuple[int, dict[str, object], str]:
    proc = support.prebake("-C", ws, "build", "--diff", "--json",
                           env={"GITHUB_STEP_SUMMARY": str(summary), **_pythonpath()})
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_build_diff_in_summary(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", "1.0.0", V1)
    summary = tmp_path / "summary.md"
    rc, data, err = build(ws, summary)
    assert rc == 0, (data, err)
    (unit,) = data["units"]  # type: ignore[misc]
    assert unit["state"] == "built" and unit["diff"] is None
    assert "First release" in summary.read_text()

    workspace(ws, "2.0.0", V2)
    summary.unlink()
    rc, data, err = build(ws, summary)
    assert rc == 1, (data, err)  # breaking: the unit fails and nothing is published
    (unit,) = data["units"]  # type: ignore[misc]
    assert unit["state"] == "failed" and "nothing published" in unit["message"]
    diff = unit["diff"]
    assert diff["breaking"] is True
    assert (diff["old"]["version"], diff["new"]["version"]) == ("1.0.0", "2.0.0")
    # `gone` is a global no installed header declares: reported as internal, not breaking
    (gone,) = [c for c in diff["changes"] if c["category"] == "export"]
    assert gone["subject"] == "gone" and gone["breaking"] is False
    assert gone["reason"].startswith("internal symbol removed")
    assert any(c["subject"] == "glibc_max" and c["new"] == "2.34" and c["breaking"]
               for c in diff["changes"])
    text = summary.read_text()  # the summary shows the diff either way
    assert "demo-1.0.0-linux-x86_64.tar.xz" in text and "<code>gone</code>" in text
    assert "glibc_max" in text
    assert sorted(p.name for p in (ws / "releases").rglob("*.tar.xz")) == [
        "demo-1.0.0-linux-x86_64.tar.xz"]
    # --allow-breaking publishes it: the diff ran before the publish, not against itself
    proc = support.prebake("-C", ws, "build", "--diff", "--allow-breaking", "--json",
                           env={"GITHUB_STEP_SUMMARY": str(summary), **_pythonpath()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["units"][0]["diff"]["breaking"] is True
    assert sorted(p.name for p in (ws / "releases").rglob("*.tar.xz")) == [
        "demo-1.0.0-linux-x86_64.tar.xz", "demo-2.0.0-linux-x86_64.tar.xz"]
