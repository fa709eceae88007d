"""Where this machine says its package mirrors are: apt's sources, pip's index, npm's registry.

prebake names sources by registry reference (``prebake.registry_refs``) and asks the
machine's own tools' configuration which host serves each registry, in the order and with the
precedence those tools use, so a machine configured for a company mirror builds from it with
no edit to a workspace or a lock:

- **Debian**: ``$PREBAKE_DEBIAN_MIRROR`` (one or more roots, white-space separated), else
  every Debian archive among apt's sources, in apt's order: the files ``apt-config`` names
  (``Dir::Etc::sourcelist`` and the ``.list``/``.sources`` files of ``Dir::Etc::sourceparts``,
  so ``APT_CONFIG`` moves them as it moves apt), one-line and deb822 formats both. An entry is
  a Debian archive when its suite is one of Debian's (``bookworm``, ``sid``, ``stable-updates``,
  …; not ``-security``, whose pool is another archive): a third-party repository in
  ``sources.list.d`` is never asked for Debian's files.
- **PyPI**: pip's ``index-url`` and ``extra-index-url`` then ``find-links``, from the files pip
  reads (``PIP_CONFIG_FILE`` first, then the global, user and site files; ``[global]`` then
  ``[download]``, what ``pip download`` reads) and the ``PIP_*`` variables over them; no
  ``index-url`` anywhere is pip's own default index, as the installed pip states it.
- **npm**: ``registry`` (or ``@scope:registry``) from ``npm_config_*`` variables, the
  project's ``.npmrc`` (the workspace's), the user's and the global ``npmrc``, in npm's
  precedence; none of them: ``npm config get registry``. A registry's ``_authToken`` or
  ``_auth`` there goes into the request's header (never into a URL, a log or a record).

Each origin carries what said so (``said``), for the line naming the mirrors tried.
"""

from __future__ import annotations

import base64
import configparser
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from prebake.bounded import read_bounded
from prebake.errors import PrebakeError
from prebake.redact import redact_text

MAX_CONFIG_BYTES = 1 << 20  # a configuration file; a bigger one is not one
TOOL_TIMEOUT = 30.0

# Debian's suite names (codenames since 1.1, the archive's aliases); a suite of these, or of
# these with one of SUITE_SUFFIXES, is a Debian archive whose pool holds Debian's files
DEBIAN_SUITES = frozenset({
    "buzz", "rex", "bo", "hamm", "slink", "potato", "woody", "sarge", "etch", "lenny",
    "squeeze", "wheezy", "jessie", "stretch", "buster", "bullseye", "bookworm", "trixie",
    "forky", "duke", "sid", "experimental", "rc-buggy", "stable", "testing", "unstable",
    "oldstable", "oldoldstable", "proposed-updates"})
SUITE_SUFFIXES = ("-updates", "-backports", "-backports-sloppy", "-proposed-updates")


@dataclass(frozen=True)
class Origin:
    """One root a registry is served from, and the configuration that names it."""

    url: str
    said: str  # "apt: /etc/apt/sources.list.d/debian.sources", "PIP_INDEX_URL", …
    headers: Mapping[str, str] = field(default_factory=dict)  # a registry's credentials


def _read(path: Path) -> str | None:
    """A configuration file's text, ``None`` when there is none; one that exists but cannot
    be read is an error (a mirror setting never silently falls back to another host)."""
    try:
        return read_bounded(path, MAX_CONFIG_BYTES, "configuration file").decode(
            "utf-8", "replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise PrebakeError(f"{path}: cannot read this mirror configuration: "
                           f"{exc.strerror}") from None


# ---- apt ----------------------------------------------------------------------------------

def apt_source_files(environ: Mapping[str, str]) -> list[Path]:
    """The sources files apt reads here, in its order (``apt-config`` says where they are;
    without apt, its default places)."""
    listed, parts = Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d")
    if shutil.which("apt-config", path=environ.get("PATH")):
        try:
            out = subprocess.run(["apt-config", "shell", "L", "Dir::Etc::sourcelist/f",
                                  "P", "Dir::Etc::sourceparts/d"], capture_output=True,
                                 text=True, timeout=TOOL_TIMEOUT, env=dict(environ),
                                 stdin=subprocess.DEVNULL, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        said = dict(w.split("=", 1) for w in shlex.split(out) if "=" in w)
        listed = Path(said.get("L", listed))
        parts = Path(said.get("P", parts))
    found = [listed] if listed.is_file() else []
    if parts.is_dir():
        found += sorted(p for p in parts.iterdir()
                        if p.suffix in (".list", ".sources") and p.is_file())
    return found


@dataclass(frozen=True)
class AptEntry:
    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]


def _one_line(text: str) -> list[AptEntry]:
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"(deb|deb-src)\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
        if m is not None:
            out.append(AptEntry((m[1],), (m[2],), (m[3],)))
    return out


def _deb822(text: str) -> list[AptEntry]:
    out = []
    for stanza in re.split(r"\n[ \t]*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if fields.get("enabled", "yes").lower() == "no":
            continue
        if "uris" in fields:
            out.append(AptEntry(tuple(fields.get("types", "").split()),
                                tuple(fields["uris"].split()),
                                tuple(fields.get("suites", "").split())))
    return out


def is_debian_suite(suite: str) -> bool:
    base = suite.rstrip("/")
    for suffix in SUITE_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return base in DEBIAN_SUITES


def _apt_uris(uri: str) -> list[str]:
    """The archive roots an apt URI stands for: itself, or the list a ``mirror+file:`` names."""
    if uri.startswith(("mirror+file:", "mirror:")) and not uri.startswith("mirror://"):
        listed = _read(Path(urlsplit(uri.split("+", 1)[-1]).path))
        return [w.split()[0] for w in (listed or "").splitlines()
                if w.strip() and not w.startswith("#")]
    if uri.startswith(("http://", "https://", "file:")):
        return [uri]
    return []  # tor+, cdrom:, ssh: …: not something prebake downloads through


def is_root_url(text: str) -> bool:
    """Whether ``text`` can be a mirror's root or a URL prefix: an http(s) URL with a host, or
    a file URL, with no white space or control character (which ``urlsplit`` would drop)."""
    if re.search(r"[\s\x00-\x1f\x7f]", text):
        return False
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed IPv6 bracket
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname)) or parts.scheme == "file"


def debian_mirrors(environ: Mapping[str, str]) -> list[Origin]:
    """The Debian archive roots to download pool files from (see the module doc)."""
    given = environ.get("PREBAKE_DEBIAN_MIRROR", "").split()
    for word in given:
        if not is_root_url(word):
            raise PrebakeError(f"PREBAKE_DEBIAN_MIRROR: {redact_text(word)!r} is not an http(s) "
                               "or file URL (a Debian archive's root, e.g. "
                               "https://mirror.example/debian)")
    if given:
        return [Origin(u.rstrip("/"), "PREBAKE_DEBIAN_MIRROR") for u in given]
    out: list[Origin] = []
    for path in apt_source_files(environ):
        text = _read(path) or ""
        entries = _deb822(text) if path.suffix == ".sources" else _one_line(text)
        for entry in entries:
            if not any(is_debian_suite(s) and not s.endswith("-security")
                       for s in entry.suites):
                continue
            for uri in entry.uris:
                for root in _apt_uris(uri):
                    origin = Origin(root.rstrip("/"), f"apt: {path}")
                    if all(o.url != origin.url for o in out):
                        out.append(origin)
    return out


# ---- pip ----------------------------------------------------------------------------------

def pip_config_files(environ: Mapping[str, str]) -> list[Path]:
    """pip's configuration files in the order pip loads them (later ones win)."""
    given = environ.get("PIP_CONFIG_FILE")
    if given == os.devnull:
        return []  # pip: loads no file at all
    home = Path(environ.get("HOME") or Path.home())
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(given)] if given else []
    files += [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(os.pathsep) if d]
    files.append(Path("/etc/pip.conf"))
    files.append(home / ".pip" / "pip.conf")  # the legacy user file, then the current one
    mac = home / "Library" / "Application Support" / "pip"
    xdg_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    files.append(mac / "pip.conf" if mac.is_dir() else xdg_home / "pip" / "pip.conf")
    files.append(Path(sys.prefix) / "pip.conf")  # the site file of the pip beside prebake
    return files


def pip_settings(environ: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """``index-url``, ``extra-index-url``, ``find-links``, ``no-index`` as pip download sees
    them: name -> (value, what said it)."""
    keys = ("index-url", "extra-index-url", "find-links", "no-index")
    out: dict[str, tuple[str, str]] = {}
    for path in pip_config_files(environ):
        text = _read(path)
        if text is None:
            continue
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(text, str(path))
        except configparser.Error as exc:
            first = str(exc).splitlines()[0]
            raise PrebakeError(f"{path}: not a pip configuration file ({first})") from None
        for section in ("global", "download"):
            for key in keys:
                if parser.has_option(section, key):
                    out[key] = (parser.get(section, key), f"pip: {path} [{section}]")
    for key in keys:
        var = "PIP_" + key.upper().replace("-", "_")
        if environ.get(var):
            out[key] = (environ[var], var)
    return out


def pip_default_index() -> str | None:
    """The index pip uses when nothing configures one, as the installed pip states it."""
    try:
        # lazy: pip may be absent, and its constant (20 ms) is read only when no configuration
        # names an index
        from pip._internal.models.index import PyPI
    except ImportError:
        return None
    return str(PyPI.simple_url)


def pip_indexes(environ: Mapping[str, str]) -> tuple[list[Origin], list[Origin]]:
    """(simple indexes in the order to ask them, find-links locations)."""
    said = pip_settings(environ)
    indexes: list[Origin] = []
    no_index = said.get("no-index", ("", ""))[0].lower() in ("1", "true", "yes", "on")
    if not no_index:
        if "index-url" in said:
            indexes.append(Origin(said["index-url"][0].strip(), said["index-url"][1]))
        elif (default := pip_default_index()) is not None:
            indexes.append(Origin(default, "pip's default index"))
        value, who = said.get("extra-index-url", ("", ""))
        indexes += [Origin(u, who) for u in value.split()]
    value, who = said.get("find-links", ("", ""))
    return indexes, [Origin(u, who) for u in value.split()]


# ---- npm ----------------------------------------------------------------------------------

def _npmrc(text: str, environ: Mapping[str, str]) -> dict[str, str]:
    """An ``.npmrc`` (npm's ini: ``key = value``, ``;``/``#`` comments, ``${VAR}`` expanded)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in ";#" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) > 1 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = re.sub(r"\$\{([^}]+)\}", lambda m: environ.get(m[1], ""), value)
    return out


def _npm_prefix(environ: Mapping[str, str]) -> Path | None:
    given = environ.get("npm_config_prefix") or environ.get("NPM_CONFIG_PREFIX") \
        or environ.get("PREFIX")
    if given:
        return Path(given)
    node = shutil.which("node", path=environ.get("PATH"))
    return Path(node).resolve().parent.parent if node else None


def npm_config_layers(environ: Mapping[str, str], project: Path | None
                      ) -> list[tuple[str, dict[str, str]]]:
    """npm's configuration, highest precedence first: (what said it, its settings)."""
    # npm's reading of its variables: the name after the prefix, '_' after its first
    # character as '-', in lower case
    env = {(k[11] + k[12:].replace("_", "-")).lower(): v for k, v in environ.items()
           if k.lower().startswith("npm_config_") and len(k) > 11}
    layers: list[tuple[str, dict[str, str]]] = [("npm_config_* variables", env)]
    home = Path(environ.get("HOME") or Path.home())
    files = []
    if project is not None:
        files.append(project / ".npmrc")
    files.append(Path(env.get("userconfig") or home / ".npmrc"))
    prefix = _npm_prefix(environ)
    glob = env.get("globalconfig") or (str(prefix / "etc" / "npmrc") if prefix else "")
    if glob:
        files.append(Path(glob))
    for path in files:
        text = _read(path)
        if text is not None:
            layers.append((f"npm: {path}", _npmrc(text, environ)))
    return layers


def _nerf(url: str) -> str:
    """npm's key for a registry's credentials: ``//host[:port]/path/``."""
    parts = urlsplit(url)
    return f"//{parts.netloc.rpartition('@')[2]}{parts.path.rstrip('/')}/"


def _auth_headers(registry: str, layers: Iterable[tuple[str, dict[str, str]]]
                  ) -> dict[str, str]:
    nerf = _nerf(registry)
    for who, settings in layers:
        for key in sorted((k for k in settings if k.startswith("//")), key=len, reverse=True):
            where, _, what = key.rpartition(":")
            if not nerf.startswith(where.rstrip("/") + "/"):
                continue
            if what == "_authToken":
                return {"Authorization": f"Bearer {settings[key]}"}
            if what == "_auth":
                return {"Authorization": f"Basic {settings[key]}"}
            if what == "_password" and f"{where}:username" in settings:
                user = settings[f"{where}:username"]
                try:
                    password = base64.b64decode(settings[key], validate=True).decode(
                        "utf-8", "replace")
                except ValueError:  # binascii.Error; the value itself is a secret: not shown
                    raise PrebakeError(f"{who}: {key} is not base64 (npm keeps a registry's "
                                       "password base64-encoded)") from None
                token = base64.b64encode(f"{user}:{password}".encode()).decode()
                return {"Authorization": f"Basic {token}"}
    return {}


def npm_registry(environ: Mapping[str, str], project: Path | None, scope: str = ""
                 ) -> Origin | None:
    """The registry npm would fetch a package of ``scope`` (``@acme`` or "") from."""
    layers = npm_config_layers(environ, project)
    keys = ([f"{scope}:registry"] if scope else []) + ["registry"]
    for key in keys:
        for who, settings in layers:
            if settings.get(key):
                url = settings[key]
                if not is_root_url(url):
                    raise PrebakeError(f"{who}: {key} {redact_text(url)!r} is not an http(s) "
                                       "or file URL")
                return Origin(url, f"{who} ({key})", _auth_headers(url, layers))
    npm = shutil.which("npm", path=environ.get("PATH"))
    if npm is None:
        return None
    try:
        proc = subprocess.run([npm, "config", "get", "registry"], capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT, env=dict(environ), check=False,
                              cwd=project, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    url = proc.stdout.strip()
    if proc.returncode != 0 or not url.startswith(("http://", "https://")) \
            or not is_root_url(url):
        return None
    return Origin(url, "npm config get registry", _auth_headers(url, layers))
