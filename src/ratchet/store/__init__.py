"""Storage: one :class:`~ratchet.store.base.Store` protocol, one implementation per database."""

from __future__ import annotations

from ratchet.store.base import Boundary, NewRun, Store
from ratchet.store.url import open_store

__all__ = ["Boundary", "NewRun", "Store", "open_store"]
