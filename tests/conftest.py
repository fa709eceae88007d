"""Suite-wide fixtures. Sockets may only reach loopback: a test that would touch the network
fails loudly instead of silently depending on it (cibuildwheel's mock_protection idea)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import support

_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and self.family in (socket.AF_INET, socket.AF_INET6):
        try:
            ok = ipaddress.ip_address(host).is_loopback
        except ValueError:
            ok = host == "localhost"
        if not ok:
            raise RuntimeError(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield


@pytest.fixture(scope="session")
def ort_web() -> Path:
    """onnxruntime-web 1.30.0 ``package/`` (four real wasm builds in ``dist/``)."""
    return support.npm_package("web")


@pytest.fixture(scope="session")
def ort_node() -> Path:
    """onnxruntime-node 1.30.0 ``package/`` (``bin/napi-v6/<os>/<arch>/`` libraries)."""
    return support.npm_package("node")


@pytest.fixture(scope="session")
def ort_web_tgz() -> Path:
    """onnxruntime-web 1.30.0 as the npm registry serves it (the ``.tgz``, not unpacked)."""
    return support.npm_tarball("web")


@pytest.fixture(scope="session")
def ort_wheel() -> Path:
    """The onnxruntime 1.27.0 manylinux_2_28 x86_64 wheel from PyPI."""
    return support.pypi_wheel()


@pytest.fixture
def www(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``(base URL, folder)``: an empty folder served on 127.0.0.1 (an upstream download site)."""
    from tests.servers.static_http import StaticServer

    root = tmp_path / "www"
    root.mkdir()
    with StaticServer(root) as srv:
        yield srv.url, root
