"""Storage: one :class:`~perdure.store.base.Store` protocol, one implementation per database."""

from __future__ import annotations

from perdure.store.base import Boundary, NewRun, Store
from perdure.store.url import open_store

__all__ = ["Boundary", "NewRun", "Store", "open_store"]
