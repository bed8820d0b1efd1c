"""Faults a drill injects into a database from outside the runtime it tests: SQLite's write
lock held by another connection, PostgreSQL's connections ended as a restart or a failover
ends them. For ``perdure drills`` and tests, never for production use."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def sqlite_write_lock(path: str) -> Iterator[None]:
    """Hold the write lock of the SQLite database at ``path`` (``BEGIN IMMEDIATE`` on a
    connection of its own) until the block ends: every writer waits meanwhile."""
    from perdure.store.sqlite.store import SqliteStore

    store = SqliteStore(path)
    try:
        with store.driver.write():
            yield
    finally:
        store.close()


@contextlib.contextmanager
def postgres_sessions_ender(url: str) -> Iterator[Callable[[], int]]:
    """A callable that ends every other perdure connection to the database at ``url`` and
    returns how many it ended, on one connection of its own, closed when the block ends."""
    from perdure.store.postgres.store import PostgresStore  # needs perdure[postgres]

    store = PostgresStore(url, max_connections=1)
    try:
        yield store.terminate_sessions
    finally:
        store.close()
