"""Objects in an S3-compatible store (AWS S3, MinIO, Ceph, R2 ...) through boto3, imported
only when such a store is configured (``pip install 'perdure[s3]'``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perdure.core.errors import ConfigError
from perdure.store.objects.base import ObjectStoreError, StoredObject


class S3Objects:
    """An :class:`~perdure.store.objects.ObjectStore` in ``bucket`` under ``prefix``."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        client: Any = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        where = f" at {endpoint_url}" if endpoint_url else ""
        self.url = f"s3://{bucket}/{prefix}{where}"
        if client is None:
            try:
                import boto3
            except ImportError as exc:
                raise ConfigError(
                    "an s3:// artifact store needs boto3", fix="pip install 'perdure[s3]'"
                ) from exc
            client = boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
        self.client = client
        from botocore.exceptions import BotoCoreError, ClientError

        self._errors: tuple[type[Exception], ...] = (BotoCoreError, ClientError)
        self._client_error = ClientError

    def _fail(self, what: str, key: str, exc: Exception) -> ObjectStoreError:
        return ObjectStoreError(
            f"artifact store {self.url}: cannot {what} {key}: {exc}",
            fix="check the bucket, the endpoint and the credentials",
        )

    def put(self, key: str, data: bytes | Path) -> None:
        """See :meth:`ObjectStore.put` (S3 writes are whole-object)."""
        try:
            if isinstance(data, Path):
                self.client.upload_file(str(data), self.bucket, self.prefix + key)
            else:
                self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)
        except (OSError, *self._errors) as exc:  # type: ignore[misc]
            raise self._fail("write", key, exc) from exc

    def get(self, key: str) -> bytes | None:
        """See :meth:`ObjectStore.get`."""
        try:
            found = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
            return bytes(found["Body"].read())
        except self._client_error as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise self._fail("read", key, exc) from exc
        except self._errors as exc:
            raise self._fail("read", key, exc) from exc

    def delete(self, key: str) -> None:
        """See :meth:`ObjectStore.delete`."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)
        except self._errors as exc:
            raise self._fail("delete", key, exc) from exc

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        """See :meth:`ObjectStore.list`."""
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    key = str(item["Key"])[len(self.prefix) :]
                    yield StoredObject(key, int(item["Size"]), item["LastModified"])
        except self._errors as exc:
            raise self._fail("list", prefix, exc) from exc
