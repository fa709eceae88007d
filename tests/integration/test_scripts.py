"""The README's two long commands, ``scripts/long-leg`` and ``scripts/main-job``, run by the suite
in their ``--dry-run`` form: the set-up checked (``bootstrap --check``), the Python each step
calls (``scripts/steps.py``, the model), every unit's ``prebake build --dry-run``, and each
other command printed after its program and the repository files it names were found. A step
that names a module, a file or a unit that moved fails here, not on the next person's long
leg (the long leg once died at its aarch64 leg on an import of the recipe from where it was
before it became a folder).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests import support

ROOT = support.ROOT
STEPS = ROOT / "scripts" / "steps.py"


def _script(root: Path, name: str, *args: str, env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(root / "scripts" / name), *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def _outputs(root: Path) -> set[str]:
    """What the real runs would write in the checkout (a dry run writes none of it)."""
    folders = (root / "examples/flagship/.prebake", root / "examples/addon/build",
               root / "examples/sdk/.prebake")
    return {str(p) for f in folders if f.exists() for p in f.rglob("*")}


def test_the_long_leg_dry_run_runs_every_cheap_part(tmp_path: Path) -> None:
    before = _outputs(ROOT)
    proc = _script(ROOT, "long-leg", "--dry-run", env={"PREBAKE_CACHE": str(tmp_path)})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "bootstrap: every Debian package and .venv's prebake are installed" in out
    for leg in ("wasm", "linux-aarch64"):  # each unit's own dry run: plan, sources, commands
        assert f"# unit onnxruntime/{leg} -> onnxruntime-1.21.0-{leg}.tar.xz" in out, leg
    assert "build.py" in out and "--build_wasm_static_lib" in out and "--use_xnnpack" in out
    # the Python the steps call, for real: the recipe's pinned CMake, the model
    assert re.search(r"would run: \S+/python -m pip install -q --disable-pip-version-check "
                     r"cmake==3\.31\.6\n", out), out
    assert "== model + numpy reference: " in out
    assert re.search(r"qemu-aarch64 version \d", out), out
    # what needs a built asset is printed, with the repository files it names found
    assert re.search(r"would run: \S+/prebake -C examples/flagship/legacy-addon fetch "
                     r"onnxruntime==1\.21\.0 --platform wasm", out), out
    assert "examples/flagship/consumer/ort_check.c" in out
    assert "== run under qemu-aarch64 (XNNPACK)" in out
    for b in ("chromium", "firefox"):  # the consumer linked for a page, in each browser
        assert re.search(rf"would run: \S+/python -m prebake\.link\.browser --browser {b} .*"
                         rf"\S+/ort_check_web\.js \S+/model\.onnx \S+/reference\.txt\n", out), out
    assert _outputs(ROOT) == before
    assert not any(tmp_path.iterdir()), "a dry run downloads nothing"


def test_the_ffmpeg_legs_dry_run_runs_every_cheap_part(tmp_path: Path) -> None:
    before = _outputs(ROOT)
    proc = _script(ROOT, "long-leg", "--dry-run", "ffmpeg", env={"PREBAKE_CACHE": str(tmp_path)})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for leg in ("wasm", "linux-x86_64", "linux-aarch64", "windows-x86_64"):
        # only FFmpeg's unit of each platform: onnxruntime's legs are their own
        assert f"# unit ffmpeg/{leg} -> ffmpeg-7.1.5-{leg}.tar.xz" in out, leg
        assert f"# unit onnxruntime/{leg} " not in out, leg
        assert re.search(rf"would run: \S+/python examples/flagship/consumer/ffmpeg/check\.py "
                         rf"\S+/ffcheck-{leg}\.txt \S+/ffcheck-{leg}\.flac --version 7\.1\.5",
                         out), out
    # the configure lines name the platform's tools by one word each, never a folder
    assert "--cc=aarch64-linux-gnu-cc" in out and "--x86asmexe=nasm" in out
    assert "== signal (make_wav.py): " in out  # the Python the legs call, for real
    for b in ("chromium", "firefox"):  # the wasm consumer as a page, its numbers checked too
        assert re.search(rf"would run: \S+/python examples/flagship/consumer/ffmpeg/check\.py "
                         rf"\S+/ffcheck-wasm-{b}\.txt \S+/ffcheck-wasm-{b}\.flac --version "
                         rf"7\.1\.5", out), out
    assert re.search(r"would run: cmake -S examples/flagship/consumer/ffmpeg -B \S+ "
                     r"-DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=\S+/examples/flagship/"
                     r"consumer/mingw-w64\.cmake", out), out
    assert _outputs(ROOT) == before


def test_the_dav1d_legs_dry_run_runs_every_cheap_part(tmp_path: Path) -> None:
    before = _outputs(ROOT)
    proc = _script(ROOT, "long-leg", "--dry-run", "dav1d", env={"PREBAKE_CACHE": str(tmp_path)})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for leg in ("wasm", "linux-x86_64", "linux-aarch64", "windows-x86_64"):
        # dav1d's unit of each platform only, fetched as an addon does
        assert f"# unit dav1d/{leg} -> dav1d-1.5.4-{leg}.tar.xz" in out, leg
        assert f"# unit ffmpeg/{leg} " not in out and f"# unit onnxruntime/{leg} " not in out
        assert re.search(rf"would run: \S+/prebake -C examples/flagship fetch dav1d==1\.5\.4 "
                         rf"--platform {leg} ", out), out
    # Meson with the platform's machine file, every leg, never a download
    assert out.count("--wrap-mode=nodownload") == 4, out
    assert re.search(r"meson setup \S+ \S+ --(cross|native)-file=\S+/toolchain/meson-\w+\.ini "
                     r"--wrap-mode=nodownload --prefix=\S+ --libdir=lib --buildtype=release "
                     r"-Denable_tools=false -Denable_tests=false -Denable_examples=false "
                     r"--default-library=static -Denable_asm=false\n", out), out
    assert "NASM=/usr/bin/nasm" in out  # the x86-64 legs' verified nasm
    # our consumer on each leg, held to the reference decoder's numbers, and the MSVC import
    # library linked too
    for leg in ("wasm", "linux-x86_64", "linux-aarch64", "windows-x86_64"):
        assert re.search(rf"would run: \S+/python examples/flagship/consumer/dav1d/check\.py "
                         rf"\S+/pattern\.ivf \S+/av1check-{leg}\.txt --version 1\.5\.4\n",
                         out), leg
    assert re.search(r"would run: x86_64-w64-mingw32-gcc -fuse-ld=lld .*"
                     r"/dav1d-windows-x86_64/lib/dav1d\.lib ", out), out
    assert _outputs(ROOT) == before
    assert not any(tmp_path.iterdir()), "a dry run downloads nothing"


def test_the_main_job_dry_run_runs_every_cheap_part(tmp_path: Path) -> None:
    before = _outputs(ROOT)
    proc = _script(ROOT, "main-job", "--dry-run", env={"PREBAKE_CACHE": str(tmp_path)})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    for unit in ("core/linux-x86_64", "media/wasm", "onnxruntime/linux-x86_64",
                 "onnxruntime/windows-x86_64"):
        assert f"# unit {unit} -> " in out, unit
    assert "layout onnxruntime/capi/onnxruntime.dll -> bin" in out
    assert re.search(r"would run: cmake -S examples/flagship/consumer -B \S+ "
                     r"-DCMAKE_TOOLCHAIN_FILE=\S+/examples/flagship/consumer/mingw-w64\.cmake",
                     out), out
    assert re.search(r"would run: \S+/python -m prebake\.link\.wine --prefix \S+/wine "
                     r"\S+/ort_check\.exe \S+/model\.onnx \S+/reference\.txt\n", out), out
    # the addon's web build, run as a page in both browsers
    assert re.search(r"would run: env NODE_PATH=/usr/share/nodejs emcmake cmake -S examples/addon "
                     r"-B \S+/wasm/build -DKILN_PLATFORM=wasm ", out), out
    assert re.search(r"would run: \S+/python -m prebake\.link\.browser --json \S+ "
                     r"\S+/wasm/build/denoise\.js\n", out), out
    assert _outputs(ROOT) == before


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The scripts and examples in a folder of their own, run with this checkout's .venv."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", root / "scripts")
    shutil.copytree(ROOT / "examples", root / "examples", ignore=shutil.ignore_patterns(
        ".prebake", "releases", "build"))
    (root / ".venv").symlink_to(ROOT / ".venv")
    return root


def test_a_step_naming_a_file_that_moved_fails_the_dry_run(checkout: Path) -> None:
    (checkout / "examples/flagship/consumer/ort_check.c").unlink()
    proc = _script(checkout, "long-leg", "--dry-run", "linux-aarch64")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("names examples/flagship/consumer/ort_check.c, which does not exist"
            in proc.stderr), proc.stderr


def test_a_step_naming_a_host_tool_the_recipe_no_longer_pins_fails(checkout: Path) -> None:
    script = checkout / "scripts" / "long-leg"
    script.write_text(script.read_text().replace('host-tool "$WS" onnxruntime cmake',
                                                 'host-tool "$WS" onnxruntime ninja'))
    proc = _script(checkout, "long-leg", "--dry-run", "linux-aarch64")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("scripts/steps.py host-tool: recipe onnxruntime pins no host tool ninja "
            "(it pins cmake, protoc)") in proc.stderr


def test_steps_read_what_prebake_resolves(tmp_path: Path) -> None:
    def steps(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(STEPS), *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, "PREBAKE_TOOLCHAINS": str(tmp_path)})

    assert steps("host-tool", "examples/flagship", "onnxruntime", "protoc").stdout == (
        "protoc==3.21.12\n")
    assert steps("host-tool", "examples/flagship", "ffmpeg", "nasm").stdout == "nasm==2.16\n"
    missing = steps("host-tool", "examples/flagship", "opencv", "nasm")
    assert missing.returncode == 2 and missing.stderr == (
        "scripts/steps.py host-tool: examples/flagship: no recipe opencv (it has "
        "dav1d, ffmpeg, onnxruntime)\n")
    # an environment that is not installed (none is, in an empty toolchains folder): the
    # reason prebake gives, in one line, never a folder of a compiler that is not there
    absent = steps("cc-folder", "examples/flagship", "wasm")
    assert (absent.returncode, absent.stdout) == (2, ""), absent
    assert absent.stderr == (
        "scripts/steps.py cc-folder: platform wasm: toolchain environment "
        "debian-sid-emscripten is not installed: run `prebake toolchain install --platform "
        "wasm`\n"), absent.stderr
