"""Object stores for artifacts: a local directory (default) or any S3-compatible service.

An :class:`ObjectStore` keeps bytes under keys and knows nothing of runs; the runtime's
artifact service decides the keys (``<tenant>/sha256/<ab>/<digest>``, content-addressed) and
records every reference in the database before it uploads. Writes are whole-object (a reader
never sees half an object); a missing key reads as None. The protocol is in
:mod:`~perdure.store.objects.base`, the backends in :mod:`~perdure.store.objects.local` and
:mod:`~perdure.store.objects.s3`; :func:`open_objects` picks one.

Configuration (``PERDURE_ARTIFACTS``, or ``Runtime(artifacts=...)``):

* unset: the directory ``artifacts`` next to the SQLite database file (``.perdure/artifacts``
  for a PostgreSQL database);
* ``file:///absolute/dir`` or a plain path: that directory;
* ``s3://bucket/prefix``: an S3-compatible store through boto3 (``pip install 'perdure[s3]'``).
  The endpoint comes from ``?endpoint_url=`` in the URL, ``PERDURE_S3_ENDPOINT`` or boto3's own
  ``AWS_ENDPOINT_URL``; the region from ``?region=`` or ``AWS_REGION``/``AWS_DEFAULT_REGION``;
  credentials from boto3's usual chain (``AWS_ACCESS_KEY_ID``, profiles, roles).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from perdure.core.errors import ConfigError
from perdure.store.objects.base import ObjectStore, StoredObject
from perdure.store.objects.local import LocalObjects
from perdure.store.objects.s3 import S3Objects

__all__ = ["ObjectStore", "StoredObject", "default_location", "open_objects"]


def default_location(db_url: str) -> str:
    """The artifact directory that goes with a database URL."""
    if db_url.startswith("sqlite:///") and len(db_url) > len("sqlite:///"):
        return str(Path(db_url.removeprefix("sqlite:///")).parent / "artifacts")
    if "://" not in db_url:
        return str(Path(db_url).parent / "artifacts")
    return str(Path(".perdure") / "artifacts")


def open_objects(location: str | None, db_url: str) -> ObjectStore:
    """The object store ``location`` names (``PERDURE_ARTIFACTS`` when None)."""
    location = location or os.environ.get("PERDURE_ARTIFACTS") or default_location(db_url)
    if location.startswith("s3://"):
        parts = urlsplit(location)
        if not parts.netloc:
            raise ConfigError(
                f"artifact store {location!r} names no bucket", fix="write s3://bucket/prefix"
            )
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        endpoint = query.get("endpoint_url") or os.environ.get("PERDURE_S3_ENDPOINT") or None
        return S3Objects(
            parts.netloc, parts.path.strip("/"), endpoint_url=endpoint, region=query.get("region")
        )
    if location.startswith("file://"):
        location = location.removeprefix("file://")
    elif "://" in location:
        raise ConfigError(
            f"artifact store {location!r} is not understood",
            fix="use a directory path, file:///dir or s3://bucket/prefix",
        )
    return LocalObjects(Path(location))
