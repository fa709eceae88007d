"""``[platforms.P.toolchain] from_stage``: the compiler an earlier stage installs builds the
later ones, and that stage's input hash is their toolchain identity."""

from __future__ import annotations

import json
from pathlib import Path

from tests import support
from tests.integration.test_build import build_json, prebake

WORKSPACE = support.workspace_text("toolchain-from-stage")

# The core recipe installs a compiler: a wrapper that fixes the flags every object gets
# (here a define the extra recipe's source insists on) around the system gcc, plus the small
# runtime library it ships (built with the wrapper it just installed).
KILNCC = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="kilncc", pin="kilncc", sources=(LocalSource("../src/kilncc"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {prefix}/bin {prefix}/lib",
        "cmake -E copy {src}/kiln-cc {src}/kiln-c++ {prefix}/bin",
        "{cc} -c {src}/kilnrt.c -o {build}/kilnrt.o",
        "{ar} rcs {prefix}/lib/libkilnrt.a {build}/kilnrt.o",
    ))},
    outputs=Outputs(libs={"*": ("lib/libkilnrt.a",)}),
    kind={"*": "static"},
)
'''
HELLO = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="hello", pin="hello", sources=(LocalSource("../src/hello"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {prefix}/lib",
        "{cc} -c {src}/hello.c -o {build}/hello.o",
        "{ar} rcs {prefix}/lib/libhello.a {build}/hello.o",
    ))},
    outputs=Outputs(libs={"*": ("lib/libhello.a",)}),
    kind={"*": "static"},
)
'''
WRAPPER = '#!/bin/sh\nexec {tool} -fPIC -DKILN_WRAPPED=1 "$@"\n'


def _workspace(root: Path) -> Path:
    (root / "recipes").mkdir(parents=True)
    (root / "prebake.toml").write_text(WORKSPACE)
    (root / "recipes" / "kilncc.py").write_text(KILNCC)
    (root / "recipes" / "hello.py").write_text(HELLO)
    kiln = root / "src" / "kilncc"
    kiln.mkdir(parents=True)
    for name, tool in (("kiln-cc", "gcc"), ("kiln-c++", "g++")):
        (kiln / name).write_text(WRAPPER.format(tool=tool))
        (kiln / name).chmod(0o755)
    (kiln / "kilnrt.c").write_text("int kiln_rt_version(void) { return KILN_WRAPPED; }\n")
    hello = root / "src" / "hello"
    hello.mkdir(parents=True)
    (hello / "hello.c").write_text(
        "#ifndef KILN_WRAPPED\n#error built without the core stage's compiler\n#endif\n"
        "int hello(void) { return 42; }\n")
    return root


def _explain(ws: Path, unit: str, recipe: str) -> dict[str, str]:
    proc = prebake(ws, "plan", "--explain", unit, "--json")
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout)["unit"]["recipe_inputs"][recipe])


def test_a_later_stage_builds_with_the_compiler_the_core_stage_installs(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    core = json.loads(prebake(ws, "plan", "--json").stdout)
    hashes = {u["id"]: u["input_hash"] for u in core["units"]}
    hello = _explain(ws, "hello/linux-x86_64", "hello")
    assert hello["toolchain"] == f"from stage core: {hashes['core/linux-x86_64']}"
    assert _explain(ws, "core/linux-x86_64", "kilncc")["toolchain"].startswith("bootstrap:")
    # the stage runs first (hello's unit depends on it), then hello builds with its compiler
    rc, data = build_json(ws)
    assert rc == 0, json.dumps(data, indent=2)
    assert [(u["unit"], u["state"]) for u in data["units"]] == [
        ("core/linux-x86_64", "built"), ("hello/linux-x86_64", "built")]
    rc, data = build_json(ws)
    assert {u["unit"]: u["state"] for u in data["units"]} == {
        "core/linux-x86_64": "skipped", "hello/linux-x86_64": "skipped"}
    (manifest,) = (ws / "releases").rglob("hello-1.0.0-linux-x86_64.tar.xz.json")
    verified = json.loads(manifest.read_text())["toolchain"]["verified"]
    assert verified["family"] == "gcc" and verified["status"] == "unpinned"
    assert str(ws) not in json.dumps(verified)
    # changing the recipe that makes the compiler changes the unit built with it
    wrapper = ws / "src" / "kilncc" / "kiln-cc"
    wrapper.write_text(wrapper.read_text().replace("-fPIC", "-fPIC -O2"))
    after = _explain(ws, "hello/linux-x86_64", "hello")
    assert after["toolchain"] != hello["toolchain"]
    assert {k for k in hello if hello[k] != after[k]} == {"toolchain"}


def test_toolchain_prefix_without_from_stage_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text().replace('from_stage = "core"\n', ""))
    proc = prebake(ws, "plan")
    assert proc.returncode == 2
    assert "platforms.linux-x86_64.toolchain.cc" in proc.stderr
    assert "{toolchain_prefix} needs from_stage" in proc.stderr
    toml.write_text(WORKSPACE.replace('after = ["core"]\n', ""))
    proc = prebake(ws, "plan")
    assert proc.returncode == 2 and "stage 'extra' must come after 'core'" in proc.stderr
