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

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake import jsonio
from prebake.bounded import read_bounded
from prebake.digest import file_sha256
from prebake.errors import CheckFailed, PrebakeError
from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX, sha256_line
from prebake.trust import NAMESPACE
from prebake.trust.statement import check_statement

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


MAX_ALLOWED_SIGNERS = 1 << 20  # a key list, not a data set
MAX_SIGNATURE = 64 * 1024  # an armored ssh signature is well under 1 KB
_KEY_TYPE = re.compile(r"^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-\S+)"
                       r"(-cert-v01@openssh\.com)?$")
_ARMOR = (b"-----BEGIN SSH SIGNATURE-----", b"-----END SSH SIGNATURE-----")


def check_allowed_signers(path: Path) -> None:
    """Refuse an allowed-signers file that cannot be what it claims: missing, not a regular
    file (``/dev/null``, a FIFO), too large, not UTF-8, or with a line that names no key.
    A trust setting that cannot be read must stop a fetch, never be taken for "no key"."""
    path = Path(path)

    try:
        data = read_bounded(path, MAX_ALLOWED_SIGNERS, "allowed-signers file")
    except FileNotFoundError:
        raise PrebakeError(f"{path}: allowed-signers file not found") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PrebakeError(f"{path}: allowed-signers file is not UTF-8 text") from None
    entries = 0
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not any(_KEY_TYPE.match(tok) for tok in line.split()[1:]):
            raise PrebakeError(f"{path}: line {n}: not an allowed-signers entry "
                               "(expected: PRINCIPALS [OPTIONS] KEYTYPE BASE64-KEY)")
        entries += 1
    if not entries:
        raise PrebakeError(f"{path}: allowed-signers file holds no key; every asset would be "
                           "refused")


def _check_signature(signature: bytes, what: str) -> None:
    body = signature.strip()
    if not body:
        raise SignatureError(f"{what}: the signature file is empty")
    if len(body) > MAX_SIGNATURE or not (body.startswith(_ARMOR[0]) and body.endswith(_ARMOR[1])):
        raise SignatureError(f"{what}: the signature file is not an SSH signature "
                             "(no -----BEGIN SSH SIGNATURE----- block)")


def find_principals(sig: Path, allowed_signers: Path) -> tuple[list[str], str]:
    """(principals whose key made ``sig``, ssh-keygen's reason when there are none)."""
    proc = _keygen("-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers),
                   timeout=60)
    if proc.returncode != 0:
        return [], proc.stderr.decode("utf-8", "replace")
    return [p for p in proc.stdout.decode("utf-8", "replace").split() if p], ""


def verify_bytes(message: bytes, signature: bytes, allowed_signers: Path,
                 what: str) -> str:
    """The allowed identity that signed ``message``; raises ``SignatureError`` with one line."""
    allowed_signers = Path(allowed_signers)
    check_allowed_signers(allowed_signers)
    _check_signature(signature, what)
    with tempfile.TemporaryDirectory(prefix="prebake-verify-") as tmp:
        sig = Path(tmp) / "asset.sig"
        sig.write_bytes(signature)
        principals, why = find_principals(sig, allowed_signers)
        if not principals:
            expired = re.search(r"key has expired[^\n]*|key is not yet valid[^\n]*", why)
            if expired:
                raise SignatureError(f"{what}: signed by a key of {allowed_signers} that is not "
                                     f"valid now ({expired[0].strip()})")
            if "parse signature" in why or "sshsig" in why:
                raise SignatureError(f"{what}: the signature file is not a readable SSH "
                                     "signature")
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
