"""``prebake init``: a workspace for the compilers this machine has, pinned at what they report,
that plans and builds at once — and never overwrites anything."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

from tests import support


def _reported(argv: list[str]) -> str:
    """The release a compiler's first ``--version`` line ends with (``… 12.2.0``)."""
    line = subprocess.run([*argv, "--version"], capture_output=True, text=True,
                          env=support.tool_env()).stdout.splitlines()[0]
    m = re.search(r"(\d+\.\d+\.\d+)", line)
    assert m, line
    return m.group(1)


def test_init_writes_a_workspace_that_plans_and_builds(tmp_path: Path) -> None:
    ws = tmp_path / "My Kiln SDK"
    proc = support.prebake("init", ws, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["project"] == "my-kiln-sdk"
    names = [p["name"] for p in out["platforms"]]
    assert "linux-x86_64" in names and "wasm" in names  # gcc and Debian's emcc are here

    toml = tomllib.loads((ws / "prebake.toml").read_text())
    assert toml["pins"]["gcc"] == _reported(["g++"])
    assert toml["pins"]["emsdk"] == _reported(["emcc"])
    host = toml["platforms"]["linux-x86_64"]
    assert host["contract"]["extends"].startswith("manylinux_2_")
    host_minor = re.search(r"2\.(\d+)", os.confstr("CS_GNU_LIBC_VERSION") or "")
    assert host_minor, "this test runs on a glibc host"
    assert int(host["contract"]["extends"].split("_")[2]) <= int(host_minor.group(1))
    assert toml["platforms"]["wasm"]["contract"]["extends"] == "emscripten-wasm-eh"
    assert toml["stores"]["local"]["url"] == "file://./releases"
    recipe = (ws / "recipes" / "hello.py").read_text()
    assert '"wasm": "-O2 -fwasm-exceptions"' in recipe and "# {src}" in recipe

    plan = support.prebake("-C", ws, "plan", "--json")
    assert plan.returncode == 0, plan.stderr
    units = {u["id"] for u in json.loads(plan.stdout)["units"]}
    assert {"core/linux-x86_64", "core/wasm"} <= units

    build = support.prebake("-C", ws, "build", "--platform", "linux-x86_64",
                            "--platform", "wasm", "--json")
    assert build.returncode == 0, build.stdout + build.stderr
    shipped = sorted(p.name for p in (ws / "releases").rglob("*.tar.xz"))
    assert shipped == ["my-kiln-sdk-core-0.1.0-linux-x86_64.tar.xz",
                       "my-kiln-sdk-core-0.1.0-wasm.tar.xz"]


def test_init_offers_only_what_answers_and_overwrites_nothing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with gcc but no Emscripten and no mingw
    bin_dir.mkdir()
    for tool in ("gcc", "g++", "ar", "cmake"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    ws = tmp_path / "ws"
    proc = support.prebake("init", ws, "--json", env={"PATH": str(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    names = {p["name"] for p in json.loads(proc.stdout)["platforms"]}
    assert "linux-x86_64" in names
    assert not names & {"wasm", "windows-x86_64"}

    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    again = support.prebake("init", ws)
    assert again.returncode == 2
    assert again.stderr.startswith("prebake: error: ") and "already exists" in again.stderr
    assert {p: p.read_bytes() for p in ws.rglob("*") if p.is_file()} == before

    bad = support.prebake("init", tmp_path / "other", "--name", "sdk-1")
    assert bad.returncode == 2 and "--name" in bad.stderr
    assert not (tmp_path / "other").exists()


def test_a_build_inside_a_git_repository_never_ships_its_commit(tmp_path: Path) -> None:
    """A build that asks git which commit it is (onnxruntime's CMake writes ``git log -1`` into
    its build info) must not find the workspace's own repository above the work folder: that
    shipped the SDK's HEAD as the dependency's commit, and other bytes after every commit."""
    repo = tmp_path / "sdk"
    ws = repo / "deps"
    assert support.prebake("init", ws).returncode == 0
    (ws / "src" / "hello" / "stamp.sh").write_text(
        'git rev-parse HEAD > "$1" 2>/dev/null || echo "no repository" > "$1"\n')
    recipe = ws / "recipes" / "hello.py"
    text = recipe.read_text()
    stamp = ('"cmake -E copy_directory {src}/include {prefix}/include",\n'
             '        "sh {src}/stamp.sh {prefix}/include/hello/built_from.txt",')
    recipe.write_text(text.replace('"cmake -E copy_directory {src}/include {prefix}/include",',
                                   stamp, 1))
    env = {**support.tool_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "sdk"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    build = support.prebake("-C", ws, "build", "--platform", "linux-x86_64")
    assert build.returncode == 0, build.stdout + build.stderr
    (asset,) = (ws / "releases").rglob("*-linux-x86_64.tar.xz")
    with tarfile.open(asset) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("built_from.txt"))
        said = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    assert head not in said and said.strip() == "no repository", said
