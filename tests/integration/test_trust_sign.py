"""``ssh-keygen -Y`` signing and verification on their own: real keys made in the test, the
prebake namespace, unusable keys and stale provenance refused with one line and no secrets."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from prebake.errors import CheckFailed, PrebakeError
from prebake.trust.sign import (
    SignatureError,
    sign_asset,
    sign_bytes,
    signed_text,
    verify_bytes,
)

PASSPHRASE = "correct horse battery staple"


def keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "t",
                    "-f", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("keys")
    out = {"ok": keygen(d / "ok"), "other": keygen(d / "other"),
           "locked": keygen(d / "locked", PASSPHRASE)}
    allowed = d / "allowed_signers"
    allowed.write_text(f"ci@example.org {(d / 'ok.pub').read_text()}")
    out["allowed"] = allowed
    return out


def test_sign_and_verify_round_trip(keys: dict[str, Path]) -> None:
    msg = signed_text([("b.tar.xz.intoto.json", "2" * 64), ("b.tar.xz", "1" * 64)])
    assert msg.decode() == f"{'1' * 64}  b.tar.xz\n{'2' * 64}  b.tar.xz.intoto.json\n"
    sig = sign_bytes(msg, keys["ok"])
    assert sig.startswith(b"-----BEGIN SSH SIGNATURE-----")
    assert verify_bytes(msg, sig, keys["allowed"], "b") == "ci@example.org"
    with pytest.raises(SignatureError, match="does not match"):
        verify_bytes(msg.replace(b"1", b"3"), sig, keys["allowed"], "b")
    with pytest.raises(SignatureError, match="not in"):
        verify_bytes(msg, sign_bytes(msg, keys["other"]), keys["allowed"], "b")
    assert issubclass(SignatureError, CheckFailed)


def test_a_signature_for_another_namespace_is_refused(keys: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """A git commit signature (namespace ``git``) by an allowed key never verifies an asset."""
    msg = tmp_path / "m"
    msg.write_bytes(b"x\n")
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", str(keys["ok"]),
                    str(msg)], check=True, stdin=subprocess.DEVNULL)
    with pytest.raises(SignatureError, match="does not match"):
        verify_bytes(b"x\n", (tmp_path / "m.sig").read_bytes(), keys["allowed"], "m")


def test_passphrase_key_fails_fast_in_one_line_without_secrets(keys: dict[str, Path]) -> None:
    with pytest.raises(PrebakeError) as info:
        sign_bytes(b"x\n", keys["locked"])
    msg = str(info.value)
    assert "ssh-add" in msg and "\n" not in msg and "Enter passphrase" not in msg
    assert PASSPHRASE not in msg
    private = keys["locked"].read_text().splitlines()
    assert not any(line in msg for line in private[1:-1])


def test_missing_key_and_missing_allowed_signers_are_usage_errors(keys: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    with pytest.raises(PrebakeError, match="signing key not found"):
        sign_bytes(b"x", tmp_path / "nope")
    sig = sign_bytes(b"x", keys["ok"])
    with pytest.raises(PrebakeError, match="allowed-signers file not found") as info:
        verify_bytes(b"x", sig, tmp_path / "nope", "x")
    assert not isinstance(info.value, CheckFailed)


def test_stale_provenance_is_never_signed(keys: dict[str, Path], tmp_path: Path) -> None:
    asset = tmp_path / "a-1.0.0-linux-x86_64.tar.xz"
    asset.write_bytes(b"not really xz")
    stmt = {"_type": "https://in-toto.io/Statement/v1",
            "predicateType": "https://slsa.dev/provenance/v1",
            "subject": [{"name": asset.name, "digest": {"sha256": "0" * 64}}],
            "predicate": {}}
    (tmp_path / f"{asset.name}.intoto.json").write_text(json.dumps(stmt))
    with pytest.raises(PrebakeError, match="subject is not"):
        sign_asset(asset, keys["ok"])
    assert not (tmp_path / f"{asset.name}.sig").exists()


def test_passphrase_key_signs_through_ssh_agent(keys: dict[str, Path], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented way for a protected key: ssh-add it, pass the ``.pub``; prebake never
    sees the passphrase (here it comes from an askpass script, as a desktop agent would)."""
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        import time

        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        askpass = tmp_path / "askpass"
        askpass.write_text(f"#!/bin/sh\necho '{PASSPHRASE}'\n")
        askpass.chmod(0o700)
        subprocess.run(["ssh-add", "-q", str(keys["locked"])], check=True, timeout=30,
                       stdin=subprocess.DEVNULL, start_new_session=True,
                       env={"SSH_AUTH_SOCK": str(sock), "SSH_ASKPASS": str(askpass),
                            "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0",
                            "PATH": "/usr/bin:/bin"})
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        pub = keys["locked"].with_name("locked.pub")
        sig = sign_bytes(b"payload\n", pub)
        allowed = tmp_path / "allowed"
        allowed.write_text(f"locked@example.org {pub.read_text()}")
        assert verify_bytes(b"payload\n", sig, allowed, "payload") == "locked@example.org"
    finally:
        agent.terminate()
        agent.wait(timeout=10)
