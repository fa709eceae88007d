"""prebake as users install it: ``python -m build`` from the committed files, the wheel in a
fresh venv, and prebake run from there.

The rest of the suite runs from an editable install, which reads every file from the checkout:
a data file the wheel leaves out (a recipe's ``.patch``) breaks only an installed prebake. Here
the sdist is built from exactly the tracked files, the wheel from that sdist (``build``'s
default), and the wheel's prebake — outside the checkout, nothing of ``src/`` importable —
rewrites the reference (every builtin recipe, contract preset, description, environment and CI
table), plans the example SDK, makes a workspace from ``prebake init``'s templates, and runs
the flagship's repackage leg end to end (Microsoft's wheel from prebake's own download cache).
Downloads go through pip's cache under the suite's cache folder; warm, this takes about a
minute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests import support

ROOT = support.ROOT
# tracked under src/prebake but not needed by an installed prebake (the C source is compiled
# into the extension; the data README documents how the table was generated)
NOT_IN_WHEEL = {"prebake/inspect/data/README.md"}


def _tracked() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                         check=True).stdout.decode()
    return [p for p in out.split("\0") if p]


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env["PIP_CACHE_DIR"] = str(support.CACHE / "pip")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PREBAKE_CACHE"] = str(support.CACHE / "prebake-cache")  # the flagship's downloads
    env.update(extra or {})
    return env


def _run(argv: list[str | Path], cwd: Path, timeout: float = 600,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=_env(env), capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def build_wheel(tmp: Path) -> Path:
    """sdist and wheel (``python -m build``) of the tracked files, into ``tmp/dist``."""
    src = tmp / "src"
    for rel in _tracked():
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_file():
            shutil.copy2(ROOT / rel, dest)
    _run([sys.executable, "-m", "build", "--outdir", tmp / "dist", src], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("prebake-*.whl")
    assert len(list((tmp / "dist").glob("prebake-*.tar.gz"))) == 1
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, venv): the wheel built from the tracked files, installed in a new venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp)
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp)
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel], cwd=tmp)
    return wheel, venv


def test_the_wheel_holds_every_file_under_src(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    tracked = {p.removeprefix("src/") for p in _tracked() if p.startswith("src/prebake/")}
    missing = sorted(tracked - names - NOT_IN_WHEEL)
    assert not missing, f"the wheel lacks {missing}"
    assert "prebake/recipes/builtin/onnxruntime/eigen-3.4.0-nan-propagating-min-max.patch" \
        in names


def test_prebake_runs_from_the_wheel(installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, venv = installed
    py, prebake = venv / "bin" / "python", venv / "bin" / "prebake"
    where = _run([py, "-c", "import prebake; print(prebake.__file__)"], cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where  # the wheel's prebake, not the checkout's
    # the reference is generated from every data table the package ships: the same bytes
    reference = _run([py, "-c", "import sys; from prebake.reference import render; "
                      "sys.stdout.write(render())"], cwd=tmp_path).stdout
    assert reference == (ROOT / "docs" / "reference.md").read_text()
    listed = _run([py, "-c", "from prebake.recipes import builtin_names, find_recipe\n"
                   "from prebake.recipes import load_recipe_file\n"
                   "from prebake.contract.presets import preset_names, load_preset\n"
                   "from prebake.toolchain.environment import environments\n"
                   "from prebake.model.ci_defaults import ci_defaults\n"
                   "names = builtin_names()\n"
                   "for n in names: load_recipe_file(find_recipe(n))\n"
                   "for n in preset_names(): load_preset(n)\n"
                   "print(len(names), len(preset_names()), len(environments()),"
                   " len(ci_defaults().actions))"], cwd=tmp_path).stdout.split()
    assert all(int(n) > 0 for n in listed), listed
    module = _run([prebake, "cmake-module-path"], cwd=tmp_path).stdout.strip()
    assert (Path(module) / "Prebake.cmake").is_file()
    # prebake init's templates, then a plan of what they wrote
    _run([prebake, "init", tmp_path / "fresh", "--name", "fresh"], cwd=tmp_path)
    _run([prebake, "-C", tmp_path / "fresh", "plan"], cwd=tmp_path)
    # the example SDK plans every recipe, onnxruntime's patched sources included
    sdk = tmp_path / "sdk"
    shutil.copytree(ROOT / "examples" / "sdk", sdk,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    plan = _run([prebake, "-C", sdk, "plan"], cwd=tmp_path).stdout
    assert "onnxruntime" in plan
    # the flagship's repackage leg: download, guards, package, publish; then the report's page
    ws = tmp_path / "flagship"
    shutil.copytree(ROOT / "examples" / "flagship", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    # its linux-x86_64 compiler is the zig it pins, which a user installs beside prebake (the
    # toolchain check runs it even for a repackage leg)
    zig = tomllib.loads((ws / "prebake.toml").read_text())["pins"]["zig"]
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", f"ziglang=={zig}"], cwd=tmp_path)
    _run([prebake, "-C", ws, "build", "--unit", "onnxruntime/linux-x86_64"], cwd=tmp_path,
         timeout=1200, env={"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    assert list((ws / "releases").rglob("onnxruntime-1.21.0-linux-x86_64.tar.xz"))
    _run([prebake, "-C", ws, "report", "--out", tmp_path / "report"], cwd=tmp_path)
    assert "onnxruntime" in (tmp_path / "report" / "index.html").read_text()
