"""No secret in anything a real build and its publish write or print.

A workspace whose recipe downloads a real small C source from 127.0.0.1 with a token in the
URL's userinfo and two in its query (``?token=``, ``X-Amz-Signature=``), and checks out a git
repository served over HTTP (git's dumb protocol, a static server) with a token in its URL.
The environment has proxies with credentials — one without a scheme, one whose password holds
an ``@`` — pointing at that same server (it answers proxied requests too, so the downloads go
through it), a ``GH_TOKEN``, and the platform's ``env`` table sets an ``NPM_TOKEN``; one build
command prints its whole environment into the log.

``pin``, ``plan``, ``build --dry-run`` (text and ``--json``), ``build`` (publishing to a
``file://`` store), ``plan --explain`` and ``pin --check`` run; then every line they printed,
and every file they wrote — the source lock, the build's work trees and logs, the source
cache, the store, and each member inside the tar.xz asset — is searched for each secret.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.servers.static_http import StaticServer

PLATFORM = "linux-x86_64"
URL_TOKEN = "ghp_UrlT0kenInUserinfo91"
QUERY_TOKEN = "QueryT0ken-55aa"
SIGNATURE = "f00dfacecafe5151deadbeef"
GIT_TOKEN = "glpat-GitT0kenZ8x"
PROXY_PASSWORD = "PxPass77q"  # in http_proxy, which has no scheme
AT_PASSWORD = "Secret@77zz"  # in HTTPS_PROXY: a password holding '@'
GH_TOKEN = "gho_EnvT0ken4242"
NPM_TOKEN = "npm_T0kenValue-77xq"
SECRETS = (URL_TOKEN, QUERY_TOKEN, SIGNATURE, GIT_TOKEN, PROXY_PASSWORD, AT_PASSWORD,
           "Secret@77", GH_TOKEN, NPM_TOKEN)

MINI_C = "#include \"mini.h\"\nint mini_add(int a, int b) { return a + b; }\n"

RECIPE = """\
from prebake.recipes import Build, GitSource, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="mini",
    pin="mini",
    sources=(
        UrlSource({url!r}),
        GitSource({git!r}, ref="v{{pins[helper]}}", submodules=False, dest="helper"),
    ),
    platforms={{"*": Build(commands=(
        "sh -c env",
        "cmake -E make_directory {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -I{{src}} -I{{work}}/helper -c {{src}}/mini.c -o {{build}}/mini.o",
        "{{ar}} rcs {{prefix}}/lib/libmini.a {{build}}/mini.o",
        "cmake -E copy {{src}}/mini.h {{prefix}}/include/mini.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libmini.a",)}}, headers=("include/mini.h",),
                    license="LICENSE"),
)
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _tarball(path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in (("mini-1.0/mini.c", MINI_C.encode()),
                           ("mini-1.0/mini.h", b"int mini_add(int, int);\n"),
                           ("mini-1.0/LICENSE", b"MIT\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StaticServer, Path]]:
    root = tmp_path_factory.mktemp("upstream")
    _tarball(root / "mini-1.0.tar.gz")
    work = root.parent / "helper-work"
    work.mkdir()
    (work / "helper.h").write_text("#define HELPER 1\n")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "helper 0.4")
    _git(work, "tag", "v0.4")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "helper.git")],
                   check=True)
    _git(root / "helper.git", "update-server-info")  # git's dumb HTTP protocol: static files
    with StaticServer(root) as server:
        yield server, root


@pytest.fixture(scope="module")
def run(upstream: tuple[StaticServer, Path], tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Path, list[Path], str]:
    """The workspace, the folders the commands may write, and everything they printed."""
    server, _root = upstream
    host = server.url.removeprefix("http://")
    base = tmp_path_factory.mktemp("secrets-e2e")
    ws = base / "ws"
    (ws / "recipes").mkdir(parents=True)
    toml = support.gcc_workspace("secretdemo", 'mini = "1.0"\nhelper = "0.4"', "core",
                                 '["mini"]', env_unset=("CFLAGS", "LDFLAGS"), more="")
    toml = toml.replace("[platforms.linux-x86_64.toolchain]",
                        f'[platforms.linux-x86_64.env]\nNPM_TOKEN = "{NPM_TOKEN}"\n\n'
                        "[platforms.linux-x86_64.toolchain]")
    (ws / "prebake.toml").write_text(toml)
    url = (f"http://x-access-token:{URL_TOKEN}@{host}/mini-{{version}}.tar.gz"
           f"?token={QUERY_TOKEN}&X-Amz-Signature={SIGNATURE}&v=1")
    git = f"http://oauth2:{GIT_TOKEN}@{host}/helper.git"
    (ws / "recipes" / "mini.py").write_text(RECIPE.format(url=url, git=git))
    cache = base / "cache"
    env = {"PREBAKE_CACHE": str(cache), "GH_TOKEN": GH_TOKEN,
           "http_proxy": f"proxyuser:{PROXY_PASSWORD}@{host}",
           "HTTPS_PROXY": f"http://proxyuser:{AT_PASSWORD}@{host}",
           "GIT_TERMINAL_PROMPT": "0"}
    printed: list[str] = []

    def prebake(*args: str, ok: tuple[int, ...] = (0,)) -> str:
        proc = support.prebake("-C", ws, *args, env=env, timeout=600)
        printed.append(proc.stdout + proc.stderr)
        assert proc.returncode in ok, f"{args}: {proc.stdout}{proc.stderr}"
        return proc.stdout

    before = len(server.requests)
    prebake("pin", "mini", "1.0")
    assert len(server.requests) > before  # the download and ls-remote reached the server
    prebake("plan")
    prebake("plan", "--json")
    prebake("build", "--dry-run")
    prebake("build", "--dry-run", "--json")
    prebake("build")
    prebake("plan", "--explain", f"mini/{PLATFORM}")
    # the manifest records its inputs redacted, and the plan compares them the same way: a
    # token in a URL is no change
    explain = json.loads(prebake("plan", "--explain", f"mini/{PLATFORM}", "--json"))
    assert explain["unit"]["status"] == "built" and explain["unit"]["changed"] == [], explain
    prebake("pin", "--check")
    # through the proxy (an absolute URL in the request line): the tarball and git's fetches
    proxied = [r for r in server.requests if r.startswith("http://")]
    assert any("/mini-1.0.tar.gz" in r for r in proxied), server.requests
    assert any("/helper.git/" in r for r in proxied), server.requests
    return ws, [ws / ".prebake", ws / "releases", cache], "\n".join(printed)


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_nothing_printed_holds_a_secret(run: tuple[Path, list[Path], str]) -> None:
    _ws, _folders, printed = run
    assert "fetching" in printed or "mini" in printed
    assert _leaks(printed) == []


def test_no_written_file_holds_a_secret(run: tuple[Path, list[Path], str]) -> None:
    ws, folders, _printed = run
    assets = list((ws / "releases").rglob("*.tar.xz"))
    assert assets, "the build published its asset to the file store"
    log = next((ws / ".prebake" / "logs").glob("*.log")).read_text()
    # the log still says what happened: the URL (masked), the proxy host, the env the
    # command printed
    assert "***@127.0.0.1" in log and "NPM_TOKEN=***" in log, log
    leaks: dict[str, list[str]] = {}
    seen = 0
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_symlink() or not path.is_file():
                continue
            seen += 1
            data = path.read_bytes().decode("utf-8", "replace")
            for s in _leaks(data):
                leaks.setdefault(s, []).append(str(path.relative_to(folder.parent)))
            if path.name.endswith(".tar.xz"):
                with tarfile.open(path) as tf:
                    for member in tf.getmembers():
                        fh = tf.extractfile(member) if member.isfile() else None
                        if fh is None:
                            continue
                        for s in _leaks(fh.read().decode("utf-8", "replace")):
                            leaks.setdefault(s, []).append(f"{path.name}:{member.name}")
    assert seen > 20
    assert leaks == {}
    # the source lock `pin` wrote is committed: it names each URL with its credentials masked
    lock = (ws / "prebake.sources.lock").read_text()
    assert "***@127.0.0.1" in lock and "token=***" in lock, lock
    assert _leaks(lock) == []


def test_the_checkout_keeps_the_code_but_not_the_token(run: tuple[Path, list[Path], str]
                                                       ) -> None:
    ws, _folders, _printed = run
    (helper,) = (ws / ".prebake" / "work").rglob("helper/helper.h")
    assert helper.read_text() == "#define HELPER 1\n"
    config = (helper.parent / ".git" / "config").read_text()
    assert "127.0.0.1" in config and GIT_TOKEN not in config
