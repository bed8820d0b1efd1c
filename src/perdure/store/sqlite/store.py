"""The embedded store: :class:`~perdure.store.engine.engine.Engine` on one SQLite file (see
:mod:`perdure.store.sqlite.driver` for how the file is used)."""

from __future__ import annotations

from pathlib import Path

from perdure.store.base import Store
from perdure.store.engine.engine import Engine
from perdure.store.sqlite.driver import SqliteDriver


class SqliteStore(Engine):
    """:class:`~perdure.store.base.Store` on one SQLite database file.

    ``busy_timeout_ms`` is how long a writer waits for another writer's lock before the
    operation fails with :class:`~perdure.core.errors.StoreUnavailableError`.
    """

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        driver = SqliteDriver(path, busy_timeout_ms=busy_timeout_ms)
        super().__init__(driver)
        self.path = driver.path
        """The database file."""


_: type[Store] = SqliteStore
"""Checked by the type checker: :class:`SqliteStore` is a :class:`~perdure.store.base.Store`."""
