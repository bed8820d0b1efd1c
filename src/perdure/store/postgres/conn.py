"""PostgreSQL connections, transactions and error translation, shared by the parts of the
PostgreSQL store.

One ``psycopg_pool.ConnectionPool`` per store. Pooled connections are in autocommit mode, so
every transaction is explicit (``conn.transaction()``); each sets ``synchronous_commit = on`` (a
commit is durable when it returns, whatever the server's default) and ``TimeZone = UTC``, and is
checked before each use so connections a restarted server dropped are replaced. Driver errors
are translated once, by :func:`translate_error`, from their SQLSTATE and constraint name.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from perdure.core.effects import EffectStatus
from perdure.core.errors import (
    ConfigError,
    InvalidInputError,
    PerdureError,
    RunClosedError,
    StoreError,
    StoreUnavailableError,
)
from perdure.core.model import JSON, Message
from perdure.store import rows
from perdure.store.queries import queries

Q = {name: text.encode() for name, text in queries("postgres").items()}
Conn = psycopg.Connection[DictRow]
Params = dict[str, Any]

RUN_CLOSED_SQLSTATE = "RT001"
"""Raised by the ``runs_terminal_is_final`` trigger when something updates a finished run."""

REACH = (
    "check that PostgreSQL is running and reachable, and that the URL's host, port, database, "
    "user and password are right (--db or PERDURE_DB)"
)


def when(value: datetime | None) -> datetime | None:
    """Stored time to datetime: psycopg already returns aware datetimes (session zone UTC)."""
    return value


def describe(url: str) -> str:
    """``host:port/database`` of a URL, for messages (never the password)."""
    params = conninfo_to_dict(url)
    host = params.get("host") or "localhost"
    return f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user', '')}"


def _configure(conn: Conn) -> None:
    """Session settings of every pooled connection."""
    conn.execute(Q["configure_session"])
    # JSON columns come back as the exact text stored; perdure.store.rows decodes it.
    conn.adapters.register_loader("json", TextLoader)


class PostgresConnections:
    """A pool of connections to one PostgreSQL database, and the transaction helpers.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/database?sslmode=...``).
    ``max_connections`` bounds the pool; ``timeout`` is how long an operation waits for a
    connection (for example while the server restarts) before it fails with a
    :class:`~perdure.core.errors.StoreError`. The server is contacted once on open, so a wrong URL
    fails at once with the driver's reason.
    """

    _when = staticmethod(when)
    dialect = "postgres"

    def __init__(self, url: str, *, max_connections: int = 8, timeout: float = 30.0) -> None:
        self.url = url
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(
                f"database URL is not a valid PostgreSQL URL: {exc}",
                fix="write postgresql://user:password@host:5432/database",
            ) from exc
        self.where = describe(url)
        kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row}
        if "connect_timeout" not in params:
            kwargs["connect_timeout"] = 10
        if "application_name" not in params:
            kwargs["application_name"] = "perdure"
        try:
            psycopg.connect(url, **kwargs).close()
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {self.where}: {_text(exc)}", fix=REACH
            ) from exc
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            connection_class=Conn,
            kwargs=kwargs,
            min_size=1,
            max_size=max_connections,
            timeout=timeout,
            configure=_configure,
            check=ConnectionPool.check_connection,
            name="perdure",
            open=True,
        )

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise translate_error(exc, self.where) from exc

    @contextmanager
    def _write(self) -> Iterator[Conn]:
        with self._connection() as conn, conn.transaction():
            yield conn

    def _read(self, name: str, params: Params) -> list[DictRow]:
        with self._connection() as conn:
            return conn.execute(Q[name], params).fetchall()

    def close(self) -> None:
        """Close the pool and every connection in it."""
        self._pool.close()


def translate_error(exc: psycopg.Error, where: str) -> PerdureError:
    """The :class:`~perdure.core.errors.PerdureError` for a driver error, decided by its SQLSTATE,
    constraint name or class (the driver's message is only shown, never parsed)."""
    state = exc.sqlstate or ""
    constraint = exc.diag.constraint_name
    detail = exc.diag.message_primary or _text(exc)
    if state == RUN_CLOSED_SQLSTATE or constraint == "runs_terminal_is_final":
        return RunClosedError(f"the run is finished and cannot change ({detail})")
    if isinstance(exc, PoolTimeout):
        return StoreUnavailableError(
            f"no connection to PostgreSQL at {where} could be had in time", fix=REACH
        )
    # connection_exception, admin_shutdown, crash_shutdown, cannot_connect_now, or none at all
    lost = state[:2] == "08" or state in {"57P01", "57P02", "57P03"}
    if lost or (isinstance(exc, psycopg.OperationalError) and not state):
        return StoreUnavailableError(
            f"lost the connection to PostgreSQL at {where}: {detail}", fix=REACH
        )
    if state in {"3F000", "42P01"}:  # invalid_schema_name, undefined_table
        return StoreError(
            f"the perdure schema in {where} is missing or incomplete: {detail}",
            fix="run `perdure migrate` (a Runtime migrates on open unless migrate=False)",
        )
    if state == "42501":  # insufficient_privilege
        return StoreError(
            f"the database user may not do this in {where}: {detail}",
            fix="run `perdure migrate` as the owner of the database (or of schema perdure), "
            "or grant this user the privilege it lacks",
        )
    if state[:2] == "23":  # integrity_constraint_violation
        return StoreError(f"a constraint refused the write: {constraint or detail}")
    if state in {"40001", "40P01"}:  # serialization_failure, deadlock_detected
        return StoreUnavailableError(
            f"PostgreSQL aborted a conflicting transaction: {detail}", fix="retry"
        )
    if state[:2] == "22" or isinstance(exc, psycopg.DataError):  # data_exception
        return InvalidInputError(
            f"PostgreSQL cannot store a value: {detail}",
            fix="remove NUL characters from text and keep numbers within 64 bits",
        )
    return StoreError(f"PostgreSQL failed at {where} (SQLSTATE {state or 'none'}): {detail}")


def _text(exc: Exception) -> str:
    return " ".join(str(exc).split())  # the driver's words on one line, for display


# -- helpers used inside a transaction ----------------------------------------------------------


def maybe(conn: Conn, name: str, params: Params) -> DictRow | None:
    """The first row of a named query, or None."""
    return conn.execute(Q[name], params).fetchone()


def one(conn: Conn, name: str, params: Params) -> DictRow:
    """The row a named query must find (it runs inside the transaction that made it)."""
    row = maybe(conn, name, params)
    if row is None:
        raise StoreError(f"query {name} found no row inside its own transaction")
    return row


def event(
    conn: Conn,
    ids: Params,
    type_: str,
    step: str | None,
    fence: int | None,
    data: JSON,
    at: datetime,
) -> None:
    """Append an event to the run ``ids`` names."""
    params = {"type": type_, "step": step, "fence": fence, "data": rows.to_json(data), "at": at}
    conn.execute(
        Q["insert_event"], {"tenant_id": ids["tenant_id"], "run_id": ids["run_id"], **params}
    )


def write_fields(conn: Conn, ids: Params, fields: dict[str, bytes]) -> None:
    """Insert or rewrite state fields (canonical JSON, stored as text byte for byte)."""
    for name, value in fields.items():
        conn.execute(Q["upsert_field"], {**ids, "field": name, "value": value.decode()})


def write_messages(
    conn: Conn,
    tenant_id: str,
    thread_id: str,
    run_id: str,
    messages: Sequence[Message],
    at: datetime,
) -> None:
    """Append messages to a thread, numbered under the thread's advisory lock."""
    if not messages:
        return
    thread = {"tenant_id": tenant_id, "thread_id": thread_id}
    conn.execute(Q["lock_thread"], thread)
    for m in messages:
        conn.execute(
            Q["insert_message"],
            {
                **thread,
                "run_id": run_id,
                "role": m.role,
                "content": m.content,
                "tool_calls": rows.tool_calls_json(m),
                "tool_call_id": m.tool_call_id,
                "at": at,
            },
        )


def guard_failure(conn: Conn, ids: Params, fence: int | None, expected_version: int) -> Exception:
    """Explain why a guarded update matched no row (read inside the same transaction)."""
    return rows.guard_failure(maybe(conn, "get_run", ids), ids, fence, expected_version)


def effect_guard_failure(
    conn: Conn, tenant_id: str, key: str, fence: int | None, expected: EffectStatus
) -> Exception:
    """Explain why a guarded effect update matched no row."""
    effect = maybe(conn, "get_effect", {"tenant_id": tenant_id, "key": key})
    run = None
    if effect is not None:
        run = maybe(conn, "get_run", {"tenant_id": tenant_id, "run_id": effect["run_id"]})
    return rows.effect_guard_failure(effect, run, tenant_id, key, fence, expected)
