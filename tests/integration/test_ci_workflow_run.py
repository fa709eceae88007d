"""The generated workflow is a function of the workspace, and its shell steps really work.

A workspace with the default store (``file://./releases``) is committed to a git repository
with its generated workflow, cloned to another path, checked there, and one leg of the workflow
is run from the clone: the plan job's steps, the leg's hash-skip, build and artifact paths, and
the publish job's script, against a local file store. ``uses:`` steps are replaced by what they
do locally (checkout: the clone; upload/download-artifact: copying the listed paths).
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.release_fixtures import git, hello_workspace

BIN = str(Path(sys.executable).parent)


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = support.tool_env(extra)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    return env


def _prebake(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)], env=_env(),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, Path]:
    """(origin, clone): the workspace and its workflow committed in ``origin``, cloned to a
    path that shares nothing with it."""
    origin = tmp_path / "first" / "checkout"
    hello_workspace(origin / "sdk")
    git(origin.parent, "init", "-q", "-b", "main", str(origin))
    gen = _prebake("-C", origin / "sdk", "ci", "github", "--out", origin / ".github/workflows")
    assert gen.returncode == 0, gen.stderr
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "workspace and workflow")
    other = tmp_path / "elsewhere" / "deeper" / "clone"
    other.parent.mkdir(parents=True)
    git(other.parent, "clone", "-q", str(origin), str(other))
    return origin, other


def test_workflow_names_no_checkout_path_host_or_user(clone: tuple[Path, Path]) -> None:
    origin, other = clone
    text = (origin / ".github/workflows/prebake-demo-sdk.yml").read_text()
    assert str(origin) not in text and "file:///" not in text
    assert socket.gethostname() not in text
    user = getpass.getuser()
    assert f"/{user}" not in text and f"{user}@" not in text
    data = yaml.safe_load(text)
    assert data["env"]["PREBAKE_CI_STORE"] == "file://./releases"
    check = _prebake("-C", other / "sdk", "ci", "github", "--check", "--out",
                     other / ".github/workflows")
    assert check.returncode == 0, check.stdout + check.stderr
    # and the check still bites in the clone: a pin edited without regenerating is stale
    toml = other / "sdk" / "prebake.toml"
    toml.write_text(toml.read_text().replace('hello = "1.0.0"', 'hello = "1.0.1"'))
    stale = _prebake("-C", other / "sdk", "ci", "github", "--check", "--out",
                     other / ".github/workflows")
    assert stale.returncode == 1 and "stale" in stale.stderr


class Runner:
    """Runs a job's steps the way a GitHub runner would, on this machine."""

    def __init__(self, repo: Path, workflow: dict[str, Any], env: Mapping[str, str],
                 artifacts: Path) -> None:
        self.repo = repo
        self.workflow = workflow
        self.env = dict(env)
        self.artifacts = artifacts
        self.needs: dict[str, dict[str, str]] = {}
        self.ran: list[str] = []

    def expr(self, text: str, steps: Mapping[str, Mapping[str, str]]) -> str:
        known = {"secrets.GITHUB_TOKEN": "", "github.workspace": str(self.repo),
                 "runner.temp": str(self.artifacts.parent / "runner-temp"),
                 "github.event.repository.default_branch": "main",
                 "github.workflow": "prebake", "github.ref": "refs/heads/main",
                 "inputs.stages": "", "inputs.platforms": "",  # a push has no inputs
                 "vars.PREBAKE_DEBIAN_MIRROR": ""}  # the repository sets no variable

        def one(m: re.Match[str]) -> str:
            key = m[1].strip()
            if cmp := re.fullmatch(r"(\S+) (==|!=) '(\w*)'", key):
                left = one(re.match(r"(.*)", cmp[1]))  # type: ignore[arg-type]
                return "true" if (left == cmp[3]) == (cmp[2] == "==") else "false"
            if key in known:
                return known[key]
            parts = key.split(".")
            if parts[0] == "needs" and parts[2] == "outputs":
                return self.needs[parts[1]][parts[3]]
            if parts[0] == "steps" and parts[2] == "outputs":
                return steps.get(parts[1], {}).get(parts[3], "")
            raise AssertionError(f"expression the local runner does not know: {key}")

        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    def condition(self, cond: str, steps: Mapping[str, Mapping[str, str]]) -> bool:
        m = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+) (==|!=) '(\w*)'", cond)
        assert m, f"condition the local runner does not know: {cond}"
        value = steps.get(m[1], {}).get(m[2], "")
        return (value == m[4]) == (m[3] == "==")

    def job(self, name: str) -> dict[str, str]:
        job = self.workflow["jobs"][name]
        workdir = self.repo / self.workflow["defaults"]["run"]["working-directory"]
        steps: dict[str, dict[str, str]] = {}
        for step in job["steps"]:
            if "if" in step and not self.condition(step["if"], steps):
                continue
            self.ran.append(f"{name}: {step['name']}")
            if "uses" in step:
                self.uses(step["uses"], step.get("with", {}), steps)
                continue
            if step["name"] == "Install prebake":
                continue  # this checkout's prebake is on PATH already
            out = self.artifacts.parent / f"output-{len(self.ran)}"
            out.write_text("")
            env = {**self.env, "GITHUB_OUTPUT": str(out),
                   "GITHUB_STEP_SUMMARY": str(self.artifacts.parent / "summary.md")}
            for k, v in {**self.workflow["env"], **step.get("env", {})}.items():
                if k not in ("PREBAKE_CI_STORE",):  # the test's local store stands in
                    env[k] = self.expr(str(v), steps)
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c",
                                   self.expr(step["run"], steps)], cwd=workdir, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, (f"{name}: {step['name']} failed:\n{step['run']}\n"
                                          f"{proc.stdout}\n{proc.stderr}")
            if "id" in step:
                steps[step["id"]] = dict(line.split("=", 1) for line in
                                         out.read_text().splitlines() if "=" in line)
        outputs = {k: self.expr(v, steps) for k, v in job.get("outputs", {}).items()}
        self.needs[name] = outputs
        return outputs

    def uses(self, action: str, args: Mapping[str, Any],
             steps: Mapping[str, Mapping[str, str]]) -> None:
        kind = action.split("@")[0]
        if kind in ("actions/checkout", "actions/setup-python", "actions/cache/restore",
                    "actions/cache/save"):
            return  # the clone is checked out; Python is this one; no cache between runs
        if kind == "actions/upload-artifact":
            dest = self.artifacts / args["name"]
            dest.mkdir(parents=True)
            found = [p for p in str(args["path"]).split("\n") if p and (self.repo / p).is_file()]
            assert found or args.get("if-no-files-found") != "error", "no files to upload"
            for rel in found:
                shutil.copy2(self.repo / rel, dest / Path(rel).name)
            return
        if kind == "actions/download-artifact":
            dest = self.repo / args["path"]
            dest.mkdir(parents=True, exist_ok=True)
            pattern = re.compile(str(args["pattern"]).replace("*", ".*"))
            for folder in sorted(self.artifacts.iterdir()):
                if pattern.fullmatch(folder.name):
                    for f in folder.iterdir():
                        shutil.copy2(f, dest / f.name)
            return
        raise AssertionError(f"action the local runner does not stand in for: {action}")


def test_one_leg_of_the_generated_workflow_runs(clone: tuple[Path, Path], tmp_path: Path
                                                ) -> None:
    _, repo = clone
    workflow = yaml.safe_load((repo / ".github/workflows/prebake-demo-sdk.yml").read_text())
    store = tmp_path / "store"
    store.mkdir()
    env = _env({"PREBAKE_CI_STORE": f"file://{store}", "GITHUB_EVENT_NAME": "push",
                "GITHUB_REF": "refs/heads/main", "PREBAKE_CACHE": str(tmp_path / "cache")})
    artifacts = tmp_path / "run" / "artifacts"
    artifacts.mkdir(parents=True)
    runner = Runner(repo, workflow, env, artifacts)
    assert runner.job("plan") == {"release": "continuous", "legs": '["core/linux-x86_64"]'}
    leg = "build-core-linux-x86_64"
    assert runner.job(leg) == {"built": "true"}
    asset = "hello-1.0.0-linux-x86_64.tar.xz"
    # the artifact carries every sidecar publish uploads (no .sig: nothing signs here)
    handed = sorted(p.name for p in (artifacts / "prebake-core-linux-x86_64").iterdir())
    assert handed == sorted([asset, f"{asset}.sha256", f"{asset}.json", f"{asset}.intoto.json"])
    runner.job("publish-core")
    published = sorted(p.name for p in (store / "continuous").iterdir())
    assert published == handed, published
    assert f"{leg}: Build, guard and package" in runner.ran
    # a second run of the leg finds every unit in the store and skips the build
    again = Runner(repo, workflow, env, tmp_path / "run2" / "artifacts")
    (tmp_path / "run2" / "artifacts").mkdir(parents=True)
    # the plan job leaves the leg out (its job-level if: starts no runner) ...
    assert again.job("plan") == {"release": "continuous", "legs": "[]"}
    # ... and the leg, started anyway, still skips by its own hash-skip
    assert again.job(leg) == {"built": "false"}
    assert f"{leg}: Build, guard and package" not in again.ran
