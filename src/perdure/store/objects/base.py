"""What every object store is: the :class:`ObjectStore` protocol and the :class:`StoredObject` it
lists. The backends (:mod:`~perdure.store.objects.local`, :mod:`~perdure.store.objects.s3`)
import this module only; :func:`perdure.store.objects.open_objects` picks one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from perdure.core.errors import PerdureError, StoreError


class ObjectStoreError(StoreError):
    """The object store could not be reached or written (a network, disk or credentials
    problem): the database still works, so a run that meets it waits and tries again, and
    after a few tries goes to a person (never a silent retry loop)."""

    code = "object_store_unavailable"
    fix = "check the artifact store (its directory or bucket, endpoint and credentials)"


class ObjectUnreadableError(PerdureError):
    """An object is there but cannot be read as one (a directory where a file was, a file the
    process may not read): what was stored is damaged, not unreachable."""

    code = "object_unreadable"
    fix = "restore the object (its key names its digest) as a readable file"


@dataclass(frozen=True, slots=True)
class StoredObject:
    """One object as listed: its key, size in bytes and when it was last written."""

    key: str
    size: int
    modified: datetime


class ObjectStore(Protocol):
    """Bytes under keys. Every method is safe to repeat."""

    url: str
    """Where the objects live, as configured (no credentials)."""

    def put(self, key: str, data: bytes | Path) -> None:
        """Write the whole object (bytes, or the file at a path), replacing any older one."""
        ...

    def get(self, key: str) -> bytes | None:
        """The object's bytes, or None when there is no such object."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; nothing happens when it does not exist."""
        ...

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        """Every object whose key starts with ``prefix``."""
        ...
