"""Messages say what is really wrong: signatures (garbage, empty, expired key), a hard link's
member, long paths, network failures without Python exception names or repeated prefixes,
corrupt binaries without ``ValueError:``."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import support
from tests.servers.assets import make_asset
from tests.servers.static_http import closed_port_url

PLATFORM = "linux-x86_64"
ASSET = f"demo-1.0.0-{PLATFORM}.tar.xz"


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)], cwd=cwd,
                          env=support.tool_env({"PREBAKE_CACHE": str(cwd / "cache"),
                                                "PREBAKE_RETRY_BASE": "0.01"}),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("sig")
    store = base / "store"
    asset = make_asset(store / "v1.0.0", "demo", "1.0.0", PLATFORM,
                       {"lib/libdemo.a": b"!<arch>\n"})
    key = base / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    from prebake.trust.sign import sign_asset

    sign_asset(asset, key)
    return store, asset, key.with_suffix(".pub").read_text().strip()


@pytest.mark.parametrize("case", ["garbage", "empty", "expired", "other key"])
def test_signature_failures_say_what_is_wrong(tmp_path: Path, signed: tuple[Path, Path, str],
                                              case: str) -> None:
    import shutil

    store = tmp_path / "store"
    shutil.copytree(signed[0], store)
    sig = store / "v1.0.0" / (ASSET + ".sig")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'rel@example.org namespaces="prebake" {signed[2]}\n')
    expect = {"garbage": "not an SSH signature", "empty": "signature file is empty",
              "expired": "not valid now (key has expired", "other key": "not in"}[case]
    if case == "garbage":
        sig.write_bytes(b"\x00\x01 definitely not armored \xff" * 10)
    elif case == "empty":
        sig.write_bytes(b"")
    elif case == "expired":
        allowed.write_text(f'rel@example.org namespaces="prebake",valid-before="20200101" '
                           f'{signed[2]}\n')
    else:
        other = tmp_path / "other"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                       check=True)
        allowed.write_text(f"rel@example.org {other.with_suffix('.pub').read_text()}")
    proc = _run("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", store.as_uri(),
                "--release", "v1.0.0", "--into", tmp_path / "into", "--allowed-signers",
                allowed, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert expect in proc.stderr, proc.stderr
    if case != "other key":
        assert "signed by a key that is not in" not in proc.stderr
    assert not (tmp_path / "into").exists()


def test_hard_link_rejection_names_the_member(tmp_path: Path) -> None:
    from prebake.extract import UnsafeArchive, safe_extract

    archive = tmp_path / "h.tar"
    with tarfile.open(archive, "w") as tf:
        ti = tarfile.TarInfo("lib/libevil.a")
        ti.type = tarfile.LNKTYPE
        ti.linkname = "../../etc/passwd"
        tf.addfile(ti)
    with pytest.raises(UnsafeArchive) as info:
        safe_extract(archive, tmp_path / "out")
    assert info.value.member == "lib/libevil.a"
    assert "hardlink to '../../etc/passwd'" in str(info.value)


def test_a_4kb_path_is_shortened_in_the_message(tmp_path: Path) -> None:
    into = tmp_path / ("x" * 4096) / "into"
    proc = _run("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store",
                (tmp_path / "store").as_uri(), "--into", into, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and len(proc.stderr) < 400, len(proc.stderr)


def test_network_failures_name_no_exception_class_and_no_prefix_twice(tmp_path: Path) -> None:
    url = closed_port_url()
    proc = _run("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", url,
                "--release", "v1.0.0", "--into", tmp_path / "into", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "ConnectError" not in proc.stderr and "cannot connect" in proc.stderr, proc.stderr
    assert proc.stderr.count(f"{url}: {ASSET}.sha256") == 1, proc.stderr


def test_corrupt_wasm_says_what_is_corrupt_not_which_exception(tmp_path: Path) -> None:
    wasm = tmp_path / "bad.wasm"
    wasm.write_bytes(b"\0asm\x01\0\0\0" + bytes([110, 1, 0]))
    proc = _run("inspect", wasm, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ValueError" not in proc.stderr and "unknown section id 110" in proc.stderr, \
        proc.stderr


def test_s3_errors_do_not_repeat_exception_names() -> None:
    """The S3 error mapping says what failed in words (unit level: a real botocore error)."""
    from botocore.exceptions import EndpointConnectionError

    from prebake.store.s3 import S3Store

    st = S3Store("s3://b/p", "b", "p", endpoint="http://127.0.0.1:9")
    msg = str(st._err(EndpointConnectionError(endpoint_url="http://127.0.0.1:9"), "head x"))
    assert msg.startswith("s3://b/p: head x: cannot reach the endpoint http://127.0.0.1:9")
    assert "EndpointConnectionError" not in msg


def test_github_errors_say_the_store_once(tmp_path: Path) -> None:
    """A GitHub store whose API does not answer: one line naming ``github://OWNER/REPO`` once,
    what failed in words, no httpx class name."""
    api = closed_port_url()
    proc = subprocess.run(
        [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform", PLATFORM,
         "--store", "github://kiln-sdk/kiln-deps", "--release", "v1.0.0",
         "--into", str(tmp_path / "into")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=support.tool_env({"PREBAKE_CACHE": str(tmp_path / "cache"),
                              "PREBAKE_RETRY_BASE": "0.01", "PREBAKE_GITHUB_API": api}))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.count("github://kiln-sdk/kiln-deps") == 1, proc.stderr
    assert "cannot connect" in proc.stderr and "ConnectError" not in proc.stderr, proc.stderr
    assert not (tmp_path / "into").exists()
