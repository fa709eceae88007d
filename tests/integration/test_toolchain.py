"""Toolchains verified, hashed and provisioned, with real second versions: clang-14/15, gcc-11,
ziglang releases from PyPI, and Debian 13's Emscripten 3.1.69 in a chroot."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import support
from tests import toolchains as toolchains_module
from tests.integration.test_build import build_json, copy_workspace, prebake
from tests.toolchains import trixie_emscripten, trixie_path, trixie_workdir

SCHEMA = json.loads((support.ROOT / "schemas" / "toolchain.schema.json").read_text())


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def toolchains(ws: Path, env: Mapping[str, str] | None = None, *args: str
               ) -> dict[str, dict[str, Any]]:
    proc = prebake(ws, "toolchain", "list", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    jsonschema.validate(data, SCHEMA)
    return {p["platform"]: p for p in data["platforms"]}


def nothing_written(ws: Path) -> bool:
    return not (ws / "releases").exists() and not (ws / ".prebake" / "dist").exists() \
        and not (ws / ".prebake" / "work").exists()


def test_a_pin_the_compiler_contradicts_refuses_before_any_command(tmp_path: Path) -> None:
    """The example's old pin (emsdk 5.0.5) against Debian 12's emcc 3.1.6: exit 2, no asset."""
    ws = copy_workspace(tmp_path / "sdk")
    edit(ws / "prebake.toml", 'emsdk = "3.1.6"', 'emsdk = "5.0.5"')
    proc = prebake(ws, "build", "--stage", "core", "--platform", "wasm", "--platform",
                   "linux-x86_64")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("prebake: error: platform wasm: pin emsdk = '5.0.5' but its cc "
                               "(emcc) reports 'emcc (Emscripten")
    assert "3.1.6" in lines[0] and "(refusing core/wasm)" in lines[0]
    assert nothing_written(ws)  # not even the host unit ran
    assert toolchains(ws)["wasm"]["status"] == "mismatch"


def test_a_recipe_minimum_refuses_an_older_emscripten_with_its_reason(tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "sdk")
    proc = prebake(ws, "build", "--stage", "extra", "--platform", "wasm")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == (
        "prebake: error: onnxruntime/wasm: needs Emscripten (emcc/em++) 4.0 or newer "
        "(exnref exceptions (-sWASM_LEGACY_EXCEPTIONS=0) for a -sJSPI consumer); the "
        "platform's compiler reports 'emcc "
        "(Emscripten gcc/clang-like replacement + linker emulating GNU ld) 3.1.6 ()'")
    assert nothing_written(ws)  # refused before the onnxruntime checkout


def test_toolchain_list_shows_family_pin_command_version_and_status(tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "sdk")
    listed = toolchains(ws)
    assert listed["wasm"]["family"] == "emscripten" and listed["wasm"]["status"] == "ok"
    assert listed["wasm"]["pin"] == "emsdk" and listed["wasm"]["pinned"] == "3.1.6"
    assert listed["wasm"]["resolved"] == shutil.which("emcc")
    assert listed["wasm"]["llvm"] == "14.0.6" and listed["wasm"]["target"] == \
        "wasm32-unknown-emscripten"
    assert listed["linux-x86_64"]["family"] == "gcc"
    assert listed["linux-x86_64"]["status"] == "unpinned"
    assert listed["windows-x86_64"]["family"] == "mingw"
    assert listed["linux-aarch64"]["family"] == "zig"
    assert listed["linux-aarch64"]["target"] == "aarch64-unknown-linux-gnu.2.28"
    # the human table says the same
    out = prebake(ws, "toolchain", "list").stdout
    assert "emsdk = 3.1.6" in out and "unpinned" in out


def test_gcc_11_contradicts_a_gcc_12_pin(tmp_path: Path) -> None:
    if shutil.which("gcc-11") is None:
        pytest.skip("gcc-11 is not installed (scripts/bootstrap installs it)")
    ws = copy_workspace(tmp_path / "sdk")
    toml = ws / "prebake.toml"
    edit(toml, 'cc = "gcc"\ncxx = "g++"\nar = "ar"\n',
         'cc = "gcc-11"\ncxx = "g++-11"\nar = "ar"\npin = "gcc"\n')
    edit(toml, 'zig = "0.17.1"\n', 'zig = "0.17.1"\ngcc = "12"\n')
    host = toolchains(ws, None, "--platform", "linux-x86_64")["linux-x86_64"]
    assert host["status"] == "mismatch" and host["version"].startswith("11.")
    assert "pin gcc = '12' but its cc (gcc-11) reports 'gcc-11 (Debian 11." in host["reason"]
    edit(toml, 'gcc = "12"', 'gcc = "11"')
    assert toolchains(ws, None, "--platform", "linux-x86_64")["linux-x86_64"]["status"] == "ok"


def _cc_path(tmp_path: Path, name: str, version: int) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "cc").symlink_to(f"/usr/bin/clang-{version}")
    (folder / "c++").symlink_to(f"/usr/bin/clang++-{version}")
    return f"{folder}:{os.environ['PATH']}"


def test_an_asset_built_by_another_compiler_is_never_built(tmp_path: Path) -> None:
    """Cache poisoning: ``cc`` is clang-14 on one machine, clang-15 on another; the asset
    the first published is not "built" for the second, which rebuilds it."""
    for v in (14, 15):
        if shutil.which(f"clang-{v}") is None:
            pytest.skip(f"clang-{v} is not installed (scripts/bootstrap installs it)")
    ws = copy_workspace(tmp_path / "sdk")
    edit(ws / "prebake.toml", 'cc = "gcc"\ncxx = "g++"', 'cc = "cc"\ncxx = "c++"')
    on14 = {"PATH": _cc_path(tmp_path, "m14", 14)}
    on15 = {"PATH": _cc_path(tmp_path, "m15", 15)}
    args = ("--stage", "core", "--platform", "linux-x86_64")
    rc, first = build_json(ws, *args, env=on14)
    assert rc == 0, first
    assert [u["state"] for u in first["units"]] == ["built"]

    def status(env: Mapping[str, str]) -> str:
        proc = prebake(ws, "plan", "--json", *args, env=env)
        assert proc.returncode == 0, proc.stderr
        (unit,) = json.loads(proc.stdout)["units"]
        return str(unit["status"])

    assert status(on14) == "built"
    assert status(on15) == "stale"
    rc, second = build_json(ws, *args, env=on15)
    assert rc == 0, second
    assert [u["state"] for u in second["units"]] == ["built"]  # rebuilt, not skipped
    assert second["units"][0]["input_hash"] != first["units"][0]["input_hash"]
    manifest = json.loads(next((ws / "releases").rglob("kiln-sdk-core-*linux-x86_64.tar.xz.json"))
                          .read_text())
    assert manifest["toolchain"]["verified"]["family"] == "clang"
    assert manifest["toolchain"]["verified"]["version"].startswith("15.")
    assert status(on14) == "stale"


ZIG_OLD = "0.13.0"


def test_toolchain_install_puts_the_pinned_zig_in_the_cache_and_the_platform_runs_it(
        tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "sdk")
    toml = ws / "prebake.toml"
    edit(toml, 'zig = "0.17.1"', f'zig = "0.17.1"\nzig_old = "{ZIG_OLD}"')
    text = toml.read_text()
    head, sep, tail = text.partition("[platforms.linux-aarch64.toolchain]")
    toml.write_text(head + sep + tail.replace('pin = "zig"', 'pin = "zig_old"', 1))
    # prebake's cache for this test, kept between runs (the wheel is ~50 MB)
    env = {"PREBAKE_CACHE": str(support.CACHE / "prebake-cache")}
    before = toolchains(ws, env, "--platform", "linux-aarch64")["linux-aarch64"]
    if before["status"] == "ok":  # installed by an earlier run: the hash check still holds
        assert before["resolved"].endswith(f"ziglang-{ZIG_OLD}/ziglang/zig")
    else:
        assert before["status"] == "mismatch" and before["version"] != ZIG_OLD
        assert f"pin zig_old = '{ZIG_OLD}'" in before["reason"]
        proc = prebake(ws, "build", "--stage", "core", "--platform", "linux-aarch64", env=env)
        assert proc.returncode == 2 and "pin zig_old" in proc.stderr
    proc = prebake(ws, "toolchain", "install", "--platform", "linux-aarch64", "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (done,) = json.loads(proc.stdout)["platforms"]
    assert done["outcome"] in ("installed", "present") and done["version"] == ZIG_OLD
    after = toolchains(ws, env, "--platform", "linux-aarch64")["linux-aarch64"]
    assert after["status"] == "ok" and after["version"] == ZIG_OLD
    assert after["resolved"] == done["path"]
    assert after["command"][0] == done["path"]  # the platform runs that zig
    # the other zig platforms keep the environment's zig at their own pin
    assert toolchains(ws, env, "--platform", "macos-x86_64")["macos-x86_64"]["version"] == "0.17.1"
    # and what it reports is the unit's identity: another zig, another hash
    plan = prebake(ws, "plan", "--explain", "core/linux-aarch64", "--json", env=env)
    inputs = json.loads(plan.stdout)["unit"]["recipe_inputs"]["vecmath"]
    assert inputs["toolchain"].startswith(f"zig: zig {ZIG_OLD} [target aarch64")
    # the build really runs that zig: zig 0.13 leaves the work folder in the archive (the
    # prefix map does not reach it), so the relocation scan refuses the unit and ships nothing
    rc, data = build_json(ws, "--stage", "core", "--platform", "linux-aarch64",
                          env={**env, "PREBAKE_STORE": f"file://{tmp_path / 'store'}"})
    assert rc == 1, data
    (unit,) = data["units"]
    assert "still name a build folder" in unit["message"], unit
    assert "lib/libvecmath.a" in unit["message"], unit
    assert not list((tmp_path / "store").rglob("*linux-aarch64.tar.xz*"))


def test_emsdk_cannot_be_provisioned_here_and_it_says_so(tmp_path: Path) -> None:
    ws = copy_workspace(tmp_path / "sdk")
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
    proc = prebake(ws, "toolchain", "install", "--platform", "wasm", "--platform",
                   "linux-x86_64", env=env)
    lines = proc.stdout.strip().splitlines()
    if "installed" in lines[0] or "present" in lines[0]:
        pytest.skip("the emsdk repository is reachable here (a CI runner)")
    assert proc.returncode == 1
    assert lines[0].split()[0] == "cannot"
    assert "wasm: cannot provision emsdk 3.1.6 here: the emsdk repository" in lines[0]
    assert lines[1].split()[0] == "nothing" and "GCC comes from the system" in lines[1]
    assert not (tmp_path / "cache" / "toolchains" / "emsdk-3.1.6").exists()


# ---- a second, current Emscripten: Debian 13's 3.1.69 --------------------------------------

@pytest.fixture(scope="module")
def trixie() -> Path:
    return trixie_emscripten()


def _trixie_env(bin_dir: Path, work: Path) -> dict[str, str]:
    (work / "tmp").mkdir(exist_ok=True)
    return {"PATH": trixie_path(bin_dir), "TMPDIR": str(work / "tmp")}


def test_the_pin_decides_which_emscripten_may_build(trixie: Path) -> None:
    """Pinned 3.1.69: Debian 12's 3.1.6 is refused; the chroot's 3.1.69 builds, and its asset
    is not "built" for the machine with the other compiler."""
    with trixie_workdir("pin") as work:
        ws = copy_workspace(work / "sdk")
        edit(ws / "prebake.toml", 'emsdk = "3.1.6"', 'emsdk = "3.1.69"')
        env = _trixie_env(trixie, work)
        args = ("--stage", "core", "--platform", "wasm")
        host = prebake(ws, "build", *args)
        assert host.returncode == 2
        assert "pin emsdk = '3.1.69' but its cc (emcc) reports" in host.stderr
        assert "3.1.6 ()" in host.stderr and nothing_written(ws)
        listed = toolchains(ws, env, "--platform", "wasm")["wasm"]
        assert listed["status"] == "ok" and listed["version"] == "3.1.69"
        assert listed["llvm"] == "19.1.7" and listed["resolved"] == str(trixie / "emcc")
        rc, data = build_json(ws, *args, env=env)
        assert rc == 0, json.dumps(data, indent=2)
        (manifest_path,) = (ws / "releases").rglob("kiln-sdk-core-*-wasm.tar.xz.json")
        verified = json.loads(manifest_path.read_text())["toolchain"]["verified"]
        assert verified["version"] == "3.1.69" and verified["llvm"] == "19.1.7"
        # the host (3.1.6) never takes that asset as its own, nor builds under the pin
        plan = prebake(ws, "plan", "--json", *args)
        assert json.loads(plan.stdout)["units"][0]["status"] == "stale"
        # onnxruntime's exnref minimum (Emscripten 4.0) is not met by 3.1.69, which emits
        # only the legacy encoding: a dry run says it would refuse, and why
        rc, dry = build_json(ws, "--stage", "extra", "--platform", "wasm", "--dry-run",
                             env=env)
        assert rc == 0, dry
        assert "would refuse" in dry["units"][0]["reason"], dry
        assert "needs Emscripten (emcc/em++) 4.0 or newer" in dry["units"][0]["reason"], dry


# Bitcode carries no wasm EH/threads/feature evidence until it is compiled: opted out visibly.
LTO_CONTRACT = ('lto = "llvm-bitcode"\n'
                'allow_unknown = ["os", "eh", "threads", "features_required", '
                '"features_forbidden"]\n')


def _sdk_built_with_trixie(trixie: Path, work: Path, *, lto: bool = False) -> Path:
    """The example SDK's core/wasm built by Debian 13's Emscripten 3.1.69 (pinned)."""
    ws = copy_workspace(work / "sdk")
    edit(ws / "prebake.toml", 'emsdk = "3.1.6"', 'emsdk = "3.1.69"')
    if lto:
        edit(ws / "recipes" / "vecmath.py", '"wasm": "-O2 -fwasm-exceptions',
             '"wasm": "-O2 -flto -fwasm-exceptions')
        # LLVM bitcode records the source file name as given (no prefix map rewrites it), so
        # an LTO recipe compiles from inside {src}: else the asset names its build folder
        edit(ws / "recipes" / "vecmath.py", '"{cxx} -std=c++17 "',
             '"cmake -E chdir {src} {cxx} -std=c++17 "')
        edit(ws / "recipes" / "vecmath.py", "-c {src}/src/vecmath.cpp", "-c src/vecmath.cpp")
        edit(ws / "prebake.toml", 'extends = "emscripten-wasm-eh-pthread-simd"\n',
             'extends = "emscripten-wasm-eh-pthread-simd"\n' + LTO_CONTRACT)
    rc, data = build_json(ws, "--stage", "core", "--platform", "wasm",
                          env=_trixie_env(trixie, work))
    assert rc == 0, json.dumps(data, indent=2)
    return ws


def _addon(work: Path, emsdk: str, flags: str = "", lto: bool = False) -> Path:
    addon = work / "addon"
    shutil.rmtree(addon, ignore_errors=True)
    shutil.copytree(support.ROOT / "examples" / "addon", addon,
                    ignore=shutil.ignore_patterns("build", "prebake_deps", "prebake.lock"))
    toml = addon / "prebake.toml"
    edit(toml, 'emsdk = "3.1.6"', f'emsdk = "{emsdk}"')
    extra = LTO_CONTRACT if lto else ""
    edit(toml, 'extends = "emscripten-wasm-eh-pthread-simd"\n',
         f'extends = "emscripten-wasm-eh-pthread-simd"\n{extra}')
    if flags:
        toml.write_text(toml.read_text() + f"\n[platforms.wasm.link_test]\nflags = {flags}\n")
    return addon


def _fetch(addon: Path, work: Path, into: str, env: Mapping[str, str] | None, *extra: str
           ) -> Any:
    return prebake(addon, "fetch", "kiln-sdk-core==0.12.0", "--platform", "wasm", "--into",
                   str(work / into), "--lock", str(work / f"{into}.lock"), *extra, env=env)


JSPI_FLAGS = ('["-fwasm-exceptions", "-pthread", "-msimd128", "-sJSPI", '
              '"-sERROR_ON_UNDEFINED_SYMBOLS=1"]')


def test_fetch_link_test_links_with_the_consumers_own_jspi_compiler(trixie: Path) -> None:
    """A -sJSPI consumer (Emscripten 3.1.69) links the fetched archive for real; Debian 12's
    3.1.6 with the same flags cannot, and the fetch installs nothing."""
    with trixie_workdir("jspi") as work:
        _sdk_built_with_trixie(trixie, work)
        env = _trixie_env(trixie, work)
        addon = _addon(work, "3.1.69", JSPI_FLAGS)
        ok = _fetch(addon, work, "new", env, "--link-test", "--json")
        assert ok.returncode == 0, ok.stdout + ok.stderr
        notes = json.loads(ok.stdout)["notes"]
        assert any(n.startswith("link test: lib/libvecmath.a links with") and "-sJSPI" in n
                   for n in notes), notes
        assert (work / "new" / "lib" / "libvecmath.a").is_file()
        old = _addon(work, "3.1.6", JSPI_FLAGS)
        refused = _fetch(old, work, "old", None, "--link-test")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "lib/libvecmath.a does not link with this consumer's wasm compiler and flags; " \
               "nothing was installed" in refused.stderr
        assert "JSPI" in refused.stderr  # 3.1.6's own error line, verbatim
        assert not (work / "old").exists() or not any((work / "old").iterdir())
        # without --link-test the same fetch installs: only the link proves it unusable
        plain = _fetch(old, work, "plain", None)
        assert plain.returncode == 0, plain.stderr


def test_bitcode_from_a_newer_llvm_is_refused_at_fetch_and_check(trixie: Path) -> None:
    """An LTO archive from LLVM 19 (Emscripten 3.1.69) against an LLVM 14 consumer (3.1.6)."""
    with trixie_workdir("bitcode") as work:
        sdk = _sdk_built_with_trixie(trixie, work, lto=True)
        (asset,) = (sdk / "releases").rglob("kiln-sdk-core-0.12.0-wasm.tar.xz")
        manifest = json.loads(asset.with_name(asset.name + ".json").read_text())
        assert manifest["toolchain"]["verified"]["llvm"] == "19.1.7"
        addon = _addon(work, "3.1.6", lto=True)
        refused = _fetch(addon, work, "old", None)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "its toolchain does not suit this consumer's; nothing was installed" \
            in refused.stderr
        assert "bitcode-producer: built with LLVM 19.1.7, this consumer's compiler has 14.0.6" \
            in refused.stderr
        assert not (work / "old").exists() or not any((work / "old").iterdir())
        # what the rule predicts is what LLVM 14 does with it: its tools cannot read it
        if shutil.which("llvm-nm-14"):
            import tarfile

            with tarfile.open(asset) as tf:
                member = tf.extractfile("lib/libvecmath.a")
                assert member is not None
                (work / "libvecmath.a").write_bytes(member.read())
            proc = support.run(["llvm-nm-14", "libvecmath.a"], work, check=False)
            assert proc.returncode != 0 and "Producer: 'LLVM19.1.7'" in proc.stderr
        check = prebake(addon, "check", str(asset), "--platform", "wasm", "--json")
        assert check.returncode == 1, check.stdout + check.stderr
        (finding,) = json.loads(check.stdout)["toolchain"]
        assert finding["rule"] == "bitcode-producer" and finding["level"] == "refuse"
        # the consumer with the same LLVM takes it
        same = _addon(work, "3.1.69", lto=True)
        ok = _fetch(same, work, "new", _trixie_env(trixie, work))
        assert ok.returncode == 0, ok.stdout + ok.stderr


def test_wrappers_that_name_a_deleted_interpreter_are_rewritten_for_this_one(
        tmp_path: Path) -> None:
    """A toolchains folder shared by two checkouts (the tests' cache, a CI cache restored into a
    new venv): its wrappers exec the Python of whichever checkout wrote them last. Once that
    checkout is gone, the flagship's wasm toolchain still lists as the pinned 6.0.5, through
    wrappers that now name the interpreter running prebake."""
    from prebake.toolchain.environment import environment_named

    root = toolchains_module.sid_emscripten().parent / f"env-{toolchains_module.SID_ENVIRONMENT}"
    shared = tmp_path / "toolchains"
    shared.mkdir()
    (shared / root.name).symlink_to(root)
    stale = shared / f"{root.name}.bin"
    stale.mkdir()
    env = environment_named(toolchains_module.SID_ENVIRONMENT)
    for tool in env.tools:
        (stale / tool).write_text("#!/bin/sh\nexec /gone/checkout/.venv/bin/python -m "
                                  f"prebake.toolchain.enter {root} {tool} \"$@\"\n")
        (stale / tool).chmod(0o755)
    ws = support.ROOT / "examples" / "flagship"
    listed = toolchains(ws, {"PREBAKE_TOOLCHAINS": str(shared)}, "--platform", "wasm")["wasm"]
    assert listed["status"] == "ok" and listed["version"] == "6.0.5", listed
    assert listed["resolved"] == str(stale / "emcc")
    for tool in env.tools:
        text = (stale / tool).read_text()
        assert "/gone/checkout" not in text and sys.executable in text, text
