"""Sources: the verified download cache with mirrors, git checkouts by tag/commit with
submodules, local folders, and unpacking with leading-folder stripping."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from prebake.errors import PrebakeError
from prebake.model.recipe import GitSource, LocalSource, UrlSource
from prebake.sources import SourceCache, describe, git_commands, materialize, render_source
from prebake.sources import cache as cache_mod
from tests.servers.static_http import closed_port_url


def _closed_url() -> str:
    return f"{closed_port_url()}/gone.tar.gz"


def make_tgz(path: Path, top: str = "lib-1.0") -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in ((f"{top}/src/a.c", b"int a;\n"), (f"{top}/LICENSE", b"MIT\n")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def test_download_tries_mirrors_in_order_and_caches_by_content(
        www: tuple[str, Path], tmp_path: Path) -> None:
    base, root = www
    sha = make_tgz(root / "lib-1.0.tar.gz")
    (root / "bad.tar.gz").write_bytes(b"tampered")
    logs: list[str] = []
    cache = SourceCache(tmp_path / "cache")
    got = cache.fetch([_closed_url(), f"{base}/bad.tar.gz", f"{base}/lib-1.0.tar.gz"], sha,
                      logs.append)
    assert got == tmp_path / "cache" / "sources" / sha
    assert hashlib.sha256(got.read_bytes()).hexdigest() == sha
    assert any("trying the next mirror" in m for m in logs)
    assert any(f"{base}/bad.tar.gz sent sha256" in m and f"prebake.sources.lock has {sha}" in m
               for m in logs)
    # a second fetch never touches the network: every URL is dead now
    (root / "lib-1.0.tar.gz").unlink()
    assert cache.fetch([_closed_url()], sha) == got
    assert [p.name for p in got.parent.iterdir()] == [sha], "no partial files left"


def test_all_mirrors_failing_names_each_and_leaves_no_entry(
        www: tuple[str, Path], tmp_path: Path) -> None:
    base, root = www
    (root / "x.tar.gz").write_bytes(b"not it")
    cache = SourceCache(tmp_path / "cache")
    gone = _closed_url()
    with pytest.raises(PrebakeError) as err:
        cache.fetch([gone, f"{base}/x.tar.gz", f"{base}/missing.tar.gz"], "a" * 64)
    text = str(err.value)
    assert "gone.tar.gz" in text and "404" in text
    assert f"{base}/x.tar.gz sent sha256 " in text and "not the lock's" in text
    assert text.startswith(f"{gone}: no mirror served the file prebake.sources.lock "
                           f"pins (sha256 {'a' * 64}); tried: ")
    assert list((tmp_path / "cache" / "sources").iterdir()) == []


def test_corrupt_cache_entry_is_discarded_and_fetched_again(
        www: tuple[str, Path], tmp_path: Path) -> None:
    base, root = www
    sha = make_tgz(root / "lib-1.0.tar.gz")
    cache = SourceCache(tmp_path / "cache")
    entry = cache.fetch([f"{base}/lib-1.0.tar.gz"], sha)
    entry.write_bytes(b"bit rot")
    assert cache.lookup(sha) is None and not entry.exists()
    again = cache.fetch([f"{base}/lib-1.0.tar.gz"], sha)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == sha


def test_interrupted_download_leaves_no_entry(www: tuple[str, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    base, root = www
    sha = make_tgz(root / "lib-1.0.tar.gz")
    real = cache_mod._download

    def interrupted(url: str, tmp: Path, limit: int, headers: Any = None) -> str:
        real(url, tmp, limit, headers)
        raise KeyboardInterrupt

    monkeypatch.setattr(cache_mod, "_download", interrupted)
    cache = SourceCache(tmp_path / "cache")
    with pytest.raises(KeyboardInterrupt):
        cache.fetch([f"{base}/lib-1.0.tar.gz"], sha)
    assert list((tmp_path / "cache" / "sources").iterdir()) == []


def test_bad_pin_is_refused_before_any_download(tmp_path: Path) -> None:
    with pytest.raises(PrebakeError, match="64 lowercase hex"):
        SourceCache(tmp_path).fetch(["http://127.0.0.1:1/x"], "UNVERIFIED-x")


def test_url_source_unpacks_with_strip_components(www: tuple[str, Path], tmp_path: Path
                                                  ) -> None:
    base, root = www
    sha = make_tgz(root / "lib-1.0.tar.gz")
    src = render_source(UrlSource(url=_closed_url(), sha256=sha,
                                  mirrors=(f"{base}/lib-{{version}}.tar.gz",)), "1.0", {})
    assert isinstance(src, UrlSource) and src.mirrors == (f"{base}/lib-1.0.tar.gz",)
    work = tmp_path / "work"
    out = materialize(src, work, tmp_path, SourceCache(tmp_path / "cache"))
    assert (out / "src" / "a.c").read_text() == "int a;\n"
    assert (out / "LICENSE").is_file()


def _git(*args: str, cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_ALLOW_PROTOCOL": "file"}
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd,
                          env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repo with a submodule, tagged v1.0 at the first commit, one more commit after it."""
    sub = tmp_path / "sub"
    sub.mkdir()
    _git("init", "-q", "-b", "main", cwd=sub)
    (sub / "dep.h").write_text("#define DEP 1\n")
    _git("add", ".", cwd=sub)
    _git("commit", "-qm", "dep", cwd=sub)
    main = tmp_path / "main"
    main.mkdir()
    _git("init", "-q", "-b", "main", cwd=main)
    (main / "lib.c").write_text("int v = 1;\n")
    _git("submodule", "add", "-q", str(sub), "third_party/dep", cwd=main)
    _git("add", ".", cwd=main)
    _git("commit", "-qm", "v1", cwd=main)
    _git("tag", "v1.0", cwd=main)
    first = _git("rev-parse", "HEAD", cwd=main)
    (main / "lib.c").write_text("int v = 2;\n")
    _git("commit", "-qam", "v2", cwd=main)
    return main, first, _git("rev-parse", "HEAD", cwd=main)


def _git_runner(cmd: Any, cwd: Path) -> None:
    _git(*list(cmd)[1:], cwd=cwd)


def test_git_tag_with_recursive_submodules(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    main, first, _ = repo
    src = render_source(GitSource(url=f"file://{main}", ref="v{version}"), "1.0", {})
    out = materialize(src, tmp_path / "w", tmp_path, SourceCache(tmp_path / "c"),
                      run=_git_runner)
    assert (out / "lib.c").read_text() == "int v = 1;\n"
    assert (out / "third_party" / "dep" / "dep.h").read_text() == "#define DEP 1\n"
    assert _git("rev-parse", "HEAD", cwd=out) == first


def test_git_full_commit_shallow(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    main, _, second = repo
    src = GitSource(url=f"file://{main}", ref=second, shallow=True, submodules=False)
    cmds = git_commands(src, tmp_path / "w" / "src")
    assert ["fetch", "-q", "--depth", "1", "origin", second] == cmds[2][3:]
    out = materialize(src, tmp_path / "w", tmp_path, SourceCache(tmp_path / "c"),
                      run=_git_runner)
    assert (out / "lib.c").read_text() == "int v = 2;\n"
    assert _git("rev-list", "--count", "HEAD", cwd=out) == "1", "shallow: one commit"
    assert not (out / "third_party" / "dep" / "dep.h").exists()


def test_git_unknown_ref_fails_in_one_line(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    main, _, _ = repo
    with pytest.raises(PrebakeError, match=r"v9\.9"):
        materialize(GitSource(url=f"file://{main}", ref="v9.9"), tmp_path / "w", tmp_path,
                    SourceCache(tmp_path / "c"))


def test_local_source_and_describe(tmp_path: Path) -> None:
    folder = tmp_path / "recipes" / ".." / "src" / "lib"
    folder.mkdir(parents=True)
    (folder / "a.c").write_text("int a;\n")
    src = LocalSource("../src/lib")
    work = tmp_path / "work"
    out = materialize(src, work, tmp_path / "recipes", SourceCache(tmp_path / "c"))
    assert (out / "a.c").read_text() == "int a;\n"
    (tmp_path / "recipes").mkdir(exist_ok=True)
    (line,) = describe(src, work, tmp_path / "recipes", SourceCache(tmp_path / "c"))
    assert line == f"copy {(tmp_path / 'src' / 'lib').resolve()} -> {work / 'src'}"
    with pytest.raises(PrebakeError, match="leaves the work dir"):
        materialize(LocalSource("../src/lib", dest="../escape"), work, tmp_path / "recipes",
                    SourceCache(tmp_path / "c"))


def test_two_units_fetching_at_once_each_log_only_their_own_lines(
        www: tuple[str, Path], tmp_path: Path) -> None:
    """Units in parallel share one source cache; each passes its own build log. Both are held
    mid-fetch at once (a barrier in the log), so a log kept on the shared cache would take the
    other unit's lines."""
    import threading

    from prebake.bake.process import BuildLog

    base, root = www
    cache = SourceCache(tmp_path / "cache")
    together = threading.Barrier(2, timeout=30)
    logs = {u: BuildLog(tmp_path / f"{u}.log") for u in ("one", "two")}
    errors: list[BaseException] = []

    def unit(name: str) -> None:
        sha = make_tgz(root / f"{name}.tar.gz", top=name)
        (root / f"{name}-bad.tar.gz").write_bytes(b"tampered " + name.encode())
        first = [True]

        def log(line: str) -> None:
            logs[name].write(line)
            if first[0]:  # the other unit is fetching too, from now on
                first[0] = False
                together.wait()

        try:
            cache.fetch([f"{base}/{name}-bad.tar.gz", f"{base}/{name}.tar.gz"], sha, log)
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=unit, args=(n,)) for n in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for name, log in logs.items():
        log.close()
        text = log.path.read_text()
        other = "two" if name == "one" else "one"
        assert f"{base}/{name}-bad.tar.gz sent sha256" in text
        assert f"downloaded {base}/{name}.tar.gz" in text
        assert f"/{other}" not in text, text


class _Endless:
    """A loopback server whose one file never ends (no Content-Length, or a false one): a
    hostile mirror. ``sent`` counts the bytes it managed to write."""

    def __init__(self, announce: int | None) -> None:
        from http.server import BaseHTTPRequestHandler

        from tests.servers.static_http import LoopbackServer, Running

        outer = self
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection does

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                if announce is not None:
                    self.send_header("Content-Length", str(announce))
                self.end_headers()
                block = b"\0" * 65536
                try:
                    for _ in range(1 << 14):  # 1 GiB at most, never reached
                        self.wfile.write(block)
                        outer.sent += len(block)
                except OSError:
                    pass

        self.running = Running(LoopbackServer(("127.0.0.1", 0), Handler))

    def __enter__(self) -> str:
        self.running.__enter__()
        return self.running.url

    def __exit__(self, *exc: object) -> None:
        self.running.__exit__()


@pytest.mark.parametrize("announce", [None, 294, 1 << 30])
def test_a_download_stops_at_the_locked_size(tmp_path: Path, announce: int | None) -> None:
    """The lock says 294 bytes: a mirror that sends more (announced or not, honestly or not)
    is cut at byte 295, nothing is kept, and the error is one line."""
    import time

    cache = SourceCache(tmp_path / "cache")
    endless = _Endless(announce)
    with endless as url:
        t0 = time.monotonic()
        with pytest.raises(PrebakeError) as err:
            cache.fetch([f"{url}/x.tar.gz"], "0" * 64, size=294)
        took = time.monotonic() - t0
    message = str(err.value)
    assert "\n" not in message
    # announced honestly as 294: the client reads those (no byte more) and the digest decides
    assert ("not the lock's" if announce == 294
            else "294 bytes prebake.sources.lock records") in message, message
    assert took < 10 and endless.sent < 64 << 20, (took, endless.sent)
    assert list((tmp_path / "cache" / "sources").iterdir()) == []


def test_the_locked_size_reaches_the_source(tmp_path: Path) -> None:
    from prebake.model.recipe import Build, Recipe
    from prebake.sources.lock import Locked, SourceLock, locked_recipe

    url = "http://127.0.0.1:1/lib-1.0.tar.gz"
    recipe = Recipe(name="lib", pin="lib", sources=(UrlSource("http://127.0.0.1:1/lib-{version}"
                                                              ".tar.gz"),),
                    platforms={"*": Build(commands=("true",))})
    lock = SourceLock(tmp_path / "prebake.sources.lock", {url: Locked(url, "a" * 64, 294)})
    got, problems = locked_recipe(recipe, "p", "linux", "x86_64", {"lib": "1.0"}, lock)
    (src,) = got.sources
    assert not problems and isinstance(src, UrlSource) and src.size == 294


def test_url_source_members_from_a_real_debian_package(www: tuple[str, Path],
                                                       tmp_path: Path) -> None:
    """A -dev package standing in for one header library: only the listed paths land, and
    the dry run says so."""
    base, root = www
    pkg = tmp_path / "pkg"
    for rel, text in (("usr/include/one/one.h", "int one;\n"), ("usr/include/two/two.h", "x\n"),
                      ("usr/lib/cmake/one/one-config.cmake", "# one\n")):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    (pkg / "DEBIAN").mkdir()
    (pkg / "DEBIAN/control").write_text("Package: libone-dev\nVersion: 1.0\nArchitecture: all\n"
                                        "Maintainer: t <t@example.invalid>\nDescription: t\n")
    subprocess.run(["dpkg-deb", "-Zxz", "--root-owner-group", "--build", str(pkg),
                    str(root / "libone-dev_1.0_all.deb")], check=True, capture_output=True)
    sha = hashlib.sha256((root / "libone-dev_1.0_all.deb").read_bytes()).hexdigest()
    src = UrlSource(url=f"{base}/libone-dev_1.0_all.deb", sha256=sha, dest="deps/one",
                    members=("include/one", "lib/cmake/one"))
    work = tmp_path / "work"
    cache = SourceCache(tmp_path / "cache")
    assert "(strip 1, only include/one, lib/cmake/one)" in describe(src, work, tmp_path, cache)[1]
    out = materialize(src, work, tmp_path, cache)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "include/one/one.h", "lib/cmake/one/one-config.cmake"]
    with pytest.raises(PrebakeError, match="no member at 'include/three'"):
        materialize(UrlSource(url=src.url, sha256=sha, dest="deps/one",
                              members=("include/three",)), work, tmp_path, cache)
