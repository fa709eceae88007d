"""pytest fixtures for the store backends (import them into a test module to use them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.backends import BACKENDS, Backend, MotoS3, backend


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    server = MotoS3()
    yield server
    server.stop()


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    moto = request.getfixturevalue("moto_s3") if request.param == "s3" else None
    with backend(request.param, tmp_path, moto) as b:
        for k, v in b.env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("PREBAKE_CACHE", str(tmp_path / "cache"))
        yield b
