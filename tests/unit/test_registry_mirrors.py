"""Registry references and the machine's mirrors: the text of a reference, apt's, pip's and
npm's configuration read as those tools read it (each held to the tool itself: ``apt-config``,
``pip config``, ``npm config get``), the workspace's ``[mirrors]`` table, and what no mirror
change may touch (the input hash). Downloads through them: tests/integration/test_mirrors.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prebake import machine_mirrors as configured
from prebake.cli import main
from prebake.digest import file_sha256
from prebake.errors import ConfigError, PrebakeError
from prebake.intake import load_workspace
from prebake.redact import redact_text
from prebake.registry_refs import (
    DebianFile,
    NpmTarball,
    PypiFile,
    ReferenceError,
    filename,
    is_reference,
    parse,
)
from prebake.sources.cache import SourceCache
from prebake.sources.candidates import Candidate, Unserved
from prebake.sources.mirrors import Resolver
from tests import support
from tests.servers.registries import RegistryMirror

# ---- the text of a reference ------------------------------------------------------------------


def test_references_read_as_the_registries_name_files() -> None:
    assert parse("debian:pool/main/f/ffmpeg/ffmpeg_7.1.5.orig.tar.xz") == DebianFile(
        "pool/main/f/ffmpeg/ffmpeg_7.1.5.orig.tar.xz")
    ref = parse("pypi:ONNX_Runtime==1.21.0#cp311-cp311-manylinux_2_27_x86_64."
                "manylinux_2_28_x86_64")
    assert isinstance(ref, PypiFile) and ref.key == "onnx-runtime"
    assert ref.tags == {"cp311-cp311-manylinux_2_27_x86_64", "cp311-cp311-manylinux_2_28_x86_64"}
    assert parse("pypi:numpy==2.0.0") == PypiFile("numpy", "2.0.0", "")  # the sdist
    assert parse("npm:@scope/web-pkg@1.30.0-rc.1") == NpmTarball("@scope/web-pkg",
                                                                  "1.30.0-rc.1")
    assert parse("npm:onnxruntime-web@1.30.0").scope == ""
    assert filename("debian:pool/main/a/abseil/abseil_20240722.0.orig.tar.gz") == \
        "abseil_20240722.0.orig.tar.gz"
    assert filename("npm:@scope/web-pkg@1.0.0") == "web-pkg-1.0.0.tgz"
    assert filename("https://example.org/x/zstd-1.5.7.tar.xz?x=1") == "zstd-1.5.7.tar.xz"
    assert not is_reference("https://example.org/x") and not is_reference("file:/srv/x")
    assert is_reference("debian:anything")


@pytest.mark.parametrize(("text", "says"), [
    ("debian:main/f/ffmpeg/ffmpeg_7.1.5.orig.tar.xz", "is not debian:pool/<component>/"),
    ("debian:pool/main/f/../../../etc/passwd", "is not debian:pool/"),
    ("debian:pool/main/f/ffmpeg/ffmpeg 7.orig.tar.xz", "is not debian:pool/"),
    ("pypi:onnxruntime>=1.21", "is not pypi:<project>==<version>[#<wheel tag>]"),
    ("pypi:onnxruntime==1.21.0#win_amd64", "is not pypi:<project>==<version>"),
    ("pypi:onnxruntime==one", "'one' is not a PEP 440 version"),
    ("npm:onnxruntime-web@^1.30.0", "is not npm:<package>@<exact version>"),
    ("npm:Onnxruntime-Web@1.30.0", "is not npm:<package>@<exact version>"),
])
def test_a_malformed_reference_says_what_the_form_is(text: str, says: str) -> None:
    with pytest.raises(ReferenceError, match=None) as err:
        parse(text)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_redaction_leaves_an_npm_reference_and_still_masks_credentials() -> None:
    line = "npm:onnxruntime-web@1.30.0 npm:@acme/x@2.0.1, user:s3cret@proxy.example:3128"
    assert redact_text(line) == ("npm:onnxruntime-web@1.30.0 npm:@acme/x@2.0.1, "
                                 "***@proxy.example:3128")
    assert redact_text("npm:s3cret@10.0.0.1") == "***@10.0.0.1"


# ---- the machine's configuration, as each tool reads it ---------------------------------------


def _apt(tmp: Path, files: dict[str, str]) -> dict[str, str]:
    parts = tmp / "sources.list.d"
    parts.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp / name if name == "sources.list" else parts / name).write_text(text)
    (tmp / "apt.conf").write_text(f'Dir::Etc::sourcelist "{tmp / "sources.list"}";\n'
                                  f'Dir::Etc::sourceparts "{parts}";\n')
    return {"PATH": os.environ["PATH"], "APT_CONFIG": str(tmp / "apt.conf")}


def test_debian_mirrors_are_apts_debian_archives_in_apts_order(tmp_path: Path) -> None:
    (tmp_path / "mirrors.txt").write_text("http://m1.example/debian\tpriority:1\n"
                                          "http://m2.example/debian\n")
    env = _apt(tmp_path, {
        "sources.list": "# deb http://commented.example/debian bookworm main\n"
                        "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian/ bookworm "
                        "main\ndeb http://security.example/debian-security bookworm-security "
                        "main\n",
        "a.sources": "Types: deb deb-src\nURIs: http://two.example/debian "
                     "http://three.example/debian\nSuites: trixie trixie-updates\n"
                     "Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n"
                     " .\n -----END PGP PUBLIC KEY BLOCK-----\n\n"
                     "Types: deb\nURIs: http://off.example/debian\nSuites: sid\n"
                     "Enabled: no\n\n"
                     f"Types: deb\nURIs: mirror+file:{tmp_path / 'mirrors.txt'}\n"
                     "Suites: stable\nComponents: main\n",
        "b.list": "deb https://packages.vendor.example/apt nodistro main\n",
        "c.sources": "Types: deb\nURIs: http://ubuntu.example/ubuntu\nSuites: noble\n",
    })
    got = configured.debian_mirrors(env)
    assert [o.url for o in got] == ["http://one.example/debian", "http://two.example/debian",
                                    "http://three.example/debian", "http://m1.example/debian",
                                    "http://m2.example/debian"]
    assert got[0].said == f"apt: {tmp_path / 'sources.list'}"
    # apt itself names the same files, in that order
    listed = subprocess.run(["apt-config", "dump"], env=env, capture_output=True, text=True,
                            check=True).stdout
    assert f'Dir::Etc::sourcelist "{tmp_path / "sources.list"}";' in listed
    assert configured.apt_source_files(env) == [tmp_path / "sources.list", *(
        tmp_path / "sources.list.d" / n for n in ("a.sources", "b.list", "c.sources"))]
    given = configured.debian_mirrors({**env, "PREBAKE_DEBIAN_MIRROR": "http://x/d http://y/d/"})
    assert [(o.url, o.said) for o in given] == [("http://x/d", "PREBAKE_DEBIAN_MIRROR"),
                                               ("http://y/d", "PREBAKE_DEBIAN_MIRROR")]


def _pip_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".pip").mkdir()
    (tmp / "xdg" / "pip").mkdir(parents=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_CONFIG_DIRS": str(tmp / "xdg"),
            "XDG_CONFIG_HOME": str(home / ".config")}


def _pip_says(env: dict[str, str], key: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "get", key], env=env,
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def test_pip_indexes_are_what_pip_itself_reads(tmp_path: Path) -> None:
    env = _pip_env(tmp_path)
    home = Path(env["HOME"])
    (tmp_path / "xdg" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = http://global.example/simple\n")
    (home / ".pip" / "pip.conf").write_text("[global]\nindex-url = http://legacy.example/s\n")
    (home / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = http://user.example/simple\n"
        "extra-index-url =\n    http://extra1.example/simple\n    http://extra2.example/simple\n"
        "[install]\nindex-url = http://install-only.example/simple\n")
    # global < legacy user < user, [install] is not what `pip download` reads
    indexes, links = configured.pip_indexes(env)
    assert [o.url for o in indexes] == ["http://user.example/simple",
                                        "http://extra1.example/simple",
                                        "http://extra2.example/simple"]
    assert _pip_says(env, "global.index-url") == "http://user.example/simple"
    assert links == []
    # the variable over every file, as pip's
    over = {**env, "PIP_INDEX_URL": "http://env.example/simple"}
    assert configured.pip_indexes(over)[0][0].url == "http://env.example/simple"
    assert configured.pip_indexes(over)[0][0].said == "PIP_INDEX_URL"
    # a command's own section: `pip download` reads [download] over [global]
    (home / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = http://user.example/simple\n"
        "[download]\nindex-url = http://download.example/simple\n")
    assert configured.pip_indexes(env)[0][0].url == "http://download.example/simple"
    assert _pip_says(env, "download.index-url") == "http://download.example/simple"
    # the files, as `pip config debug` lists them (pip's load order: the variable's file,
    # global, user, site)
    given = {**env, "PIP_CONFIG_FILE": str(tmp_path / "given.conf")}
    debug = subprocess.run([sys.executable, "-m", "pip", "config", "debug"], env=given,
                           capture_output=True, text=True, check=True).stdout
    listed = [Path(line.split(",")[0].strip()) for line in debug.splitlines()
              if line.endswith(("exists: True", "exists: False"))]
    ours = configured.pip_config_files(given)
    assert sorted(ours) == sorted(listed) and ours[0] == tmp_path / "given.conf"
    assert ours[-1] == Path(sys.prefix) / "pip.conf"
    # no file at all: pip's own default, as the installed pip states it
    from pip._internal.models.index import PyPI

    bare = {**env, "PIP_CONFIG_FILE": os.devnull}
    assert [(o.url, o.said) for o in configured.pip_indexes(bare)[0]] == [
        (PyPI.simple_url, "pip's default index")]
    assert _pip_says(bare, "global.index-url") == ""  # pip: nothing configured


def test_an_unreadable_or_broken_pip_conf_is_an_error_not_another_host(tmp_path: Path) -> None:
    from prebake.errors import PrebakeError

    env = _pip_env(tmp_path)
    conf = Path(env["HOME"]) / ".config" / "pip" / "pip.conf"
    conf.write_text("index-url = no section\n")
    with pytest.raises(PrebakeError, match=rf"^{conf}: not a pip configuration file"):
        configured.pip_indexes(env)
    conf.unlink()
    os.mkfifo(conf)
    with pytest.raises(PrebakeError, match=rf"^{conf}: .*FIFO"):
        configured.pip_indexes(env)


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_npm_registry_is_the_one_npm_itself_uses(tmp_path: Path) -> None:
    home, project, prefix = tmp_path / "home", tmp_path / "project", tmp_path / "prefix"
    for d in (home, project, prefix / "etc"):
        d.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "npm_config_prefix": str(prefix),
           "npm_config_cache": str(tmp_path / "npm-cache"), "NPM_TOKEN": "tok-123"}

    def npm_says(key: str = "registry") -> str:
        return subprocess.run(["npm", "config", "get", key], env=env, cwd=project,
                              capture_output=True, text=True, check=True).stdout.strip()

    (prefix / "etc" / "npmrc").write_text("registry=http://global.example/npm/\n")
    assert configured.npm_registry(env, project).url == npm_says() == \
        "http://global.example/npm/"
    (home / ".npmrc").write_text("; the user's\nregistry = http://user.example/npm/\n"
                                 "@acme:registry=http://acme.example/npm/\n"
                                 "//acme.example/npm/:_authToken=${NPM_TOKEN}\n")
    assert configured.npm_registry(env, project).url == npm_says() == "http://user.example/npm/"
    acme = configured.npm_registry(env, project, "@acme")
    assert acme.url == npm_says("@acme:registry") == "http://acme.example/npm/"
    assert acme.headers == {"Authorization": "Bearer tok-123"}  # ${VAR} as npm expands it
    assert configured.npm_registry(env, project).headers == {}  # not that registry's token
    (project / ".npmrc").write_text('registry="http://project.example/npm/"\n')
    assert configured.npm_registry(env, project).url == npm_says() == \
        "http://project.example/npm/"
    env["npm_config_registry"] = "http://env.example/npm/"
    assert configured.npm_registry(env, project).url == npm_says() == "http://env.example/npm/"
    # nothing configured anywhere: npm's own default, asked of npm
    bare = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "empty"),
            "npm_config_prefix": str(tmp_path / "none")}
    (tmp_path / "empty").mkdir()
    default = configured.npm_registry(bare, None)
    assert default is not None and default.said == "npm config get registry"


@pytest.mark.parametrize(("npmrc", "says"), [
    ("registry=http://[npm.example/\n", "registry 'http://[npm.example/' is not an http(s) or "
                                        "file URL"),
    ("registry=http://ci:hunter2pw@npm .example/\n",
     "registry 'http://***@npm .example/' is not an http(s) or file URL"),
    ("registry=http://127.0.0.1:9/npm/\n//127.0.0.1:9/npm/:username=ci\n"
     "//127.0.0.1:9/npm/:_password=hunter2pw!\n",
     "//127.0.0.1:9/npm/:_password is not base64 (npm keeps a registry's password "
     "base64-encoded)"),
])
def test_an_npm_setting_that_cannot_be_read_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        npmrc: str, says: str) -> None:
    """What npm would fail on is an error naming the file, never an internal error or another
    registry, and the secret in it is not shown."""
    ws = _one_source(tmp_path, "zz", "1.0.0", "npm:zz@{version}")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".npmrc").write_text(npmrc)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    for var in [v for v in os.environ if v.lower().startswith("npm_config_")]:
        monkeypatch.delenv(var)  # the user's .npmrc is the one that says
    assert main(["-C", str(ws), "pin", "zz", "1.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"prebake: error: npm: {tmp_path / 'home' / '.npmrc'}: {says}"], err
    assert "hunter2pw" not in err[0] and not (ws / "prebake.sources.lock").exists()


# ---- resolving a name -------------------------------------------------------------------------


def test_the_mirrors_table_replaces_the_longest_prefix_in_order() -> None:
    table = {"https://up.example/": ("http://m1.example/all/",),
             "https://up.example/releases/": ("http://m2.example/r/", "origin",
                                               "file:///srv/r/")}
    r = Resolver(table, environ={})
    urls = [s.url for s in r.expand("https://up.example/releases/x-1.tar.gz")
            if isinstance(s, Candidate)]
    assert urls == ["http://m2.example/r/x-1.tar.gz", "https://up.example/releases/x-1.tar.gz",
                    "file:///srv/r/x-1.tar.gz"]
    assert [s.url for s in r.expand("https://up.example/other.zip")
            if isinstance(s, Candidate)] == ["http://m1.example/all/other.zip"]  # no origin
    assert [s.url for s in r.expand("https://else.example/y")
            if isinstance(s, Candidate)] == ["https://else.example/y"]


def test_a_debian_reference_without_a_configured_mirror_says_so(tmp_path: Path) -> None:
    env = _apt(tmp_path, {"sources.list": ""})
    (step,) = list(Resolver(environ=env).expand("debian:pool/main/z/zz/zz_1.orig.tar.xz"))
    assert isinstance(step, Unserved)
    assert step.why.startswith("no Debian mirror is configured here (PREBAKE_DEBIAN_MIRROR is "
                               "unset; apt's sources, ")


def _one_source(tmp_path: Path, name: str, version: str, source: str) -> Path:
    """A workspace whose one recipe, ``name`` at ``version``, takes the one source ``source``
    (its third line is the source's)."""
    ws = tmp_path / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(support.gcc_workspace(
        "refs", f'{name} = "{version}"', "deps", f'["{name}"]', more="", tail=""))
    (ws / "recipes" / f"{name}.py").write_text(
        "from prebake.recipes import Build, Outputs, Recipe, UrlSource\n"
        f"RECIPE = Recipe(name={name!r}, pin={name!r},\n"
        f"    sources=(UrlSource({source!r}),),\n"
        "    platforms={'*': Build(commands=('true',))},\n"
        f"    outputs=Outputs(libs={{'*': ('lib/lib{name}.a',)}}))\n")
    return ws


@pytest.mark.parametrize(("value", "shown"), [
    ("deb.example/debian", "'deb.example/debian'"),
    ("ftp://deb.example/debian", "'ftp://deb.example/debian'"),
    ("http://[::1/debian", "'http://[::1/debian'"),
    ("https:///debian", "'https:///debian'"),
    ("ci:s3cret-pw@deb.example/debian", "'***@deb.example/debian'"),
])
def test_a_debian_mirror_variable_that_is_no_url_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        value: str, shown: str) -> None:
    """Refused before any download (the first root is a good one), never tried as a
    relative path; the lock is not written."""
    ws = _one_source(tmp_path, "zz", "1.0", "debian:pool/main/z/zz/zz_{version}.orig.tar.xz")
    monkeypatch.setenv("PREBAKE_DEBIAN_MIRROR", f"http://127.0.0.1:9/debian {value}")
    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    assert main(["-C", str(ws), "pin", "zz", "1.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"prebake: error: PREBAKE_DEBIAN_MIRROR: {shown} is not an http(s) or file "
                   "URL (a Debian archive's root, e.g. https://mirror.example/debian)"], err
    assert not (ws / "prebake.sources.lock").exists()


def test_pypi_files_come_from_the_index_json_or_html_by_tag(tmp_path: Path) -> None:
    """PEP 691 and PEP 503 pages give the same file and digest; a tag two files carry is
    refused as ambiguous; the index's credentials go to files on its own host only."""
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    other = tmp_path / "demo_pkg-1.0-1-py3-none-any.whl"  # a build-numbered twin
    other.write_bytes(b"other")
    with RegistryMirror(tmp_path / "m", auth="user:pa55") as m:
        m.add_wheel(wheel)
        index = m.pypi.replace("http://", "http://user:pa55@")
        r = Resolver(environ={"PIP_INDEX_URL": index, "PIP_CONFIG_FILE": os.devnull})
        (step,) = list(r.expand("pypi:Demo.Pkg==1.0#py3-none-any"))
        assert isinstance(step, Candidate)
        assert step.url == f"http://user:pa55@{m.url[7:]}/pypi/files/{wheel.name}"
        assert step.sha256 == file_sha256(wheel)
        assert "pa55" not in redact_text(step.url)
        html = Resolver(environ={"PIP_INDEX_URL": index, "PIP_CONFIG_FILE": os.devnull})
        html._document = lambda url, headers: Resolver._document(  # type: ignore[method-assign]
            html, url, {**headers, "Accept": "text/html"})
        (same,) = list(html.expand("pypi:demo-pkg==1.0#py3-none-any"))
        assert isinstance(same, Candidate) and (same.url, same.sha256) == (step.url,
                                                                           step.sha256)
        (none,) = list(r.expand("pypi:demo-pkg==1.0"))
        assert isinstance(none, Unserved) and none.why.endswith(
            "no demo-pkg 1.0 sdist (it lists 1.0)")
        m.add_wheel(other)
        r2 = Resolver(environ={"PIP_INDEX_URL": index, "PIP_CONFIG_FILE": os.devnull})
        (two,) = list(r2.expand("pypi:demo-pkg==1.0#py3-none-any"))
        assert isinstance(two, Unserved) and "2 files are a demo-pkg 1.0 wheel tagged " \
            "py3-none-any" in two.why


def test_an_npm_registry_token_reaches_the_registry_and_nothing_else(tmp_path: Path) -> None:
    tgz = tmp_path / "x.tgz"
    tgz.write_bytes(b"tarball")
    with RegistryMirror(tmp_path / "m", token="npm-secret-token") as m:
        m.add_npm("@acme/pkg", "2.0.1", tgz)
        host = m.url.removeprefix("http://")
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / ".npmrc").write_text(
            f"@acme:registry={m.npm}\n//{host}/npm/:_authToken=npm-secret-token\n")
        r = Resolver(environ={"HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]})
        (step,) = list(r.expand("npm:@acme/pkg@2.0.1"))
        assert isinstance(step, Candidate)
        assert step.url == f"{m.url}/npm/@acme/pkg/-/pkg-2.0.1.tgz"
        assert step.headers == {"Authorization": "Bearer npm-secret-token"}
        assert step.integrity.startswith("sha512-")
        got = SourceCache(tmp_path / "cache", r).fetch(["npm:@acme/pkg@2.0.1"],
                                                       file_sha256(tgz))
        assert got.read_bytes() == b"tarball"
        assert "/npm/@acme%2Fpkg" in m.requests  # the scoped name as npm escapes it


def test_an_index_credential_goes_to_its_own_origin_only(tmp_path: Path) -> None:
    """A PyPI index reached with ``ci:PASSWORD@`` and an npm registry with an ``.npmrc`` token,
    on one server, name files on another port of the same host (another origin), directly or
    through a 302 from their own server: every file downloads, and the other origin is sent
    neither the index's Basic credentials nor the registry's token (``prebake.web``'s rule)."""
    from tests.servers.redirects import Recorder

    password, token = "idx-Pa55-q81", "reg-T0k-77x"
    wheel, two, tgz = (b"the wheel", b"the other wheel", b"the tarball")
    (tmp_path / "a" / "simple").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "demo_pkg-1.0-py3-none-any.whl").write_bytes(wheel)
    (tmp_path / "b" / "demo_two-1.0-py3-none-any.whl").write_bytes(two)
    (tmp_path / "b" / "demo-1.0.0.tgz").write_bytes(tgz)
    (tmp_path / "home").mkdir()
    with Recorder(tmp_path / "a") as a, Recorder(tmp_path / "b") as b:
        (tmp_path / "a" / "simple" / "demo-pkg").write_text(  # the page names the other port
            f"<a href='{b.url}/demo_pkg-1.0-py3-none-any.whl'>demo_pkg-1.0-py3-none-any.whl</a>")
        (tmp_path / "a" / "simple" / "demo-two").write_text(  # its own path, then a 302
            "<a href='/files/demo_two-1.0-py3-none-any.whl'>demo_two-1.0-py3-none-any.whl</a>")
        a.redirect("/files/demo_two-1.0-py3-none-any.whl",
                   f"{b.url}/demo_two-1.0-py3-none-any.whl")
        (tmp_path / "a" / "npm").mkdir()
        (tmp_path / "a" / "npm" / "demo").write_text(json.dumps(
            {"versions": {"1.0.0": {"dist": {"tarball": f"{b.url}/demo-1.0.0.tgz"}}}}))
        (tmp_path / "home" / ".npmrc").write_text(
            f"registry={a.url}/npm/\n//127.0.0.1:{a.port}/npm/:_authToken={token}\n")
        r = Resolver(environ={"PIP_INDEX_URL": a.url.replace("//", f"//ci:{password}@")
                              + "/simple", "PIP_CONFIG_FILE": os.devnull,
                              "HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]})
        cache = SourceCache(tmp_path / "cache", r)
        for name, data in (("pypi:demo-pkg==1.0#py3-none-any", wheel),
                           ("pypi:demo-two==1.0#py3-none-any", two), ("npm:demo@1.0.0", tgz)):
            got = cache.fetch([name], hashlib.sha256(data).hexdigest())
            assert got.read_bytes() == data
    basic = "Basic " + base64.b64encode(f"ci:{password}".encode()).decode()
    given = {p: h.get("authorization") for _host, p, h in a.seen}
    assert given == {"/simple/demo-pkg/": basic, "/simple/demo-two/": basic,
                     "/files/demo_two-1.0-py3-none-any.whl": basic,
                     "/npm/demo": f"Bearer {token}"}, given
    assert len(b.seen) == 3 and all("authorization" not in h for _host, _p, h in b.seen)


def test_a_registry_served_over_http_names_no_local_file(tmp_path: Path) -> None:
    """A package document or simple page from an http(s) mirror that points at file:// is
    not followed: the mirror cannot make prebake read (or lock) a file of this machine."""
    from tests.servers.static_http import StaticServer

    root = tmp_path / "www"
    (root / "simple").mkdir(parents=True)
    secret = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    secret.write_text("a file of this machine")
    # the page itself, which the static server answers for /simple/demo-pkg/
    (root / "simple" / "demo-pkg").write_text(
        f'<a href="{secret.as_uri()}">{secret.name}</a>')
    (root / "npm").mkdir()
    (root / "npm" / "demo-pkg").write_text(json.dumps(
        {"versions": {"1.0.0": {"dist": {"tarball": secret.as_uri()}}}}))
    (tmp_path / "home").mkdir()
    with StaticServer(root) as srv:
        (tmp_path / "home" / ".npmrc").write_text(f"registry={srv.url}/npm/\n")
        r = Resolver(environ={"PIP_INDEX_URL": f"{srv.url}/simple",
                              "PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path / "home"),
                              "PATH": os.environ["PATH"]})
        srv_pages = {"pypi:demo-pkg==1.0#py3-none-any": "no demo-pkg 1.0 wheel",
                     "npm:demo-pkg@1.0.0": "is not an http(s) URL"}
        for name, says in srv_pages.items():
            (step,) = list(r.expand(name))
            assert isinstance(step, Unserved) and says in step.why, step


# ---- what a mirror must not change, and what is refused at load ------------------------------


def test_no_mirror_setting_changes_an_input_hash(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from prebake.plan import make_plan

    ws = tmp_path / "ws"
    shutil.copytree(support.ROOT / "examples" / "flagship", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    before = {u.id: u.input_hash for u in make_plan(load_workspace(ws)).units}
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text() + '\n[mirrors]\n"https://github.com/" = '
                    '["http://mirror.example/gh/", "origin"]\n"https://ffmpeg.org/" = '
                    '"http://mirror.example/ffmpeg/"\n')
    monkeypatch.setenv("PREBAKE_DEBIAN_MIRROR", "http://other.example/debian")
    monkeypatch.setenv("PIP_INDEX_URL", "http://other.example/simple")
    monkeypatch.setenv("npm_config_registry", "http://other.example/npm/")
    after = {u.id: u.input_hash for u in make_plan(load_workspace(ws)).units}
    assert after == before and len(before) > 3


@pytest.mark.parametrize(("table", "says"), [
    ('"https://github.com/" = 5', "mirrors.\"https://github.com/\": must be a mirror URL or a "
                                  "non-empty list of them (\"origin\" for the URL itself); "
                                  "got 5"),
    ('"https://github.com/" = []', "must be a mirror URL or a non-empty list"),
    ('"https://github.com/" = ["ftp://m.example/"]', "'ftp://m.example/' is not an http(s) "
                                                     "or file URL (nor \"origin\")"),
    ('"github.com" = ["http://m.example/"]', "a [mirrors] key is the start of a URL "
                                             "(https://host/path/), not 'github.com'"),
    ('"debian:" = ["http://m.example/"]', "not a registry reference: its mirrors come from "
                                          "apt, pip or npm"),
    ('"https://github.com/" = ["origin", "origin"]', "names a mirror twice"),
    # what urlsplit raises on, and what it would silently drop
    ('"http://[bad/" = ["http://m.example/"]', "a [mirrors] key is the start of a URL "
                                               "(https://host/path/), not 'http://[bad/'"),
    ('"https://github.com/" = ["http://[::1/x/"]', "'http://[::1/x/' is not an http(s) or "
                                                   "file URL"),
    ('"https://github.com/\\n" = "http://m.example/"', "not 'https://github.com/\\n'"),
    ('"https://github.com/" = "http://m .example/"', "'http://m .example/' is not an http(s)"),
])
def test_a_malformed_mirrors_table_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, says: str) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text() + f"\n[mirrors]\n{table}\n")
    line = len(toml.read_text().splitlines())
    with pytest.raises(ConfigError):
        load_workspace(ws)
    assert main(["-C", str(ws), "plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and f"prebake.toml:{line}" in err[0], err


@pytest.mark.parametrize(("provider", "says"), [
    ("debian:main/f/ffmpeg/ffmpeg_{pins[ffmpeg]}.orig.tar.xz", "is not debian:pool/"),
    ("pypi:ffmpeg>={pins[ffmpeg]}", "is not pypi:<project>==<version>"),
    ("deb.example/ffmpeg_{pins[ffmpeg]}.tar.xz", "not a http(s) or file URL, nor a registry "
                                                 "reference (debian:, pypi:, npm:)"),
    ("http://[deb.example/ffmpeg_{pins[ffmpeg]}.tar.xz", "not a http(s) or file URL"),
])
def test_a_malformed_reference_in_the_workspace_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], provider: str, says: str) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(support.ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    toml = ws / "prebake.toml"
    text = toml.read_text()
    head, _, rest = text.partition("[sources.provided]\n")
    key, _, rest = rest.partition(" = ")
    toml.write_text(head + "[sources.provided]\n" + key + " = " + json.dumps(provider) + "\n"
                    + rest.partition("\n")[2])
    assert main(["-C", str(ws), "plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "sources.provided" in err[0], err


def test_a_malformed_reference_in_a_recipe_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _one_source(tmp_path, "zstd", "1.5.7", "npm:zstd@~{version}")
    assert main(["-C", str(ws), "plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "recipes/zstd.py:3: RECIPE.sources[0].url" in err[0], err
    assert "is not npm:<package>@<exact version>" in err[0]


@pytest.mark.parametrize("body", [
    b"[" * 200_000,  # nesting past the JSON parser's recursion
    b'{"files": [{"url": 5}], "meta"',  # truncated
    b'{"versions": {"1.0.0": {"dist": {"tarball": ["not", "a", "url"]}}}}',
    b'{"versions": {"1.0.0": "dist"}, "dist-tags": []}',
    b"\xff\xfe<a href='http://[bad/x.whl'>demo_pkg-1.0-py3-none-any.whl</a>",
    b"<a href='demo_pkg-1.0-py3-none-any.whl#sha256=../../victim'>demo_pkg-1.0-py3-none-any"
    b".whl</a>",
    # a file URL http.client refuses to send (white space in its path)
    b"<a href='http://127.0.0.1:9/a b/demo_pkg-1.0-py3-none-any.whl'>demo_pkg-1.0-py3-none-any"
    b".whl</a>",
    b'{"versions": {"1.0.0": {"dist": {"tarball": "http://127.0.0.1:9/a b.tgz"}}}}',
])
def test_a_hostile_index_or_registry_document_is_a_mirror_that_cannot_serve(
        tmp_path: Path, body: bytes) -> None:
    """Each document a mirror sends is read as data: no exception escapes, nothing outside
    the cache is touched (an index "digest" that is a path is no digest)."""
    from prebake.sources.download import download_new

    victim = tmp_path / "victim"
    victim.write_text("kept")
    (tmp_path / "idx" / "demo-pkg").mkdir(parents=True)
    (tmp_path / "idx" / "demo-pkg" / "index.html").write_bytes(body)
    (tmp_path / "npm").mkdir()
    (tmp_path / "npm" / "demo-pkg").write_bytes(body)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".npmrc").write_text(f"registry={(tmp_path / 'npm').as_uri()}/\n")
    r = Resolver(environ={"PIP_INDEX_URL": (tmp_path / "idx").as_uri(),
                          "PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path / "home"),
                          "PATH": os.environ["PATH"]})
    cache = SourceCache(tmp_path / "cache" / "a" / "b", r)
    for name in ("pypi:demo-pkg==1.0#py3-none-any", "npm:demo-pkg@1.0.0"):
        steps = list(r.expand(name))
        assert steps and all(isinstance(s, Candidate | Unserved) for s in steps)
        for step in steps:
            assert not isinstance(step, Candidate) or step.sha256 == ""
        got, _failures = download_new([name], cache)
        assert got is None or got.path.parent == cache.root
        with pytest.raises(PrebakeError, match="no mirror served the file"):  # nothing else
            cache.fetch([name], "0" * 64)
    assert victim.read_text() == "kept"
