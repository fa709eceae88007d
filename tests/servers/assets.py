"""Test assets: a prefix tree packaged the way ``prebake.package`` does it.

Uses the packager's ``write_asset`` when it is importable; until then a small stand-in that
follows ``prebake.package.naming`` (asset, ``"<hex>  <file>\\n"`` sidecar, ``.json`` manifest).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prebake.package.naming import asset_id, sha256_line


def _manifest(name: str, version: str, platform: str, files: Mapping[str, bytes]) -> dict[str, Any]:
    return {
        "schema_version": 1, "name": name, "version": version, "platform": platform,
        "input_hash": hashlib.sha256(f"{name}{version}{platform}".encode()).hexdigest(),
        "toolchain": {}, "facts": [], "link_order": [], "created_by": "tests",
        "files": [{"path": p, "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                  for p, d in sorted(files.items())],
    }


def make_asset(out_dir: Path, name: str, version: str, platform: str,
               files: Mapping[str, bytes] | None = None, prefix: Path | None = None) -> Path:
    """Package ``files`` (path -> bytes) or the folder ``prefix`` as an asset in ``out_dir``."""
    aid = asset_id(name, version, platform)
    out_dir.mkdir(parents=True, exist_ok=True)
    if prefix is None:
        prefix = out_dir / f".prefix-{aid.filename}"
        for rel, data in (files or {}).items():
            (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
            (prefix / rel).write_bytes(data)
    tree = {str(p.relative_to(prefix)): p.read_bytes()
            for p in sorted(prefix.rglob("*")) if p.is_file()}
    manifest = _manifest(name, version, platform, tree)
    try:
        from prebake.package.archive import write_asset
    except ImportError:
        return _write_asset(tree, aid.filename, manifest, out_dir)
    return write_asset(prefix, aid, manifest, out_dir)


def _write_asset(tree: Mapping[str, bytes], filename: str, manifest: dict[str, Any],
                 out_dir: Path) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for rel, data in sorted(tree.items()):
            ti = tarfile.TarInfo(rel)
            ti.size = len(data)
            ti.mtime = 315532800
            tf.addfile(ti, io.BytesIO(data))
    data = buf.getvalue()
    path = out_dir / filename
    path.write_bytes(data)
    (out_dir / (filename + ".json")).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    (out_dir / (filename + ".sha256")).write_text(
        sha256_line(hashlib.sha256(data).hexdigest(), filename))
    return path


DEMO_H = "#pragma once\nint demo_answer(void);\n"
DEMO_C = '#include "demo.h"\nint demo_answer(void) { return 42; }\n'
DEMO_CONFIG = """\
# demoConfig.cmake (what prebake's packager generates, reduced to one imported target)
get_filename_component(_demo_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET demo::demo)
  add_library(demo::demo STATIC IMPORTED)
  set_target_properties(demo::demo PROPERTIES
    IMPORTED_LOCATION "${_demo_prefix}/lib/libdemo.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_demo_prefix}/include")
endif()
"""
DEMO_CONFIG_VERSION = """\
set(PACKAGE_VERSION "@VERSION@")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
"""


def demo_prefix(version: str = "1.0.0") -> Path:
    """A real host prefix: ``libdemo.a`` built by gcc, its header and a CMake package config."""
    from tests import support

    built = support.build("demo-static", {"demo.c": DEMO_C, "demo.h": DEMO_H}, [
        ["gcc", "-O2", "-fPIC", "-c", "demo.c", "-o", "demo.o"],
        ["ar", "rcsD", "libdemo.a", "demo.o"],
    ])
    prefix = built.parent / f"demo-prefix-{version}-{built.name}"
    if not (prefix / "lib/libdemo.a").exists():
        tmp = prefix.with_name(prefix.name + ".tmp")
        (tmp / "include").mkdir(parents=True, exist_ok=True)
        (tmp / "lib/cmake/demo").mkdir(parents=True, exist_ok=True)
        (tmp / "include/demo.h").write_text(DEMO_H)
        (tmp / "lib/libdemo.a").write_bytes((built / "libdemo.a").read_bytes())
        (tmp / "lib/cmake/demo/demoConfig.cmake").write_text(DEMO_CONFIG)
        (tmp / "lib/cmake/demo/demoConfigVersion.cmake").write_text(
            DEMO_CONFIG_VERSION.replace("@VERSION@", version))
        tmp.rename(prefix)
    return prefix
