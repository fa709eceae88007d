"""An example built on a machine whose mirrors have other names than the public registries'.

Every file the example's ``prebake.sources.lock`` names by registry reference is copied (from
the suite's download cache, by its locked sha256; fetched through this machine's own mirrors
first when the cache lacks it) into a mirror on 127.0.0.1 in the registries' layouts
(``tests.servers.registries``: an apt pool under ``/srv/debian-archive``, a PyPI simple index
under ``/pkgs/pypi``, an npm registry under ``/pkgs/npm``). A fresh HOME, ``APT_CONFIG``,
``pip.conf`` and ``.npmrc`` point apt, pip and npm at it; with an empty download cache of its
own, ``prebake build`` then fetches every source from that mirror::

    python -m tests.mirror_build flagship --unit onnxruntime/linux-x86_64
    python -m tests.mirror_build sdk --unit ffmpeg/linux-x86_64

It prints each request the mirror answered and the build's result; the folders (workspace
copy, cache, HOME) go into ``--folders`` (default: a new temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from prebake.digest import file_sha256
from prebake.registry_refs import DebianFile, NpmTarball, PypiFile, filename, is_reference, parse
from prebake.sources.lock import read_source_lock
from tests import support
from tests.servers.registries import Paths, RegistryMirror, machine_config

ROOT = Path(__file__).resolve().parent.parent
OTHER_NAMES = Paths(debian="/srv/debian-archive", pypi="/pkgs/pypi", files="/pkgs/files",
                    npm="/pkgs/npm")
SUITE_CACHE = support.CACHE / "prebake-cache"


def locked_file(ref: str, sha256: str) -> Path:
    """The bytes the lock pins for ``ref``: the suite's cache entry, else a download through
    this machine's configured mirrors (``support.registry_file``) checked against it."""
    entry = SUITE_CACHE / "sources" / sha256
    if entry.is_file():
        return entry
    got = support.registry_file(ref, support.CACHE / "registry-downloads" / "by-ref")
    if file_sha256(got) != sha256:
        raise SystemExit(f"{ref}: this machine's mirror serves other bytes than the lock's "
                         f"{sha256}")
    # kept by its digest, so a later call (a test whose sockets reach only loopback) reads it
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f"{sha256}.tmp{os.getpid()}")
    shutil.copyfile(got, tmp)
    tmp.replace(entry)
    return entry


def locked_files(ws: Path) -> None:
    """Every referenced file of ``ws``'s lock in the suite's cache (downloaded where missing):
    what a fixture calls before the test's sockets are held to loopback."""
    for name, entry in read_source_lock(ws).entries.items():
        if is_reference(name):
            locked_file(name, entry.sha256)


def mirror_of_lock(ws: Path, folder: Path) -> RegistryMirror:
    """A mirror (not yet started) serving every referenced file of ``ws``'s lock."""
    mirror = RegistryMirror(folder, OTHER_NAMES)
    for name, entry in read_source_lock(ws).entries.items():
        if not is_reference(name):
            continue
        ref = parse(name)
        data = locked_file(name, entry.sha256)
        if isinstance(ref, DebianFile):
            mirror.add_debian(ref.path, data)
        elif isinstance(ref, PypiFile):
            mirror.add_wheel(data, name=filename(name))
        elif isinstance(ref, NpmTarball):
            mirror.add_npm(ref.name, ref.version, data)
    return mirror


def build(example: str, units: list[str], folders: Path) -> tuple[int, dict[str, object], int]:
    """(exit code, the build's --json, requests the mirror answered)."""
    ws = folders / "ws"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / example, ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake", "prebake_deps"))
    mirror = mirror_of_lock(ws, folders / "mirror")
    with mirror:
        env = {**machine_config(folders / "home", mirror, suite="trixie"),
               "PREBAKE_CACHE": str(folders / "cache")}
        shutil.rmtree(folders / "cache", ignore_errors=True)
        proc = support.prebake("-C", ws, "build", *(f"--unit={u}" for u in units), "--json",
                               env=env, timeout=3600)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = {"stdout": proc.stdout, "stderr": proc.stderr}
    return proc.returncode, data, len(mirror.requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("example", choices=sorted(p.name for p in (ROOT / "examples").iterdir()
                                                  if (p / "prebake.sources.lock").is_file()))
    parser.add_argument("--unit", action="append", required=True, help="a unit to build")
    parser.add_argument("--folders", type=Path, default=None)
    args = parser.parse_args(argv)
    folders = args.folders or Path(tempfile.mkdtemp(prefix=f"prebake-mirror-{args.example}-"))
    folders.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    rc, data, asked = build(args.example, args.unit, folders)
    for unit in data.get("units", []) if isinstance(data.get("units"), list) else []:
        print(f"{unit['unit']}: {unit['state']} {unit.get('asset') or ''} "
              f"{unit.get('message') or ''}".rstrip(), flush=True)
    if "units" not in data:
        print(json.dumps(data, indent=2)[-4000:])
    print(f"exit {rc} after {(time.monotonic() - start) / 60:.1f} min; the mirror answered "
          f"{asked} requests; folders: {folders}", flush=True)
    return rc


if __name__ == "__main__":
    os.environ.setdefault("PREBAKE_TEST_CACHE", str(support.CACHE))
    sys.exit(main())
