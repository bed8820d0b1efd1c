"""The shared store: :class:`~perdure.store.engine.engine.Engine` on a PostgreSQL database, schema
``perdure`` (see :mod:`perdure.store.postgres.driver` for the pool, locks and notifications)."""

from __future__ import annotations

from perdure.store.base import Store
from perdure.store.engine.engine import Engine
from perdure.store.postgres.driver import PostgresDriver


class PostgresStore(Engine):
    """:class:`~perdure.store.base.Store` on a PostgreSQL database, schema ``perdure``.

    ``PostgresStore(url, max_connections=8, timeout=30.0, lease_seconds=30.0,
    idle_transaction_seconds=None)``: see :class:`~perdure.store.postgres.driver.PostgresDriver`.
    """

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 8,
        timeout: float = 30.0,
        lease_seconds: float = 30.0,
        idle_transaction_seconds: float | None = None,
    ) -> None:
        driver = PostgresDriver(
            url,
            max_connections=max_connections,
            timeout=timeout,
            lease_seconds=lease_seconds,
            idle_transaction_seconds=idle_transaction_seconds,
        )
        super().__init__(driver)
        self.where = driver.where
        """``host:port/database``, for messages (never the password)."""

    def terminate_sessions(self) -> int:
        """End every other perdure connection to this database (what a restart or a failover
        does to them); returns how many. For the fault drills, not for production use."""
        with self.driver.write() as tx:
            row = tx.one("terminate_sessions", {})
        return int(row["ended"]) if row is not None else 0


_: type[Store] = PostgresStore
"""Checked by the type checker: :class:`PostgresStore` is a :class:`~perdure.store.base.Store`."""
