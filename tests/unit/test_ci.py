"""`prebake ci github`: the workflow generated from the plan, linted, and its CI steps."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
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
from prebake.intake import load_workspace
from prebake.model.recipe import MESON_VERSION, NINJA_VERSION
from prebake.plan import asset_for, make_plan
from prebake.store import open_store
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
    return repo / ".github" / "workflows" / "prebake-kiln-sdk.yml"


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
    assert wf["permissions"] == {}  # nothing unless a job says so
    for name, job in wf["jobs"].items():
        if name.startswith("publish-"):
            assert job["permissions"] == {"contents": "write"}
            # a failed or cancelled leg blocks publishing; a skipped one (left out) does not
            assert job["if"].startswith(
                "!cancelled() && !failure() && needs.plan.outputs.release != '' && (")
            for leg in job["needs"][1:]:  # only when some leg built something to publish
                assert f"needs.{leg}.outputs.built == 'true'" in job["if"]
            [step] = [s for s in job["steps"] if "prebake publish" in s.get("run", "")]
            assert step["env"]["RELEASE"] == "${{ needs.plan.outputs.release }}"
        else:
            assert job["permissions"] == {"contents": "read"}, f"{name} must not write"
    assert wf["jobs"]["plan"]["outputs"] == {
        key: f"${{{{ steps.decide.outputs.{key} }}}}" for key in ("release", "legs")}


def test_a_manual_run_chooses_its_stages_and_platforms(repo: Path) -> None:
    """workflow_dispatch's two inputs reach `prebake ci decide` through env: only; every leg
    runs only in the selection the plan job outputs, after no failed or cancelled job."""
    wf = load(repo)
    inputs = wf["on"]["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"stages", "platforms"}
    for spec in inputs.values():
        assert spec["type"] == "string" and spec["default"] == "" and spec["required"] is False
    assert "(core, media, extra, full)" in inputs["stages"]["description"]
    assert "(" + ", ".join(PLATFORMS) + ")" in inputs["platforms"]["description"]
    assert wf["on"]["push"] and "pull_request" in wf["on"]  # no inputs there: every leg
    [decide_step] = [s for s in wf["jobs"]["plan"]["steps"] if s.get("id") == "decide"]
    assert decide_step["run"] == ('prebake ci decide --store "$PREBAKE_CI_STORE" '
                                  '--stages "$STAGES" --platforms "$PLATFORMS"\n')
    assert decide_step["env"]["STAGES"] == "${{ inputs.stages }}"
    assert decide_step["env"]["PLATFORMS"] == "${{ inputs.platforms }}"
    for stage in ("core", "media", "extra"):
        for p in PLATFORMS:
            assert wf["jobs"][f"build-{stage}-{p}"]["if"] == (
                "!cancelled() && !failure() && "
                f"contains(fromJSON(needs.plan.outputs.legs), '{stage}/{p}')")
    assert "if" not in wf["jobs"]["plan"]


def test_selection_of_stages_and_platforms(repo: Path) -> None:
    from prebake.ci.selection import select
    from prebake.errors import PrebakeError

    ws = load_workspace(repo / "examples" / "sdk")
    every = select(ws)
    assert every.everything and every.stages == ("core", "media", "extra")
    assert every.platforms == PLATFORMS
    assert select(ws, " , ", "") == every  # no names: all
    some = select(ws, "media, core", "windows-x86_64,linux-x86_64,linux-aarch64")
    assert not some.everything
    assert some.stages == ("core", "media")  # build order, not the input's
    assert some.platforms == ("linux-x86_64", "linux-aarch64", "windows-x86_64")

    assert select(ws, "full").stages == ("core", "media")  # an alias
    assert select(ws, "", "wasm").stages == ("core", "media", "extra")
    with pytest.raises(PrebakeError, match=r"^input stages: unknown stage or alias 'corr' "
                                           r"\(did you mean 'core'\?\)"):
        select(ws, "core,corr")
    with pytest.raises(PrebakeError, match=r"^input platforms: unknown platform 'linux'"):
        select(ws, "core", "linux-x86_64,linux")
    with pytest.raises(PrebakeError, match=r"^input platforms: unknown platform 'a\\nb'"):
        select(ws, "", "a\nb")  # a newline stays one line
    with pytest.raises(PrebakeError, match="at most 4096"):
        select(ws, "core," * 1000)


def test_decide_outputs_the_selection_and_refuses_an_unknown_name(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_EVENT_NAME", "workflow_dispatch")
    monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    ws = ["-C", str(repo / "examples" / "sdk"), "ci", "decide",
          "--store", f"file://{tmp_path / 'store'}"]
    assert main([*ws, "--stages", "core,media", "--platforms", "linux-x86_64"]) == 0
    printed = capsys.readouterr().out
    assert out.read_text().splitlines() == [
        "release=continuous", 'legs=["core/linux-x86_64","media/linux-x86_64"]']
    assert ("- builds: stages `core`, `media` on platforms `linux-x86_64` (the run's inputs; "
            "the other legs are skipped)") in printed
    assert main([*ws, "--stages", "", "--platforms", ""]) == 0  # a push: every leg
    assert "- builds: every stage on every platform" in capsys.readouterr().out
    assert out.read_text().splitlines()[-1] == "legs=" + json.dumps(
        [f"{s}/{p}" for s in ("core", "media", "extra") for p in PLATFORMS],
        separators=(",", ":"))
    before = out.read_text()
    assert main([*ws, "--stages", "core", "--platforms", "linux-x86_64,macos-arm65"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        "prebake: error: input platforms: unknown platform 'macos-arm65' (did you mean "
        "'macos-arm64'?) (known: " + ", ".join(PLATFORMS) + ")"]
    assert out.read_text() == before  # no output: no leg reads a half decision


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
    # emsdk at the pin, by prebake itself, before anything asks the compiler
    install = names.index("Install emsdk 3.1.6 (prebake toolchain install)")
    assert steps[install]["run"] == "prebake toolchain install --platform wasm\n"
    assert install < skip
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
        assert "python -m pip install ziglang==0.17.1\n" in runs
        assert not any("pip install ziglang\n" in r or r.endswith("install ziglang")
                       for r in runs)
    for stage in ("core", "media", "extra"):
        runs = [s.get("run", "") for s in jobs[f"build-{stage}-wasm"]["steps"]]
        assert "prebake toolchain install --platform wasm\n" in runs
        assert not any("emsdk" in s.get("uses", "") for s in jobs[f"build-{stage}-wasm"]["steps"])
    windows = [s.get("run", "") for s in jobs["build-core-windows-x86_64"]["steps"]]
    assert any("apt-get install -y --no-install-recommends mingw-w64" in r for r in windows)
    # the host's gcc is the runner's (unpinned, not provisioned): no install step for it
    linux = [s["name"] for s in jobs["build-core-linux-x86_64"]["steps"]]
    assert not any(n.startswith(("Set up emsdk", "Install ziglang", "Install mingw"))
                   for n in linux)


def test_a_leg_whose_recipe_builds_with_meson_installs_the_pinned_meson(repo: Path) -> None:
    """``pip install`` of prebake brings no extra: the extra stage's dav1d (Meson) needs
    prebake's pinned meson and ninja on every runner, the stages without it do not."""
    jobs = load(repo)["jobs"]
    want = f"python -m pip install meson=={MESON_VERSION} ninja=={NINJA_VERSION}\n"
    for platform in PLATFORMS:
        assert want in [s.get("run", "") for s in jobs[f"build-extra-{platform}"]["steps"]]
        assert not any("meson" in s.get("run", "")
                       for s in jobs[f"build-core-{platform}"]["steps"]), platform


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
    assert any(s.get("run") == "prebake ci github --check --out ../../.github/workflows\n"
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
    assert out.read_text().splitlines()[0] == "release=v2.0.0"
    assert summary.read_text() == printed  # the same text in the log and the step summary
    assert "publishes: release `v2.0.0`" in printed
    assert "| `onnxruntime/windows-x86_64` | extra | windows-x86_64 |" in printed
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    main(["-C", str(repo / "examples" / "sdk"), "ci", "decide", "--store", store])
    assert out.read_text().splitlines()[-2] == "release="
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


def test_the_plan_job_leaves_out_the_legs_the_store_holds(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`ci decide` looks every unit up by its input hash: a leg whose assets the store holds
    is not in the `legs` output (its job starts no runner), a stale one (another input hash)
    is, and a store holding every selected leg outputs an empty list."""
    ws = load_workspace(repo / "examples" / "sdk")
    plan = make_plan(ws, platform="linux-x86_64")
    remote = f"file://{tmp_path / 'remote'}"
    staging = tmp_path / "staging"
    staging.mkdir()
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_EVENT_NAME", "workflow_dispatch")
    monkeypatch.setenv("GITHUB_REF", "refs/heads/main")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    argv = ["-C", str(repo / "examples" / "sdk"), "ci", "decide", "--store", remote,
            "--stages", "core,media", "--platforms", "linux-x86_64,windows-x86_64"]

    def legs() -> list[str]:
        assert main(argv) == 0
        (line,) = [x for x in out.read_text().splitlines() if x.startswith("legs=")][-1:]
        return list(json.loads(line.removeprefix("legs=")))

    everything = ["core/linux-x86_64", "core/windows-x86_64", "media/linux-x86_64",
                  "media/windows-x86_64"]
    assert legs() == everything
    capsys.readouterr()
    _publish_fake_asset(remote, ws.root, plan.unit("core/linux-x86_64"), staging)
    assert legs() == [leg for leg in everything if leg != "core/linux-x86_64"]
    said = capsys.readouterr().out
    assert ("- legs to build: `core/windows-x86_64`, `media/linux-x86_64`, "
            "`media/windows-x86_64` (the store holds every asset of `core/linux-x86_64`: "
            "those start no runner)") in said
    # an asset of the same name built from other inputs does not count
    stale = dataclasses.replace(plan.unit("media/linux-x86_64"), input_hash="f" * 64)
    _publish_fake_asset(remote, ws.root, stale, staging)
    assert "media/linux-x86_64" in legs()
    for p in ("linux-x86_64", "windows-x86_64"):
        units = make_plan(ws, platform=p)
        for stage in ("core", "media"):
            _publish_fake_asset(remote, ws.root, units.unit(f"{stage}/{p}"), staging)
    assert legs() == []
    assert "- legs to build: none (the store holds every asset of" in capsys.readouterr().out


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


def test_every_action_is_pinned_to_a_commit_and_no_run_expands_an_expression(repo: Path
                                                                             ) -> None:
    wf = load(repo)
    text = workflow_file(repo).read_text()
    uses = [node["uses"] for node in walk(wf) if "uses" in node]
    assert uses
    for ref in uses:
        commit = ref.rpartition("@")[2]
        assert len(commit) == 40 and int(commit, 16) >= 0, ref
        # the release beside the commit, from the one table in model/ci_defaults.toml
        assert f"uses: {ref} # v" in text
    for node in walk(wf):
        if "run" in node:
            assert "${{" not in node["run"], node["run"]
        if node.get("uses", "").startswith("actions/checkout@"):
            assert node["with"]["persist-credentials"] is False


def _set_install(repo: Path, line: str | None) -> None:
    toml = repo / "examples" / "sdk" / "prebake.toml"
    text = toml.read_text()
    old = 'install = "python -m pip install ../.."\n'
    assert old in text
    toml.write_text(text.replace(old, "" if line is None else f"install = {line!r}\n"))


@pytest.mark.parametrize("line", [
    "python -m pip install prebake",
    "python -m pip install 'prebake>=0.1'",
    "python -m pip install git+https://example.org/prebake.git",
    "python -m pip install git+https://example.org/prebake.git@v0.1.0",
    "python -m pip install -r requirements.txt",
    "python -m pip install prebake==${{ inputs.version }}",
    "./install-prebake.sh",
])
def test_an_install_line_that_names_no_version_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    _set_install(repo, line)
    assert generate(repo) == 2
    err = capsys.readouterr().err.strip()
    assert "ci.install" in err and len(err.splitlines()) == 1, err
    assert not workflow_file(repo).parent.exists()  # nothing written


@pytest.mark.parametrize("line", [
    "python -m pip install prebake==0.1.0",
    "python -m pip install 'prebake[s3]==0.1.0'",
    "python -m pip install git+https://example.org/prebake.git@" + "0123abcd" * 5,
    "python -m pip install --upgrade pip==24.0 && python -m pip install ./tools/prebake",
])
def test_an_install_line_that_names_what_it_installs_is_written(repo: Path, line: str) -> None:
    _set_install(repo, line)
    steps = load(repo)["jobs"]["plan"]["steps"]
    assert steps[2] == {"name": "Install prebake", "run": line + "\n"}


def test_no_install_line_outside_prebake_own_repository_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _set_install(repo, None)
    assert generate(repo) == 2
    err = capsys.readouterr().err.strip()
    assert "ci.install is not set" in err and len(err.splitlines()) == 1
    assert not workflow_file(repo).parent.exists()


def test_inside_prebake_own_repository_the_checkout_is_installed(repo: Path) -> None:
    """A workspace in prebake's repository (like the examples) installs that checkout."""
    _set_install(repo, None)
    (repo / "pyproject.toml").write_text('[project]\nname = "prebake"\nversion = "0.1.0"\n')
    for job in load(repo)["jobs"].values():
        assert job["steps"][2] == {"name": "Install prebake",
                                   "run": "python -m pip install ../..\n"}


def _toolchain_table(repo: Path, platform: str, add: str) -> None:
    toml = repo / "examples" / "sdk" / "prebake.toml"
    text = toml.read_text()
    head = f"[platforms.{platform}.toolchain]\n"
    assert head in text
    toml.write_text(text.replace(head, head + add, 1))


def test_an_environment_platform_is_provisioned_by_prebake_on_the_runner(repo: Path) -> None:
    """The runner makes the pinned environment itself: no emsdk download, no other compiler."""
    from prebake.toolchain.environment import environments

    name = sorted(environments())[0]
    _toolchain_table(repo, "wasm", f'environment = "{name}"\n')
    wf = load(repo)
    # every job sees the repository's Debian mirror (a hosted runner's apt names none); no
    # host is written into the workflow
    assert wf["env"]["PREBAKE_DEBIAN_MIRROR"] == "${{ vars.PREBAKE_DEBIAN_MIRROR }}"
    jobs = wf["jobs"]
    for stage in ("core", "media", "extra"):
        steps = jobs[f"build-{stage}-wasm"]["steps"]
        (prov,) = [s for s in steps if s["name"] == f"Provision toolchain environment {name}"]
        run = prov["run"]
        assert "apt-get install -y --no-install-recommends mmdebstrap" in run
        assert run.rstrip().endswith('"${as_root[@]}" prebake toolchain install --platform wasm')
        assert "PREBAKE_DEBIAN_MIRROR" not in prov.get("env", {})  # the workflow's, below
        names = [s["name"] for s in steps]
        assert names.index(prov["name"]) < names.index("Hash-skip: input hashes vs the store")
        assert not any("emsdk" in s.get("uses", "") + s["name"] for s in steps)
        # entering the root takes root: every prebake command of the job runs through as_root
        for step in steps:
            if "prebake " in step.get("run", "") and "pip install" not in step["run"]:
                assert '"${as_root[@]}" prebake ' in step["run"], step
                # and finds the toolchains the provisioning step made
                assert step["env"]["PREBAKE_TOOLCHAINS"].endswith("/prebake-toolchains")


@pytest.mark.parametrize(("platform", "edit", "says"), [
    # AppleClang needs Xcode's macOS SDK: not on a Linux runner
    ("macos-arm64", ("runner = \"macos-14\"", "runner = \"ubuntu-24.04\""),
     "platform macos-arm64: its AppleClang"),
    # a Debian root is made on Linux only
    ("wasm", ("[platforms.wasm.toolchain]\n",
              "[platforms.wasm.toolchain]\nenvironment = \"debian-13-emscripten\"\n"),
     "platform wasm: its toolchain environment"),
    ("linux-x86_64", ("runner = \"ubuntu-24.04\"\n\n[platforms.linux-x86_64.toolchain]",
                      "runner = \"my-own-box\"\n\n[platforms.linux-x86_64.toolchain]"),
     "platforms.linux-x86_64.runner: cannot tell which OS runner 'my-own-box' runs"),
])
def test_a_toolchain_the_runner_cannot_provide_is_refused(
        repo: Path, capsys: pytest.CaptureFixture[str], platform: str,
        edit: tuple[str, str], says: str) -> None:
    toml = repo / "examples" / "sdk" / "prebake.toml"
    if platform == "wasm":  # and put it on a macOS runner
        edit_text = toml.read_text().replace(edit[0], edit[1], 1)
        toml.write_text(edit_text.replace('runner = "ubuntu-24.04"\n\n[platforms.wasm.toolchain]',
                                          'runner = "macos-14"\n\n[platforms.wasm.toolchain]'))
        assert 'runner = "macos-14"\n\n[platforms.wasm.toolchain]' in toml.read_text()
    else:
        edit_path(toml, *edit)
    assert generate(repo) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert not workflow_file(repo).parent.exists()


def edit_path(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    head, sep, tail = text.partition(old)
    assert sep
    path.write_text(head + new + tail)


def test_two_workspaces_in_one_repository_keep_their_own_workflows(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flagship = repo / "examples" / "flagship"
    shutil.copytree(ROOT / "examples" / "flagship", flagship,
                    ignore=shutil.ignore_patterns("releases", ".prebake", "__pycache__"))
    (repo / "pyproject.toml").write_text('[project]\nname = "prebake"\nversion = "0.1.0"\n')
    out = str(repo / ".github" / "workflows")
    assert generate(repo) == 0
    assert main(["-C", str(flagship), "ci", "github", "--out", out]) == 0
    files = sorted(p.name for p in (repo / ".github" / "workflows").iterdir())
    assert files == ["prebake-kiln-flagship.yml", "prebake-kiln-sdk.yml"]
    assert "working-directory: examples/flagship" in (
        repo / ".github" / "workflows" / "prebake-kiln-flagship.yml").read_text()
    # each --check compares its own file: a stale SDK leaves the flagship current
    edit(repo / "examples" / "sdk" / "prebake.toml", 'vecmath = "1.4.0"', 'vecmath = "1.4.1"')
    assert generate(repo, "--check") == 1
    assert main(["-C", str(flagship), "ci", "github", "--check", "--out", out]) == 0
    assert "prebake-kiln-sdk.yml: stale" in capsys.readouterr().err


EXAMPLES = ("sdk", "flagship")


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_committed_workflow_of_each_example_is_current(example: str) -> None:
    """The repository's .github/workflows holds each example's workflow as generated now."""
    assert main(["-C", str(ROOT / "examples" / example), "ci", "github", "--check"]) == 0


def test_zizmor_and_actionlint_find_nothing_in_the_examples_workflows() -> None:
    """The security audit (zizmor, offline: every audit that needs no GitHub API) and the
    linter over the committed workflows of every example."""
    files = sorted((ROOT / ".github" / "workflows").glob("prebake-*.yml"))
    assert len(files) == len(EXAMPLES)
    audit = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress",
                            "--format", "plain", *map(str, files)],
                           capture_output=True, text=True, check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "No findings to report" in audit.stdout + audit.stderr
    lint = subprocess.run([str(BIN / "actionlint"), "-no-color", *map(str, files)],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_zizmor_is_not_a_rubber_stamp(repo: Path) -> None:
    """A tag instead of a commit, and a persisted token, are findings."""
    assert generate(repo) == 0
    path = workflow_file(repo)
    text = path.read_text().replace("      with:\n        persist-credentials: false\n", "")
    text = re.sub(r"actions/checkout@[0-9a-f]{40} # (v[\d.]+)", r"actions/checkout@\1", text)
    path.write_text(text)
    audit = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress",
                            "--format", "plain", str(path)],
                           capture_output=True, text=True, check=False)
    out = audit.stdout + audit.stderr
    assert audit.returncode != 0 and "unpinned-uses" in out and "artipacked" in out, out
