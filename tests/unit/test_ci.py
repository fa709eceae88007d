"""`prebake ci github`: the workflow generated from the plan, linted, and its CI steps."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from prebake.ci.decide import decide
from prebake.ci.leg import prepare_leg
from prebake.cli import main
from prebake.plan import asset_for, make_plan
from prebake.store import open_store
from prebake.workspace import load_workspace
from tests import support

ROOT = Path(__file__).resolve().parent.parent.parent
SDK = ROOT / "examples" / "sdk"
BIN = Path(sys.executable).parent
PLATFORMS = ("wasm", "linux-x86_64", "linux-aarch64", "macos-arm64", "macos-x86_64",
             "windows-x86_64")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the example workspace in examples/sdk (like prebake's own)."""
    repo = tmp_path / "repo"
    shutil.copytree(SDK, repo / "examples" / "sdk",
                    ignore=shutil.ignore_patterns("releases", ".prebake", "__pycache__"))
    (repo / ".git").mkdir()
    return repo


def workflow_file(repo: Path) -> Path:
    return repo / ".github" / "workflows" / "prebake.yml"


def generate(repo: Path, *extra: str) -> int:
    return main(["-C", str(repo / "examples" / "sdk"), "ci", "github",
                 "--out", str(repo / ".github" / "workflows"), *extra])


def load(repo: Path) -> dict[str, Any]:
    assert generate(repo) == 0
    data = yaml.safe_load(workflow_file(repo).read_text())
    assert isinstance(data, dict)
    return data


def walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def test_job_graph(repo: Path) -> None:
    jobs = load(repo)["jobs"]
    legs = {f"build-{s}-{p}" for s in ("core", "media", "extra") for p in PLATFORMS}
    assert set(jobs) == {"plan", *legs, "publish-core", "publish-media", "publish-extra"}
    for p in PLATFORMS:
        assert jobs[f"build-core-{p}"]["needs"] == ["plan"]
        assert jobs[f"build-media-{p}"]["needs"] == ["plan", f"build-core-{p}"]
        # extra comes after the stage it builds against, leg by leg
        assert jobs[f"build-extra-{p}"]["needs"] == ["plan", f"build-core-{p}"]
    for stage in ("core", "media", "extra"):
        assert jobs[f"publish-{stage}"]["needs"] == ["plan", *(f"build-{stage}-{p}"
                                                               for p in PLATFORMS)]
    assert jobs["build-extra-macos-arm64"]["runs-on"] == "macos-14"  # [platforms.*].runner
    assert jobs["build-core-wasm"]["runs-on"] == "ubuntu-24.04"


def test_triggers_concurrency_and_timeouts(repo: Path) -> None:
    wf = load(repo)
    on = wf["on"]
    assert on["push"] == {"branches": ["main"], "tags": ["v*"]}
    assert "pull_request" in on and "workflow_dispatch" in on
    assert "${{ github.ref }}" in wf["concurrency"]["group"]
    assert "pull_request" in wf["concurrency"]["cancel-in-progress"]
    assert all(isinstance(job["timeout-minutes"], int) for job in wf["jobs"].values())
    assert wf["defaults"]["run"]["working-directory"] == "examples/sdk"


def test_publish_conditions_and_permissions(repo: Path) -> None:
    wf = load(repo)
    assert wf["permissions"] == {"contents": "read"}
    for name, job in wf["jobs"].items():
        if name.startswith("publish-"):
            assert job["permissions"] == {"contents": "write"}
            assert job["if"].startswith("needs.plan.outputs.release != '' && (")
            for leg in job["needs"][1:]:  # only when some leg built something to publish
                assert f"needs.{leg}.outputs.built == 'true'" in job["if"]
            [step] = [s for s in job["steps"] if "prebake publish" in s.get("run", "")]
            assert step["env"]["RELEASE"] == "${{ needs.plan.outputs.release }}"
        else:
            assert "permissions" not in job, f"{name} must not get write access"
    assert wf["jobs"]["plan"]["outputs"]["release"] == "${{ steps.decide.outputs.release }}"


def test_never_continue_on_error(repo: Path) -> None:
    wf = load(repo)
    assert "continue-on-error" not in workflow_file(repo).read_text()
    assert not any("continue-on-error" in node for node in walk(wf))


def test_leg_steps_hash_skip_ccache_and_hand_over(repo: Path) -> None:
    steps = load(repo)["jobs"]["build-media-wasm"]["steps"]
    names = [s["name"] for s in steps]
    skip = names.index("Hash-skip: input hashes vs the store")
    build = names.index("Build, guard and package")
    take = names.index("Take over stage core from this run")
    assert take < skip < build
    assert steps[take]["if"] == "needs.build-core-wasm.outputs.built == 'true'"
    assert steps[skip]["id"] == "skip"
    assert "prebake ci leg --stage media --platform wasm" in steps[skip]["run"]
    for i in (build, names.index("Save ccache"),
              names.index("Hand the assets to later stages and publishing")):
        assert steps[i]["if"] == "steps.skip.outputs.skip != 'true'"
    assert steps[names.index("Restore ccache")]["with"]["key"].startswith("ccache-media-wasm-")
    # the build really goes through ccache, into the folder the cache steps restore and save
    assert names.index("Install ccache") < build
    env = steps[build]["env"]
    assert env["PREBAKE_COMPILER_LAUNCHER"] == "ccache"
    assert env["CCACHE_DIR"].endswith(steps[names.index("Save ccache")]["with"]["path"])
    assert any(s.get("uses", "").startswith("mymindstorm/setup-emsdk") and
               s["with"]["version"] == "3.1.6" for s in steps)
    upload = steps[names.index("Hand the assets to later stages and publishing")]
    assert "kiln-sdk-media-0.12.0-wasm.tar.xz.json" in upload["with"]["path"]
    assert "kiln-sdk-media-0.12.0-wasm.tar.xz.intoto.json" in upload["with"]["path"]


def cache_keys(repo: Path) -> dict[str, str]:
    jobs = load(repo)["jobs"]
    keys = {}
    for name, job in jobs.items():
        for step in job["steps"]:
            if step.get("name") == "Restore ccache":
                keys[name] = step["with"]["key"]
    return keys


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_workflow_installs_exactly_the_pinned_toolchains(repo: Path) -> None:
    jobs = load(repo)["jobs"]
    for platform in ("linux-aarch64", "macos-x86_64"):
        runs = [s.get("run", "") for s in jobs[f"build-core-{platform}"]["steps"]]
        assert "python -m pip install ziglang==0.17.1" in runs
        assert not any("pip install ziglang\n" in r or r.endswith("install ziglang")
                       for r in runs)
    for stage in ("core", "media", "extra"):
        (emsdk,) = [s for s in jobs[f"build-{stage}-wasm"]["steps"]
                    if s.get("uses", "").startswith("mymindstorm/setup-emsdk")]
        assert emsdk["with"]["version"] == "3.1.6"
    windows = [s.get("run", "") for s in jobs["build-core-windows-x86_64"]["steps"]]
    assert any("apt-get install -y --no-install-recommends mingw-w64" in r for r in windows)
    # the host's gcc is the runner's (unpinned, not provisioned): no install step for it
    linux = [s["name"] for s in jobs["build-core-linux-x86_64"]["steps"]]
    assert not any(n.startswith(("Set up emsdk", "Install ziglang", "Install mingw"))
                   for n in linux)


@pytest.mark.parametrize(("platform", "pin_line", "family"), [
    ("wasm", 'pin = "emsdk"\n', "Emscripten"),
    ("macos-x86_64", 'pin = "zig"\n', "zig"),
])
def test_a_provisioned_toolchain_without_a_pin_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str], platform: str, pin_line: str,
        family: str) -> None:
    toml = repo / "examples" / "sdk" / "prebake.toml"
    text = toml.read_text()
    head, _, tail = text.partition(f"[platforms.{platform}.toolchain]")
    assert pin_line in tail
    toml.write_text(head + f"[platforms.{platform}.toolchain]" + tail.replace(pin_line, "", 1))
    assert generate(repo) == 2
    err = capsys.readouterr().err
    assert f"platform {platform}: its {family}" in err and "has no pin" in err
    assert len(err.strip().splitlines()) == 1
    assert not workflow_file(repo).exists()


def test_a_pin_changes_only_the_affected_legs_cache_keys(repo: Path) -> None:
    toml = repo / "examples" / "sdk" / "prebake.toml"
    before = cache_keys(repo)
    # a hand-edited pin whose URLs are not locked is refused; `prebake pin` is the bump (its
    # GitHub archives cannot be downloaded here: they are recorded as pending, exit 1)
    edit(toml, 'onnxruntime = "1.27.0"', 'onnxruntime = "1.28.0"')
    assert generate(repo) == 2
    edit(toml, 'onnxruntime = "1.28.0"', 'onnxruntime = "1.27.0"')
    assert main(["-C", str(repo / "examples" / "sdk"), "pin", "onnxruntime", "1.28.0"]) == 1
    assert 'onnxruntime = "1.28.0"' in toml.read_text()
    after = cache_keys(repo)
    assert {k for k in before if before[k] != after[k]} == {f"build-extra-{p}"
                                                            for p in PLATFORMS}
    # onnxruntime's wasm leg reads the emsdk pin, and its source archive (GitHub) stays pending
    assert main(["-C", str(repo / "examples" / "sdk"), "pin", "emsdk", "3.1.7"]) == 1
    again = cache_keys(repo)
    assert {k for k in after if after[k] != again[k]} == {"build-core-wasm", "build-media-wasm",
                                                          "build-extra-wasm"}


def test_stable_regeneration_and_check(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(repo, "--check") == 1  # nothing written yet
    assert generate(repo) == 0
    first = workflow_file(repo).read_bytes()
    assert generate(repo) == 0
    assert workflow_file(repo).read_bytes() == first
    assert generate(repo, "--check") == 0
    edit(repo / "examples" / "sdk" / "prebake.toml", 'vecmath = "1.4.0"', 'vecmath = "1.4.1"')
    assert generate(repo, "--check") == 1
    assert workflow_file(repo).read_bytes() == first  # --check never writes
    _, err = capsys.readouterr()
    assert "stale; regenerate with `prebake ci github`" in err
    # the plan job runs the same check from the workspace folder on the runner
    plan_steps = yaml.safe_load(first)["jobs"]["plan"]["steps"]
    assert any(s.get("run") == "prebake ci github --check --out ../../.github/workflows"
               for s in plan_steps)


def test_actionlint_and_github_workflow_schema(repo: Path) -> None:
    assert generate(repo) == 0
    path = workflow_file(repo)
    lint = subprocess.run([str(BIN / "actionlint"), "-no-color", str(path)],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    schema = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema",
                             "vendor.github-workflows", str(path)],
                            capture_output=True, text=True, check=False)
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_actionlint_catches_a_broken_workflow(repo: Path) -> None:
    """The lint is not a rubber stamp: a needs: on a missing job fails it."""
    assert generate(repo) == 0
    path = workflow_file(repo)
    path.write_text(path.read_text().replace("- build-core-wasm\n", "- build-core-wasn\n", 1))
    lint = subprocess.run([str(BIN / "actionlint"), "-no-color", str(path)],
                          capture_output=True, text=True, check=False)
    assert lint.returncode != 0 and "build-core-wasn" in lint.stdout


@pytest.mark.parametrize(("event", "ref", "release"), [
    ("push", "refs/heads/main", "continuous"),
    ("workflow_dispatch", "refs/heads/main", "continuous"),
    ("push", "refs/tags/v1.4.0", "v1.4.0"),
    ("pull_request", "refs/pull/7/merge", None),
    ("pull_request", "refs/heads/main", None),
    ("push", "refs/heads/feature", None),
])
def test_publish_decision(event: str, ref: str, release: str | None) -> None:
    assert decide(event, ref, "main").release == release


def test_decide_command_writes_outputs_and_summary(repo: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out, summary = tmp_path / "out", tmp_path / "summary"
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    monkeypatch.setenv("GITHUB_REF", "refs/tags/v2.0.0")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    store = f"file://{tmp_path / 'store'}"
    rc = main(["-C", str(repo / "examples" / "sdk"), "ci", "decide", "--store", store])
    assert rc == 0
    printed = capsys.readouterr().out
    assert out.read_text() == "release=v2.0.0\n"
    assert summary.read_text() == printed  # the same text in the log and the step summary
    assert "publishes: release `v2.0.0`" in printed
    assert "| `onnxruntime/windows-x86_64` | extra | windows-x86_64 |" in printed
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    main(["-C", str(repo / "examples" / "sdk"), "ci", "decide", "--store", store])
    assert out.read_text().splitlines()[-1] == "release="
    assert "publishes: nothing (pull requests never publish)" in capsys.readouterr().out


def _publish_fake_asset(store_url: str, root: Path, unit: Any, workdir: Path) -> str:
    """A real (tiny) asset with correct sidecars, published through the store API."""
    aid = asset_for(unit)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        data = f"{unit.id}\n".encode()
        info = tarfile.TarInfo("share/prebake/unit.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    path = workdir / aid.filename
    path.write_bytes(buf.getvalue())
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    (workdir / aid.sha256_name).write_text(f"{digest}  {aid.filename}\n")
    (workdir / aid.manifest_name).write_text(json.dumps(support.valid_manifest(
        aid.name, aid.version, aid.platform, input_hash=unit.input_hash)))
    open_store(store_url, root=root).publish(path)
    return aid.filename


def test_leg_hash_skip_and_upstream_hand_over(repo: Path, tmp_path: Path) -> None:
    ws = load_workspace(repo / "examples" / "sdk")
    plan = make_plan(ws, platform="wasm")
    remote = f"file://{tmp_path / 'remote'}"
    staging = tmp_path / "staging"
    staging.mkdir()
    core = _publish_fake_asset(remote, ws.root, plan.unit("core/wasm"), staging)

    core_leg = prepare_leg(ws, "core", "wasm", remote)
    assert core_leg.skip and core_leg.statuses == {"core/wasm": "built"}

    media_leg = prepare_leg(ws, "media", "wasm", remote)
    assert not media_leg.skip and media_leg.statuses == {"media/wasm": "missing"}
    assert media_leg.fetched == [core]  # core was skipped in this run: copied from the store
    local = open_store(ws.default_store, root=ws.root)
    assert [a.filename for a in local.list_assets()] == [core]

    _publish_fake_asset(remote, ws.root, plan.unit("media/wasm"), staging)
    assert prepare_leg(ws, "media", "wasm", remote).skip
    # a tag release is looked up in that release, not in continuous
    assert not prepare_leg(ws, "media", "wasm", remote, release="v9.9.9").skip


def test_the_macos_from_source_leg_carries_its_build_py_flags_and_appleclang(repo: Path
                                                                            ) -> None:
    """CoreML builds only on the macOS runner: the workflow shows the runner's AppleClang and
    the exact build.py flags of the leg, with the contract's deployment target filled in."""
    jobs = load(repo)["jobs"]
    steps = jobs["build-extra-macos-arm64"]["steps"]
    assert jobs["build-extra-macos-arm64"]["runs-on"] == "macos-14"
    (show,) = [s for s in steps if s["name"].startswith("Show AppleClang")]
    assert "(pin appleclang = 15.0.0)" in show["name"]
    assert show["run"].startswith("xcrun clang --version\n")
    (listed,) = [s for s in steps if s["name"].startswith("Commands the recipes run")]
    (build,) = [line for line in listed["run"].splitlines() if "build.py" in line]
    for flag in ("--use_coreml", "--use_xnnpack", "--build_shared_lib",
                 "--apple_deploy_target 13.3", "CMAKE_OSX_DEPLOYMENT_TARGET=13.3",
                 "--compile_no_warning_as_error", "--osx_arch arm64"):
        assert flag in build
    assert "--allow_running_as_root" not in build and "{macos_min}" not in build
    order = [s["name"] for s in steps]
    assert order.index(listed["name"]) == order.index("Build, guard and package") - 1
    # a leg without a leg-specific toolchain lists nothing extra
    assert not any(s["name"].startswith("Commands the recipes run")
                   for s in jobs["build-extra-linux-aarch64"]["steps"])
