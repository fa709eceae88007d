"""Contract presets are shipped data: ``extends = "NAME"`` with overrides, on the examples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.contract import Contract, parse_contract
from prebake.contract.presets import PRESETS_DIR, load_preset, preset_names
from prebake.errors import ConfigError
from prebake.intake import load_workspace
from prebake.model.ci_defaults import ci_defaults
from prebake.model.workspace import CiConfig
from tests import support

EXAMPLES = support.ROOT / "examples"
# What examples/sdk wrote by hand before the presets: the presets must give exactly this.
HOST_WASM = Contract(os="emscripten", arch="wasm32", eh="wasm", lto="none", threads=True,
                     features_required=("simd128", "exception-handling"),
                     features_forbidden=("relaxed-simd",),
                     allow_unknown=("os",),  # a wasm object records no OS: listed, not failed
                     producer=("toolchain",))  # every object names the verified clang


def test_the_named_profiles_are_shipped_as_data_files() -> None:
    names = preset_names()
    for wanted in ("emscripten-wasm-eh", "emscripten-legacy-eh", "manylinux_2_28_x86_64",
                   "manylinux_2_28_aarch64"):
        assert wanted in names
        assert (PRESETS_DIR / f"{wanted}.toml").is_file()
    assert load_preset("emscripten-legacy-eh").contract["eh"] == "emscripten-legacy"
    assert load_preset("manylinux_2_28_aarch64").contract["glibc_max"] == "2.28"


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_is_a_valid_contract_for_its_os(name: str) -> None:
    preset = load_preset(name)
    contract, problems = parse_contract({"extends": name})
    assert problems == []
    assert contract.os == preset.os and preset.description


def test_example_sdk_contracts_come_from_presets_unchanged() -> None:
    text = (EXAMPLES / "sdk" / "prebake.toml").read_text()
    assert text.count("extends = ") >= 3 and "features_required" not in text
    ws = load_workspace(EXAMPLES / "sdk")
    assert ws.platforms["wasm"].contract == HOST_WASM
    linux = ws.platforms["linux-x86_64"].contract
    assert (linux.glibc_max, linux.lto, linux.cxx_stdlib) == ("2.36", "none", "libstdc++")
    assert linux.forbid_exports == ("_ZN6google8protobuf*", "_ZN4absl*")
    # the Linux and wasm presets hold every binary's compiler to the verified toolchain
    assert linux.producer == ("toolchain",) == ws.platforms["windows-x86_64"].contract.producer
    assert ws.platforms["linux-aarch64"].contract.glibc_max == "2.28"
    for name, arch in (("macos-arm64", "aarch64"), ("macos-x86_64", "x86_64")):
        mac = ws.platforms[name].contract
        assert (mac.os, mac.arch, mac.macos_min, mac.lto) == ("macos", arch, "13.3", "none")
    addon = load_workspace(EXAMPLES / "addon")
    assert addon.platforms["wasm"].contract == HOST_WASM


def test_an_override_replaces_the_preset_key_whole() -> None:
    contract, problems = parse_contract({"extends": "emscripten-wasm-eh-pthread-simd",
                                         "threads": False, "features_required": ["simd128"]})
    assert problems == []
    assert contract.threads is False and contract.features_required == ("simd128",)
    assert contract.eh == "wasm" and contract.features_forbidden == ("relaxed-simd",)


def _ws(tmp: Path, contract: str, os: str = "linux", arch: str = "x86_64") -> Path:
    (tmp / "prebake.toml").write_text(support.platform_workspace(
        "demo", "p", os, arch, 'cc = "gcc", cxx = "g++"', contract, version="1.0.0"))
    return tmp


def test_unknown_preset_is_exit_2_with_did_you_mean(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = _ws(tmp_path, 'extends = "manylinux_2_28_x86-64"')
    assert main(["-C", str(root), "plan"]) == 2
    err = capsys.readouterr().err
    assert "platforms.p.contract.extends" in err
    assert "did you mean 'manylinux_2_28_x86_64'?" in err


def test_a_preset_for_another_os_or_arch_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_workspace(_ws(tmp_path, 'extends = "emscripten-wasm-eh"'))
    keys = {p.key: p.message for p in info.value.problems}
    assert "is for os 'emscripten'" in keys["platforms.p.contract.extends"]
    with pytest.raises(ConfigError) as info:
        load_workspace(_ws(tmp_path, 'extends = "manylinux_2_28_aarch64"'))
    assert "platform 'p' has arch 'x86_64'" in str(info.value)


def test_stage_rules_are_stated_in_the_workspace(tmp_path: Path) -> None:
    """``never_in`` is data: any stage/alias pair, and no rule when the workspace states none."""
    data = Path(__file__).resolve().parent.parent / "data" / "workspaces"
    shutil.copytree(data / "recipes", tmp_path / "recipes")
    text = (data / "extra_in_full.toml").read_text()
    (tmp_path / "prebake.toml").write_text(text.replace('never_in = ["full"]\n', ""))
    assert load_workspace(tmp_path).aliases["full"] == ("core", "extra")
    (tmp_path / "prebake.toml").write_text(
        text.replace('never_in = ["full"]', 'never_in = ["nightly"]')
        .replace("full = [", 'nightly = ["core", "extra"]\nfull = ['))
    with pytest.raises(ConfigError) as info:
        load_workspace(tmp_path)
    [problem] = info.value.problems
    assert problem.key == "aliases.nightly"
    assert problem.message == "'extra' must never be part of 'nightly' (stages.extra.never_in)"
    loader = (support.ROOT / "src" / "prebake" / "intake" / "loader.py").read_text()
    assert '"full"' not in loader and '"extra"' not in loader


def test_ci_defaults_are_one_data_file() -> None:
    d = ci_defaults()
    assert (d.python, d.timeout_minutes) == ("3.12", 240)
    assert CiConfig().python == d.python and CiConfig().timeout_minutes == d.timeout_minutes
    ws = load_workspace(EXAMPLES / "sdk")
    assert ws.ci.timeout_minutes == d.timeout_minutes and ws.ci.python == d.python
    src = support.ROOT / "src" / "prebake"
    for py in ("ci/github.py", "model/workspace.py", "intake/loader.py"):
        text = (src / py).read_text()
        assert '"3.12"' not in text and "240" not in text, py


def test_the_exnref_and_legacy_presets_ask_for_their_encoding() -> None:
    from prebake.contract.terms import parse_contract

    for preset, encoding in (("emscripten-jspi-exnref-pthread-simd", "exnref"),
                             ("emscripten-wasm-eh-legacy-pthread-simd", "legacy")):
        contract, problems = parse_contract({"extends": preset})
        assert problems == []
        assert contract.wasm_eh_encoding == encoding
        assert contract.eh == "wasm" and contract.threads is True  # what they extend
        assert "relaxed-simd" in contract.features_forbidden
    _, problems = parse_contract({"wasm_eh_encoding": "both"})
    assert "must be one of legacy, exnref" in problems[0].message


def test_the_wasm_presets_name_the_engines_of_their_encoding() -> None:
    """Each preset's engines are the first releases the table says run what it asks for, and
    the legacy one reaches Node 20, which the exnref one (JSPI) cannot."""
    from prebake import engines
    from prebake.contract.terms import parse_contract

    lime = ("bulk-memory", "multivalue", "mutable-globals", "nontrapping-fptoint",
            "reference-types", "sign-ext")  # LLVM's default wasm target
    for preset, asks in (("emscripten-jspi-exnref-pthread-simd", ("jspi", "exceptions-exnref")),
                         ("emscripten-wasm-eh-legacy-pthread-simd", ("exceptions-legacy",))):
        contract, problems = parse_contract({"extends": preset})
        assert problems == [] and contract.engines
        runs = engines.verdict(engines.Needs((*asks, "threads", "simd", *lime), {})).runs
        assert sorted(contract.engines) == sorted(f"{e}>={runs[e]}" for e in
                                                  ("chrome", "firefox", "safari", "node")), preset
    legacy = engines.Needs(("exceptions-legacy", "threads", "simd", *lime), {})
    assert not engines.judge(legacy, engines.parse_floor("node>=20"))


def test_a_platforms_contract_is_made_by_the_contract_package() -> None:
    """contract.platform, not the workspace loader, holds a platform's contract to its os and
    arch: a preset for another arch is one problem at ``extends``; an unstated os and arch are
    filled in from the platform and listed in allow_unknown (visible), a stated one stays strict."""
    from prebake.contract.platform import platform_contract

    where = "platforms.p.contract"
    _, problems = platform_contract({"extends": "manylinux_2_28_aarch64"}, "p", "linux",
                                    "x86_64", where)
    assert [(p.key, p.message) for p in problems] == [
        (f"{where}.extends", "preset 'manylinux_2_28_aarch64' is for arch 'aarch64'; "
                             "platform 'p' has arch 'x86_64'")]
    contract, problems = platform_contract({}, "p", "linux", "x86_64", where)
    assert problems == [] and (contract.os, contract.arch) == ("linux", "x86_64")
    assert set(contract.allow_unknown) == {"os", "arch"}
    strict, _ = platform_contract({"os": "linux"}, "p", "linux", "x86_64", where)
    assert strict.allow_unknown == ("arch",)
