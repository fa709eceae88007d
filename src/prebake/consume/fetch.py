"""Fetch a pinned asset: resolve → download (resumable, bounded by the size the lock records)
→ verify sha256 → re-check the consumer's contract → unpack safely → lock.

Every check happens before anything is installed: a tampered download, a lock mismatch or a
contract violation leaves ``into`` exactly as it was. With a lock entry for the dependency, the
fetch reproduces exactly the locked bytes or fails; a different version than the locked one is
refused unless ``update_lock`` (the consumer changing its pin on purpose).

Downloads go to a cache (``$PREBAKE_CACHE`` or ``~/.cache/prebake``): partial files resume with
HTTP ``Range`` on the next attempt; verified assets are kept by sha256 so a re-fetch is local.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.platform != "win32":  # Windows has no advisory locks (``_exclusive`` is a no-op)
    import fcntl

from prebake.consume.consumer_lock import LOCK_NAME, LockEntry, read_lock
from prebake.contract.check import check_paths, wants_deep
from prebake.contract.licenses import judge
from prebake.contract.producer_rule import Allowed, ProducerPin
from prebake.contract.terms import Contract
from prebake.digest import ProgressFn, file_sha256
from prebake.errors import CheckFailed, PrebakeError
from prebake.extract import DEFAULT_MAX_BYTES, UnsafeArchive, safe_extract
from prebake.link.test import link_test
from prebake.manifest import (
    MAX_MANIFEST_BYTES,
    Manifest,
    ManifestError,
    parse_manifest,
    read_manifest_file,
)
from prebake.names import check_name, name_problem
from prebake.package import pcjudge
from prebake.package.naming import (
    MANIFEST_SUFFIX,
    SHA256_SUFFIX,
    AssetId,
    asset_id,
    parse_sha256_line,
)
from prebake.redact import redact_text
from prebake.store import open_store
from prebake.store.base import DEFAULT_RELEASE, Store
from prebake.toolchain.compat import compare
from prebake.trust.consumer import verify_in_store
from prebake.trust.sign import check_allowed_signers
from prebake.walk import scandir_tree

MANIFEST_IN_PREFIX = "share/prebake/manifest.json"
MAX_MANIFEST = MAX_MANIFEST_BYTES


def declared_sizes(store: Store, aid: AssetId, release: str) -> dict[str, int] | None:
    """Path -> size of every file the asset's manifest sidecar lists (``None`` when it lists
    none): the extractor holds each member to its size, so a bomb stops at its first header."""
    raw = store.read_sidecar(aid, MANIFEST_SUFFIX, release)
    if raw is None:
        return None
    try:
        m = parse_manifest(raw, f"{aid.manifest_name} in {store.url}", MAX_MANIFEST)
    except ManifestError:
        return None
    if not m.files or any(f.size is None for f in m.files):
        return None
    return {f.path: f.size for f in m.files if f.size is not None}


class IntegrityError(CheckFailed):
    """The bytes are not the ones the sidecar or the lock promise (exit code 1)."""


@dataclass
class FetchResult:
    asset: AssetId
    release: str
    sha256: str
    url: str
    into: Path
    files: list[str]
    lock_path: Path | None
    downloaded: bool
    contract_checked: bool
    notes: list[str] = field(default_factory=list)
    signed_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.asset.name, "version": self.asset.version,
            "platform": self.asset.platform, "asset": self.asset.filename,
            "release": self.release, "sha256": self.sha256, "url": self.url,
            "into": str(self.into), "files": len(self.files),
            "lock": str(self.lock_path) if self.lock_path else None,
            "downloaded": self.downloaded, "contract_checked": self.contract_checked,
            "signed_by": self.signed_by, "notes": self.notes,
        }


def default_cache() -> Path:
    if os.environ.get("PREBAKE_CACHE"):
        return Path(os.environ["PREBAKE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prebake"


def _resolve(store: Store, aid: AssetId, candidates: Iterable[str]) -> tuple[str, str]:
    """(release, sha256) of the first candidate release holding the complete asset."""
    seen: list[str] = []
    for tag in candidates:
        if tag in seen:
            continue
        seen.append(tag)
        raw = store.read_sidecar(aid, SHA256_SUFFIX, tag)
        if raw is not None:
            return tag, parse_sha256_line(raw.decode("utf-8", "replace"), aid.filename)
    raise PrebakeError(f"{store.url}: no complete {aid.filename} in release(s) "
                       f"{', '.join(seen)}")


def _candidates(store: Store, aid: AssetId, release: str | None,
                locked: LockEntry | None) -> Iterator[str]:
    """Releases to look in, most specific first; the store is listed only if those miss."""
    if release:
        yield release
        return
    if locked and locked.release:
        yield locked.release
    yield from (f"v{aid.version}", aid.version, DEFAULT_RELEASE)
    try:
        others = store.releases()
    except PrebakeError:
        others = []
    # a store's tag becomes a cache folder: one that is not a plain name is never looked in
    yield from (t for t in others if name_problem(t) is None)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Serialise fetches of one asset sharing a cache (parallel CMake configures, CI jobs):
    two writers appending to one ``.part`` file would interleave bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        if sys.platform == "win32":  # no advisory locks; the sha256 check still holds
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


REPUBLISHED_RETRIES = 2  # a store re-published under a fetch twice in a row is not settled


def _download_verified(store: Store, aid: AssetId, release: str, expected: str, cache: Path,
                       progress: ProgressFn | None, limit: int | None = None
                       ) -> tuple[Path, bool]:
    """The verified asset in the cache, downloading (or resuming) when not there yet, never
    more than ``limit`` bytes (the size the consumer lock records; without one the store's
    bound). A resumed download that fails verification is retried once from scratch (the
    store may have been re-published since the partial file was written)."""
    final = cache / "assets" / expected / aid.filename
    staging = cache / "downloads" / release / aid.filename
    try:
        return _cached_or_downloaded(store, aid, release, expected, final, staging, progress,
                                     limit)
    except OSError as exc:
        if exc.errno not in _CACHE_FULL or (exc.filename and not str(exc.filename).startswith(
                str(cache))):
            raise
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)  # a partial copy (a resumable .part stays)
        why = exc.strerror or str(exc)
        raise PrebakeError(f"{cache}: {why[:1].lower() + why[1:]} while downloading "
                           f"{aid.filename} into the download cache; nothing was installed"
                           ) from None


# The download cache cannot take the asset: the cache's fault, never the store's.
_CACHE_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _cached_or_downloaded(store: Store, aid: AssetId, release: str, expected: str, final: Path,
                          staging: Path, progress: ProgressFn | None,
                          limit: int | None) -> tuple[Path, bool]:
    with _exclusive(staging.with_name(staging.name + ".lock")):
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile: download it again
            if final.is_file() and file_sha256(final) == expected:
                return final, False
        for _ in range(2):
            resumed = staging.with_name(staging.name + ".part").exists()
            store.download(aid, staging, release, progress=progress, limit=limit)
            actual = file_sha256(staging)
            if actual == expected:
                break
            staging.unlink(missing_ok=True)
            if not resumed:
                break
        if actual != expected:
            raise IntegrityError(
                f"{store.asset_url(aid, release)}: sha256 {actual} does not match the expected "
                f"{expected}; the asset was tampered with or corrupted, nothing was installed")
        final.parent.mkdir(parents=True, exist_ok=True)
        staging.replace(final)
        return final, True


def _checker(aid: AssetId, contract: Contract | None,
             consumer: ConsumerToolchain | None = None, notes: list[str] | None = None
             ) -> Callable[[Path], None]:
    """What the unpacked tree must satisfy before it replaces ``into``: its manifest names the
    asset that was asked for (not another one renamed), it meets the consumer's contract, its
    toolchain suits the consumer's (``prebake.toolchain.compat``) and, when asked, every
    library links with the consumer's own compiler and flags."""

    def check(tree: Path) -> None:
        manifest = tree / MANIFEST_IN_PREFIX
        if not manifest.is_file() or manifest.is_symlink():
            raise IntegrityError(f"{aid.filename}: has no {MANIFEST_IN_PREFIX}, so nothing says "
                                 "which asset it is; not a prebake asset, nothing was installed")
        try:
            typed = read_manifest_file(manifest, MAX_MANIFEST)
        except ManifestError as exc:
            raise IntegrityError(f"{aid.filename}: its {MANIFEST_IN_PREFIX} is not a valid "
                                 f"manifest ({exc.reason}); nothing was installed") from None
        if typed.named != (aid.name, aid.version, aid.platform):
            raise IntegrityError(f"{aid.filename}: its {MANIFEST_IN_PREFIX} names "
                                 f"{typed.named}; "
                                 "an asset published under another name, nothing was "
                                 "installed")
        _check_pc_files(aid, tree, notes if notes is not None else [])
        if contract is not None:
            refusal = license_refusal(aid.filename, typed, contract)
            if refusal is not None:
                raise CheckFailed(f"{refusal}; nothing was installed")
            # like the build guard: a feature rule is judged on the whole list, the licence
            # on what the manifest says the build proved (no binary says it)
            pin, no_pin = manifest_pin(typed, tree)
            report = check_paths([tree], replace(contract, allowed_licenses=()),
                                 deep=wants_deep(contract), pin=pin, no_pin=no_pin)
            report.relabel(tree, aid.filename)  # the asset's name, not the temporary folder
            if not report.ok:
                raise CheckFailed(f"{aid.filename} breaks this consumer's contract; nothing "
                                  f"was installed\n{report.render()}", report.to_json())
        if consumer is not None:
            _check_toolchain(aid, typed, consumer, tree, notes if notes is not None else [])

    return check


def _check_pc_files(aid: AssetId, tree: Path, notes: list[str]) -> None:
    """Every ``.pc`` the asset ships, through this machine's pkg-config as a consumer's would
    read it (``prebake.package.pcjudge``): one that sends the consumer's compiler outside the
    asset is refused. Without a pkg-config here nothing would read them either: a note."""
    pcs = sorted(rel for rel, entry in scandir_tree(str(tree))
                 if rel.endswith(".pc") and entry.is_file(follow_symlinks=False))
    try:
        leaks = pcjudge.judge_tree(tree, pcs)
    except pcjudge.PkgConfigMissing as exc:
        if pcs:
            notes.append(f"{exc}: the asset's {len(pcs)} .pc file(s) were not judged here")
        return
    if leaks:
        raise CheckFailed(f"{aid.filename}: {len(leaks)} pkg-config setting(s) name a folder "
                          "outside the asset (a consumer's compiler would be sent there); "
                          "nothing was installed\n"
                          + "\n".join(f"  {x.render()}" for x in leaks))


def manifest_pin(manifest: Manifest, tree: Path) -> tuple[ProducerPin | None, str]:
    """What ``producer = ["toolchain"]`` means for a fetched asset: the toolchain its manifest
    says it was verified to be built with (``guards.producer``), so its bytes must agree with
    what it says about itself; the files its recipes exempted stay held to their globs."""
    record = manifest.guards.producer if manifest.guards is not None else None
    if record is None or not record.own:
        return None, ("its manifest records no verified toolchain for it (built by a contract "
                      "without the producer rule, or before prebake read producers)")
    allowed = {str(tree / o.file): Allowed(o.recipe, o.allowed, f"{o.why}, as its manifest "
                                           "records") for o in record.other_compilers}
    return ProducerPin(record.toolchain, record.own, record.runtime, record.runtime_from,
                       allowed), ""


def license_refusal(shown: str, manifest: Manifest, contract: Contract) -> str | None:
    """The contract's ``allowed_licenses`` on an asset: each recipe's license as its build
    proved it from the libraries' bytes (the manifest's ``recipes[].license``), operand by
    operand (``prebake.contract.licenses``). A recipe with none cannot be judged and fails
    closed unless ``allow_unknown`` names the key."""
    allowed = contract.allowed_licenses
    if not allowed:
        return None
    shown_allowed = ", ".join(allowed)
    for r in manifest.recipes or ():
        if r.license is None and "allowed_licenses" not in contract.allow_unknown:
            return (f"{shown}: its manifest states no proven license for {r.name}, so this "
                    f"contract's allowed_licenses ({shown_allowed}) cannot judge it (fails "
                    "closed; allow_unknown = [\"allowed_licenses\"] accepts it unchecked)")
        judged = judge(r.license, allowed) if r.license is not None else None
        if judged is not None and not judged.ok:
            return (f"{shown}: {r.name} is {r.license}; this "
                    + judged.refusal(allowed).removeprefix("the "))
    if not manifest.recipes and "allowed_licenses" not in contract.allow_unknown:
        return f"{shown}: its manifest names no recipe, so no license was proven (fails closed)"
    return None


@dataclass(frozen=True)
class ConsumerToolchain:
    """The consumer's platform (its compiler and link-test flags) and what its compiler
    reported (``Verdict.record()``); ``link_test`` links every fetched library with it."""

    platform: Any  # prebake.model.workspace.Platform (kept loose: consume stays import-light)
    record: dict[str, Any]
    link_test: bool = False


def _check_toolchain(aid: AssetId, manifest: Manifest, consumer: ConsumerToolchain,
                     tree: Path, notes: list[str]) -> None:
    findings = compare(manifest.to_json(), consumer.record)  # the rules are data over JSON
    refused = [f for f in findings if f.level == "refuse"]
    notes.extend(f.message for f in findings if f.level == "report")
    if refused:
        raise CheckFailed(f"{aid.filename}: its toolchain does not suit this consumer's; "
                          "nothing was installed\n" + "\n".join(f.message for f in refused),
                          {"toolchain": [f.to_json() for f in findings]})
    if not consumer.link_test:
        return

    libs = [f.path for f in manifest.facts if f.kind in ("static-library", "shared-library")]
    if not libs:
        raise CheckFailed(f"{aid.filename}: --link-test: its manifest lists no library to "
                          "link; nothing was installed")
    include = [tree / "include"] if (tree / "include").is_dir() else []
    for rel in libs:
        result = link_test(tree / rel, consumer.platform, include_dirs=include)
        if not result.ok:
            errors = "\n".join(result.errors[:20]) or result.output[-2000:]
            raise CheckFailed(f"{aid.filename}: {rel} does not link with this consumer's "
                              f"{consumer.platform.name} compiler and flags; nothing was "
                              f"installed\n{errors}", result.to_json())
        notes.append(f"link test: {rel} links with {' '.join(result.commands[-1][:1])} "
                     f"and {' '.join(consumer.platform.link_test.flags) or 'no flags'}")


def _prepare_into(into: Path) -> None:
    """Only an empty folder or an earlier fetch's prefix may be replaced wholesale."""
    if into.exists() and (not into.is_dir() or (any(into.iterdir())
                                                 and not (into / MANIFEST_IN_PREFIX).is_file())):
        raise PrebakeError(f"{into}: exists and is not a prefix prebake fetched; "
                           "choose an empty or new folder with --into")


def check_request(name: str, version: str, platform: str, release: str | None) -> AssetId:
    """The names a fetch turns into cache and ``--into`` paths, checked where they enter."""
    for value, what in ((name, "name"), (version, "version"), (platform, "--platform")):
        check_name(value, what)
    if release is not None:
        check_name(release, "--release")
    return asset_id(name, version, platform)


@dataclass(frozen=True)
class FetchRequest:
    """What a consumer asks for: ``name==version`` for ``platform`` from ``store``, unpacked
    into ``into``.

    ``contract`` and ``consumer`` (the consumer's ABI contract and toolchain) re-check the
    asset on this side; ``lock_path`` is the lock to honour and write (``update_lock`` lets a
    new version replace the locked one); ``release`` a release tag to prefer; ``root`` the
    folder a ``file://`` store is relative to; ``cache_dir`` the download cache (default: the
    user's); ``max_bytes`` the unpacked size allowed; ``allowed_signers`` the file a signature
    must verify against (``None``: no signature is required)."""

    name: str
    version: str
    platform: str
    store: Store | str
    into: Path
    contract: Contract | None = None
    lock_path: Path | None = None
    release: str | None = None
    root: Path | None = None
    cache_dir: Path | None = None
    update_lock: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    allowed_signers: Path | None = None
    consumer: ConsumerToolchain | None = None


def fetch(req: FetchRequest, progress: ProgressFn | None = None) -> FetchResult:
    """Download the asset ``req`` names (through the cache), verify its sha256 against the
    store's sidecar, the lock and (if asked) its signature, re-check it against the
    consumer's contract and toolchain, unpack it safely and write the lock.

    Raises ``IntegrityError`` (exit 1) when the bytes are not the promised ones and
    ``PrebakeError`` (exit 2) for a bad request; nothing is installed then.
    """
    name, version, platform, release = req.name, req.version, req.platform, req.release
    lock_path, update_lock, allowed_signers = req.lock_path, req.update_lock, req.allowed_signers
    contract, consumer, store, root = req.contract, req.consumer, req.store, req.root
    cache_dir, max_bytes, into = req.cache_dir, req.max_bytes, req.into
    aid = check_request(name, version, platform, release)
    if allowed_signers is not None:  # unreadable trust settings stop the fetch before anything

        check_allowed_signers(allowed_signers)
    st = open_store(store, root=root) if isinstance(store, str) else store
    into = Path(into)
    lock = read_lock(lock_path) if lock_path is not None else None
    locked = lock.get(name, platform) if lock is not None else None
    if locked is not None and locked.version != version and not update_lock:
        raise PrebakeError(
            f"{lock_path}: locks {name} {locked.version} for {platform}, not {version}; "
            "fetch with --update to re-lock")
    if locked is not None and locked.version != version:
        locked = None
    _prepare_into(into)

    for attempt in range(REPUBLISHED_RETRIES + 1):
        tag, expected = _resolve(st, aid, _candidates(st, aid, release, locked))
        if locked is not None and locked.sha256 != expected:
            raise IntegrityError(
                f"{lock_path}: locks {aid.filename} at sha256 {locked.sha256} but {st.url} "
                f"(release {tag}) now has {expected}; refusing to install other bytes than "
                "locked")
        signed_by = None
        if allowed_signers is not None:  # before the download: the signature covers `expected`

            signed_by = verify_in_store(st, aid, tag, expected, allowed_signers).principal
        try:
            asset, downloaded = _download_verified(st, aid, tag, expected,
                                                   cache_dir or default_cache(), progress,
                                                   locked.size if locked else None)
            break
        except IntegrityError:
            # the .sha256 and the bytes are read in two requests: a publish between them is
            # not tampering when the store's .sha256 has moved on too; start over from the
            # new one (lock, signature and all). An unchanged .sha256 means the bytes lie.
            again = st.read_sidecar(aid, SHA256_SUFFIX, tag)
            moved = again is not None and parse_sha256_line(
                again.decode("utf-8", "replace"), aid.filename) != expected
            if not moved or attempt == REPUBLISHED_RETRIES:
                raise

    size = asset.stat().st_size  # the lock's bound on the next download of these bytes
    notes: list[str] = []
    if signed_by is not None:
        notes.append(f"signature valid: signed by {signed_by} (allowed by {allowed_signers})")
    if contract is None:
        notes.append("no consumer contract given: facts were not re-checked "
                     "(run inside a workspace or pass --contract)")
    if consumer is None:
        notes.append("no consumer toolchain given: the asset's toolchain was not compared "
                     "(run inside a workspace)")
    try:
        files = safe_extract(asset, into, replace=True, max_bytes=max_bytes,
                             check=_checker(aid, contract, consumer, notes),
                             declared=declared_sizes(st, aid, tag))
    except UnsafeArchive as exc:  # the asset as the store calls it, not its cache copy
        raise UnsafeArchive(Path(aid.filename), exc.member,
                            f"{exc.rule} (from {st.url}, release {tag})") from None
    except FileNotFoundError as exc:
        if exc.filename is None or Path(exc.filename) != asset:
            raise
        # verified a moment ago, gone now: another process or a cache cleaner removed it
        raise PrebakeError(f"{asset}: the cached asset vanished before it could be unpacked "
                           "(removed by another process?); nothing was installed, fetch "
                           "again to download it anew") from None

    url = redact_text(st.asset_url(aid, tag))  # the lock is committed: never a credential
    if lock is not None:
        lock.put(LockEntry(name, version, platform, expected, url, tag, size))
        lock.write()
    return FetchResult(aid, tag, expected, url, into, files, lock.path if lock else None,
                       downloaded, contract is not None, notes, signed_by)


def default_lock(root: Path | None) -> Path:
    return (root or Path.cwd()) / LOCK_NAME
