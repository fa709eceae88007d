"""Secrets never reach a log, an output or an asset.

A proxy with credentials (on the build environment's allowlist) and a token set in the
platform's ``env`` table go through a real build of the example's core stage; each channel is
read back: the build log, ``build --dry-run`` (text and ``--json``), the manifest (sidecar and
inside the asset), the provenance statement, and an error line quoting a store URL.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests import support
from tests.servers.static_http import closed_port_url

EXAMPLE = support.ROOT / "examples" / "sdk"
PLATFORM = "linux-x86_64"
PASSWORD = "pa55w0rd-Zq81"
TOKEN = "npm_T0kenValue-77xq"
PROXY = f"http://proxyuser:{PASSWORD}@proxy.invalid:3128"
ENV = {"HTTPS_PROXY": PROXY, "http_proxy": PROXY}


def _clean(text: str, channel: str) -> None:
    assert PASSWORD not in text, f"proxy password in {channel}"
    assert TOKEN not in text, f"token in {channel}"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("secrets") / "sdk"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(".prebake", "releases"))
    text = (ws / "prebake.toml").read_text()
    marker = "[platforms.linux-x86_64.toolchain]"
    text = text.replace(marker, f'[platforms.linux-x86_64.env]\nNPM_TOKEN = "{TOKEN}"\n'
                        f'PIP_INDEX_URL = "https://ci:{PASSWORD}@pypi.invalid/simple"\n\n'
                        + marker)
    (ws / "prebake.toml").write_text(text)
    return ws


def test_dry_run_text_and_json_show_no_secret(ws: Path) -> None:
    proc = support.prebake("-C", ws, "build", "--stage", "core", "--platform", PLATFORM,
                           "--dry-run", env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert "HTTPS_PROXY=" in proc.stdout and "proxy.invalid" in proc.stdout  # still shown
    _clean(proc.stdout + proc.stderr, "build --dry-run")
    proc = support.prebake("-C", ws, "build", "--stage", "core", "--platform", PLATFORM,
                           "--dry-run", "--json", env=ENV)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    env = data["units"][0]["steps"][0]["env"]
    assert env["NPM_TOKEN"] == "***" and "proxy.invalid" in env["HTTPS_PROXY"]
    _clean(proc.stdout, "build --dry-run --json")


@pytest.fixture(scope="module")
def built(ws: Path) -> tuple[Path, str]:
    proc = support.prebake("-C", ws, "build", "--stage", "core", "--platform", PLATFORM,
                           "--json", env=ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ws / ".prebake" / "dist" / PLATFORM, proc.stdout + proc.stderr


def test_build_json_shows_no_secret(built: tuple[Path, str]) -> None:
    _clean(built[1], "build --json")


def test_build_log_shows_no_secret(ws: Path, built: tuple[Path, str]) -> None:
    logs = list((ws / ".prebake" / "logs").glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text()
        assert "HTTPS_PROXY=" in text  # the log still says a proxy was set
        _clean(text, f"build log {log.name}")


def test_manifests_show_no_secret(built: tuple[Path, str]) -> None:
    dist = built[0]
    manifests = list(dist.glob("*.tar.xz.json"))
    assert manifests
    for f in manifests:
        _clean(f.read_text(), f.name)
    for asset in dist.glob("*.tar.xz"):
        with tarfile.open(asset) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    fh = tf.extractfile(m)
                    assert fh is not None
                    _clean(fh.read().decode("utf-8", "replace"), f"{asset.name}:{m.name}")


def test_provenance_shows_no_secret(built: tuple[Path, str]) -> None:
    statements = list(built[0].glob("*.intoto.json"))
    assert statements
    for f in statements:
        text = f.read_text()
        assert "proxy.invalid" not in text or "***@" in text
        _clean(text, f.name)


def test_error_line_with_a_store_url_shows_no_credentials(tmp_path: Path) -> None:
    url = closed_port_url().replace("http://", f"http://ci:{PASSWORD}@")
    proc = support.prebake("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", url,
                           "--into", tmp_path / "into",
                           env={"PREBAKE_CACHE": str(tmp_path / "cache"),
                                "PREBAKE_RETRY_BASE": "0.01"})
    assert proc.returncode == 2, proc.stderr
    assert "127.0.0.1" in proc.stderr
    _clean(proc.stderr, "error line")


def test_error_line_never_echoes_a_token_from_the_environment(tmp_path: Path) -> None:
    """A token value that ends up quoted in a message (here: as a bogus store URL)."""
    proc = support.prebake("fetch", "demo==1.0.0", "--platform", PLATFORM,
                           "--store", f"nosuch://{TOKEN}", "--into", tmp_path / "into",
                           env={"GH_TOKEN": TOKEN})
    assert proc.returncode == 2
    _clean(proc.stderr, "error line")


def test_redaction_rules() -> None:
    from prebake.redact import is_secret_name, redact_env, redact_json, redact_text

    assert redact_text(f"GET {PROXY}/x failed") == "GET http://***@proxy.invalid:3128/x failed"
    assert redact_text("https://tok@github.com/a, s3://k:s@h/b") == \
        "https://***@github.com/a, s3://***@h/b"
    for name in ("GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_PASSWORD", "SIGNING_KEY",
                 "DB_PASSWD", "CI_JOB_TOKEN", "HTTP_AUTHORIZATION", "github_token"):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "HTTPS_PROXY", "SSH_AUTH_SOCK", "PWD", "LANG"):
        assert not is_secret_name(name), name
    assert redact_env({"GH_TOKEN": "x", "PATH": "/bin"}) == {"GH_TOKEN": "***", "PATH": "/bin"}
    assert redact_json({"env": {"NPM_TOKEN": TOKEN}, "author": "me",
                        "uri": f"https://u:{PASSWORD}@h/x"}) == \
        {"env": {"NPM_TOKEN": "***"}, "author": "me", "uri": "https://***@h/x"}


def test_fetch_json_and_lock_record_no_mirror_credentials(tmp_path: Path) -> None:
    from tests.servers.assets import make_asset
    from tests.servers.static_http import StaticServer

    store = tmp_path / "srv"
    make_asset(store / "v1.0.0", "demo", "1.0.0", PLATFORM, {"lib/libdemo.a": b"!<arch>\n"})
    with StaticServer(store) as srv:
        url = srv.url.replace("http://", f"http://ci:{PASSWORD}@")
        proc = support.prebake("fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", url,
                               "--release", "v1.0.0", "--into", tmp_path / "into", "--lock",
                               tmp_path / "prebake.lock", "--json",
                               env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["url"].startswith("http://***@127.0.0.1")
    _clean(proc.stdout + proc.stderr, "fetch --json")
    _clean((tmp_path / "prebake.lock").read_text(), "prebake.lock")


@pytest.mark.parametrize(("text", "shown"), [
    # urllib reads a proxy without a scheme as user:password@host
    ("https_proxy=user:pass@proxy.invalid:3128", "https_proxy=***@proxy.invalid:3128"),
    ("user:pass@proxy.invalid:3128", "***@proxy.invalid:3128"),
    # the password holds '@': the whole userinfo, up to the last '@' before the host
    ("http://user:Secret@77@proxy.invalid/x", "http://***@proxy.invalid/x"),
    ("GET user:Sec@ret@77@h:1 failed", "GET ***@h:1 failed"),
    # tokens in git URLs and query strings
    ("git clone https://x-access-token:ghs_abc1234@github.com/o/r.git",
     "git clone https://***@github.com/o/r.git"),
    ("https://h/a.tgz?token=abcd&v=1", "https://h/a.tgz?token=***&v=1"),
    ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA/x&X-Amz-Signature=ff00&X-Amz-Date=1",
     "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Date=1"),
    ("https://h/x?access_token=zz99&private_token=yy88#frag",
     "https://h/x?access_token=***&private_token=***#frag"),
    ("https://acct.blob.core.windows.net/c/b?sv=2020&sig=abc%2Bdef",
     "https://acct.blob.core.windows.net/c/b?sv=2020&sig=***"),
    # what is not a credential stays as it is
    ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
    ("mail a@b.example about it", "mail a@b.example about it"),
    ("https://h/x?version=1.2&arch=x86_64", "https://h/x?version=1.2&arch=x86_64"),
    ("cmake -DX=1 && make", "cmake -DX=1 && make"),
    ("call std::foo@plt; std::terminate()@GLIBCXX_3.4 and f@@GLIBC_2.2.5",
     "call std::foo@plt; std::terminate()@GLIBCXX_3.4 and f@@GLIBC_2.2.5"),
    ("?f@@YAXXZ ??4Foo@@QEAAAEAV0@AEBV0@@Z", "?f@@YAXXZ ??4Foo@@QEAAAEAV0@AEBV0@@Z"),
])
def test_one_redaction_for_every_url_shape(text: str, shown: str) -> None:
    from prebake.redact import redact_text

    assert redact_text(text) == shown


def test_proxy_variables_and_their_credentials_as_free_text() -> None:
    from prebake.redact import env_secrets, redact_env, redact_json, redact_text

    env = {"https_proxy": "user:Pa55word@proxy:3128", "HTTP_PROXY": "http://u:Sec@77@p:1",
           "PIP_INDEX_URL": f"https://ci:{PASSWORD}@pypi.invalid/simple", "PATH": "/bin"}
    assert redact_env(env) == {"https_proxy": "***@proxy:3128", "HTTP_PROXY": "http://***@p:1",
                               "PIP_INDEX_URL": "https://***@pypi.invalid/simple",
                               "PATH": "/bin"}
    # a command printing the password apart from its URL is caught by the exact value
    secrets = env_secrets(env)
    assert redact_text(f"password is {PASSWORD}; Pa55word; Sec@77", *secrets) == \
        "password is ***; ***; ***"
    assert redact_json({"env": env}) == {"env": redact_env(env)}


@pytest.mark.parametrize(("text", "shown"), [
    # header credentials, as curl -v, a JSON dump and a command line show them
    ("> Proxy-Authorization: Basic cHJveHl1c2VyOnBhNTV3MHJk", "> Proxy-Authorization: Basic ***"),
    ("> Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2ln", "> Authorization: Bearer ***"),
    ('{"Authorization": "token ghp_0123456789abcdefghijKLMN"}', '{"Authorization": "token ***"}'),
    ('curl -H "Authorization: Bearer abc123def456" https://h/x',
     'curl -H "Authorization: Bearer ***" https://h/x'),
    ("Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015/us-east-1/iam/aws4_request, "
     "SignedHeaders=content-type;host, Signature=5d672d79c15b13",
     "Authorization: AWS4-HMAC-SHA256 ***"),
    ("HTTP_AUTHORIZATION=Basic dXNlcjpwYXNz", "HTTP_AUTHORIZATION=Basic ***"),
    # the token parameters of signed URLs
    ("https://h/x?jwt=eyJhbGciOi.eyJzdWIi.c2ln&v=1", "https://h/x?jwt=***&v=1"),
    ("https://h/x?sig=abc%2Bdef", "https://h/x?sig=***"),
    ("https://h/x?hmac=00ff&expires=1", "https://h/x?hmac=***&expires=1"),
    # tokens in URL paths, by their place or their shape
    ("https://api.telegram.org/bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
     "https://api.telegram.org/bot123456:***/sendMessage"),
    ("https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "https://hooks.slack.com/services/T0000/B0000/***"),
    ("https://discord.com/api/webhooks/123/abcDEF-ghi", "https://discord.com/api/webhooks/123/***"),
    ("https://h/download/token/abcd1234/f.tgz", "https://h/download/token/***/f.tgz"),
    ("https://h/ghp_0123456789abcdefghijKLMN/raw/f", "https://h/***/raw/f"),
    ("https://gitlab.example/api/v4/glpat-0123456789abcdefghij/x", "https://gitlab.example/api/v4/***/x"),
    # not credentials: a file path through a tokenizer, a URL of one, prose about the header
    ("src/tokenizer/token/bpe.cc", "src/tokenizer/token/bpe.cc"),
    ("https://h/tokenizer/vocab.json", "https://h/tokenizer/vocab.json"),
])
def test_header_parameter_and_path_tokens(text: str, shown: str) -> None:
    from prebake.redact import redact_text

    assert redact_text(text) == shown


def test_the_base64_of_a_known_credential_at_any_alignment() -> None:
    """A proxy's ``user:password``, or a token after a prefix (``x-access-token:TOKEN`` in a
    Basic header), is masked in base64 whatever precedes it."""
    import base64

    from prebake.redact import env_secrets, redact_text

    secrets = env_secrets({"HTTPS_PROXY": PROXY, "NPM_TOKEN": TOKEN})
    for raw in (f"proxyuser:{PASSWORD}", f"x-access-token:{TOKEN}", f"a{PASSWORD}",
                f"ab{TOKEN}xyz"):
        blob = base64.b64encode(raw.encode()).decode()
        out = redact_text(f"seen {blob} and {blob.replace('+', '-').replace('/', '_')}",
                          *secrets)
        assert "***" in out, raw
        for secret in (PASSWORD, TOKEN):
            if secret in raw:  # what is left is the rest's base64, and a few stray characters
                left = out.split("seen ")[1].split(" and")[0].replace("***", "")
                assert len(left) <= (len(raw) - len(secret)) * 4 // 3 + 4, (raw, out)


def test_curl_through_a_proxy_verbosely_leaves_no_credential_in_the_build_log(
        tmp_path: Path) -> None:
    """The issue's reproducer: a recipe command run verbosely through the proxy prints
    ``> Proxy-Authorization: Basic <base64 of user:password>``; the build log masks it."""
    import socket
    import threading

    from prebake.bake.process import BuildLog, run_logged

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def answer() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    proxy = f"http://proxyuser:{PASSWORD}@127.0.0.1:{port}"
    log = BuildLog(tmp_path / "unit.log")
    env = {"PATH": "/usr/bin:/bin", "HTTPS_PROXY": proxy, "http_proxy": proxy}
    log.env(env, [])
    run_logged(["curl", "-sv", "--max-time", "10", "http://example.invalid/x"], cwd=tmp_path,
               env=env, log=log)
    log.close()
    t.join(10)
    srv.close()
    text = (tmp_path / "unit.log").read_text()
    assert "Proxy-Authorization: Basic ***" in text, text  # curl did send it
    import base64

    assert base64.b64encode(f"proxyuser:{PASSWORD}".encode()).decode() not in text
    _clean(text, "a verbose curl's build log")
