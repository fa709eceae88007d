"""The build's guards are a list of steps over one frozen input (``prebake.bake.guards``): they
run in order and the first that fails stops the rest, so a later guard never reads what an
earlier one refused. Real inputs: the example workspace's ``vecmath`` recipe and a gcc-built
archive."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prebake.bake.guards import GUARDS, GuardInput, run_guards
from prebake.bake.process import BuildLog
from prebake.workspace import load_workspace
from prebake.workspace.model import Workspace
from tests import support


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return load_workspace(support.ROOT / "examples" / "sdk")


def _guard_input(ws: Workspace, tmp_path: Path) -> GuardInput:
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    return GuardInput(ws.recipes["vecmath"], ws.platforms["linux-x86_64"], prefix,
                      tmp_path / "work", BuildLog(tmp_path / "unit.log"))


def _install_vecmath(prefix: Path) -> None:
    """What the recipe declares: its archive (gcc, x86-64), its header and its licence."""
    built = support.build("guard-list-vecmath", {"v.c": "int vecmath_len(void) { return 5; }\n"},
                          [["gcc", "-O1", "-fPIC", "-c", "v.c"], ["ar", "rcs", "libv.a", "v.o"]])
    (prefix / "lib").mkdir()
    shutil.copyfile(built / "libv.a", prefix / "lib" / "libvecmath.a")
    (prefix / "include" / "vecmath").mkdir(parents=True)
    (prefix / "include" / "vecmath" / "vecmath.hpp").write_text("int vecmath_len();\n")
    (prefix / "share" / "licenses" / "vecmath").mkdir(parents=True)
    (prefix / "share" / "licenses" / "vecmath" / "LICENSE").write_text("MIT\n")


def test_the_first_guard_that_fails_stops_the_rest(ws: Workspace, tmp_path: Path) -> None:
    g = _guard_input(ws, tmp_path)
    out = run_guards(g)
    g.log.close()
    assert out.failures == ["vecmath: declared outputs missing from the prefix: "
                            "lib/libvecmath.a, include/vecmath/vecmath.hpp, "
                            "share/licenses/vecmath/LICENSE"]
    assert out.libs == [] and out.check is None  # libraries_found and the contract never ran


def test_a_link_leaving_the_prefix_stops_before_any_binary_is_read(
        ws: Workspace, tmp_path: Path) -> None:
    g = _guard_input(ws, tmp_path)
    _install_vecmath(g.prefix)
    (g.prefix / "lib" / "libescape.so").symlink_to("/etc/hostname")
    out = run_guards(g)
    g.log.close()
    assert [lib.path for lib in out.libs] == ["lib/libvecmath.a"]  # libraries_found ran
    assert len(out.failures) == 1 and "symlinks leave the prefix" in out.failures[0]
    assert "lib/libescape.so" in out.failures[0]
    assert out.facts == [] and out.check is None and out.link_order == []


def test_the_order_reads_like_the_data_flow() -> None:
    """Cheap guards that need no toolchain first, real links last, the link order after every
    proof (it is only worth computing for libraries that passed)."""
    names = [guard.__name__ for guard in GUARDS]
    assert names.index("outputs_present") == 0
    assert names.index("contract_checked") < names.index("consumer_linked") \
        < names.index("link_order_found") == len(names) - 1
