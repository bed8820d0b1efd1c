"""Artifact tests run on each database and each kind of object store: a directory, and a real
S3-compatible HTTP server (moto's standalone server, started here on 127.0.0.1) reached
through boto3. Nothing reaches the internet."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perdure import FakeClock, Runtime
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "perdure-test",
    "AWS_SECRET_ACCESS_KEY": "perdure-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "NO_PROXY": "127.0.0.1,localhost",  # the S3 server is local: never through a proxy
    "no_proxy": "127.0.0.1,localhost",
}


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_db_url(request, tmp_path, migrated=True)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 API over HTTP on 127.0.0.1 (moto's threaded server), for the session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return S3_ENV


@pytest.fixture
def bucket(s3_endpoint: str, s3_env: dict[str, str]) -> str:
    """A fresh bucket on the local S3 server."""
    name = f"b-{uuid.uuid4().hex[:12]}"
    s3_client(s3_endpoint).create_bucket(Bucket=name)
    return name


def s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
    )


class Objects:
    """The object store a test runs on, and a way to see and damage it behind perdure's back."""

    def __init__(self, kind: str, location: str, root: Path | None, endpoint: str | None):
        self.kind = kind
        self.location = location
        self.root = root
        self.endpoint = endpoint
        self.bucket = location.removeprefix("s3://").split("/")[0] if kind == "s3" else ""
        self.prefix = "pfx/" if kind == "s3" else ""

    def list(self) -> list[str]:
        """Every object key (below the configured prefix)."""
        if self.root is not None:
            if not self.root.exists():
                return []
            return sorted(
                p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()
            )
        client = s3_client(self.endpoint or "")
        found = client.list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return sorted(str(o["Key"]).removeprefix(self.prefix) for o in found)

    def write(self, key: str, data: bytes) -> None:
        if self.root is not None:
            (self.root / key).write_bytes(data)
        else:
            s3_client(self.endpoint or "").put_object(
                Bucket=self.bucket, Key=self.prefix + key, Body=data
            )

    def remove(self, key: str) -> None:
        if self.root is not None:
            (self.root / key).unlink()
        else:
            s3_client(self.endpoint or "").delete_object(Bucket=self.bucket, Key=self.prefix + key)


@pytest.fixture(params=["local", "s3"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> Objects:
    if request.param == "local":
        root = tmp_path / "artifacts"
        return Objects("local", str(root), root, None)
    endpoint = request.getfixturevalue("s3_endpoint")
    name = request.getfixturevalue("bucket")
    return Objects("s3", f"s3://{name}/pfx?endpoint_url={endpoint}", None, endpoint)


@pytest.fixture
def runtime(db_url: str, clock: FakeClock, objects: Objects) -> Iterator[Runtime]:
    rt = Runtime(db_url, clock=clock, artifacts=objects.location, offload_bytes=64 * 1024)
    yield rt
    rt.close()
