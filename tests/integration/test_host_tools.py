"""Host tools in a cross build, with Debian's real ``protoc`` (protobuf-compiler 3.21.12, the
protobuf onnxruntime 1.21 bundles): a recipe for linux-aarch64 names ``protoc``, prebake
resolves and verifies it on the build machine, passes its absolute path as
``{host_tools[protoc]}``, hashes what it reported, and refuses a wrong version or a ``protoc``
built for the target (an aarch64 binary first on ``PATH``) with one line, publishing nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import support

pytestmark = pytest.mark.skipif(shutil.which("protoc") is None,
                                reason="needs Debian's protobuf-compiler")

PROTO = 'syntax = "proto3";\npackage demo;\nmessage Ping { int32 id = 1; }\n'
RECIPE = '''\
from prebake.recipes import Build, HostTool, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="msg",
    pin="demo",
    sources=(LocalSource("msg-src"),),
    host_tools=(HostTool("protoc", "VERSION", version_pattern=r"libprotoc (\\S+)",
                         package="Debian's protobuf-compiler"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {prefix}/lib {prefix}/include {prefix}/share/msg",
        # the code generator runs here, on the build machine
        "{host_tools[protoc]} -I{src} --descriptor_set_out={prefix}/share/msg/ping.desc"
        " {src}/ping.proto",
        "{cc} -c {src}/msg.c -o msg.o",
        "{ar} rcs {prefix}/lib/libmsg.a msg.o",
        "cmake -E copy {src}/msg.h {prefix}/include"))},
    outputs=Outputs(libs={"*": ("lib/libmsg.a",)}, headers=("include/msg.h",)),
    kind={"*": "static"},
)
'''
WORKSPACE = support.workspace_text("host-tools")


def _workspace(tmp: Path, version: str = "3.21.12") -> Path:
    ws = tmp / "ws"
    src = ws / "recipes" / "msg-src"
    src.mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE)
    (ws / "recipes" / "msg.py").write_text(RECIPE.replace("VERSION", version))
    (src / "ping.proto").write_text(PROTO)
    (src / "msg.h").write_text("int msg_id(void);\n")
    (src / "msg.c").write_text('#include "msg.h"\nint msg_id(void) { return 7; }\n')
    return ws


def _env(path_first: Path | None = None) -> dict[str, str]:
    env = support.tool_env()
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env['PATH']}"
    return env


def test_the_host_protoc_is_verified_hashed_and_run_here(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    env = _env()
    plan = support.prebake("-C", ws, "plan", "--explain", "msg/linux-aarch64", env=env)
    assert plan.returncode == 0, plan.stderr
    assert "host-tool:protoc" in plan.stdout and "libprotoc 3.21.12" in plan.stdout
    dry = support.prebake("-C", ws, "build", "--dry-run", "--json", env=env)
    assert dry.returncode == 0, dry.stderr
    steps = json.loads(dry.stdout)["units"][0]["steps"][0]["commands"]
    protoc = str(Path(shutil.which("protoc") or "").resolve())
    assert steps[1][0] == protoc  # an absolute host path, not a name for the target's PATH
    built = support.prebake("-C", ws, "build", "--json", env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    log = (ws / ".prebake" / "logs" / "msg--linux-aarch64.log").read_text()
    assert f"# host tool protoc: {protoc} reports 'libprotoc 3.21.12' (needs 3.21.12)" in log
    desc = ws / ".prebake" / "work" / "linux-aarch64" / "deps-msg" / "prefix" / "share" / \
        "msg" / "ping.desc"
    assert b"demo.Ping" in desc.read_bytes() or b"Ping" in desc.read_bytes()


def test_a_protoc_of_another_version_is_one_line_and_nothing_is_published(tmp_path: Path
                                                                         ) -> None:
    ws = _workspace(tmp_path, version="3.20")
    proc = support.prebake("-C", ws, "build", env=_env())
    assert proc.returncode == 1
    lines = [x for x in (proc.stdout + proc.stderr).splitlines()
             if "host tool protoc: the recipe needs 3.20" in x]
    assert lines, proc.stdout + proc.stderr
    assert "reports 'libprotoc 3.21.12'" in lines[-1] and "protobuf-compiler" in lines[-1]
    assert not list((ws / "releases").rglob("*.tar.xz")) if (ws / "releases").exists() else True
    assert not (ws / ".prebake" / "work" / "linux-aarch64" / "deps-msg" / "src").exists()


def test_a_protoc_built_for_the_target_is_refused_not_run(tmp_path: Path) -> None:
    """An aarch64 ``protoc`` first on PATH (what a cross build of protobuf makes) is read by
    the inspector and refused: it would not run here."""
    fake = tmp_path / "target-bin"
    fake.mkdir()
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { puts("libprotoc '
                                  '3.21.12"); return 0; }\n')
    import sys

    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-gnu.2.28",
                    str(tmp_path / "p.c"), "-o", str(fake / "protoc")], check=True,
                   env=support.tool_env(), cwd="/", capture_output=True)
    (fake / "protoc").chmod(0o755)
    ws = _workspace(tmp_path)
    proc = support.prebake("-C", ws, "build", env=_env(fake))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert "host tool protoc" in out and "is a binary for aarch64; it must run on this " \
        "x86_64 machine, not the target" in out
    assert not (ws / "releases").exists() or not list((ws / "releases").rglob("*.tar.xz"))
