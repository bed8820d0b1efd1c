"""What every object store is: the :class:`ObjectStore` protocol and the :class:`StoredObject` it
lists. The backends (:mod:`~perdure.store.objects.local`, :mod:`~perdure.store.objects.s3`)
import this module only; :func:`perdure.store.objects.open_objects` picks one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol


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
