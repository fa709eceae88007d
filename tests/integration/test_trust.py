"""Trust end to end, for real: a workspace whose C library comes from a local git repository
(known commit) is built with gcc, published signed (``ssh-keygen -Y sign``) to a ``file://``
store, and fetched with an allowed-signers file; every way of cheating is refused with nothing
installed, the provenance names the exact commit and pins, and the SBOM validates.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prebake.cli import main
from prebake.package.archive import write_asset
from prebake.package.naming import asset_id
from prebake.trust.statement import schema_path
from tests import support
from tests.servers.backends import Backend
from tests.servers.fixtures import moto_s3, store_backend  # noqa: F401

ASSET = "trustdemo-core-1.0.0-linux-x86_64.tar.xz"
PLATFORM = "linux-x86_64"

MINI_C = """\
#define STR2(x) #x
#define STR(x) STR2(x)
const char *mini_helper(void) { return STR(HELPER_VERSION); }
int mini_add(int a, int b) { return a + b; }
"""

WORKSPACE = support.gcc_workspace("trustdemo", 'mini = "2.3.1"\nhelper = "0.4.0"\nunused = "9.9.9"',
                                  "core", '["mini"]', env_unset=("CFLAGS", "LDFLAGS"), more="",
                                  package="prefix")

RECIPE = """\
from prebake.recipes import Build, Component, GitSource, Outputs, Recipe

RECIPE = Recipe(
    name="mini",
    pin="mini",
    sources=(GitSource({url!r}, ref="v{{version}}", submodules=False),),
    platforms={{"*": Build(commands=(
        "cmake -E make_directory {{prefix}}/lib {{prefix}}/include",
        "{{cc}} -O2 -fPIC -DHELPER_VERSION={{pins[helper]}} -c {{src}}/mini.c -o {{build}}/mini.o",
        "{{ar}} rcs {{prefix}}/lib/libmini.a {{build}}/mini.o",
        "cmake -E copy {{src}}/include/mini.h {{prefix}}/include/mini.h",
    ))}},
    outputs=Outputs(libs={{"*": ("lib/libmini.a",)}}, headers=("include/mini.h",),
                    license="LICENSE"),
    bundled=(Component("tinyfmt", "9.1.0"), Component("miniz", "3.0.2")),
)
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def keygen(path: Path, comment: str) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f",
                    str(path)], check=True)
    return path


@dataclass
class World:
    base: Path
    ws: Path
    commit: str
    dist: Path  # the build's output folder (asset + sidecars)
    key: Path
    other_key: Path
    allowed: Path

    @property
    def asset(self) -> Path:
        return self.dist / ASSET


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    base = tmp_path_factory.mktemp("trust")
    up = base / "upstream"
    (up / "include").mkdir(parents=True)
    (up / "mini.c").write_text(MINI_C)
    (up / "include" / "mini.h").write_text("int mini_add(int, int);\n"
                                          "const char *mini_helper(void);\n")
    (up / "LICENSE").write_text("MIT\n")
    git(up, "init", "-q")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "mini 2.3.1")
    git(up, "tag", "v2.3.1")
    commit = git(up, "rev-parse", "HEAD")
    # a later commit on the branch: the tag, not the branch head, is what must be recorded
    (up / "NEWS").write_text("unreleased\n")
    git(up, "add", "-A")
    git(up, "commit", "-qm", "after the release")

    ws = base / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "prebake.toml").write_text(WORKSPACE)
    (ws / "recipes" / "mini.py").write_text(RECIPE.format(url=str(up)))
    pin = support.prebake("-C", ws, "pin", "mini", "2.3.1")  # locks the tag's commit
    assert pin.returncode == 0, pin.stderr
    proc = support.prebake("-C", ws, "build", "--platform", PLATFORM, "--json", timeout=300)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, json.dumps(data, indent=2)
    keys = base / "keys"
    keys.mkdir()
    key = keygen(keys / "release", "release@example.org")
    other = keygen(keys / "intruder", "intruder@example.org")
    allowed = keys / "allowed_signers"
    pub = (keys / "release.pub").read_text()
    allowed.write_text(f'release@example.org namespaces="prebake" {pub}')
    return World(base, ws, commit, ws / ".prebake" / "dist" / PLATFORM, key, other, allowed)


def _member(asset: Path, name: str) -> bytes:
    with tarfile.open(asset) as tf:
        f = tf.extractfile(name)
        assert f is not None
        return f.read()


def _statement(world: World) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((world.dist / f"{ASSET}.intoto.json").read_text())
    return data


# ---- provenance and SBOM written by the build ---------------------------------------------

def test_provenance_records_the_exact_commit_and_pins(world: World) -> None:
    st = _statement(world)
    jsonschema.validate(st, json.loads(schema_path().read_text()),
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    import hashlib

    assert st["subject"] == [{"name": ASSET, "digest": {
        "sha256": hashlib.sha256(world.asset.read_bytes()).hexdigest()}}]
    bd = st["predicate"]["buildDefinition"]
    src = next(d for d in bd["resolvedDependencies"] if d["name"] == "mini:source[0]")
    assert src["digest"] == {"gitCommit": world.commit}
    assert src["uri"] == f"git+{(world.base / 'upstream').as_uri()}@v2.3.1"
    # exactly the pins the recipe reads (its own and {pins[helper]}), not the unused one
    assert bd["externalParameters"]["pins"] == {"helper": "0.4.0", "mini": "2.3.1"}
    assert bd["externalParameters"]["unit"] == "core/linux-x86_64"
    recipe = next(d for d in bd["resolvedDependencies"] if d["name"] == "mini:recipe")
    assert recipe["uri"] == "file:recipes/mini.py"
    assert recipe["digest"]["sha256"] == hashlib.sha256(
        (world.ws / "recipes" / "mini.py").read_bytes()).hexdigest()
    names = {d["name"] for d in bd["resolvedDependencies"]}
    assert {"platform:linux-x86_64", "toolchain:linux-x86_64"} <= names
    tc = next(d for d in bd["resolvedDependencies"] if d["name"] == "toolchain:linux-x86_64")
    assert tc["annotations"]["version"].startswith("g++")
    rd = st["predicate"]["runDetails"]
    assert rd["builder"]["id"].startswith("urn:prebake:host:")
    assert rd["metadata"]["startedOn"] <= rd["metadata"]["finishedOn"]
    # the commit really went into the binary's build: the helper pin is compiled in
    assert b"0.4.0" in _member(world.asset, "lib/libmini.a")


def test_manifest_in_the_asset_carries_only_the_deterministic_half(world: World) -> None:
    manifest = json.loads(_member(world.asset, "share/prebake/manifest.json"))
    from prebake.package.manifest_builder import schema_path as manifest_schema

    jsonschema.validate(manifest, json.loads(manifest_schema().read_text()))
    assert manifest["provenance"] == _statement(world)["predicate"]["buildDefinition"]
    text = _member(world.asset, "share/prebake/manifest.json").decode()
    started = _statement(world)["predicate"]["runDetails"]["metadata"]["startedOn"]
    assert started[:10] not in text and "urn:prebake:host" not in text


def test_sbom_in_the_asset_validates_and_lists_bundled_components(world: World) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    raw = _member(world.asset, "share/prebake/sbom.cdx.json").decode()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(raw) is None
    bom = json.loads(raw)
    assert bom["metadata"]["component"]["name"] == "trustdemo-core"
    comps = {(c["name"], c.get("version")) for c in bom["components"]}
    assert {("mini", "2.3.1"), ("tinyfmt", "9.1.0"), ("miniz", "3.0.2")} <= comps
    assert "timestamp" not in bom["metadata"]


def test_force_rebuild_on_ci_keeps_the_asset_byte_identical(world: World) -> None:
    """The same build on "CI": the statement names the run, the asset's bytes do not change."""
    before = world.asset.read_bytes()
    statement_before = _statement(world)
    stale_sig = world.dist / f"{ASSET}.sig"
    stale_sig.write_text("-----BEGIN SSH SIGNATURE-----\nfrom an older asset\n")
    ci = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "kiln/deps",
          "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1"}
    proc = support.prebake("-C", world.ws, "build", "--platform", PLATFORM, "--force", "--json",
                           env=ci, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert world.asset.read_bytes() == before
    assert not stale_sig.exists(), "a rebuilt asset must not keep an older signature"
    after = _statement(world)
    assert after["subject"] == statement_before["subject"]
    assert after["predicate"]["buildDefinition"] == statement_before["predicate"][
        "buildDefinition"]
    run = "https://github.com/kiln/deps/actions/runs/4242"
    assert after["predicate"]["runDetails"]["builder"]["id"] == run
    assert after["predicate"]["runDetails"]["metadata"]["invocationId"] == f"{run}/attempts/1"


# ---- sign, publish, fetch -------------------------------------------------------------------

@pytest.fixture
def store(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh copy of the built asset (and its sidecars), published signed to a new store."""
    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PREBAKE_STORE", raising=False)
    out = tmp_path / "out"
    out.mkdir()
    for p in world.dist.glob(ASSET + "*"):
        if not p.name.endswith(".sig"):
            shutil.copy(p, out / p.name)
    store = tmp_path / "store"
    assert main(["publish", str(out / ASSET), "--store", store.as_uri(),
                 "--sign", str(world.key)]) == 0
    yield store / "continuous"


def _fetch(tmp_path: Path, store: Path, *extra: str) -> int:
    return main(["fetch", "trustdemo-core==1.0.0", "--platform", PLATFORM,
                 "--store", store.parent.as_uri(), "--into", str(tmp_path / "deps"),
                 "--lock", str(tmp_path / "prebake.lock"), *extra])


def test_signed_publish_then_fetch_with_allowed_signers(world: World, store: Path,
                                                        tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    names = sorted(p.name for p in store.iterdir())
    assert names == sorted(ASSET + s for s in ("", ".intoto.json", ".json", ".sha256", ".sig"))
    capsys.readouterr()
    assert _fetch(tmp_path, store, "--allowed-signers", str(world.allowed)) == 0
    err = capsys.readouterr().err
    assert "signed by release@example.org" in err
    assert (tmp_path / "deps" / "lib" / "libmini.a").is_file()
    assert (tmp_path / "prebake.lock").is_file()
    # and anyone can check it by hand with OpenSSH alone
    lines = subprocess.run(["sha256sum", ASSET, ASSET + ".intoto.json"], cwd=store,
                           capture_output=True, check=True).stdout
    subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(world.allowed), "-I",
                    "release@example.org", "-n", "prebake", "-s", str(store / f"{ASSET}.sig")],
                   input=lines, check=True, capture_output=True)


def _resign_with_intruder(world: World, store: Path) -> None:
    from prebake.trust.sign import sign_asset

    sign_asset(store / ASSET, world.other_key)


def _drop_signature(world: World, store: Path) -> None:
    (store / f"{ASSET}.sig").unlink()


def _tamper_provenance(world: World, store: Path) -> None:
    st = json.loads((store / f"{ASSET}.intoto.json").read_text())
    src = next(d for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]
               if d["name"] == "mini:source[0]")
    src["digest"]["gitCommit"] = "0" * 40
    (store / f"{ASSET}.intoto.json").write_text(json.dumps(st, indent=2))


def _swap_asset(world: World, store: Path) -> None:
    """Other bytes under the same name, with a consistent .sha256 and .json (the signature and
    provenance stay): what an attacker with write access to the store would do."""
    prefix = world.base / "evil-prefix"
    shutil.rmtree(prefix, ignore_errors=True)
    with tarfile.open(world.asset) as tf:
        tf.extractall(prefix, filter="data")
    (prefix / "include" / "mini.h").write_text("/* trojan */\nint mini_add(int, int);\n")
    manifest = json.loads((prefix / "share/prebake/manifest.json").read_text())
    evil = world.base / "evil"
    write_asset(prefix, asset_id("trustdemo-core", "1.0.0", PLATFORM), manifest, evil)
    for suffix in ("", ".sha256", ".json"):
        shutil.copy(evil / (ASSET + suffix), store / (ASSET + suffix))


@pytest.mark.parametrize(("attack", "reason"), [
    (_resign_with_intruder, "not in"),
    (_drop_signature, "not signed"),
    (_tamper_provenance, "signature does not match"),
    (_swap_asset, "signature does not match"),
])
def test_attacks_are_refused_and_nothing_is_installed(world: World, store: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      attack: Any, reason: str) -> None:
    attack(world, store)
    capsys.readouterr()
    assert _fetch(tmp_path, store, "--allowed-signers", str(world.allowed)) == 1
    err = capsys.readouterr().err.strip()
    assert reason in err and ASSET in err
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "deps").exists()
    assert not (tmp_path / "prebake.lock").exists()
    assert not list((tmp_path / "cache").rglob("*.tar.xz"))
    assert "PRIVATE KEY" not in err and world.key.read_text().splitlines()[1] not in err


def test_consumer_workspace_trust_table_requires_signatures(world: World, store: Path,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    consumer = tmp_path / "addon"
    consumer.mkdir()
    shutil.copy(world.allowed, consumer / "allowed_signers")
    (consumer / "prebake.toml").write_text(
        '[project]\nname = "addon"\nversion = "0.1.0"\n\n'
        '[trust]\nallowed_signers = "allowed_signers"\n')
    monkeypatch.chdir(consumer)
    args = ["fetch", "trustdemo-core==1.0.0", "--platform", PLATFORM,
            "--store", store.parent.as_uri()]
    _drop_signature(world, store)
    capsys.readouterr()
    assert main(args) == 1
    assert "not signed" in capsys.readouterr().err
    assert not (consumer / "prebake_deps").exists()
    from prebake.trust.sign import sign_asset

    sign_asset(store / ASSET, world.key)
    assert main(args) == 0
    assert (consumer / "prebake_deps" / f"trustdemo-core-{PLATFORM}" / "lib/libmini.a").is_file()


def test_missing_allowed_signers_file_is_a_usage_error(world: World, store: Path,
                                                       tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    capsys.readouterr()
    assert _fetch(tmp_path, store, "--allowed-signers", str(tmp_path / "nope")) == 2
    assert "allowed-signers file not found" in capsys.readouterr().err
    assert not (tmp_path / "deps").exists()


def test_trust_table_rejects_unknown_keys(tmp_path: Path) -> None:
    from prebake.errors import PrebakeError
    from prebake.intake import load_workspace

    (tmp_path / "prebake.toml").write_text(
        '[project]\nname = "addon"\nversion = "0.1.0"\n\n[trust]\nallowed_signer = "x"\n')
    with pytest.raises(PrebakeError,
                       match=r"trust\.allowed_signer.*did you mean 'allowed_signers'"):
        load_workspace(tmp_path)


def test_inspect_shows_provenance_and_signature_status(world: World, store: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    from prebake.commands.inspect import ASSET_SUFFIXES  # noqa: F401  (the command exists)

    capsys.readouterr()
    assert main(["inspect", str(store / ASSET), "--json",
                 "--allowed-signers", str(world.allowed)]) == 0
    out = json.loads(capsys.readouterr().out)
    from tests.support import ROOT

    jsonschema.validate(out, json.loads((ROOT / "schemas" / "inspect.schema.json").read_text()))
    (t,) = out["trust"]
    assert t["signature"]["status"] == "valid"
    assert t["signature"]["principal"] == "release@example.org"
    assert t["provenance"]["builder"] == _statement(world)["predicate"]["runDetails"][
        "builder"]["id"]
    assert {"name": "mini:source[0]", "uri": t["provenance"]["inputs"][1]["uri"],
            "digest": f"gitCommit:{world.commit}"} in t["provenance"]["inputs"]
    # human view, and an unchecked signature without an allowed-signers file
    assert main(["inspect", str(store / ASSET)]) == 0
    text = capsys.readouterr().out
    assert f"gitCommit:{world.commit}" in text and "signature: present, not checked" in text
    # an allowed_signers file next to the asset is used without the flag
    shutil.copy(world.allowed, store / "allowed_signers")
    assert main(["inspect", str(store / ASSET)]) == 0
    assert "signature: valid, signed by release@example.org" in capsys.readouterr().out
    # tampered provenance: the subject still matches, the signature does not -> exit 1
    _tamper_provenance(world, store)
    assert main(["inspect", str(store / ASSET), "--allowed-signers", str(world.allowed)]) == 1
    assert "signature: INVALID" in capsys.readouterr().out


# ---- every store backend carries the trust sidecars -----------------------------------------

def test_signatures_travel_through_every_store(world: World, store_backend: Backend,  # noqa: F811
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """file, GitHub Releases API, S3 and HTTP mirrors: the ``.sig`` is uploaded with the asset,
    read back by fetch, and removed again when the asset is re-published unsigned."""
    from tests.servers.assets import demo_prefix, make_asset

    monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
    b = store_backend
    asset = make_asset(tmp_path / "out", "demo", "1.0.0", PLATFORM, prefix=demo_prefix())
    assert main(["publish", str(asset), "--store", b.publish_url, "--sign", str(world.key)]) == 0
    args = ["fetch", "demo==1.0.0", "--platform", PLATFORM, "--store", b.fetch_url,
            "--into", str(tmp_path / "deps"), "--allowed-signers", str(world.allowed)]
    capsys.readouterr()
    assert main([*args, "--lock", str(tmp_path / "a.lock")]) == 0, capsys.readouterr().err
    assert (tmp_path / "deps" / "lib" / "libdemo.a").is_file()
    # re-published without --sign: the old signature must not stay behind in the store
    (asset.parent / f"{asset.name}.sig").unlink()
    assert main(["publish", str(asset), "--store", b.publish_url]) == 0
    shutil.rmtree(tmp_path / "deps")
    capsys.readouterr()
    assert main([*args, "--lock", str(tmp_path / "b.lock")]) == 1
    assert "not signed" in capsys.readouterr().err
    assert not (tmp_path / "deps").exists()
