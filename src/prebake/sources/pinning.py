"""``prebake pin NAME VERSION``: move a pin and lock the digest of every URL it resolves to.

The one command a bump is: the pin is set in ``prebake.toml`` (tomlkit, so comments and layout
stay), every URL of every recipe that reads the pin is resolved for every platform under the new
value, each is downloaded once into the source cache (mirrors in order, resumable), and
``prebake.sources.lock`` is rewritten — entries no recipe resolves to any more are dropped. A
GitHub release asset is also compared with the digest GitHub's API publishes for it, when the
API answers. An URL no mirror serves here is recorded as *pending* with the command to rerun
where its host is reachable; the build refuses only the units that need it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import urllib.error
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_text
from prebake.model.workspace import Workspace
from prebake.redact import redact_text
from prebake.registry_refs import is_reference
from prebake.sources.cache import SourceCache
from prebake.sources.download import download_new
from prebake.sources.lock import (
    GitRef,
    Locked,
    LockedGit,
    Pending,
    SourceLock,
    UrlRef,
    git_commit_of,
    git_refs,
    lock_key,
    read_source_lock,
    status_of,
    url_refs,
)
from prebake.sources.mirrors import with_mirrors
from prebake.web import open_url

GITHUB_RELEASE = re.compile(
    r"https://github\.com/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/?#]+)")
API_DEFAULT = "https://api.github.com"
PIN_VERSION = re.compile(r"[0-9][A-Za-z0-9_.+~]*")
API_TIMEOUT = 15.0
MAX_API_BYTES = 8 << 20
GIT_TIMEOUT = 120.0
MAX_LS_REMOTE_BYTES = 64 << 20
# the order git itself tries a short ref name in (``git help revisions``), as the build's
# ``git fetch origin REF`` resolves it
_REF_RULES = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}",
              "refs/remotes/{}/HEAD")


@dataclass
class PinResult:
    name: str
    old: str | None
    new: str
    lock: SourceLock
    locked: list[UrlRef] = field(default_factory=list)  # resolved URLs now with a digest
    git: list[tuple[GitRef, str, str | None]] = field(default_factory=list)  # (ref, commit, was)
    pending: list[tuple[UrlRef, str]] = field(default_factory=list)  # (url, why not)
    notes: list[str] = field(default_factory=list)  # GitHub comparisons and the like


def _hint(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def workspace_refs(ws: Workspace, pins: Mapping[str, str]) -> list[UrlRef]:
    """Every URL of every recipe on every platform it covers, under ``pins``."""
    out = []
    for recipe in ws.recipes.values():
        for p in ws.platforms.values():
            if recipe.strategy_for(p.name) is not None:
                out += url_refs(recipe, p.name, p.os, p.arch, pins, ws.provided)
    return out


def workspace_git_refs(ws: Workspace, pins: Mapping[str, str]) -> list[GitRef]:
    """Every git source at a tag or branch of every recipe on every platform it covers."""
    out = []
    for recipe in ws.recipes.values():
        for p in ws.platforms.values():
            if recipe.strategy_for(p.name) is not None:
                out += git_refs(recipe, p.name, pins)
    return out


def git_ref_problems(lock: SourceLock, refs: Sequence[tuple[str, GitRef]],
                     timeout: float | None = None) -> list[tuple[str, GitRef, str]]:
    """``(unit, ref, status)`` for each git ref with no locked commit (``missing``), one that
    names another commit upstream now (``moved: …``, both commits), or whose remote does not
    answer (``unverified: …``); each remote is asked once."""
    out: list[tuple[str, GitRef, str]] = []
    now: dict[tuple[str, str], str] = {}
    for unit, gref in refs:
        locked = git_commit_of(gref, lock)
        if locked is None:
            out.append((unit, gref, "missing"))
            continue
        key = (gref.url, gref.ref)
        if key not in now:
            try:
                now[key] = resolve_git_ref(gref.url, gref.ref, timeout)
            except PrebakeError as exc:
                now[key] = f"unverified: {exc}"
        if now[key].startswith("unverified"):
            out.append((unit, gref, now[key]))
        elif now[key] != locked:
            out.append((unit, gref, f"moved: {gref.ref} now names {now[key]}, locked at "
                                    f"{locked}"))
    return out


def resolve_git_ref(url: str, ref: str, timeout: float | None = None) -> str:
    """The commit ``ref`` names in the repository at ``url`` now (an annotated tag peeled),
    asked with ``git ls-remote``; an unreachable remote or unknown ref raises."""
    try:
        proc = subprocess.run(["git", "ls-remote", "--", url], capture_output=True,
                              timeout=timeout or GIT_TIMEOUT, stdin=subprocess.DEVNULL,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrebakeError(redact_text(f"git ls-remote {url}: {exc}")) from None
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["failed"]
        raise PrebakeError(redact_text(f"git ls-remote {url}: {why[0]}"))
    refs: dict[str, str] = {}
    for line in proc.stdout[:MAX_LS_REMOTE_BYTES].decode("utf-8", "replace").splitlines():
        sha, _, name = line.partition("\t")
        if re.fullmatch(r"[0-9a-f]{40}", sha) and name:
            refs[name] = sha
    for rule in _REF_RULES:
        name = rule.format(ref)
        if name in refs:
            return refs.get(name + "^{}", refs[name])  # the commit an annotated tag names
    raise PrebakeError(redact_text(f"{url}: no ref {ref!r} (git ls-remote lists no such tag "
                                   "or branch)"))


def unit_of(ws: Workspace, ref: UrlRef | GitRef) -> str:
    stage = ws.stage_of(ref.recipe)
    if stage is not None and ws.stages[stage].package == "prefix":
        return f"{stage}/{ref.platform}"
    return f"{ref.recipe}/{ref.platform}"


def github_digest(url: str) -> tuple[str | None, str]:
    """``(sha256, note)`` from GitHub's API for a release-asset URL; ``None`` when the API does
    not say (unreachable, no such asset, an old release without digests)."""
    m = GITHUB_RELEASE.fullmatch(url)
    if m is None:
        return None, ""
    owner, repo, tag, asset = m.groups()
    api = (os.environ.get("PREBAKE_GITHUB_API") or API_DEFAULT).rstrip("/")
    try:
        with open_url(f"{api}/repos/{owner}/{repo}/releases/tags/{tag}",
                      {"Accept": "application/vnd.github+json"}, timeout=API_TIMEOUT) as resp:
            data = json.loads(resp.read(MAX_API_BYTES))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return None, f"{url}: GitHub's API was not reachable ({getattr(exc, 'reason', exc)}); " \
                     "digest not cross-checked"
    for a in data.get("assets", []) if isinstance(data, dict) else []:
        if isinstance(a, dict) and a.get("name") == asset:
            digest = a.get("digest")
            if isinstance(digest, str) and digest.startswith("sha256:"):
                return digest[len("sha256:"):], f"{url}: matches the digest GitHub publishes"
    return None, f"{url}: GitHub's API publishes no digest for {asset}; not cross-checked"


def set_pin_text(text: str, name: str, version: str, where: Path) -> str:
    """``prebake.toml`` with ``[pins].NAME = VERSION``, comments and layout kept."""
    # lazy: tomlkit costs 9 ms to import (-X importtime); `plan` loads this module for its
    # git-ref check and never writes a pin
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
        pins = doc.get("pins")
        if pins is None:
            raise PrebakeError(f"{where}: no [pins] table")
        pins[name] = version
        return tomlkit.dumps(doc)
    except TOMLKitError as exc:
        raise PrebakeError(f"{where}: {exc}") from None


def pin(ws: Workspace, name: str, version: str, *, platforms: Sequence[str] = (),
        cache: SourceCache | None = None, log: Callable[[str], None] | None = None
        ) -> PinResult:
    """Set the pin, lock every URL reading it (see the module doc); writes both files."""
    say = log or (lambda _m: None)
    if name not in ws.pins:
        raise PrebakeError(f"{ws.root / 'prebake.toml'}: no pin {name!r} in [pins]"
                           f"{_hint(name, ws.pins)}")
    if not PIN_VERSION.fullmatch(version):  # what prebake.toml accepts for a pin
        raise PrebakeError(f"pin {name}: {version!r} is not a version (starts with a digit, "
                           "no '-' or spaces)")
    for p in platforms:
        if p not in ws.platforms:
            raise PrebakeError(f"--platform {p}: no such platform{_hint(p, ws.platforms)}")
    cache = with_mirrors(cache or SourceCache(), ws)
    new_pins = {**ws.pins, name: version}
    lock = read_source_lock(ws.root)
    result = PinResult(name, ws.pins.get(name), version, lock)
    reads = [r for r in workspace_refs(ws, new_pins)
             if any(n == name for n, _v in r.pins)
             or name in ws.recipes[r.recipe].pins_read(r.platform)]
    command = f"prebake pin {name} {version}"
    result.notes += _unprovided(ws, name, reads)
    fetched: dict[str, Locked | str] = {}  # url -> entry, or why it could not be had
    for ref in reads:
        if ref.literal_sha256:
            continue
        key = lock_key(ref.url)  # the lock keeps no credential
        if platforms and ref.platform not in platforms:
            if lock.status(ref.url) != "locked":
                lock.pending[key] = Pending(
                    key, f"{command} --platform {ref.platform}",
                    f"not pinned for {ref.platform} (--platform "
                    f"{' '.join(platforms)})")
                result.pending.append((ref, lock.pending[key].reason))
            continue
        if key in lock.entries:
            fetched.setdefault(key, lock.entries[key])
        if key not in fetched:
            fetched[key] = _fetch(ref, cache, say, result, ws.mirrors)
        got = fetched[key]
        if isinstance(got, Locked):
            lock.entries[key] = got
            lock.pending.pop(key, None)
            result.locked.append(ref)
        else:
            lock.pending[key] = Pending(key, command, redact_text(got))
            result.pending.append((ref, got))
    # a git ref reading the pin is resolved again: pinning is what accepts a commit
    resolved: dict[tuple[str, str], str] = {}
    for gref in workspace_git_refs(ws, new_pins):
        if not (any(n == name for n, _v in gref.pins)
                or name in ws.recipes[gref.recipe].pins_read(gref.platform)):
            continue
        if platforms and gref.platform not in platforms:
            continue
        gkey = (lock_key(gref.url), gref.ref)
        if gkey not in resolved:
            resolved[gkey] = resolve_git_ref(gref.url, gref.ref)
            say(f"{gref.url} {gref.ref} -> {resolved[gkey]}")
        was = lock.git.get(gkey)
        lock.git[gkey] = LockedGit(gkey[0], gref.ref, resolved[gkey])
        result.git.append((gref, resolved[gkey], was.commit if was else None))
    # keep only what some recipe still resolves to under the new pins
    live = {lock_key(r.url) for r in workspace_refs(ws, new_pins)}
    lock.entries = {u: e for u, e in lock.entries.items() if u in live}
    lock.pending = {u: p for u, p in lock.pending.items() if u in live}
    live_git = {(lock_key(r.url), r.ref) for r in workspace_git_refs(ws, new_pins)}
    lock.git = {k: e for k, e in lock.git.items() if k in live_git}
    toml = ws.root / "prebake.toml"
    text = set_pin_text(toml.read_text("utf-8"), name, version, toml)
    lock.write()
    atomic_write_text(toml, text, toml.stat().st_mode & 0o777)  # its mode as it was
    return result


def _unprovided(ws: Workspace, name: str, reads: Sequence[UrlRef]) -> list[str]:
    """A ``[sources.provided]`` line written for the old release only: the new upstream URL
    is then downloaded from upstream (or pending); say which line to make follow the pin."""
    before = {(r.recipe, r.platform, r.where): r for r in workspace_refs(ws, ws.pins)
              if r.provides}
    out: list[str] = []
    for ref in reads:
        old = before.get((ref.recipe, ref.platform, ref.where))
        if old is None or ref.provides:
            continue
        note = (f"[sources.provided] maps {old.provides} (the old {name}) to {old.url}, but "
                f"nothing maps {ref.url}: it is fetched from upstream; write the line with "
                f"{{pins[{name}]}} on both sides to follow the pin")
        if note not in out:
            out.append(note)
    return out


def _fetch(ref: UrlRef, cache: SourceCache, say: Callable[[str], None],
           result: PinResult, mirrored: Iterable[str] = ()) -> Locked | str:
    """Download and lock one file; ``mirrored``: the ``[mirrors]`` prefixes (a failure
    through them names this machine's mirrors, which the committed lock does not)."""
    got, failures = download_new([ref.url, *ref.mirrors], cache, say)
    if got is None:
        if is_reference(ref.url) or any(ref.url.startswith(p) for p in mirrored):
            # the mirrors tried are this machine's: said on the console, kept out of the lock
            say(redact_text(f"{ref.url}: not downloadable here: " + "; ".join(failures)))
            return (f"not downloadable here: no configured mirror served it ({len(failures)} "
                    "tried; `prebake pin` names them)")
        return "not downloadable here: " + "; ".join(failures)
    expected, note = github_digest(ref.url)
    if note:
        result.notes.append(note)
    if expected is not None and expected != got.sha256:
        got.path.unlink(missing_ok=True)
        raise PrebakeError(redact_text(f"{ref.url}: downloaded sha256 {got.sha256} (from "
                                       f"{got.url}) but GitHub publishes {expected}; nothing "
                                       "written"))
    return Locked(lock_key(ref.url), got.sha256, got.size)



def check(ws: Workspace) -> list[tuple[str, UrlRef | GitRef, str]]:
    """``(unit, ref, status)`` for every URL of the workspace with no digest and every git ref
    with no locked commit (``missing``), that names another commit upstream now (``moved:
    …``, both commits) or whose remote does not answer (``unverified: …``: a check that cannot
    decide fails)."""
    lock = read_source_lock(ws.root)
    out: list[tuple[str, UrlRef | GitRef, str]] = []
    for ref in workspace_refs(ws, ws.pins):
        st = status_of(ref, lock)
        if st in ("missing", "pending"):
            out.append((unit_of(ws, ref), ref, st))
    out += git_ref_problems(lock, [(unit_of(ws, g), g) for g in workspace_git_refs(ws, ws.pins)])
    return out
