"""An example's generated workflow run as a whole under act, then a consumer fetches what it
published: one command, too long for the test suite (every job pip-installs prebake).

A manual run (``workflow_dispatch``) with the ``stages``/``platforms`` inputs that leave out the
legs this machine cannot build (macOS runners, downloads from GitHub), jobs on the host with the
stand-ins of ``tests/act``, and ``tests/servers/github_api.py`` on 127.0.0.1 answering for the
workflow's ``github://OWNER/REPO`` store (``PREBAKE_GITHUB_API``; a throwaway token reaches act
as the secret ``GITHUB_TOKEN`` through the environment, never on a command line). After act,
every asset the store holds is fetched as a consumer would (``prebake fetch``: sha256, the
contract re-checked, unpacked), each with its platform's workspace: the example addon's where
it has the platform, else the publishing workspace's.

    python -m tests.act.whole sdk        # plan, 6 Linux-host legs, publish core and media
    python -m tests.act.whole flagship   # plan, addons / linux-x86_64 (onnxruntime
                                         # repackaged, FFmpeg built), publish
    python -m tests.act.whole wasm-toolchain  # the flagship's addons / wasm job up to its
                                              # toolchain step, then `prebake toolchain list`
    python -m tests.act.whole sdk --platforms linux-x86_64 --held core/linux-x86_64
                                         # the store holds core's leg: the run starts no
                                         # runner for it, builds media's, publishes media

Run it under ``nice -n 10`` from the repository root; the log and the fetches go into
``--folders`` (default: a new temporary folder).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.act.runner import act_argv
from tests.servers.github_api import GitHubServer

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent
SUITE_CACHE = Path(os.environ.get("PREBAKE_TEST_CACHE", "/var/cache/prebake-tests/suite"))


@dataclass(frozen=True)
class Run:
    example: str  # folder under examples/
    workflow: str  # under .github/workflows/
    inputs: dict[str, str]


RUNS = {
    "sdk": Run("sdk", "prebake-kiln-sdk.yml",
               {"stages": "core,media",
                "platforms": "linux-x86_64,linux-aarch64,windows-x86_64"}),
    "flagship": Run("flagship", "prebake-kiln-flagship.yml",
                    {"stages": "", "platforms": "linux-x86_64"}),
}
ADDON = ROOT / "examples" / "addon"


def _say(text: str) -> None:
    print(f"== {text}", flush=True)


def _hold(run: Run, legs: list[str], store: str, env: dict[str, str], folders: Path) -> None:
    """Put each leg's assets into the store before the run, as an earlier run would have:
    built here from a copy of the example and published into the run's release."""
    ws = folders / "held" / run.example
    shutil.copytree(ROOT / "examples" / run.example, ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake", "prebake_deps"))
    for leg in legs:
        stage, platform = leg.split("/")
        start = time.monotonic()
        proc = subprocess.run([str(BIN / "prebake"), "-C", str(ws), "build", "--stage", stage,
                               "--platform", platform], env={**os.environ, **env},
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"building the held leg {leg} failed:\n{proc.stdout}{proc.stderr}")
        assets = sorted(str(p) for p in (ws / "releases").rglob(f"*-{platform}.tar.xz"))
        pub = subprocess.run([str(BIN / "prebake"), "-C", str(ws), "publish", *assets,
                              "--store", store, "--release", "continuous"],
                             env={**os.environ, **env}, capture_output=True, text=True,
                             check=False)
        if pub.returncode != 0:
            raise SystemExit(f"publishing the held leg {leg} failed:\n{pub.stdout}{pub.stderr}")
        _say(f"held {leg}: built and published {len(assets)} asset(s) into {store} "
             f"({time.monotonic() - start:.0f} s)")
        shutil.rmtree(ws / "releases")


def run_whole(run: Run, folders: Path, held: list[str] | None = None) -> int:
    workflow = ROOT / ".github" / "workflows" / run.workflow
    store = yaml.safe_load(workflow.read_text())["env"]["PREBAKE_CI_STORE"]
    env = {"PREBAKE_CACHE": str(SUITE_CACHE / "prebake-cache")}
    if not store.startswith("github://"):
        # a file:// store inside the runner's checkout goes with it: publish to a folder here
        store = f"file://{folders / 'store'}"
        env["PREBAKE_CI_STORE"] = store
    token = secrets.token_hex(20)
    log = folders / "act.log"
    with GitHubServer(repo=store.removeprefix("github://"), token=token) as gh:
        env["PREBAKE_GITHUB_API"] = gh.api
        if held:
            _hold(run, held, store, {**env, "GITHUB_TOKEN": token}, folders)
        argv = [*act_argv(workflow, folders, env=env, inputs=run.inputs), "-s", "GITHUB_TOKEN"]
        _say("$ " + " ".join(argv))
        proc_env = {**os.environ, "GITHUB_TOKEN": token,
                    "XDG_CACHE_HOME": str(folders / "xdg-cache"),
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        start = time.monotonic()
        with log.open("w") as fh:
            act = subprocess.run(argv, cwd=ROOT, env=proc_env, stdout=fh,
                                 stderr=subprocess.STDOUT, check=False)
        took = time.monotonic() - start
        text = log.read_text()
        for line in text.splitlines():
            if "🏁" in line or "Job failed" in line or "Skipping job" in line:
                print(line, flush=True)
        _say(f"act exited {act.returncode} after {took / 60:.1f} min (log: {log})")
        if act.returncode != 0:
            return act.returncode
        published = sorted((r.tag, gh.state.assets[a].name) for r in gh.state.releases.values()
                           for a in r.assets if gh.state.assets[a].state == "uploaded")
        if store.startswith("file://"):
            root = Path(store.removeprefix("file://"))
            published = sorted((p.parent.name, p.name) for p in root.glob("*/*") if p.is_file())
        for tag, name in published:
            _say(f"published: release {tag}: {name}")
        assets = [name for _, name in published if name.endswith(".tar.xz")]
        if not assets:
            _say("nothing was published")
            return 1
        failures = 0
        for asset in assets:
            failures += _fetch(run, asset, store, gh.api, token, folders)
    _say(f"{len(assets) - failures} of {len(assets)} fetches verified and unpacked")
    return 1 if failures else 0


def run_wasm_toolchain(folders: Path, toolchains: Path | None) -> int:
    """The flagship's ``addons / wasm`` job cut after "Provision toolchain environment" (the build
    after it is the long leg), plus ``prebake toolchain list --platform wasm`` with the same
    ``PREBAKE_TOOLCHAINS``: the pinned environment made on the runner and its compiler asked.
    ``toolchains`` points the steps at existing environments (the install step still runs, and
    finds the root there) instead of the runner's temp folder."""
    run = RUNS["flagship"]
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / run.workflow).read_text())
    job = workflow["jobs"]["build-addons-wasm"]
    names = [s["name"] for s in job["steps"]]
    [at] = [i for i, n in enumerate(names) if n.startswith("Provision toolchain environment")]
    provision = job["steps"][at]
    if toolchains is not None:
        provision["env"]["PREBAKE_TOOLCHAINS"] = str(toolchains)
    job["steps"] = [*job["steps"][:at + 1], {
        "name": "The pinned compiler, asked",
        "run": "prebake toolchain list --platform wasm\n",
        "env": {"PREBAKE_TOOLCHAINS": provision["env"]["PREBAKE_TOOLCHAINS"]}}]
    job.pop("outputs", None)
    workflow["jobs"] = {"plan": workflow["jobs"]["plan"], "build-addons-wasm": job}
    cut = folders / "wasm-toolchain.yml"
    cut.write_text(yaml.safe_dump(workflow, sort_keys=False, width=10_000))
    argv = act_argv(cut, folders, inputs={"stages": "", "platforms": "wasm"})
    _say("$ " + " ".join(argv))
    log = folders / "act.log"
    start = time.monotonic()
    with log.open("w") as fh:
        act = subprocess.run(argv, cwd=ROOT, env={**os.environ,
                                                  "XDG_CACHE_HOME": str(folders / "xdg-cache"),
                                                  "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
                             stdout=fh, stderr=subprocess.STDOUT, check=False)
    for line in log.read_text().splitlines():
        if "🏁" in line or "✅" in line or "❌" in line or "emcc" in line or "environment" in line:
            print(line, flush=True)
    _say(f"act exited {act.returncode} after {(time.monotonic() - start) / 60:.1f} min "
         f"(log: {log})")
    return act.returncode


def _fetch(run: Run, asset: str, store: str, api: str, token: str, folders: Path) -> int:
    """``prebake fetch NAME==VERSION`` of one published asset; 1 if it fails."""
    stem = asset.removesuffix(".tar.xz")
    # NAME-VERSION-PLATFORM: the version is the first dash-separated field starting with a digit
    fields = stem.split("-")
    at = next(i for i, f in enumerate(fields) if f[:1].isdigit())
    name, version, platform = "-".join(fields[:at]), fields[at], "-".join(fields[at + 1:])
    addon = platform in _platforms(ADDON)
    source = ADDON if addon else ROOT / "examples" / run.example
    # a copy, so the consumer writes nothing into the repository (lock, .prebake)
    ws = folders / "consumers" / f"{source.name}-{stem}"
    shutil.copytree(source, ws, ignore=shutil.ignore_patterns("releases", ".prebake",
                                                              "prebake_deps", "*.lock"))
    into = folders / "fetched" / stem
    argv = [str(BIN / "prebake"), "-C", str(ws), "fetch", f"{name}=={version}",
            "--platform", platform, "--store", store, "--into", str(into),
            "--lock", str(ws / "prebake.lock")]
    start = time.monotonic()
    # a download cache of its own: every asset comes from the store, none from an earlier fetch
    proc = subprocess.run(argv, env={**os.environ, "PREBAKE_GITHUB_API": api,
                                     "GITHUB_TOKEN": token,
                                     "PREBAKE_CACHE": str(folders / "consumer-cache")},
                          capture_output=True, text=True, check=False)
    who = "the example addon" if addon else f"examples/{run.example}"
    _say(f"$ prebake -C <copy of {who}> fetch {name}=={version} --platform {platform} "
         f"--store {store}: exit {proc.returncode} in {time.monotonic() - start:.1f} s")
    print((proc.stdout + proc.stderr).replace(token, "***").rstrip(), flush=True)
    files = sum(1 for p in into.rglob("*") if p.is_file()) if into.is_dir() else 0
    _say(f"{into}: {files} files")
    return 0 if proc.returncode == 0 and files else 1


def _platforms(ws: Path) -> set[str]:
    import tomllib

    return set(tomllib.loads((ws / "prebake.toml").read_text()).get("platforms", {}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("example", choices=[*sorted(RUNS), "wasm-toolchain"])
    parser.add_argument("--toolchains", type=Path, default=None,
                        help="wasm-toolchain: existing toolchain environments to point the "
                             "steps at (default: a fresh one in the runner's temp folder)")
    parser.add_argument("--folders", type=Path, default=None,
                        help="act's caches, artifacts, log and the fetches (default: new)")
    parser.add_argument("--platforms", default=None,
                        help="the manual run's platforms input instead of the example's")
    parser.add_argument("--held", action="append", default=[], metavar="STAGE/PLATFORM",
                        help="build and publish this leg into the store first (repeatable): "
                             "the run must start no runner for it")
    args = parser.parse_args(argv)
    folders = args.folders or Path(tempfile.mkdtemp(prefix=f"prebake-act-{args.example}-"))
    folders.mkdir(parents=True, exist_ok=True)
    if args.example == "wasm-toolchain":
        return run_wasm_toolchain(folders, args.toolchains)
    run = RUNS[args.example]
    if args.platforms is not None:
        run = Run(run.example, run.workflow, {**run.inputs, "platforms": args.platforms})
    return run_whole(run, folders, args.held)


if __name__ == "__main__":
    sys.exit(main())
