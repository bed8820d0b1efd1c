"""Storage: the :class:`~perdure.store.base.Store` kernel and its wings
(:mod:`perdure.store.wings`), written once (:mod:`perdure.store.engine`) for every database a
driver reaches."""

from __future__ import annotations

from perdure.store.base import Boundary, NewRun, Store
from perdure.store.url import open_store

__all__ = ["Boundary", "NewRun", "Store", "open_store"]
