"""The repository explains itself: no comment, docstring or message points outside it.

Every ``docs/NAME.md §N`` a source file cites must be a real section of a file in ``docs/``.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests import support

ROOT = support.ROOT
# documents that lived outside the repository, and issue numbers of a tracker it does not hold
OUTSIDE = re.compile("|".join([r"DESIGN\.md", "ABI" + "-FACTS", r"TOOLCHAINS\.md",
                               r"STYLE\.md", r"\b[Ii]ssue [0-9]+\b", "/work/" + "shared"]))
CITED = re.compile(r"docs/([a-z-]+\.md)(?: (§[0-9.]+(?:[–-]§?[0-9.]+)?(?:(?:, | and )§[0-9.]+)*))?")
SUFFIXES = {".py", ".toml", ".md", ".cmake", ".j2", ".sh", ".txt", ".json", ".yml", ""}


# build output inside the checkout (the main job's work folders hold upstream sources)
OUTPUT_FOLDERS = {"build", "releases", ".venv", ".prebake"}


def _sources() -> list[Path]:
    out = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for top in ("src", "tests", "benchmarks", "scripts", "examples", ".ci", "schemas", "docs"):
        for p in sorted((ROOT / top).rglob("*")):
            if (p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                    and not OUTPUT_FOLDERS & set(p.relative_to(ROOT).parts)):
                out.append(p)
    return out


def test_no_file_points_outside_the_repository() -> None:
    hits = []
    for p in _sources():
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == [], "\n".join(hits)


def _sections(doc: Path) -> set[str]:
    return {m[1] for m in re.finditer(r"^#+ ([0-9]+(?:\.[0-9]+)*)\.? ", doc.read_text(), re.M)}


def test_every_cited_docs_section_exists() -> None:
    docs = ROOT / "docs"
    cited = 0
    for p in _sources():
        for m in CITED.finditer(p.read_text(encoding="utf-8", errors="replace")):
            doc = docs / m[1]
            assert doc.is_file(), f"{p.relative_to(ROOT)} cites docs/{m[1]}, which does not exist"
            for sec in re.findall(r"§([0-9]+(?:\.[0-9]+)*)", m[2] or ""):
                assert sec in _sections(doc), f"{p.relative_to(ROOT)}: docs/{m[1]} has no §{sec}"
                cited += 1
    assert cited >= 20  # the readers cite the format facts they rely on


def test_the_docs_hold_what_the_code_relies_on() -> None:
    docs = ROOT / "docs"
    for name in ("architecture.md", "binary-formats.md", "toolchains.md"):
        assert (docs / name).is_file(), name
    formats = (docs / "binary-formats.md").read_text()
    # the facts the readers use, with their sources
    for fact in ("__resumeException", "GLIBC_", "LC_BUILD_VERSION", "target_features",
                 "GLOBALVAL_SUMMARY_BLOCK", "!<arch>", "llvm-readobj", "wasm-objdump"):
        assert fact in formats, fact
    assert "NODE_PATH=/usr/share/nodejs" in (docs / "toolchains.md").read_text()


def test_no_fallback_for_a_prebake_module_that_might_not_exist() -> None:
    """Leftovers of parallel work: ``try: import prebake.X except ImportError: <weaker copy>``.

    The one module that may really be missing is the optional C extension setup.py declares
    (no compiler: the reader's Python loops run); its fallback is the reference it is tested
    against (tests/unit/test_scan.py), not a leftover."""
    optional = set(re.findall(r'Extension\(\s*"([a-z_.]+)"[^)]*optional=True', (
        ROOT / "setup.py").read_text(), re.S))
    assert optional == {"prebake.inspect._scan"}
    hits = []
    for p in sorted((ROOT / "src" / "prebake").rglob("*.py")):
        text = p.read_text()
        for m in re.finditer(r"try:[^\n]*\n(?:[^\n]*\n){0,3}?[^\n]*prebake\.[^\n]*\n"
                             r"(?:[^\n]*\n){0,2}?\s*except (?:ImportError|ModuleNotFoundError)",
                             text):
            imported = re.search(r"from (prebake[a-z_.]*) import (\w+)|import (prebake[\w.]*)",
                                 m[0])
            name = imported and (imported[3] or f"{imported[1]}.{imported[2]}")
            if name not in optional:
                hits.append(f"{p.relative_to(ROOT)}: {m[0].splitlines()[0].strip()}")
    assert hits == [], hits
    unpack = (ROOT / "src" / "prebake" / "sources" / "unpack.py").read_text()
    assert "extractall" not in unpack  # one extractor: prebake.extract


def test_the_architecture_page_names_modules_that_exist() -> None:
    """docs/architecture.md is the map of the code: every ``prebake.x.y`` it names resolves."""
    import importlib

    text = (ROOT / "docs" / "architecture.md").read_text()
    names = sorted(set(re.findall(r"`(prebake(?:\.[A-Za-z_]+)+)`", text))
                   | set(re.findall(r"\((prebake(?:\.[a-z_]+)+)\)", text)))
    assert len(names) >= 10
    for name in names:
        if name.endswith((".lock", ".toml")):
            continue  # a file prebake reads (prebake.lock, prebake.sources.lock), not a module
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                assert hasattr(obj, attr), f"docs/architecture.md names {name}: no {attr}"
                obj = getattr(obj, attr)
            break
        else:
            raise AssertionError(f"docs/architecture.md names {name}, which does not exist")
    for path in re.findall(r"`(prebake/[a-z_/]+(?:\.toml)?)`", text):
        assert (ROOT / "src" / path).exists() or "NAME" in path, path
