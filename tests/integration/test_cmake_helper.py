"""The CMake helper with a real CMake project: ``prebake_fetch`` at configure time fetches a
gcc-built static library from a local file store, ``find_package(demo CONFIG)`` finds it, the
consumer links and runs; a tampered store stops the configure with prebake's reason."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prebake.store import open_store
from tests.servers.assets import demo_prefix, make_asset

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

CONSUMER = """\
cmake_minimum_required(VERSION 3.16)
project(consumer C)
list(APPEND CMAKE_MODULE_PATH "${PREBAKE_MODULE_DIR}")
include(Prebake)
prebake_fetch(demo 1.0.0 linux-x86_64 STORE "${DEMO_STORE}")
find_package(demo 1.0 CONFIG REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE demo::demo)
"""
MAIN_C = '#include <stdio.h>\n#include "demo.h"\n' \
         'int main(void) { printf("answer %d\\n", demo_answer()); return 0; }\n'


def _prebake_exe() -> str:
    exe = Path(sys.executable).with_name("prebake")
    assert exe.exists(), "prebake's console script should sit next to the test interpreter"
    return str(exe)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env["PREBAKE_CACHE"] = str(tmp / "cache")
    return env


def _configure(src: Path, build: Path, store_url: str,
               tmp: Path) -> subprocess.CompletedProcess[str]:
    module_dir = subprocess.run([_prebake_exe(), "cmake-module-path"], capture_output=True,
                                text=True, check=True).stdout.strip()
    assert (Path(module_dir) / "Prebake.cmake").is_file()
    return subprocess.run(
        ["cmake", "-S", str(src), "-B", str(build), f"-DPREBAKE_MODULE_DIR={module_dir}",
         f"-DPREBAKE_EXECUTABLE={_prebake_exe()}", f"-DDEMO_STORE={store_url}"],
        capture_output=True, text=True, env=_env(tmp))


@pytest.fixture
def consumer(tmp_path: Path) -> tuple[Path, str]:
    prefix = demo_prefix()
    asset = make_asset(tmp_path / "out", "demo", "1.0.0", "linux-x86_64", prefix=prefix)
    store_url = (tmp_path / "store").as_uri()
    open_store(store_url).publish(asset)
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER)
    (src / "main.c").write_text(MAIN_C)
    return src, store_url


def test_consumer_fetches_finds_links_and_runs(consumer: tuple[Path, str],
                                                tmp_path: Path) -> None:
    src, store_url = consumer
    build = tmp_path / "build"
    conf = _configure(src, build, store_url, tmp_path)
    assert conf.returncode == 0, conf.stdout + conf.stderr
    assert "prebake: demo-1.0.0-linux-x86_64.tar.xz" in conf.stdout
    assert (build / "_prebake/demo-linux-x86_64/lib/libdemo.a").is_file()
    lock = (src / "prebake.lock").read_text()
    assert '"name": "demo"' in lock and '"version": "1.0.0"' in lock
    done = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True,
                          env=_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    run = subprocess.run([str(build / "app")], capture_output=True, text=True, check=True)
    assert run.stdout == "answer 42\n"
    # reconfiguring with the lock reproduces the locked bytes (from the verified cache)
    again = _configure(src, build, store_url, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "from cache" in again.stdout


def test_tampered_store_stops_the_configure(consumer: tuple[Path, str], tmp_path: Path) -> None:
    src, store_url = consumer
    stored = tmp_path / "store/continuous/demo-1.0.0-linux-x86_64.tar.xz"
    data = bytearray(stored.read_bytes())
    data[-40] ^= 0x01
    stored.write_bytes(bytes(data))
    conf = _configure(src, tmp_path / "build", store_url, tmp_path)
    assert conf.returncode != 0
    assert "prebake_fetch(demo 1.0.0 linux-x86_64) failed" in conf.stderr
    assert "does not match" in conf.stderr
    assert not (tmp_path / "build/_prebake/demo-linux-x86_64").exists()
