"""Trust settings fail closed (``[trust]`` is one setting, read once): a setting that cannot be
read stops every fetch with exit 2 naming the file — never "no trust configured".

The store holds an *unsigned* asset: any path that silently drops the setting installs it
(today's main: exit 0 for every broken ``prebake.toml`` below when ``--contract`` is given).
Paths into fetch: the CLI with and without ``--contract``, and CMake's
``prebake_fetch(… CONTRACT …)``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support
from tests.servers.assets import make_asset

PLATFORM = "linux-x86_64"
PROJECT = '[project]\nname = "addon"\nversion = "0.1.0"\n\n'
GOOD_TRUST = '[trust]\nallowed_signers = "allowed_signers"\n'

BROKEN_TOML: dict[str, bytes] = {
    "syntax error": (PROJECT + GOOD_TRUST + "oops = \n").encode(),
    "typo'd key": (PROJECT + '[trust]\nallowed_signer = "allowed_signers"\n').encode(),
    "empty string": (PROJECT + '[trust]\nallowed_signers = ""\n').encode(),
    "blank string": (PROJECT + '[trust]\nallowed_signers = "   "\n').encode(),
    "a list": (PROJECT + '[trust]\nallowed_signers = ["allowed_signers"]\n').encode(),
    "a table": (PROJECT + '[trust.allowed_signers]\nfile = "allowed_signers"\n').encode(),
    "invalid UTF-8": (PROJECT + GOOD_TRUST + '# caf\xe9\n').encode("latin-1"),
    "trust not a table": (PROJECT.replace("\n\n", '\ntrust = "allowed_signers"\n\n')).encode(),
}


def _keys(base: Path) -> tuple[Path, str]:
    key = base / "keys" / "release"
    key.parent.mkdir(parents=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "release",
                    "-f", str(key)], check=True)
    return key, key.with_suffix(".pub").read_text().strip()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("trustsettings")
    store = base / "store"
    make_asset(store / "v1.0.0", "demo", "1.0.0", PLATFORM, {"lib/libdemo.a": b"!<arch>\n"})
    key, pub = _keys(base)
    allowed = base / "allowed_signers"
    allowed.write_text(f'release@example.org namespaces="prebake" {pub}\n')
    contract = base / "contract.toml"
    contract.write_text('lto = "none"\n')
    return {"store": store, "key": key, "allowed": allowed, "contract": contract,
            "base": base}


def _consumer(tmp_path: Path, world: dict[str, Path], toml: bytes,
              allowed: bytes | None = None) -> Path:
    c = tmp_path / "addon"
    c.mkdir()
    (c / "prebake.toml").write_bytes(toml)
    if allowed is None:
        shutil.copy(world["allowed"], c / "allowed_signers")
    else:
        (c / "allowed_signers").write_bytes(allowed)
    return c


def _fetch(consumer: Path, world: dict[str, Path], *extra: str
           ) -> subprocess.CompletedProcess[str]:
    env = support.tool_env({"PREBAKE_CACHE": str(consumer / "cache")})
    return subprocess.run(
        [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform", PLATFORM,
         "--store", world["store"].as_uri(), *extra],
        cwd=consumer, env=env, capture_output=True, text=True, timeout=120)


def _refused(proc: subprocess.CompletedProcess[str], consumer: Path, names: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert names in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert not (consumer / "prebake_deps").exists(), "nothing may be installed"
    assert not (consumer / "prebake.lock").exists()


@pytest.mark.parametrize("with_contract", [True, False], ids=["--contract", "no-contract"])
@pytest.mark.parametrize("case", list(BROKEN_TOML))
def test_unreadable_trust_table_stops_fetch(tmp_path: Path, world: dict[str, Path], case: str,
                                            with_contract: bool) -> None:
    consumer = _consumer(tmp_path, world, BROKEN_TOML[case])
    extra = ("--contract", str(world["contract"])) if with_contract else ()
    _refused(_fetch(consumer, world, *extra), consumer, "prebake.toml")


BROKEN_SIGNERS: dict[str, bytes] = {
    "garbage": b"this is not an allowed signers file\n",
    "empty": b"",
    "only comments": b"# nobody\n\n",
    "binary": bytes(range(256)) * 8,
    "a key without principal": b"ssh-ed25519\n",
}


@pytest.mark.parametrize("case", list(BROKEN_SIGNERS))
def test_unreadable_allowed_signers_named_by_the_workspace(tmp_path: Path,
                                                           world: dict[str, Path],
                                                           case: str) -> None:
    consumer = _consumer(tmp_path, world, (PROJECT + GOOD_TRUST).encode(),
                         BROKEN_SIGNERS[case])
    _refused(_fetch(consumer, world, "--contract", str(world["contract"])), consumer,
             "allowed_signers")


@pytest.mark.parametrize("special", ["/dev/null", "/dev/zero", "fifo", "folder"])
def test_special_files_as_allowed_signers_are_refused(tmp_path: Path, world: dict[str, Path],
                                                      special: str) -> None:
    consumer = _consumer(tmp_path, world, PROJECT.encode())
    path = special
    if special == "fifo":
        path = str(tmp_path / "signers.fifo")
        os.mkfifo(path)
    elif special == "folder":
        path = str(tmp_path)
    proc = _fetch(consumer, world, "--allowed-signers", path)
    _refused(proc, consumer, path)
    assert "not found" not in proc.stderr  # /dev/null exists: say what it really is
    assert "not a regular file" in proc.stderr or "folder" in proc.stderr


def test_good_trust_table_still_refuses_unsigned_and_installs_signed(
        tmp_path: Path, world: dict[str, Path]) -> None:
    consumer = _consumer(tmp_path, world, (PROJECT + GOOD_TRUST).encode())
    proc = _fetch(consumer, world, "--contract", str(world["contract"]))
    assert proc.returncode == 1 and "not signed" in proc.stderr, proc.stderr
    signed = tmp_path / "signed"
    shutil.copytree(world["store"], signed)
    from prebake.trust.sign import sign_asset

    sign_asset(signed / "v1.0.0" / "demo-1.0.0-linux-x86_64.tar.xz", world["key"])
    env = support.tool_env({"PREBAKE_CACHE": str(consumer / "cache")})
    proc = subprocess.run(
        [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform", PLATFORM,
         "--store", signed.as_uri(), "--contract", str(world["contract"])],
        cwd=consumer, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (consumer / "prebake_deps" / f"demo-{PLATFORM}" / "lib" / "libdemo.a").is_file()


def test_workspace_trust_is_one_typed_setting(tmp_path: Path) -> None:
    from prebake.intake import load_workspace

    (tmp_path / "prebake.toml").write_text(PROJECT + GOOD_TRUST)
    ws = load_workspace(tmp_path)
    assert ws.trust.allowed_signers == tmp_path.resolve() / "allowed_signers"
    (tmp_path / "prebake.toml").write_text(PROJECT)
    assert load_workspace(tmp_path).trust.allowed_signers is None


CMAKE_CONSUMER = """\
cmake_minimum_required(VERSION 3.16)
project(consumer C)
list(APPEND CMAKE_MODULE_PATH "${PREBAKE_MODULE_DIR}")
include(Prebake)
prebake_fetch(demo 1.0.0 linux-x86_64 STORE "${DEMO_STORE}" CONTRACT "${DEMO_CONTRACT}")
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize("case", ["syntax error", "typo'd key", "invalid UTF-8"])
def test_cmake_prebake_fetch_with_contract_stops_on_unreadable_trust(
        tmp_path: Path, world: dict[str, Path], case: str) -> None:
    consumer = _consumer(tmp_path, world, BROKEN_TOML[case])
    (consumer / "CMakeLists.txt").write_text(CMAKE_CONSUMER)
    exe = str(Path(sys.executable).with_name("prebake"))
    module_dir = subprocess.run([exe, "cmake-module-path"], capture_output=True, text=True,
                                check=True).stdout.strip()
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "PYTHONPATH") if k in os.environ}
    env["PREBAKE_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run(
        ["cmake", "-S", str(consumer), "-B", str(tmp_path / "build"),
         f"-DPREBAKE_MODULE_DIR={module_dir}", f"-DPREBAKE_EXECUTABLE={exe}",
         f"-DDEMO_STORE={world['store'].as_uri()}", f"-DDEMO_CONTRACT={world['contract']}"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "prebake.toml" in proc.stderr and "exit 2" in proc.stderr, proc.stderr
    assert not (consumer / "prebake_deps").exists()
