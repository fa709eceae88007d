"""How a toolchain environment is bootstrapped on a machine whose apt is not Debian's (a CI
runner on Ubuntu): the mirror comes from ``PREBAKE_DEBIAN_MIRROR`` and the sources line names
Debian's own keyring, so signatures are still verified against Debian's keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.toolchain import environment
from prebake.toolchain.environment import environment_named, environments, mmdebstrap_argv


def test_the_mirror_a_runner_names_wins(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    """The variable first; set but empty (a workflow's unset Actions variable) it says
    nothing and apt's sources decide, as APT_CONFIG places them; none: no mirror, never a
    guess."""
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (tmp_path / "apt.conf").write_text(
        f'Dir::Etc::sourcelist "{tmp_path / "sources.list"}";\n'
        f'Dir::Etc::sourceparts "{parts}";\n')
    monkeypatch.setenv("APT_CONFIG", str(tmp_path / "apt.conf"))
    monkeypatch.setenv("PREBAKE_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert environment.debian_mirror() == "http://mirror.example/debian"
    monkeypatch.setenv("PREBAKE_DEBIAN_MIRROR", " ")
    assert environment.debian_mirror() is None
    (parts / "local.sources").write_text(
        "Types: deb\nURIs: http://apt.example/debian\nSuites: trixie\nComponents: main\n")
    assert environment.debian_mirror() == "http://apt.example/debian"


def test_the_sources_line_names_debian_keyring(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("PREBAKE_DEBIAN_MIRROR", "http://mirror.example/debian")
    keyring = tmp_path / "debian-archive-keyring.gpg"
    keyring.write_bytes(b"keys")
    monkeypatch.setattr(environment, "DEBIAN_KEYRING", keyring)
    for name in environments():
        env = environment_named(name)
        argv = mmdebstrap_argv(env, tmp_path / "root")
        assert argv[-1] == (f"deb [signed-by={keyring}] http://mirror.example/debian "
                            f"{env.suite} main")
        assert "--no-check-gpg" not in " ".join(argv)
    monkeypatch.setattr(environment, "DEBIAN_KEYRING", tmp_path / "absent.gpg")
    env = environment_named(sorted(environments())[0])
    assert mmdebstrap_argv(env, tmp_path)[-1] == (
        f"deb http://mirror.example/debian {env.suite} main")  # the host's apt keys decide
