"""A git source at a tag is built from the commit the lock names, never from whatever the tag
names today.

A real repository made here, served over ``file://``: ``prebake pin`` locks the tag's commit in
``prebake.sources.lock`` (the input hash reads it), the build checks that commit out; then the
tag is moved upstream to other code. ``plan`` warns and ``pin --check`` fails, naming both commits,
``build --force`` refuses naming both and publishes nothing (so no other code ever ships under
the same input hash), and ``prebake pin`` again accepts the new commit, which changes the hash.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests import support

PLATFORM = "linux-x86_64"
ASSET = f"mini-2.3.1-{PLATFORM}.tar.xz"

WORKSPACE = support.gcc_workspace("gitlock", 'mini = "2.3.1"', "core", '["mini"]',
                                  env_unset=("CFLAGS", "LDFLAGS"), more="")

RECIPE = """\
from prebake.recipes import Build, GitSource, Outputs, Recipe

RECIPE = Recipe(
    name="mini",
    pin="mini",
    sources=(GitSource({url!r}, ref="v{{version}}", submodules=False),),
    platforms={{"*": Build(commands=(
        "cmake -E make_directory {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -c {{src}}/mini.c -o {{build}}/mini.o",
        "{{ar}} rcs {{prefix}}/lib/libmini.a {{build}}/mini.o",
        "cmake -E copy {{src}}/include/mini.h {{prefix}}/include/mini.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libmini.a",)}}, headers=("include/mini.h",),
                    license="LICENSE"),
)
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(up: Path, value: int, message: str) -> str:
    (up / "mini.c").write_text(f"int mini_value(void) {{ return {value}; }}\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", message)
    return git(up, "rev-parse", "HEAD")


def _lock_git(ws: Path) -> list[dict[str, str]]:
    return list(tomllib.loads((ws / "prebake.sources.lock").read_text()).get("git", []))


def _hash(ws: Path) -> str:
    proc = support.prebake("-C", ws, "plan", "--json")
    assert proc.returncode == 0, proc.stderr
    (unit,) = json.loads(proc.stdout)["units"]
    return str(unit["input_hash"])


def _header_of_asset(ws: Path) -> str:
    (asset,) = (ws / "releases").rglob(ASSET)
    with tarfile.open(asset) as tf:
        member = tf.extractfile("share/prebake/manifest.json")
        assert member is not None
        return str(json.load(member)["input_hash"])


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    up = tmp_path / "upstream"
    (up / "include").mkdir(parents=True)
    (up / "include" / "mini.h").write_text("int mini_value(void);\n")
    (up / "LICENSE").write_text("MIT\n")
    git(up, "init", "-q", "-b", "main")
    _commit(up, 1, "mini 2.3.1")
    git(up, "tag", "-a", "-m", "release", "v2.3.1")  # annotated: the lock holds the commit
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE)
    (ws / "recipes" / "mini.py").write_text(RECIPE.format(url=up.as_uri()))
    return up, ws


def test_a_moved_tag_is_refused_by_build_and_seen_by_pin_check(world: tuple[Path, Path]
                                                              ) -> None:
    up, ws = world
    first = git(up, "rev-parse", "v2.3.1^{commit}")

    # no commit locked: plan refuses, naming the command
    plan = support.prebake("-C", ws, "plan")
    assert plan.returncode == 2 and "run `prebake pin mini 2.3.1`" in plan.stderr, plan.stderr
    assert "git " in plan.stderr and "v2.3.1" in plan.stderr

    pin = support.prebake("-C", ws, "pin", "mini", "2.3.1")
    assert pin.returncode == 0, pin.stderr
    assert _lock_git(ws) == [{"url": up.as_uri(), "ref": "v2.3.1", "commit": first}]
    assert first in pin.stdout
    check = support.prebake("-C", ws, "pin", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    locked_hash = _hash(ws)

    build = support.prebake("-C", ws, "build", "--platform", PLATFORM, "--json", timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    assert _header_of_asset(ws) == locked_hash
    src = ws / ".prebake" / "work" / PLATFORM / "core-mini" / "mini" / "src"
    assert git(src, "rev-parse", "HEAD") == first
    assert git(src, "describe") == "v2.3.1"  # the tag is there, as a clone would have it
    (asset,) = (ws / "releases").rglob(ASSET)
    with tarfile.open(asset) as tf:
        sbom = tf.extractfile("share/prebake/sbom.cdx.json")
        assert sbom is not None
        assert f"ref v2.3.1 at commit {first}" in sbom.read().decode()

    # upstream moves the tag to other code
    second = _commit(up, 2, "not the release")
    git(up, "tag", "-f", "-a", "-m", "moved", "v2.3.1")
    assert second != first

    # the plan's hash reads the lock, not the remote: it cannot change; the plan warns (it asks
    # the remote), pin --check fails, build refuses
    assert _hash(ws) == locked_hash
    plan = support.prebake("-C", ws, "plan")
    assert plan.returncode == 0, plan.stderr
    assert "warning" in plan.stderr and first in plan.stderr and second in plan.stderr
    dry = support.prebake("-C", ws, "build", "--dry-run", "--force")
    assert f"check that FETCH_HEAD is {first}" in dry.stdout, dry.stdout
    check = support.prebake("-C", ws, "pin", "--check")
    assert check.returncode == 1, check.stdout
    assert first in check.stdout and second in check.stdout and "moved" in check.stdout
    before = sorted(p.name for p in (ws / "releases").rglob("*"))
    build = support.prebake("-C", ws, "build", "--platform", PLATFORM, "--force", "--json",
                            timeout=300)
    assert build.returncode == 1, build.stdout
    (unit,) = json.loads(build.stdout)["units"]
    message = unit["message"]
    assert first in message and second in message and "moved" in message, message
    assert sorted(p.name for p in (ws / "releases").rglob("*")) == before  # nothing published

    # pinning again is what accepts the new commit: the lock and the input hash follow
    pin = support.prebake("-C", ws, "pin", "mini", "2.3.1")
    assert pin.returncode == 0, pin.stderr
    assert f"(was {first})" in pin.stdout
    assert _lock_git(ws)[0]["commit"] == second
    assert _hash(ws) != locked_hash
    assert support.prebake("-C", ws, "pin", "--check").returncode == 0


def test_pin_check_fails_when_the_remote_cannot_be_asked(world: tuple[Path, Path]) -> None:
    up, ws = world
    assert support.prebake("-C", ws, "pin", "mini", "2.3.1").returncode == 0
    up.rename(up.with_name("gone"))
    check = support.prebake("-C", ws, "pin", "--check")
    assert check.returncode == 1, check.stdout
    assert "unverified" in check.stdout and "git ls-remote" in check.stdout


def test_a_recipe_cannot_set_the_locked_commit(tmp_path: Path) -> None:
    from prebake.model.recipe import GitSource, Recipe
    from prebake.recipes.validate import validate_recipe

    recipe = Recipe(name="x", pin="x", sources=(GitSource("file:///r", "v1", commit="a" * 40),))
    assert any("commit" in str(p) and "source lock" in str(p)
               for p in validate_recipe(recipe))
