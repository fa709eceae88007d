"""Every store backend, live on 127.0.0.1, behind one shape so one test runs against all of them.

``file``: a folder. ``github``: the local release-API server. ``s3``: moto's S3 server (one per
test session, a fresh bucket per test). ``mirrors``: a ``file`` store served over HTTP, listed
after a mirror that is down.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.package.naming import AssetId
from tests.servers.github_api import GitHubServer
from tests.servers.static_http import StaticServer, closed_port_url

BACKENDS = ("file", "github", "s3", "mirrors")
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
          "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class Backend:
    name: str
    publish_url: str
    fetch_url: str
    env: dict[str, str]
    #: replace the stored bytes of an asset (sidecars untouched): a tampering attacker
    tamper: Callable[[AssetId, str, bytes], None]
    extra: dict[str, Any] = field(default_factory=dict)


class MotoS3:
    """moto's S3 server mode in a thread (``ThreadedMotoServer``), on 127.0.0.1."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer
        from werkzeug.serving import WSGIRequestHandler

        # small responses written in pieces + delayed ACKs cost 40 ms a request otherwise
        WSGIRequestHandler.disable_nagle_algorithm = True
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def new_bucket(self) -> str:
        name = f"prebake-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.server.stop()


@contextlib.contextmanager
def backend(kind: str, tmp: Path, moto: MotoS3 | None = None) -> Iterator[Backend]:
    fast = {"PREBAKE_RETRY_BASE": "0.01"}
    if kind == "file":
        root = tmp / "store"

        def tamper_file(aid: AssetId, release: str, data: bytes) -> None:
            (root / release / aid.filename).write_bytes(data)

        url = root.as_uri()
        yield Backend(kind, url, url, fast, tamper_file, {"root": root})
    elif kind == "github":
        with GitHubServer() as gh:
            def tamper_gh(aid: AssetId, release: str, data: bytes) -> None:
                with gh.state.lock:
                    for a in gh.state.assets.values():
                        if a.name == aid.filename:
                            a.data = data

            env = {**fast, "PREBAKE_GITHUB_API": gh.api, "GH_TOKEN": gh.state.token}
            yield Backend(kind, "github://acme/sdk", "github://acme/sdk", env, tamper_gh,
                          {"server": gh})
    elif kind == "s3":
        assert moto is not None
        bucket = moto.new_bucket()

        def tamper_s3(aid: AssetId, release: str, data: bytes) -> None:
            moto.client().put_object(Bucket=bucket, Key=f"deps/{release}/{aid.filename}",
                                     Body=data)

        url = f"s3://{bucket}/deps?endpoint={moto.endpoint}"
        yield Backend(kind, url, url, {**fast, **S3_ENV}, tamper_s3, {"bucket": bucket})
    elif kind == "mirrors":
        root = tmp / "mirror-root"
        root.mkdir(parents=True)
        with StaticServer(root) as srv:
            def tamper_http(aid: AssetId, release: str, data: bytes) -> None:
                (root / release / aid.filename).write_bytes(data)

            fetch_url = f"{closed_port_url()}/down,{srv.url}"
            yield Backend(kind, root.as_uri(), fetch_url, fast, tamper_http, {"server": srv})
    else:
        raise ValueError(kind)


@contextlib.contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
