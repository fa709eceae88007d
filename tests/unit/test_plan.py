"""The plan: build order, and input hashes that change exactly when a unit's inputs change."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.errors import PrebakeError
from prebake.intake import load_workspace
from prebake.model.workspace import Toolchain
from prebake.package.naming import asset_id
from prebake.plan import ToolchainIdentity, asset_for, make_plan, platform_profile
from prebake.plan.units import Unit
from tests import support

ROOT = Path(__file__).resolve().parent.parent.parent
SDK = ROOT / "examples" / "sdk"
SCHEMA = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
ALL_PLATFORMS = {"wasm", "linux-x86_64", "linux-aarch64", "macos-arm64", "macos-x86_64",
                 "windows-x86_64"}


@pytest.fixture
def sdk(tmp_path: Path) -> Path:
    dest = tmp_path / "sdk"
    shutil.copytree(SDK, dest, ignore=shutil.ignore_patterns("releases", "__pycache__"))
    return dest


def _named(unit: Unit) -> tuple[str, str, str]:
    a = asset_for(unit)
    return a.name, a.version, a.platform


def hashes(ws_dir: Path, identify: ToolchainIdentity | None = None) -> dict[str, str]:
    plan = make_plan(load_workspace(ws_dir), identify=identify)
    return {u.id: u.input_hash for u in plan.units}


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> set[str]:
    assert set(before) == set(after)
    return {k for k in before if before[k] != after[k]}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def units(prefix: str) -> set[str]:
    return {f"{prefix}/{p}" for p in ALL_PLATFORMS}


def test_every_stage_and_platform_in_dependency_order() -> None:
    plan = make_plan(load_workspace(SDK))
    assert set(plan.ids) == (units("core") | units("media") | units("onnxruntime")
                             | units("ffmpeg") | units("dav1d"))
    position = {uid: i for i, uid in enumerate(plan.ids)}
    for u in plan.units:
        for dep in u.deps:
            assert position[dep] < position[u.id], f"{dep} must come before {u.id}"
    media = plan.unit("media/wasm")
    assert media is not None and media.deps == ("core/wasm",)
    ort = plan.unit("onnxruntime/linux-aarch64")
    assert ort is not None and ort.deps == ("core/linux-aarch64",) and ort.recipe == "onnxruntime"
    assert all(re.fullmatch(r"[0-9a-f]{64}", u.input_hash) for u in plan.units)
    assert len({u.input_hash for u in plan.units}) == len(plan.units)


def test_selection_by_stage_alias_and_platform() -> None:
    ws = load_workspace(SDK)
    assert make_plan(ws, "full").ids == tuple(
        f"{s}/{p}" for s in ("core", "media") for p in ws.platforms)
    only = make_plan(ws, "media", "wasm")
    assert only.ids == ("media/wasm",)
    # a selected unit's hash is the same as in the full plan (it covers its upstream stages)
    assert only.units[0].input_hash == make_plan(ws).unit("media/wasm").input_hash  # type: ignore[union-attr]


def test_bumping_the_onnxruntime_pin_changes_exactly_its_units(sdk: Path) -> None:
    before = hashes(sdk)
    # by hand, the new version's archives have no digest: no plan is made, naming the fix
    edit(sdk / "prebake.toml", 'onnxruntime = "1.27.0"', 'onnxruntime = "1.27.1"')
    with pytest.raises(PrebakeError, match=r"run `prebake pin onnxruntime 1\.27\.1`"):
        hashes(sdk)
    edit(sdk / "prebake.toml", 'onnxruntime = "1.27.1"', 'onnxruntime = "1.27.0"')
    # `prebake pin` (GitHub is not reachable here: the archives are recorded as pending)
    assert main(["-C", str(sdk), "pin", "onnxruntime", "1.27.1"]) == 1
    assert changed(before, hashes(sdk)) == units("onnxruntime")


def test_bumping_the_toolchain_pin_changes_exactly_that_platform(sdk: Path) -> None:
    before = hashes(sdk)
    edit(sdk / "prebake.toml", 'emsdk = "3.1.6"', 'emsdk = "3.1.7"')
    assert changed(before, hashes(sdk)) == {"core/wasm", "media/wasm", "onnxruntime/wasm",
                                            "ffmpeg/wasm", "dav1d/wasm"}


def test_unrelated_pin_changes_nothing(sdk: Path) -> None:
    before = hashes(sdk)
    edit(sdk / "prebake.toml", 'pixelbuf = "0.9.2"', 'pixelbuf = "0.9.2"\nzlib = "1.3.1"')
    assert changed(before, hashes(sdk)) == set()
    edit(sdk / "prebake.toml", 'zlib = "1.3.1"', 'zlib = "1.3.2"')
    assert changed(before, hashes(sdk)) == set()


def test_editing_a_recipe_file_changes_only_its_units(sdk: Path) -> None:
    before = hashes(sdk)
    edit(sdk / "recipes" / "pixelbuf.py", '"*": "-O2 -fPIC"', '"*": "-O3 -fPIC"')
    assert changed(before, hashes(sdk)) == units("media")


def test_editing_a_core_source_rebuilds_core_and_what_builds_against_it(sdk: Path) -> None:
    before = hashes(sdk)
    edit(sdk / "src" / "vecmath" / "src" / "vecmath.cpp", "zero vector", "zero-length vector")
    # media comes after core and its pixelbuf reads vecmath; onnxruntime does not build against it
    assert changed(before, hashes(sdk)) == units("core") | units("media")


def test_a_new_file_in_a_local_source_counts(sdk: Path) -> None:
    before = hashes(sdk)
    (sdk / "src" / "pixelbuf" / "NOTES.txt").write_text("hello\n")
    assert changed(before, hashes(sdk)) == units("media")


def test_platform_profile_changes_only_that_platform(sdk: Path) -> None:
    before = hashes(sdk)
    # an override of the preset's floor, in the one platform's contract
    edit(sdk / "prebake.toml", 'extends = "manylinux_2_28_aarch64"',
         'extends = "manylinux_2_28_aarch64"\nglibc_max = "2.31"')
    assert changed(before, hashes(sdk)) == {"core/linux-aarch64", "media/linux-aarch64",
                                            "onnxruntime/linux-aarch64", "ffmpeg/linux-aarch64",
                                            "dav1d/linux-aarch64"}


def test_only_the_keys_a_contract_sets_are_inputs(sdk: Path) -> None:
    """A key the contract leaves unset is no rule and no input, so a key prebake gains, unset,
    rebuilds nothing; an empty allowed_needed is a rule (no library may be needed)."""
    contract = load_workspace(sdk).platforms["linux-aarch64"].contract
    profile = platform_profile(load_workspace(sdk).platforms["linux-aarch64"])["contract"]
    assert profile == {k: v for k, v in contract.to_json().items() if v not in (None, [])}
    assert "glibc_max" in profile and "eh" not in profile and "allowed_needed" not in profile
    before = hashes(sdk)
    edit(sdk / "prebake.toml", 'extends = "manylinux_2_28_aarch64"',
         'extends = "manylinux_2_28_aarch64"\nallowed_needed = []')
    assert changed(before, hashes(sdk)) == {"core/linux-aarch64", "media/linux-aarch64",
                                            "onnxruntime/linux-aarch64",
                                            "ffmpeg/linux-aarch64", "dav1d/linux-aarch64"}


def test_runner_label_is_not_an_input(sdk: Path) -> None:
    before = hashes(sdk)
    edit(sdk / "prebake.toml", 'runner = "macos-14"', 'runner = "macos-15"')
    assert changed(before, hashes(sdk)) == set()


def test_hashes_do_not_depend_on_the_workspace_path(sdk: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "somewhere" / "else"
    shutil.copytree(sdk, elsewhere)
    assert hashes(sdk) == hashes(elsewhere)


def _cc_on_path(tmp_path: Path, name: str, cc: str, cxx: str) -> str:
    """A PATH whose ``cc``/``c++`` are ``cc``/``cxx`` (as Debian's alternatives would make)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "cc").symlink_to(shutil.which(cc) or cc)
    (folder / "c++").symlink_to(shutil.which(cxx) or cxx)
    return f"{folder}:/usr/bin:/bin"


def test_cc_resolving_to_another_clang_on_path_changes_the_hash(sdk: Path,
                                                                tmp_path: Path) -> None:
    """Same workspace, ``cc = "cc"``: clang-14 on one PATH, clang-15 on another."""
    for tool in ("clang-14", "clang++-14", "clang-15", "clang++-15"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/bootstrap installs it)")
    edit(sdk / "prebake.toml", 'cc = "gcc"\ncxx = "g++"', 'cc = "cc"\ncxx = "c++"')
    ws = load_workspace(sdk)

    def plan_on(path: str) -> dict[str, str]:
        ident = ToolchainIdentity(caller_env={"PATH": path})
        return {u.id: u.input_hash for u in make_plan(ws, platform="linux-x86_64",
                                                      identify=ident).units}

    on14 = plan_on(_cc_on_path(tmp_path, "a14", "clang-14", "clang++-14"))
    on15 = plan_on(_cc_on_path(tmp_path, "b15", "clang-15", "clang++-15"))
    assert changed(on14, on15) == {"core/linux-x86_64", "media/linux-x86_64",
                                   "onnxruntime/linux-x86_64", "ffmpeg/linux-x86_64",
                                   "dav1d/linux-x86_64"}
    # the compiler's path is not its identity: clang-14 from another folder hashes the same
    assert plan_on(_cc_on_path(tmp_path, "elsewhere14", "clang-14", "clang++-14")) == on14
    unit = make_plan(ws, platform="linux-x86_64",
                     identify=ToolchainIdentity(caller_env={"PATH": str(tmp_path / "a14")})
                     ).unit("core/linux-x86_64")
    assert unit is not None
    inputs = unit.recipe_inputs["vecmath"]
    assert "clang version 14." in inputs["toolchain"]
    assert "[target x86_64-pc-linux-gnu]" in inputs["toolchain"]
    assert str(tmp_path) not in json.dumps(inputs)


def test_a_pinned_toolchain_is_identified_by_what_it_reports_too(sdk: Path) -> None:
    """The pin alone no longer names the compiler: emcc's own line is in the identity."""
    unit = make_plan(load_workspace(sdk), "core", "wasm").units[0]
    toolchain = unit.recipe_inputs["vecmath"]["toolchain"]
    assert toolchain.startswith("emscripten: emcc (Emscripten")
    assert " 3.1.6 " in toolchain and "wasm32-unknown-emscripten" in toolchain
    assert unit.recipe_inputs["vecmath"]["pin:emsdk"] == "3.1.6"


def test_real_toolchain_identity_is_the_version_line(sdk: Path) -> None:
    ws = load_workspace(sdk)
    ident = ToolchainIdentity()
    line = ident(ws.platforms["linux-x86_64"], ws.pins)
    assert line.startswith("cc = gcc: gcc") and re.search(r"\d+\.\d+", line)
    missing = dataclasses.replace(ws.platforms["linux-x86_64"], toolchain=Toolchain(
        cc=("no-such-compiler-xyz",), cxx=("no-such-compiler-xyz",), ar=()))
    assert ident(missing, ws.pins).startswith("unavailable")


def test_asset_names() -> None:
    plan = make_plan(load_workspace(SDK))
    core = plan.unit("core/wasm")
    ort = plan.unit("onnxruntime/linux-x86_64")
    assert core is not None and ort is not None
    assert asset_for(core) == asset_id("kiln-sdk-core", "0.12.0", "wasm")
    assert asset_for(ort).filename == "onnxruntime-1.27.0-linux-x86_64.tar.xz"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_json_matches_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "-C", str(SDK), "plan", "--json")
    assert rc == 0
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    assert data["schema_version"] == 1
    assert [u["id"] for u in data["units"]] == list(make_plan(load_workspace(SDK)).ids)
    rc, again, _ = _run(capsys, "-C", str(SDK), "plan", "--json")
    assert again == out  # stable


def test_cli_markdown_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "-C", str(SDK), "plan", "--stage", "core", "--platform", "wasm")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "| unit | stage | platform | input hash | status |"
    assert lines[1] == "|---|---|---|---|---|"
    assert re.fullmatch(r"\| `core/wasm` \| core \| wasm \| `[0-9a-f]{12}` \| \w+ \|", lines[2])
    assert len(lines) == 3


def test_cli_explain(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "-C", str(SDK), "plan", "--explain", "onnxruntime/wasm")
    assert rc == 0
    assert "| pin:onnxruntime | `1.27.0` |" in out
    assert "| pin:emsdk | `3.1.6` |" in out
    assert "| toolchain | `emscripten: emcc (Emscripten" in out
    assert "recipe-file" in out and "platform-profile" in out
    rc, out, _ = _run(capsys, "-C", str(SDK), "plan", "--explain", "media/wasm", "--json")
    data = json.loads(out)
    assert data["unit"]["inputs"]["unit:core/wasm"] == make_plan(
        load_workspace(SDK)).unit("core/wasm").input_hash  # type: ignore[union-attr]
    assert "source[0]:../src/pixelbuf" in data["unit"]["recipe_inputs"]["pixelbuf"]
    rc, _, err = _run(capsys, "-C", str(SDK), "plan", "--explain", "core/wasn")
    assert rc == 2 and "did you mean 'core/wasm'" in err


def test_status_comes_from_the_store(sdk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = make_plan(load_workspace(sdk))
    core, media = plan.unit("core/wasm"), plan.unit("media/wasm")
    assert core is not None and media is not None
    release = sdk / "releases" / "continuous"
    release.mkdir(parents=True)
    for unit, h in ((core, core.input_hash), (media, "0" * 64)):
        name = asset_for(unit).filename
        (release / name).write_bytes(b"not really an archive")
        (release / f"{name}.sha256").write_text(f"{'1' * 64}  {name}\n")
        (release / f"{name}.json").write_text(
            json.dumps(support.valid_manifest(*_named(unit), input_hash=h)))
    _, out, _ = _run(capsys, "-C", str(sdk), "plan", "--json", "--platform", "wasm")
    status = {u["id"]: u["status"] for u in json.loads(out)["units"]}
    assert status == {"core/wasm": "built", "media/wasm": "stale", "onnxruntime/wasm": "missing",
                      "ffmpeg/wasm": "missing", "dav1d/wasm": "missing"}


def test_per_recipe_stage_orders_and_hashes_recipes_it_depends_on(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    for name, deps in (("alpha", "()"), ("beta", '("alpha",)'), ("gamma", "()")):
        (tmp_path / "recipes" / f"{name}.py").write_text(
            "from prebake.recipes import Build, Recipe\n"
            f"RECIPE = Recipe(name={name!r}, pin={name!r}, deps={deps},\n"
            "    platforms={'*': Build(commands=('{cc} -c x.c',))})\n")
    (tmp_path / "prebake.toml").write_text(
        '[project]\nname = "p"\nversion = "1.0"\n\n'
        '[pins]\nalpha = "1.0"\nbeta = "2.0"\ngamma = "3.0"\n\n'
        '[platforms.linux-x86_64]\nos = "linux"\narch = "x86_64"\n'
        'toolchain = { cc = "gcc", cxx = "g++" }\n\n'
        '[stages.extra]\nrecipes = ["alpha", "beta", "gamma"]\npackage = "per-recipe"\n')
    plan = make_plan(load_workspace(tmp_path))
    beta = plan.unit("beta/linux-x86_64")
    assert beta is not None and beta.deps == ("alpha/linux-x86_64",)
    assert plan.ids.index("alpha/linux-x86_64") < plan.ids.index("beta/linux-x86_64")
    before = hashes(tmp_path)
    edit(tmp_path / "prebake.toml", 'alpha = "1.0"', 'alpha = "1.1"')
    assert changed(before, hashes(tmp_path)) == {"alpha/linux-x86_64", "beta/linux-x86_64"}


def test_explain_names_what_changed_since_the_stored_asset(
        sdk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unit = make_plan(load_workspace(sdk)).unit("onnxruntime/linux-x86_64")
    assert unit is not None
    release = sdk / "releases" / "continuous"
    release.mkdir(parents=True)
    name = asset_for(unit).filename
    (release / name).write_bytes(b"x")
    (release / f"{name}.sha256").write_text(f"{'1' * 64}  {name}\n")
    (release / f"{name}.json").write_text(json.dumps(
        support.valid_manifest(*_named(unit), input_hash=unit.input_hash,
                               inputs=dict(unit.inputs))))
    rc, out, _ = _run(capsys, "-C", str(sdk), "plan", "--explain", unit.id)
    assert rc == 0 and "status: built" in out and "Changed since" not in out

    edit(sdk / "prebake.toml", 'extends = "manylinux_2_36_x86_64"',
         'extends = "manylinux_2_36_x86_64"\nglibc_max = "2.35"')
    rc, out, _ = _run(capsys, "-C", str(sdk), "plan", "--explain", unit.id)
    assert "status: stale" in out
    changed_rows = [line for line in out.splitlines() if line.startswith("| platform-profile |")
                    and line.count("`") == 4]
    assert len(changed_rows) == 1  # the profile digest changed; nothing else did
    rc, out, _ = _run(capsys, "-C", str(sdk), "plan", "--explain", unit.id, "--json")
    assert [c["input"] for c in json.loads(out)["unit"]["changed"]] == ["platform-profile"]

    (release / f"{name}.json").write_text(json.dumps(
        support.valid_manifest(*_named(unit), input_hash="0" * 64)))
    rc, out, _ = _run(capsys, "-C", str(sdk), "plan", "--explain", unit.id)
    assert "its manifest does not list them" in out


def test_asking_a_compiler_its_version_leaves_the_current_folder_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `zig cc -target aarch64-macos… --version` writes an empty a.o into its working folder

    monkeypatch.chdir(tmp_path)
    ws = load_workspace(SDK)
    line = ToolchainIdentity()(ws.platforms["macos-x86_64"], ws.pins)
    assert line.startswith("zig: zig ") and "x86_64-unknown-macos.11.0" in line
    assert list(tmp_path.iterdir()) == []


def test_a_store_url_prebake_cannot_open_is_bad_input(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-C", str(SDK), "plan", "--store", "bogus://x"]) == 2
    assert "unknown store scheme 'bogus'" in capsys.readouterr().err


def test_an_unreachable_store_gives_unknown_with_the_reason(
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.servers.static_http import closed_port_url

    url = closed_port_url()
    assert main(["-C", str(SDK), "plan", "--store", url, "--platform", "wasm",
                 "--json"]) == 0
    out = capsys.readouterr()
    assert {u["status"] for u in json.loads(out.out)["units"]} == {"unknown"}
    assert "could not be asked" in out.err and "statuses are unknown" in out.err


def test_build_plans_once_and_units_carry_what_they_build_on(
        sdk: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`prebake build` makes one plan for every named platform; each unit comes resolved
    (platform, recipes, upstream units, asset), so the build never plans again."""
    import prebake.plan
    from prebake.bake import plan_units
    from prebake.plan import planner

    calls: list[object] = []
    real = planner.make_plan

    def counting(*args: object, **kwargs: object) -> object:
        calls.append((args, kwargs))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(planner, "make_plan", counting)
    monkeypatch.setattr(prebake.plan, "make_plan", counting)
    platforms = sorted(ALL_PLATFORMS)
    argv = [arg for p in platforms for arg in ("--platform", p)]
    assert main(["-C", str(sdk), "build", "--dry-run", "--json", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["units"]) == 30
    assert len(calls) == 1, f"the build planned {len(calls)} times"
    # several platforms come platform by platform, each in build order
    assert [u["unit"].split("/")[1] for u in data["units"]] == [
        p for p in platforms for _ in range(5)]

    ws = load_workspace(sdk)
    units = {u.id: u for u in plan_units(ws, None, ["wasm"])}
    media, ort, core = units["media/wasm"], units["onnxruntime/wasm"], units["core/wasm"]
    assert media.upstream == (core,) and ort.upstream == (core,) and core.upstream == ()
    assert media.platform is ws.platforms["wasm"] and [r.name for r in ort.recipes] == [
        "onnxruntime"]
    # the unit's recipe is the one it builds: URLs resolved for the pin, digests from the lock
    assert ort.recipes[0].sources[0].url.endswith("/v1.27.0.tar.gz")
    assert ort.asset == asset_id("onnxruntime", ws.pins["onnxruntime"], "wasm")
