"""Offline signatures with OpenSSH (``ssh-keygen -Y sign/verify``), namespace ``prebake``.

What is signed is the ``sha256sum`` text of the asset and, when there is one, its provenance
statement — exactly what ``sha256sum ASSET ASSET.intoto.json`` prints — so swapping the asset
or editing the statement after signing both break the signature, and anyone can check a
signature by hand::

    sha256sum A.tar.xz A.tar.xz.intoto.json | \\
      ssh-keygen -Y verify -f allowed_signers -I ID -n prebake -s A.tar.xz.sig

The verifier first asks ``ssh-keygen -Y find-principals`` which allowed identity owns the
signing key (an unknown key fails there), then verifies as that identity. Keys and passphrases
never reach a message: errors name the key *file* and ssh-keygen's one-line reason, nothing
read from the key.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.errors import CheckFailed, PrebakeError
from prebake.package.naming import sha256_line
from prebake.trust import NAMESPACE

SSH_KEYGEN = "ssh-keygen"
_PROMPT = re.compile(r"^Enter passphrase[^:]*:\s*")  # the prompt ssh-keygen echoes to stderr


class SignatureError(CheckFailed):
    """An asset's signature is missing, from a key not allowed, or does not match (exit 1)."""


@dataclass(frozen=True)
class Verified:
    principal: str
    covered: tuple[str, ...]  # file names the signature covers


def signed_text(files: Sequence[tuple[str, str]]) -> bytes:
    """``sha256sum`` lines for (file name, hex digest), sorted by name (as ``sha256sum A B``)."""
    return "".join(sha256_line(d, n) for n, d in sorted(files)).encode()


def _env() -> dict[str, str]:
    """ssh-keygen needs no more than PATH/HOME; SSH_AUTH_SOCK lets an agent hold the key."""
    keep = ("PATH", "HOME", "SSH_AUTH_SOCK", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["LC_ALL"] = "C"
    return env


def _reason(proc: subprocess.CompletedProcess[bytes], fallback: str) -> str:
    """ssh-keygen's last stderr line (it never prints key material), or ``fallback``."""
    lines = [_PROMPT.sub("", ln).strip() for ln in
             proc.stderr.decode("utf-8", "replace").splitlines()]
    lines = [ln for ln in lines if ln]
    return lines[-1] if lines else fallback


def _keygen(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    """Run ``ssh-keygen ARGS`` (output captured, minimal environment, never ``check``); a
    missing ssh-keygen is a one-line ``PrebakeError``."""
    try:
        return subprocess.run([SSH_KEYGEN, *args], capture_output=True, env=_env(), check=False,
                              **kwargs)
    except FileNotFoundError:
        raise PrebakeError("ssh-keygen not found (install openssh-client)") from None


def sign_bytes(message: bytes, key: Path) -> bytes:
    """An armored SSH signature of ``message`` with the private key file ``key`` (or a public
    key whose private half is in ssh-agent). A passphrase-protected key needs the agent: the
    signer runs without a terminal (CI has none; a prompt would hang), and prebake never takes
    a passphrase itself."""
    key = Path(key)
    if not key.is_file():
        raise PrebakeError(f"{key}: signing key not found")
    with tempfile.TemporaryDirectory(prefix="prebake-sign-") as tmp:
        msg = Path(tmp) / "message"
        msg.write_bytes(message)
        proc = _keygen("-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(key), str(msg),
                       stdin=subprocess.DEVNULL,
                       start_new_session=True)  # no terminal: never prompts, never hangs
        sig = Path(tmp) / "message.sig"
        if proc.returncode != 0 or not sig.is_file():
            err = proc.stderr.lower()
            hint = ("; a passphrase-protected key must be loaded with ssh-add (pass its .pub)"
                    if b"passphrase" in err else "")
            reason = _reason(proc, f"ssh-keygen exit {proc.returncode}")
            raise PrebakeError(f"{key}: cannot sign with this key: {reason}{hint}")
        return sig.read_bytes()


def find_principals(sig: Path, allowed_signers: Path) -> list[str]:
    proc = _keygen("-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers),
                   timeout=60)
    if proc.returncode != 0:
        return []
    return [p for p in proc.stdout.decode("utf-8", "replace").split() if p]


def verify_bytes(message: bytes, signature: bytes, allowed_signers: Path,
                 what: str) -> str:
    """The allowed identity that signed ``message``; raises ``SignatureError`` with one line."""
    allowed_signers = Path(allowed_signers)
    if not allowed_signers.is_file():
        raise PrebakeError(f"{allowed_signers}: allowed-signers file not found")
    with tempfile.TemporaryDirectory(prefix="prebake-verify-") as tmp:
        sig = Path(tmp) / "asset.sig"
        sig.write_bytes(signature)
        principals = find_principals(sig, allowed_signers)
        if not principals:
            raise SignatureError(f"{what}: signed by a key that is not in {allowed_signers}")
        last = ""
        for principal in principals:
            proc = _keygen("-Y", "verify", "-f", str(allowed_signers), "-I", principal,
                           "-n", NAMESPACE, "-s", str(sig), input=message, timeout=60)
            if proc.returncode == 0:
                return principal
            last = _reason(proc, "verification failed")
    raise SignatureError(f"{what}: the signature does not match the asset and its provenance "
                         f"(changed after signing?): {last}")


def sign_asset(asset: Path, key: Path) -> Path:
    """Write ``<asset>.sig`` over the asset's (and its statement's) sha256 lines.

    The asset is hashed here (not taken from its sidecar) and a statement next to it must name
    exactly these bytes: a signature never vouches for a stale provenance file.
    """
    import json

    from prebake import jsonio
    from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX
    from prebake.store.base import file_sha256
    from prebake.trust.provenance import check_statement

    asset = Path(asset)
    if not asset.is_file():
        raise PrebakeError(f"{asset}: no such file")
    digest = file_sha256(asset)
    files = [(asset.name, digest)]
    prov = asset.with_name(asset.name + PROVENANCE_SUFFIX)
    if prov.is_file():
        try:
            data = json.loads(prov.read_bytes())
        except ValueError as exc:
            raise PrebakeError(f"{prov}: not JSON ({exc})") from None
        check_statement(data, asset.name, digest, str(prov))
        files.append((prov.name, file_sha256(prov)))
    out = asset.with_name(asset.name + SIGNATURE_SUFFIX)
    jsonio.atomic_write_bytes(out, sign_bytes(signed_text(files), key))
    return out
