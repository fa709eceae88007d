"""The bump workflow on a real source tarball: ``prebake pin`` moves a workspace from zstd 1.5.4
to 1.5.7 (Debian's ``.orig.tar.xz`` files, served on 127.0.0.1), the source lock follows, and
the rebuilt asset holds the new version; a pin edited by hand is refused before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.servers.static_http import StaticServer

ORIG = {"1.5.4": "1.5.4+dfsg2", "1.5.7": "1.5.7+dfsg"}  # Debian 12 and Debian 13

# zstd's common layer from its real source tarball, for the host (C only: no CXXFLAGS cleared;
# the default store).
TOML = support.gcc_workspace(
    "zstd-sdk", 'zstd = "1.5.4"  # bumped with `prebake pin zstd VERSION`', "deps", '["zstd"]',
    env_unset=("CFLAGS", "CPPFLAGS", "LDFLAGS"), more="", tail="")

RECIPE = '''\
"""zstd's lib/common (the version string, errors, entropy tables) as a static library."""

from prebake.recipes import Build, Outputs, Recipe, Snippet, UrlSource

COMMON = ("debug", "entropy_common", "error_private", "fse_decompress", "pool", "threading",
          "xxhash", "zstd_common")

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    sources=(UrlSource("{base}/zstd-{{version}}.tar.xz",
                       mirrors=("{down}/zstd-{{version}}.tar.xz",)),),
    platforms={{"*": Build(commands=(
        "cmake -E make_directory {{build}}/obj {{prefix}}/lib {{prefix}}/include",
        *(f"{{{{cc}}}} -O1 -fPIC -I{{{{src}}}}/lib -c {{{{src}}}}/lib/common/{{c}}.c"
          f" -o {{{{build}}}}/obj/{{c}}.o" for c in COMMON),
        "{{ar}} rcs {{prefix}}/lib/libzstd.a "
        + " ".join(f"{{{{build}}}}/obj/{{c}}.o" for c in COMMON),
        "cmake -E copy {{src}}/lib/zstd.h {{src}}/lib/zstd_errors.h {{prefix}}/include",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libzstd.a",)}}, headers=("include/zstd.h",),
                    license="LICENSE"),
    link_test=Snippet(code="#include <zstd.h>\\nint main(void) {{ return ZSTD_versionNumber() "
                           "!= ZSTD_VERSION_NUMBER; }}\\n", lang="c",
                      symbols=("ZSTD_versionNumber",)),
)
'''


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Both releases, named as upstream names them, on a loopback HTTP server."""
    root = tmp_path_factory.mktemp("upstream")
    for version, debian in ORIG.items():
        shutil.copyfile(support.debian_orig("libzstd", debian), root / f"zstd-{version}.tar.xz")
    with StaticServer(root) as server:
        yield server.url, root


def _ws(tmp_path: Path, base: str) -> Path:
    from tests.servers.static_http import closed_port_url

    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(TOML)
    (ws / "recipes" / "zstd.py").write_text(RECIPE.format(base=base, down=closed_port_url()))
    return ws


def _lock(ws: Path) -> dict[str, tuple[str, int]]:
    data = tomllib.loads((ws / "prebake.sources.lock").read_text())
    return {e["url"]: (e["sha256"], e["size"]) for e in data.get("source", [])}


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _assets(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "releases").rglob("*.tar.xz")) \
        if (ws / "releases").exists() else []


def _release(asset: Path) -> str:
    with tarfile.open(asset) as tf:
        f = tf.extractfile("include/zstd.h")
        assert f is not None
        header = f.read().decode()
    parts = [re.search(rf"#define ZSTD_VERSION_{k}\s+(\d+)", header) for k in
             ("MAJOR", "MINOR", "RELEASE")]
    return ".".join(m[1] for m in parts if m)


def test_pin_moves_the_workspace_and_the_lock(upstream: tuple[str, Path], tmp_path: Path
                                               ) -> None:
    base, root = upstream
    ws = _ws(tmp_path, base)
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}

    # no lock yet: refused at plan, naming the exact command
    plan = support.prebake("-C", ws, "plan", env=env)
    assert plan.returncode == 2 and "run `prebake pin zstd 1.5.4`" in plan.stderr
    pin = support.prebake("-C", ws, "pin", "zstd", "1.5.4", env=env)
    assert pin.returncode == 0, pin.stderr
    old_url = f"{base}/zstd-1.5.4.tar.xz"
    old = root / "zstd-1.5.4.tar.xz"
    assert _lock(ws) == {old_url: (_sha(old), old.stat().st_size)}
    build = support.prebake("-C", ws, "build", env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    (first,) = _assets(ws)
    assert first == "zstd-1.5.4-linux-x86_64.tar.xz"
    assert _release(next((ws / "releases").rglob(first))) == "1.5.4"

    # a pin edited by hand: plan and build refuse, nothing is downloaded or published
    toml = ws / "prebake.toml"
    text = toml.read_text()
    toml.write_text(text.replace('zstd = "1.5.4"', 'zstd = "1.5.7"'))
    for cmd in ("plan", "build"):
        proc = support.prebake("-C", ws, cmd, env=env)
        assert proc.returncode == 2, proc.stdout
        assert "prebake.sources.lock" in proc.stderr
        assert f"{base}/zstd-1.5.7.tar.xz" in proc.stderr
        assert "run `prebake pin zstd 1.5.7`" in proc.stderr
    assert _assets(ws) == [first]
    toml.write_text(text)

    # `prebake pin` is the bump: the pin moves (its comment kept), the lock follows
    pin = support.prebake("-C", ws, "pin", "zstd", "1.5.7", env=env)
    assert pin.returncode == 0, pin.stderr
    assert 'zstd = "1.5.7"  # bumped with `prebake pin zstd VERSION`' in toml.read_text()
    assert toml.read_text() == text.replace('zstd = "1.5.4"', 'zstd = "1.5.7"')
    new = root / "zstd-1.5.7.tar.xz"
    assert _lock(ws) == {f"{base}/zstd-1.5.7.tar.xz": (_sha(new), new.stat().st_size)}
    assert (tmp_path / "cache" / "sources" / _sha(new)).is_file()  # downloaded once, cached
    check = support.prebake("-C", ws, "pin", "--check", env=env)
    assert check.returncode == 0, check.stdout
    # plan --explain compares with the previous version's asset: the pin and the source moved
    explain = support.prebake("-C", ws, "plan", "--explain", "zstd/linux-x86_64", env=env)
    assert explain.returncode == 0, explain.stderr
    assert ("Changed since the previous version's asset `zstd-1.5.4-linux-x86_64.tar.xz`"
            in explain.stdout)
    assert "| pin:zstd | `1.5.4` | `1.5.7` |" in explain.stdout
    assert f"`{old_url} sha256={_sha(old)}` | `{base}/zstd-1.5.7.tar.xz sha256={_sha(new)}`" \
        in explain.stdout
    # build --diff: zstd 1.5.5 made ZSTD_customMalloc & co. static inline; no installed header
    # declares them, so their removal is internal and the bump is compatible
    summary = tmp_path / "summary.md"
    build = support.prebake("-C", ws, "build", "--diff", "--json",
                            env={**env, "GITHUB_STEP_SUMMARY": str(summary)})
    assert build.returncode == 0, build.stdout + build.stderr
    (unit,) = json.loads(build.stdout)["units"]
    diff = unit["diff"]
    assert diff["breaking"] is False
    internal = sorted(c["subject"] for c in diff["changes"]
                      if c["category"] == "export" and c["reason"].startswith("internal"))
    assert internal == ["ZSTD_customCalloc", "ZSTD_customFree", "ZSTD_customMalloc"]
    assert "ZSTD_customMalloc" in summary.read_text()
    assert _assets(ws) == [first, "zstd-1.5.7-linux-x86_64.tar.xz"]
    asset = next((ws / "releases").rglob("zstd-1.5.7-linux-x86_64.tar.xz"))
    assert _release(asset) == "1.5.7"  # the new version's bytes, not the old tarball's
    with tarfile.open(asset) as tf:
        f = tf.extractfile("lib/libzstd.a")
        assert f is not None and b"1.5.7" in f.read()


def test_pin_resumes_a_cut_download(upstream: tuple[str, Path], tmp_path: Path) -> None:
    """The first attempt is cut mid-body; the second asks only for the rest (HTTP Range)."""
    _base, root = upstream
    with StaticServer(root) as server:
        ws = _ws(tmp_path, server.url)
        env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
        server.drop_after = 500_000
        first = support.prebake("-C", ws, "pin", "zstd", "1.5.4", env=env)
        assert first.returncode == 1 and "pending" in first.stdout
        again = support.prebake("-C", ws, "pin", "zstd", "1.5.4", env=env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert any(r.endswith("bytes=500000-") for r in server.requests), server.requests
    tarball = root / "zstd-1.5.4.tar.xz"
    assert _lock(ws) == {f"{server.url}/zstd-1.5.4.tar.xz": (_sha(tarball),
                                                             tarball.stat().st_size)}


GH_RECIPE = '''\
from prebake.recipes import Build, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    sources=(UrlSource("https://github.com/facebook/zstd/releases/download/v{{version}}/"
                       "zstd-{{version}}.tar.xz", mirrors=("{base}/zstd-{{version}}.tar.xz",)),),
    platforms={{"*": Build(commands=("true",))}},
    outputs=Outputs(libs={{"*": ("lib/libzstd.a",)}}),
)
'''


def test_a_github_release_asset_is_compared_with_the_api_digest(
        upstream: tuple[str, Path], tmp_path: Path) -> None:
    """github.com is not reachable here, so the archive comes from the mirror; the digest
    GitHub's API publishes for the release asset (a local API) must match it."""
    import json as _json

    base, root = upstream
    api = tmp_path / "api"
    release = api / "repos" / "facebook" / "zstd" / "releases" / "tags" / "v1.5.7"
    release.parent.mkdir(parents=True)
    ws = _ws(tmp_path, base)
    (ws / "recipes" / "zstd.py").write_text(GH_RECIPE.format(base=base))
    before = (ws / "prebake.toml").read_text()
    with StaticServer(api) as server:
        env = {"PREBAKE_CACHE": str(tmp_path / "cache"), "PREBAKE_GITHUB_API": server.url}
        release.write_text(_json.dumps({"assets": [
            {"name": "zstd-1.5.7.tar.xz", "digest": "sha256:" + "0" * 64}]}))
        bad = support.prebake("-C", ws, "pin", "zstd", "1.5.7", env=env)
        assert bad.returncode == 2, bad.stdout + bad.stderr
        assert "GitHub publishes " + "0" * 64 in bad.stderr and "nothing written" in bad.stderr
        assert (ws / "prebake.toml").read_text() == before  # nothing written
        assert not (ws / "prebake.sources.lock").exists()
        good = _sha(root / "zstd-1.5.7.tar.xz")
        release.write_text(_json.dumps({"assets": [
            {"name": "zstd-1.5.7.tar.xz", "digest": "sha256:" + good}]}))
        ok = support.prebake("-C", ws, "pin", "zstd", "1.5.7", env=env)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "matches the digest GitHub publishes" in ok.stdout
    url = "https://github.com/facebook/zstd/releases/download/v1.5.7/zstd-1.5.7.tar.xz"
    assert _lock(ws) == {url: (good, (root / "zstd-1.5.7.tar.xz").stat().st_size)}


def test_pin_refuses_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "http://127.0.0.1:9")
    before = (ws / "prebake.toml").read_bytes()
    for args, message in ((("zstdd", "1.5.7"), "no pin 'zstdd' in [pins] (did you mean 'zstd'?)"),
                          (("zstd", "1.5 7"), "is not a version"),
                          (("zstd", "../x"), "is not a version"),
                          (("zstd", "1.5.7", "--platform", "linux-x86-64"),
                           "no such platform (did you mean 'linux-x86_64'?)"),
                          (("--check", "zstd"), "takes no NAME")):
        proc = support.prebake("-C", ws, "pin", *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert (ws / "prebake.toml").read_bytes() == before
    assert not (ws / "prebake.sources.lock").exists()


def test_pin_for_one_platform_leaves_the_others_pending(upstream: tuple[str, Path],
                                                        tmp_path: Path) -> None:
    """``--platform`` locks that platform's URLs; another platform's URL (its own file, by
    ``{arch}``) is recorded as pending with the command that pins it, and only its unit is
    refused."""
    base, root = upstream
    per_arch = root / "arch"
    per_arch.mkdir(exist_ok=True)
    shutil.copyfile(root / "zstd-1.5.4.tar.xz", per_arch / "zstd-1.5.4-x86_64.tar.xz")
    ws = _ws(tmp_path, base)
    recipe = ws / "recipes" / "zstd.py"
    recipe.write_text(recipe.read_text().replace('/zstd-{version}.tar.xz"',
                                                 '/arch/zstd-{version}-{arch}.tar.xz"', 1))
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text() + '\n[platforms.linux-aarch64]\nos = "linux"\n'
                    'arch = "aarch64"\ntoolchain = { cc = "gcc", cxx = "g++", ar = "ar" }\n')
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
    pin = support.prebake("-C", ws, "pin", "zstd", "1.5.4", "--platform", "linux-x86_64",
                          env=env)
    assert pin.returncode == 1, pin.stdout + pin.stderr
    assert "not pinned for linux-aarch64" in pin.stdout
    lock = tomllib.loads((ws / "prebake.sources.lock").read_text())
    assert [e["url"] for e in lock["source"]] == [f"{base}/arch/zstd-1.5.4-x86_64.tar.xz"]
    (pending,) = lock["pending"]
    assert pending["url"] == f"{base}/arch/zstd-1.5.4-aarch64.tar.xz"
    assert pending["command"] == "prebake pin zstd 1.5.4 --platform linux-aarch64"
    check = support.prebake("-C", ws, "pin", "--check", env=env)
    assert check.returncode == 1
    assert check.stdout.startswith("✗ zstd/linux-aarch64: ") and check.stdout.count("✗") == 1
    assert support.prebake("-C", ws, "plan", env=env).returncode == 0  # pending: plan works


FLAGSHIP = support.ROOT / "examples" / "flagship"
FFMPEG_ORIG = "debian:pool/main/f/ffmpeg/ffmpeg_{}.orig.tar.xz"
# sha256 and size of Debian's archives, read by hand before prebake ever saw them
FFMPEG_812 = ("464beb5e7bf0c311e68b45ae2f04e9cc2af88851abb4082231742a74d97b524c", 11710924)


def _hashes(ws: Path, env: dict[str, str]) -> dict[str, str]:
    plan = support.prebake("-C", ws, "plan", "--json", env=env)
    assert plan.returncode == 0, plan.stderr
    return {u["id"]: u["input_hash"] for u in json.loads(plan.stdout)["units"]}


def test_one_pin_is_the_whole_ffmpeg_bump_of_the_flagship(tmp_path: Path) -> None:
    """``prebake pin ffmpeg 8.1.2`` in a copy of the flagship from 7.1.5: the pin moves, the
    provided archive follows it (the workspace's line reads ``{pins[ffmpeg]}``), Debian's
    8.1.2 archive is downloaded into the cache and its digest locked in place of 7.1.5's, and
    only FFmpeg's units change their input hash; nothing else in either file moves."""
    ws = tmp_path / "flagship"
    shutil.copytree(FLAGSHIP, ws, ignore=shutil.ignore_patterns("releases", ".prebake"))
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
    toml, lock = (ws / "prebake.toml").read_text(), _lock(ws)
    assert 'ffmpeg = "7.1.5"' in toml and FFMPEG_ORIG.format("7.1.5") in lock
    before = _hashes(ws, env)

    pin = support.prebake("-C", ws, "pin", "ffmpeg", "8.1.2", env=env, timeout=900)
    assert pin.returncode == 0, pin.stdout + pin.stderr
    new = FFMPEG_ORIG.format("8.1.2")
    assert pin.stdout == ("pinned ffmpeg = 8.1.2 (was 7.1.5) in prebake.toml\n"
                          f"✓ locked {new}  sha256 {FFMPEG_812[0]}  {FFMPEG_812[1]} bytes\n")
    assert (ws / "prebake.toml").read_text() == toml.replace('ffmpeg = "7.1.5"',
                                                             'ffmpeg = "8.1.2"')
    after_lock = _lock(ws)
    assert after_lock == {**{u: e for u, e in lock.items() if u != FFMPEG_ORIG.format("7.1.5")},
                          new: FFMPEG_812}
    assert _sha(tmp_path / "cache" / "sources" / FFMPEG_812[0]) == FFMPEG_812[0]
    assert support.prebake("-C", ws, "pin", "--check", env=env).returncode == 0

    after = _hashes(ws, env)
    assert sorted(after) == sorted(before)
    moved = sorted(u for u in after if after[u] != before[u])
    assert moved == sorted(u for u in after if u.startswith("ffmpeg/")) and moved
    explain = support.prebake("-C", ws, "plan", "--explain", "ffmpeg/linux-x86_64", env=env)
    assert explain.returncode == 0, explain.stderr
    assert f"| url:sources[0] | `{new} sha256={FFMPEG_812[0]}` |" in explain.stdout
    assert "| pin:ffmpeg | `8.1.2` |" in explain.stdout


def test_a_provided_line_for_the_old_release_only_is_named(upstream: tuple[str, Path],
                                                           tmp_path: Path) -> None:
    """A literal provided line stands for its release only: after the bump the new upstream
    URL is downloaded from upstream itself, and ``pin`` says which line to make follow."""
    base, root = upstream
    (root / "debian").mkdir(exist_ok=True)
    shutil.copyfile(root / "zstd-1.5.4.tar.xz", root / "debian" / "zstd_1.5.4.orig.tar.xz")
    ws = _ws(tmp_path, base)
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text() + f'\n[sources.provided]\n"{base}/zstd-1.5.4.tar.xz" = '
                    f'"{base}/debian/zstd_1.5.4.orig.tar.xz"\n')
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
    assert support.prebake("-C", ws, "pin", "zstd", "1.5.4", env=env).returncode == 0
    assert list(_lock(ws)) == [f"{base}/debian/zstd_1.5.4.orig.tar.xz"]
    pin = support.prebake("-C", ws, "pin", "zstd", "1.5.7", env=env)
    assert pin.returncode == 0, pin.stdout + pin.stderr
    assert list(_lock(ws)) == [f"{base}/zstd-1.5.7.tar.xz"]  # upstream's, not a provider's
    assert (f"[sources.provided] maps {base}/zstd-1.5.4.tar.xz (the old zstd) to "
            f"{base}/debian/zstd_1.5.4.orig.tar.xz, but nothing maps {base}/zstd-1.5.7.tar.xz"
            ) in pin.stdout
    assert "write the line with {pins[zstd]} on both sides to follow the pin" in pin.stdout
