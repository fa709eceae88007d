"""``{jobs}`` is the cores divided among the units running when a command starts: a unit that
runs alone under ``-j 2`` gets every core; two units running at once share them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from prebake.bake.core_budget import CoreBudget, usable_cores
from tests import support

TOML = support.gcc_workspace("cores-sdk", "{pins}", "libs", "[{recipes}]",
                             more=support.PLAIN_LINK)
RECIPE = '''from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="{name}",
    pin="{name}",
    sources=(LocalSource("../src"),),
    platforms={{"*": Build(commands=(
        "sh -c 'touch {sync}/{name}.started'",
        "sh -c 'for i in $(seq 1200); do [ -e {sync}/{other}.started ] && exit 0; sleep 0.1; done;"
        " exit 1'",
        "sh -c 'echo {{jobs}} > {sync}/{name}.jobs'",
        "cmake -E make_directory {{build}} {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -c {{src}}/{name}.c -o {{build}}/{name}.o",
        "{{ar}} rcs {{prefix}}/lib/lib{name}.a {{build}}/{name}.o",
        "cmake -E copy {{src}}/{name}.h {{prefix}}/include/{name}.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/lib{name}.a",)}}, headers=("include/{name}.h",)),
    kind={{"*": "static"}},
    link_test=Snippet(code="#include <{name}.h>\\nint main(void) {{ return {name}_f(); }}\\n",
                      lang="c", symbols=("{name}_f",)),
)
'''


def _workspace(root: Path, names: list[str], waits: bool) -> Path:
    sync = root / "sync"
    sync.mkdir(parents=True)
    (root / "recipes").mkdir()
    (root / "src").mkdir()
    pins = "\n".join(f'{n} = "1.0.0"' for n in names)
    (root / "prebake.toml").write_text(TOML.replace("{pins}", pins).replace(
        "{recipes}", ", ".join(f'"{n}"' for n in names)))
    for n in names:
        other = next((o for o in names if o != n), n) if waits else n  # alone: itself
        (root / "recipes" / f"{n}.py").write_text(
            RECIPE.format(name=n, other=other, sync=sync))
        (root / "src" / f"{n}.c").write_text(f"int {n}_f(void) {{ return 0; }}\n")
        (root / "src" / f"{n}.h").write_text(f"int {n}_f(void);\n")
    return root


def _build(ws: Path) -> dict[str, object]:
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    proc = support.prebake("-C", ws, "build", "-j", "2", "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def test_a_lone_unit_gets_every_core(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", ["alone"], waits=False)
    _build(ws)
    assert int((ws / "sync" / "alone.jobs").read_text()) == usable_cores()


def test_two_running_units_share_the_cores(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", ["left", "right"], waits=True)
    _build(ws)  # each unit's third command starts only once both units run
    jobs = sorted(int((ws / "sync" / f"{n}.jobs").read_text()) for n in ("left", "right"))
    n = usable_cores()
    assert jobs == ([n // 2, n - n // 2] if n > 1 else [1, 1])


def test_shares_are_rebalanced_as_units_finish() -> None:
    budget = CoreBudget(4)
    assert budget.share("a") == 4  # not running yet: what it would get alone
    budget.start("a")
    budget.start("b")
    budget.start("c")
    assert [budget.share(u) for u in "abc"] == [2, 1, 1]  # the first started gets the rest
    budget.finish("a")
    assert [budget.share(u) for u in "bc"] == [2, 2]
    budget.finish("b")
    assert budget.share("c") == 4
    assert CoreBudget(1).share("x") == 1
