"""``s3://BUCKET/PREFIX``: objects ``PREFIX/<release>/<file>`` through boto3.

An S3 PUT (single or multipart) becomes visible only when complete, so a killed upload leaves
nothing; the ``.sha256`` sidecar (commit marker) is deleted before an asset is replaced and put
last. The endpoint comes from ``?endpoint=URL`` in the store URL or boto3's own
``AWS_ENDPOINT_URL`` (MinIO, Ceph, R2, moto's server in the tests); credentials come from boto3's
usual chain and are never printed. boto3's "standard" retry mode retries throttling and 5xx.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
)

from prebake.errors import PrebakeError
from prebake.package.naming import MAX_ASSET_BYTES, AssetId
from prebake.store.base import (
    DEFAULT_RELEASE,
    AuthError,
    ProgressFn,
    StoreError,
    bound_words,
    complete_assets,
    prepare_publish,
    sidecar_limit,
)

_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
               "InvalidToken", "AuthorizationHeaderMalformed"}
_MISSING = {"NoSuchKey", "404", "NotFound"}


class S3Store:
    writable = True

    def __init__(self, url: str, bucket: str, prefix: str, *, endpoint: str | None = None,
                 region: str | None = None) -> None:
        self.url = url
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint = endpoint
        self.region = region
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            # lazy: boto3 costs 290 ms to import (-X importtime), which a store opened but
            # never asked does not pay
            import boto3

            cfg = Config(retries={"max_attempts": 6, "mode": "standard"},
                         connect_timeout=10, read_timeout=60)
            # a session per store: boto3's default session caches credentials process-wide
            # and is not thread-safe
            session = boto3.session.Session()
            self._client = session.client("s3", endpoint_url=self.endpoint,
                                          region_name=self.region, config=cfg)
        return self._client

    def _key(self, release: str | None, name: str = "") -> str:
        parts = [p for p in (self.prefix, release or DEFAULT_RELEASE, name) if p]
        return "/".join(parts)

    def _err(self, exc: Exception, what: str) -> StoreError:
        if isinstance(exc, NoCredentialsError):
            return AuthError(f"{self.url}: {what}: no AWS credentials (set AWS_ACCESS_KEY_ID/"
                             "AWS_SECRET_ACCESS_KEY or a profile)")
        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _AUTH_CODES:
                return AuthError(f"{self.url}: {what}: authentication failed ({code})")
            return StoreError(f"{self.url}: {what}: {code or exc}")

        if isinstance(exc, EndpointConnectionError | ConnectTimeoutError):
            return StoreError(f"{self.url}: {what}: cannot reach the endpoint "
                              f"{self.endpoint or 'of AWS S3'} (down, or a wrong ?endpoint=)")
        return StoreError(f"{self.url}: {what}: {exc}")

    def _call(self, what: str, fn: Any, **kw: Any) -> Any:
        try:
            return fn(**kw)
        except (ClientError, BotoCoreError) as exc:
            raise self._err(exc, what) from None

    def _names(self, release: str) -> set[str]:
        base = self._key(release) + "/"
        names: set[str] = set()
        pager = self.client.get_paginator("list_objects_v2")

        try:
            for page in pager.paginate(Bucket=self.bucket, Prefix=base):
                for obj in page.get("Contents", []):
                    rest = obj["Key"][len(base):]
                    if "/" not in rest:
                        names.add(rest)
        except (ClientError, BotoCoreError) as exc:
            raise self._err(exc, f"list {release}") from None
        return names

    def releases(self) -> list[str]:
        base = self.prefix + "/" if self.prefix else ""
        out = self._call("list releases", self.client.list_objects_v2, Bucket=self.bucket,
                         Prefix=base, Delimiter="/")
        return sorted(p["Prefix"][len(base):].rstrip("/") for p in out.get("CommonPrefixes", []))

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        tags = [release] if release else self.releases()
        found: set[AssetId] = set()
        for tag in tags:
            found.update(complete_assets(self._names(tag)))
        return sorted(found)

    def _get(self, key: str, what: str, **kw: Any) -> Any:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=key, **kw)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING:
                return None
            raise self._err(exc, what) from None
        except BotoCoreError as exc:
            raise self._err(exc, what) from None

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        if self._head(self._key(release, asset.filename)) is None:
            return None
        what = f"read {asset}{suffix}"
        obj = self._get(self._key(release, asset.filename + suffix), what)
        if obj is None:
            return None
        limit = sidecar_limit(suffix)
        if int(obj.get("ContentLength") or 0) > limit:
            raise StoreError(f"{self.url}: {asset.filename}{suffix}: "
                             f"{obj['ContentLength']} bytes, more than a sidecar may have "
                             f"({limit})")
        data = self._call(what, obj["Body"].read, amt=limit + 1)
        if len(data) > limit:
            raise StoreError(f"{self.url}: {asset.filename}{suffix}: more than {limit} bytes")
        return bytes(data)

    def _head(self, key: str) -> dict[str, Any] | None:
        try:
            out: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=key)
            return out
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING:
                return None
            raise self._err(exc, f"head {key}") from None
        except BotoCoreError as exc:  # unreachable endpoint, timeouts: the store's failure
            raise self._err(exc, f"head {key}") from None

    def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                 progress: ProgressFn | None = None, limit: int | None = None) -> Path:
        key = self._key(release, asset.filename)
        part = dest.with_name(dest.name + ".part")
        dest.parent.mkdir(parents=True, exist_ok=True)
        have = part.stat().st_size if part.exists() else 0
        head = self._head(key)
        if head is None:
            raise StoreError(f"{self.url}: no {asset.filename} in release "
                             f"{release or DEFAULT_RELEASE}")
        total = int(head["ContentLength"])
        if total > (MAX_ASSET_BYTES if limit is None else limit):
            raise StoreError(f"{self.url}: {asset.filename}: the store announces {total} bytes, "
                             f"{bound_words(limit)}; nothing downloaded")
        if have >= total:
            part.unlink(missing_ok=True)
            have = 0
        kw = {"Range": f"bytes={have}-"} if have else {}
        obj = self._get(key, f"download {asset}", **kw)
        if obj is None:
            raise StoreError(f"{self.url}: {asset.filename} vanished during download")
        done = have

        with open(part, "ab" if have else "wb") as fh:
            try:
                for chunk in obj["Body"].iter_chunks(1 << 20):
                    fh.write(chunk)
                    done += len(chunk)
                    if done > total:
                        raise StoreError(f"{self.url}: {asset.filename}: more bytes than the "
                                         f"{total} the store announced")
                    if progress:
                        progress(done, total)
            except BotoCoreError as exc:
                raise self._err(exc, f"download {asset}") from None
        part.replace(dest)
        return dest

    def publish(self, asset_path: Path, release: str | None = None, *,
                progress: ProgressFn | None = None) -> AssetId:
        ps = prepare_publish(asset_path)
        aid = ps.aid
        self._call("hide old asset", self.client.delete_object, Bucket=self.bucket,
                   Key=self._key(release, aid.sha256_name))
        done = [0]

        def cb(n: int) -> None:
            done[0] += n
            if progress:
                progress(done[0], ps.size)

        self._call(f"upload {aid.filename}", self.client.upload_file, Filename=str(ps.asset),
                   Bucket=self.bucket, Key=self._key(release, aid.filename), Callback=cb)
        for name in ps.stale_extras():
            self._call("remove old trust sidecar", self.client.delete_object,
                       Bucket=self.bucket, Key=self._key(release, name))
        extras = [(p, p.name, "application/octet-stream") for p in ps.extras]
        for side, name, ctype in ((ps.manifest_file, aid.manifest_name, "application/json"),
                                  *extras,
                                  (ps.sha256_file, aid.sha256_name, "text/plain")):
            self._call(f"upload {name}", self.client.put_object, Bucket=self.bucket,
                       Key=self._key(release, name), Body=side.read_bytes(), ContentType=ctype)
        return aid

    def asset_url(self, asset: AssetId, release: str | None = None) -> str:
        return f"s3://{self.bucket}/{self._key(release, asset.filename)}"


def open_s3(url: str, root: Path | None) -> S3Store:
    u = urlsplit(url)
    if not u.netloc:
        raise PrebakeError(f"{url}: expected s3://BUCKET[/PREFIX]")
    q = parse_qs(u.query)
    endpoint = q.get("endpoint", [None])[0]
    region = q.get("region", [None])[0]
    clean = f"s3://{u.netloc}{u.path}"
    return S3Store(clean, u.netloc, u.path, endpoint=endpoint, region=region)
