"""The build's guards are steps over typed values (``prebake.bake.guards``): each takes the
recipe's frozen input and what earlier guards returned, returns its own frozen value, and the
first that fails stops the rest with every message found so far — no guard reads what another
wrote into a shared report. Real inputs: the example workspace's ``vecmath`` recipe and a
gcc-built archive."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prebake.bake.guards import (
    GuardInput,
    facts_read,
    libraries_found,
    run_guards,
)
from prebake.bake.process import BuildLog
from prebake.bake.unitrun import UnitFailed
from prebake.errors import PrebakeError
from prebake.intake import load_workspace
from prebake.model.workspace import Workspace
from prebake.variables import sanitized
from tests import support


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return load_workspace(support.ROOT / "examples" / "sdk")


def _guard_input(ws: Workspace, tmp_path: Path) -> GuardInput:
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    p = ws.platforms["linux-x86_64"]
    return GuardInput(ws.recipes["vecmath"], p, prefix, tmp_path / "work",
                      BuildLog(tmp_path / "unit.log"),
                      sanitized(None, platform_env=p.env, unset=p.env_unset))


def _install_vecmath(prefix: Path) -> None:
    """What the recipe declares, built from the example's own sources with g++ (x86-64): its
    archive, its header and its licence."""
    src = support.ROOT / "examples" / "sdk" / "src" / "vecmath"
    files = {str(p.relative_to(src)): p.read_text() for p in src.rglob("*") if p.is_file()}
    built = support.build("guard-list-vecmath", files, [
        ["g++", "-std=c++17", "-O2", "-fPIC", "-Iinclude", "-c", "src/vecmath.cpp"],
        ["ar", "rcs", "libvecmath.a", "vecmath.o"]])
    (prefix / "lib").mkdir()
    shutil.copyfile(built / "libvecmath.a", prefix / "lib" / "libvecmath.a")
    shutil.copytree(built / "include", prefix / "include")
    (prefix / "share" / "licenses" / "vecmath").mkdir(parents=True)
    shutil.copyfile(built / "LICENSE", prefix / "share" / "licenses" / "vecmath" / "LICENSE")


def _log(g: GuardInput) -> str:
    g.log.close()
    return (g.log.path).read_text()


def test_the_first_guard_that_fails_stops_the_rest(ws: Workspace, tmp_path: Path) -> None:
    g = _guard_input(ws, tmp_path)
    with pytest.raises(UnitFailed) as exc:
        run_guards(g)
    assert str(exc.value) == ("vecmath: declared outputs missing from the prefix: "
                              "lib/libvecmath.a, include/vecmath/vecmath.hpp, "
                              "share/licenses/vecmath/LICENSE")
    assert "against the linux-x86_64 contract" not in _log(g)  # the contract never ran


def test_a_link_leaving_the_prefix_stops_before_any_binary_is_read(
        ws: Workspace, tmp_path: Path) -> None:
    g = _guard_input(ws, tmp_path)
    _install_vecmath(g.prefix)
    (g.prefix / "lib" / "libescape.so").symlink_to("/etc/hostname")
    with pytest.raises(UnitFailed) as exc:
        libraries_found(g)
    assert "symlinks leave the prefix" in str(exc.value)
    assert "lib/libescape.so" in str(exc.value) and exc.value.violations == ()
    with pytest.raises(UnitFailed, match="symlinks leave the prefix"):
        run_guards(g)
    assert "against the linux-x86_64 contract" not in _log(g)


def test_a_passing_chain_returns_what_each_guard_proved(ws: Workspace, tmp_path: Path) -> None:
    g = _guard_input(ws, tmp_path)
    _install_vecmath(g.prefix)
    report = run_guards(g)
    g.log.close()
    assert [lib.path for lib in report.libs] == ["lib/libvecmath.a"]
    assert [f["path"] for f in report.facts] == ["lib/libvecmath.a"]
    assert report.link_order == (("lib/libvecmath.a",),)
    assert "whole archive lib/libvecmath.a" in report.linked and "snippet" in report.linked


def test_a_binary_that_cannot_be_read_is_returned_not_raised(
        ws: Workspace, tmp_path: Path) -> None:
    """``facts_read`` returns what it could not read (the contract check after it names the
    same file with its own rule, and the chain fails)."""
    g = _guard_input(ws, tmp_path)
    _install_vecmath(g.prefix)
    (g.prefix / "lib" / "libvecmath.a").write_bytes(b"!<arch>\nnot an archive member")
    shipped = libraries_found(g)
    read = facts_read(g, shipped)
    assert read.facts == () and len(read.failures) == 1
    assert read.failures[0].startswith("vecmath: inspect lib/libvecmath.a: ")
    with pytest.raises(PrebakeError, match=r"libvecmath\.a: truncated or corrupt archive"):
        run_guards(g)
    g.log.close()
