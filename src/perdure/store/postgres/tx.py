"""A PostgreSQL transaction on one pooled connection (:class:`PostgresTx`).

A write transaction does not send its ``BEGIN`` alone: it goes with the first statement, in
one pipeline, so the two cost one round trip. A batch that is the transaction's last sends the
``COMMIT`` with its statements. :class:`~perdure.store.postgres.driver.PostgresDriver` opens
these, commits what a batch did not, and rolls back after an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import DictRow, tuple_row
from psycopg.types.string import ByteaBinaryLoader

from perdure.store.driver import NO_PARAMS
from perdure.store.postgres import park, prepared
from perdure.store.queries import queries
from perdure.store.rows import Params, Row

Q = {name: text.encode() for name, text in queries("postgres").items()}
"""Every named PostgreSQL query, as bytes."""
DOLLAR = {name: prepared.dollar_form(Q[name]) for name in prepared.HOT}
"""The hot queries with numbered placeholders, and their parameters' names in order."""
Conn = psycopg.Connection[DictRow]
R = TypeVar("R")

OPEN = (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR)
"""The states of a connection inside a transaction (a broken one is UNKNOWN)."""


class PostgresTx:
    """A :class:`~perdure.store.driver.Tx` on one pooled psycopg connection. In a write
    transaction, ``BEGIN`` is not sent alone: it goes with the first statement, in one
    pipeline (one round trip for both)."""

    def __init__(self, conn: Conn, *, begin: bool = False) -> None:
        self.conn = conn
        self.begin = begin
        """True until the transaction's ``BEGIN`` was sent."""
        self.committed = False
        """True once a ``batch(last=True)`` sent the transaction's ``COMMIT``."""

    def _execute(self, query: str, params: Params) -> psycopg.Cursor[DictRow]:
        return self._on(self.conn.cursor(), query, params)

    def _on(self, cursor: psycopg.Cursor[R], query: str, params: Params) -> psycopg.Cursor[R]:
        """Run a named query on ``cursor``, with the transaction's ``BEGIN`` if not yet sent."""
        if not self.begin:
            cursor.execute(Q[query], params)
        else:
            with self.conn.pipeline():
                self._send_begin()
                cursor.execute(Q[query], params)
        if park.ARMED:
            park.park_after(query, self.conn.info.transaction_status in OPEN)
        return cursor

    def _send_begin(self) -> None:
        if self.begin:
            self.conn.execute(Q["begin_write"])
            self.begin = False

    def one(self, query: str, params: Params = NO_PARAMS) -> Row | None:
        """See :meth:`Tx.one`. A hot statement outside a transaction goes prepared, straight
        through libpq (:mod:`~perdure.store.postgres.prepared`)."""
        if query in prepared.HOT and not self.begin and not self.conn.info.transaction_status:
            sql, names = DOLLAR[query]
            values = prepared.text_params(names, params)
            if values is not None:
                return prepared.one(self.conn, query, sql, values)
        return self._execute(query, params).fetchone()

    def all(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        """See :meth:`Tx.all`."""
        return list(self._execute(query, params).fetchall())

    def values(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """See :meth:`Tx.values`: a cursor of plain tuples."""
        return self._on(self.conn.cursor(row_factory=tuple_row), query, params).fetchall()

    def binary(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """See :meth:`Tx.binary`: a cursor of plain tuples in PostgreSQL's binary format, whose
        ``text`` values are loaded as ``bytea`` is, into ``bytes`` (one copy out of libpq's
        result). The server sends a text value as it holds it, with no function to apply to it
        (``convert_to`` would check the whole value's encoding again)."""
        cursor = self.conn.cursor(binary=True, row_factory=tuple_row)
        cursor.adapters.register_loader("text", ByteaBinaryLoader)
        return self._on(cursor, query, params).fetchall()

    def many(self, statements: Sequence[tuple[str, Params]]) -> list[Row | None]:
        """See :meth:`Tx.many`: in a pipeline, every statement queued before a row is read, and
        the rows read once it ended (one round trip: reading inside it costs one more)."""
        with self.conn.pipeline():
            self._send_begin()
            cursors = [self.conn.execute(Q[query], params) for query, params in statements]
        if park.ARMED:
            for query, _ in statements:
                park.park_after(query, self.conn.info.transaction_status in OPEN)
        return [c.fetchone() for c in cursors]

    def run(self, query: str, params: Params = NO_PARAMS) -> int:
        """See :meth:`Tx.run`."""
        return self._execute(query, params).rowcount

    @contextmanager
    def batch(self, *, last: bool = False) -> Iterator[None]:
        """See :meth:`Tx.batch`: one round trip for every statement in the block (and, when
        ``last``, the ``COMMIT``)."""
        with self.conn.pipeline():
            self._send_begin()
            yield
            if last:
                self.conn.execute(Q["commit_write"])
                self.committed = True

    def lock_thread(self, tenant_id: str, thread_id: str) -> None:
        """See :meth:`Tx.lock_thread`: a transaction-scoped advisory lock on the thread."""
        self._execute("lock_thread", {"tenant_id": tenant_id, "thread_id": thread_id})

    def script(self, sql: str) -> None:
        """See :meth:`Tx.script`: the whole file at once, never split on ``;``."""
        self._send_begin()
        self.conn.execute(sql.encode())
