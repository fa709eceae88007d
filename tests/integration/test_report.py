"""``prebake report`` over a store of real assets (the real packager, several versions of one
dependency on two platforms, one more dependency), rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.cli import main
from tests.integration.diff_fixtures import prefix, write_demo_asset

ESCAPED = "evil&lt;script&gt;alert(1)&lt;/script&gt;"
# guards in the manifest schema's shape (schemas/manifest.schema.json), as a build records them
_CHECK = {"ok": True, "platform": "linux-x86_64", "contract": {}, "undecided": []}
PASS = {"check": _CHECK, "link_test": {"ok": True, "flags": [], "linked": ["snippet"]}}
LINK_FAIL = {"check": _CHECK, "link_test": {"ok": False, "flags": [], "linked": []}}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prebake.store import open_store

    base = tmp_path_factory.mktemp("report")
    folder = base / "store"
    st = open_store(f"file://{folder}")
    plan = [  # (version, fixture version, platform, arch, evil, guards)
        ("1.0.0", "1", "linux-x86_64", "x86_64", True, PASS),
        ("1.1.0", "3", "linux-x86_64", "x86_64", False, PASS),
        ("2.0.0", "2", "linux-x86_64", "x86_64", False, LINK_FAIL),
        ("1.0.0", "1", "linux-aarch64", "aarch64", False, PASS),
        ("2.0.0", "2", "linux-aarch64", "aarch64", False, None),  # guards not recorded
    ]
    for i, (version, v, platform, arch, evil, guards) in enumerate(plan):
        pre = prefix(base / f"p{i}", v, arch=arch, evil=evil)
        st.publish(write_demo_asset(pre, "demo", version, platform, base / "dist", guards))
    other = prefix(base / "other", "3")
    st.publish(write_demo_asset(other, "zlite", "0.9.0", "linux-x86_64", base / "dist", PASS),
               release="v0.9.0")
    return folder


@pytest.fixture(scope="module")
def report(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    assert main(["report", "--store", f"file://{store}", "--out", str(out)]) == 0
    return out / "index.html"


def test_report_holds_the_matrix_and_diffs(report: Path) -> None:
    html = report.read_text()
    assert "<script" not in html.lower()  # no JavaScript at all, and nothing injected
    head = html[html.index("<table class=\"matrix\">"): html.index("</table>")]
    assert re.findall(r"<th>(linux-[a-z0-9_]+)</th>", head) == ["linux-aarch64", "linux-x86_64"]
    for text in ("demo", "zlite", "2.0.0", "1.1.0", "1.0.0", "0.9.0", "glibc_max", "2.38",
                 "aarch64", "check: pass", "link test: fail", "link test: not recorded",
                 "vs 1.1.0: ", "vs 1.0.0: ", "toolchain"):
        assert text in head, text
    # the removed export with a markup name is shown, escaped, in the 1.0.0 -> 1.1.0 diff
    assert ESCAPED in html
    diff = html[html.index("1.0.0 → 1.1.0 · linux-x86_64"):]
    assert ESCAPED in diff[: diff.index("</section>")]
    assert "<svg" in html and "size per version" in html


def test_report_names_the_release_tag_of_each_asset(report: Path) -> None:
    html = report.read_text()
    head = html[html.index("<table class=\"matrix\">"): html.index("</table>")]
    cells = re.findall(r"<td>(.*?)</td>", head, re.S)
    zlite = [c for c in cells if "v0.9.0" in c]
    assert zlite and "<dt>release</dt><dd>v0.9.0</dd>" in zlite[0]
    from prebake.store.base import DEFAULT_RELEASE

    others = [c for c in cells if "<dt>release</dt>" in c and "v0.9.0" not in c]
    assert len(others) == 5  # the five demo assets, each in the store's default release
    assert all(f"<dt>release</dt><dd>{DEFAULT_RELEASE}</dd>" in c for c in others)


def test_manifests_only_report(store: Path, tmp_path: Path) -> None:
    assert main(["report", "--store", f"file://{store}", "--out", str(tmp_path),
                 "--manifests-only"]) == 0
    html = (tmp_path / "index.html").read_text()
    diff = html[html.index("1.0.0 → 2.0.0 · linux-aarch64"):]
    diff = diff[: diff.index("</section>")]
    assert "floor raised" in diff and "glibc_max" in diff  # facts come from the manifests
    assert "export removed" not in html  # exports need the assets themselves
    # the same store gives the same bytes (no timestamps, no random chart ids)
    assert main(["report", "--store", f"file://{store}", "--out", str(tmp_path / "again"),
                 "--manifests-only"]) == 0
    assert (tmp_path / "again" / "index.html").read_text() == html


def test_empty_store_report(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["report", "--store", f"file://{tmp_path / 'empty'}", "--out",
                 str(tmp_path / "o")]) == 0
    assert "no complete assets" in (tmp_path / "o" / "index.html").read_text()
    # a mistyped local store is an error, not an empty report
    assert main(["report", "--store", f"file://{tmp_path / 'nope'}", "--out",
                 str(tmp_path / "o2")]) == 2
    assert not (tmp_path / "o2" / "index.html").exists()


def chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is missing: run scripts/bootstrap"
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1400,900", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line]


def test_console_check_catches_a_broken_page(tmp_path: Path) -> None:
    """The harness itself: a page that throws must show up as a console error."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><title>x</title><script>undefinedThing();</script>")
    proc = chromium(page, tmp_path, "--dump-dom")
    assert console_errors(proc.stderr), proc.stderr[-2000:]


def test_report_renders_in_chromium(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = chromium(report, tmp_path, f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_errors(proc.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    dom = chromium(report, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and console_errors(dom.stderr) == []
    assert "Release matrix" in dom.stdout and "linux-aarch64" in dom.stdout
    assert ESCAPED in dom.stdout  # text in the DOM, not an element
    assert "<script" not in dom.stdout.lower()


def test_a_pinned_toolchain_shows_what_really_ran_too() -> None:
    from prebake.manifest import Toolchain
    from prebake.report.html import _toolchain

    line = "emcc (Emscripten gcc/clang-like replacement + linker emulating GNU ld) 3.1.6 ()"
    tc = {"pin": "emsdk", "pin_version": "5.0.5", "version": line}
    shown = _toolchain(Toolchain.from_json(tc))
    # the whole identity: the release number is at the end of emcc's line, never cut off
    assert shown == f"emsdk 5.0.5 ({line})"
    assert _toolchain(Toolchain.from_json({"cc": ["gcc"], "version": "gcc 12.2.0"})
                      ) == "gcc 12.2.0"
