"""The PostgreSQL driver: psycopg 3, a connection pool, schema ``perdure``.

Pooled connections are in autocommit mode, so every transaction is explicit
(``BEGIN`` ... ``COMMIT``); each sets ``synchronous_commit = on`` (a commit is durable when it
returns, whatever the server's default) and ``TimeZone = UTC``. A connection is not pinged
before each use (that is a round trip per transaction): :func:`_check` only looks, without
a round trip, whether the server has said something on an idle connection (a restarted server
sends its farewell and closes), and pings only then; a connection that breaks while in use
fails that operation with :class:`~perdure.core.errors.StoreUnavailableError`, is discarded by
the pool, and the caller's outage retry (the committer's, the worker's) continues on a fresh
one. Times travel as ``datetime``, lists as
``text[]``, JSON as text (read back byte for byte). A thread's messages are numbered under a
transaction-scoped advisory lock on the thread; migrations run under ``pg_advisory_xact_lock``
(DDL is transactional in PostgreSQL). Idle workers are woken by LISTEN/NOTIFY on a connection
of its own. Driver errors are translated once, by :func:`translate_error`, from their SQLSTATE,
constraint name or class.

Every pooled session bounds how long a transaction may wait for its client
(``idle_in_transaction_session_timeout``, see :func:`idle_transaction_seconds_for`) and asks the
server for TCP keepalives, so a worker frozen inside a transaction (SIGSTOP, a paused VM, a
stop-the-world pause) loses its session, and the row locks it held, well before its runs are
due to be taken over; the frozen worker's next statement finds the connection gone
(:class:`~perdure.core.errors.StoreUnavailableError`), and its late writes are refused by the
fence on a fresh one.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from functools import partial
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import ConnectionPool, PoolTimeout

from perdure.core.errors import (
    ConfigError,
    InvalidInputError,
    PerdureError,
    RunClosedError,
    StoreError,
    StoreUnavailableError,
)
from perdure.store.driver import LockTimeoutError, NumberingConflictError, not_text
from perdure.store.postgres.listen import ListenHub, PostgresWatch
from perdure.store.postgres.tx import OPEN, Conn, PostgresTx, Q

RUN_CLOSED_SQLSTATE = "RT001"
"""Raised by the ``runs_terminal_is_final`` trigger when something updates a finished run."""
MESSAGE_NUMBER = "messages_tenant_id_thread_id_seq_key"
"""The unique key of a thread's message numbers (a collision: :class:`NumberingConflictError`)."""

FEED_WAIT = "200ms"
"""The longest a read of the event feed waits for the transactions writing events (and so
the longest a writer may wait behind it); it gives up with :class:`LockTimeoutError`."""

IDLE_TRANSACTION_FLOOR = 2.0
"""The shortest bound on a transaction's wait for its client, in seconds, whatever the lease: a
loaded machine may pause a live worker between two statements of one transaction for a moment."""

KEEPALIVE_SECONDS = 10
"""The server's TCP keepalive idle time and interval on worker sessions (with 3 probes)."""

IDLE_TRANSACTION_ENV = "PERDURE_IDLE_TRANSACTION_SECONDS"
"""The environment variable that sets the bound on a transaction's wait for its client (seconds;
0 turns it off), instead of the one derived from the lease."""

REACH = (
    "check that PostgreSQL is running and reachable, and that the URL's host, port, database, "
    "user and password are right (--db or PERDURE_DB)"
)


class PostgresDriver:
    """A :class:`~perdure.store.driver.Driver` on a pool of connections to one database.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/database?sslmode=...``).
    ``max_connections`` bounds the pool; ``timeout`` is how long an operation waits for a
    connection (for example while the server restarts) before it fails with a
    :class:`~perdure.core.errors.StoreError`. The server is contacted once on open, so a wrong
    URL fails at once with the driver's reason. ``lease_seconds`` is the lease of the runtime on
    this store, from which the bound on a transaction's wait for its client is derived
    (:func:`idle_transaction_seconds_for`); ``idle_transaction_seconds`` gives it instead (0: none).
    """

    dialect = "postgres"
    notifies = True
    parallel_writes = True
    one_statement_writes = True

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 8,
        timeout: float = 30.0,
        lease_seconds: float = 30.0,
        idle_transaction_seconds: float | None = None,
    ) -> None:
        self.url = url
        self.idle_transaction = idle_transaction_seconds_for(
            lease_seconds, idle_transaction_seconds
        )
        """The longest, in seconds, a transaction of this driver may wait for its client before
        the server ends its session (0: no bound)."""
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(
                f"database URL is not a valid PostgreSQL URL: {exc}",
                fix="write postgresql://user:password@host:5432/database",
            ) from exc
        host = params.get("host") or "localhost"
        database = params.get("dbname") or params.get("user", "")
        self.where = f"{host}:{params.get('port') or 5432}/{database}"
        """``host:port/database``, for messages (never the password)."""
        kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row}
        if "connect_timeout" not in params:
            kwargs["connect_timeout"] = 10
        if "application_name" not in params:
            kwargs["application_name"] = "perdure"
        self.application_name = str(params.get("application_name") or "perdure")
        """The name this driver's sessions go by on the server (``pg_stat_activity``)."""
        self._next_sweep = 0.0
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
            configure=partial(_configure, session_settings(self.idle_transaction)),
            check=_check,
            name="perdure",
            open=True,
        )
        self._listener: psycopg.Connection[Any] | None = None
        self._listen_lock = threading.Lock()
        self._event_listener: psycopg.Connection[Any] | None = None
        self._event_lock = threading.Lock()
        self._hubs: dict[str, ListenHub] = {}

    def when(self, value: datetime | None) -> datetime | None:
        """See :meth:`Driver.when`: psycopg returns aware datetimes (session zone UTC)."""
        return value

    def stamp(self, value: datetime | None) -> datetime | None:
        """See :meth:`Driver.stamp`: times are passed as they are."""
        return value

    def array(self, values: Sequence[str]) -> list[str]:
        """See :meth:`Driver.array`: a Python list is a ``text[]``."""
        return list(values)

    @contextmanager
    def read(self) -> Iterator[PostgresTx]:
        """See :meth:`Driver.read`: a pooled connection, taken with ``getconn`` and given back
        with ``putconn`` (which rolls back a transaction left open and discards a broken
        connection). The pool's ``connection()`` context would also run the connection's own
        context (a ``COMMIT`` or ``ROLLBACK`` call, a no-op in autocommit) and keep usage
        statistics: about as much client CPU again as the checkout itself, on every statement."""
        pool = self._pool
        try:
            conn = pool.getconn()
            try:
                yield PostgresTx(conn)
            finally:
                pool.putconn(conn)
        except psycopg.Error as exc:
            raise translate_error(exc, self.where) from exc
        except UnicodeEncodeError as exc:
            raise not_text(exc) from exc

    @contextmanager
    def feed(self) -> Iterator[PostgresTx]:
        """See :meth:`Driver.feed`: a transaction that takes a ``SHARE`` lock on the events
        table, granted once every transaction inserting events has ended (inserts hold ``ROW
        EXCLUSIVE``); new writers wait behind it for the length of the read, and at most
        :data:`FEED_WAIT` for it."""
        with self.write() as tx:
            tx.run("feed_lock_timeout", {"timeout": FEED_WAIT})
            tx.run("feed_barrier")
            yield tx

    def statement(self) -> AbstractContextManager[PostgresTx]:
        """See :meth:`Driver.statement`: pooled connections are in autocommit mode."""
        return self.read()

    @contextmanager
    def write(self) -> Iterator[PostgresTx]:
        """See :meth:`Driver.write`: ``BEGIN`` (sent with the first statement) ... ``COMMIT``
        (sent with a ``batch(last=True)``, or alone) on a pooled connection; after an error,
        ``ROLLBACK`` before the connection goes back. Statements whose results are not read go
        together (:meth:`PostgresTx.batch`); the whole transaction is not run in pipeline
        mode, which measured slower here (see docs/performance.md)."""
        with self.read() as reading:
            tx = PostgresTx(reading.conn, begin=True)
            try:
                yield tx
                if not tx.begin and not tx.committed:
                    tx.conn.execute(Q["commit_write"])
            except BaseException:
                if tx.conn.info.transaction_status in OPEN:  # not after a failed COMMIT
                    tx.conn.execute(Q["rollback_write"])
                raise

    @contextmanager
    def migration(self) -> Iterator[PostgresTx]:
        """See :meth:`Driver.migration`: two processes migrating at once apply each file once."""
        with self.write() as tx:
            tx.run("lock_migrations")
            yield tx

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Driver.wait_for_work`: LISTEN on ``perdure_work`` with a connection of its
        own (outside the pool). A lost connection is opened again on the next call."""
        with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
                    self._listener.execute(Q["listen_work"])
                self._end_stalled(self._listener)
                for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    return True
            except psycopg.Error:
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
        return False

    def _end_stalled(self, conn: psycopg.Connection[Any]) -> None:
        """End the sessions whose transaction waited for its client longer than
        :attr:`idle_transaction` (``end_stalled_transactions``), at most every half of it: the
        server's own timeout is not armed after a pipeline that ends with a Flush."""
        if not self.idle_transaction:
            return
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.idle_transaction / 2
        params = {"application_name": self.application_name, "seconds": self.idle_transaction}
        conn.execute(Q["end_stalled_transactions"], params)

    def watch(self, listen: str) -> PostgresWatch:
        """See :meth:`Driver.watch`: a handle on the one connection (outside the pool) that
        runs the named ``LISTEN`` query for every follower of this store
        (:mod:`perdure.store.postgres.listen`)."""
        with self._listen_lock:
            hub = self._hubs.get(listen)
            if hub is None:
                hub = self._hubs[listen] = ListenHub(self.url, Q[listen])
        return hub.watch()

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """See :meth:`Driver.wait_for_events`: LISTEN on ``perdure_events`` (a trigger notifies
        ``tenant/run`` for each event when its transaction commits) with a connection of its
        own; every notification already queued is taken, after the first one within
        ``timeout``. A lost connection returns None (poll this once) and is opened again on
        the next call."""
        woken: list[tuple[str, str]] = []
        with self._event_lock:
            try:
                if self._event_listener is None or self._event_listener.closed:
                    conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
                    conn.execute(Q["listen_events"])
                    self._event_listener = conn
                for note in self._event_listener.notifies(timeout=timeout, stop_after=1):
                    woken.append(_tenant_run(note.payload))
                for note in self._event_listener.notifies(timeout=0):
                    woken.append(_tenant_run(note.payload))
            except psycopg.Error:
                if self._event_listener is not None:
                    self._event_listener.close()
                self._event_listener = None
                return None  # not listening now: the caller polls (and catches up) instead
        return woken

    def close(self) -> None:
        """Close the listeners, the pool and every connection in it."""
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        with self._event_lock:
            if self._event_listener is not None:
                self._event_listener.close()
                self._event_listener = None
            hubs, self._hubs = list(self._hubs.values()), {}
        for hub in hubs:
            hub.close()
        self._pool.close()


def _tenant_run(payload: str) -> tuple[str, str]:
    tenant, _, run = payload.partition("/")
    return tenant, run


def _check(conn: Conn) -> None:
    """The pool's check on checkout, without a round trip on a healthy connection: an idle
    connection in autocommit mode has nothing to read, so anything readable on its socket (a
    server's shutdown notice, an end of file) means the server spoke; then the connection is
    pinged (``ConnectionPool.check_connection``), which raises if it is broken so the pool
    replaces it."""
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI | select.POLLERR)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)


def idle_transaction_seconds_for(lease_seconds: float, given: float | None = None) -> float:
    """The bound on a transaction's wait for its client: ``given``, else the environment's
    :data:`IDLE_TRANSACTION_ENV`, else a third of the lease (one beat interval: a frozen
    transaction ends before its worker misses the beats that let others take its runs, 2.5
    intervals, and well before its leases expire, 3), but never under
    :data:`IDLE_TRANSACTION_FLOOR`. 0 means no bound."""
    source = f"idle_transaction_seconds {given!r}"
    if given is None:
        text = os.environ.get(IDLE_TRANSACTION_ENV, "").strip()
        if text:
            source = f"{IDLE_TRANSACTION_ENV}={text!r}"
            try:
                given = float(text)
            except ValueError:
                given = -1.0
    if given is None:
        given = max(lease_seconds / 3, IDLE_TRANSACTION_FLOOR)
    if not 0 <= given <= 86_400:
        raise ConfigError(
            f"{source} is not a number of seconds from 0 to 86400",
            fix=f"set {IDLE_TRANSACTION_ENV} (or idle_transaction_seconds) to seconds from 0 "
            "(no bound) to 86400",
        )
    return float(given)


def session_settings(idle_transaction: float) -> dict[str, str]:
    """The parameters of ``configure_session`` (PostgreSQL takes milliseconds and seconds)."""
    return {
        "idle_in_transaction": str(round(idle_transaction * 1000)),
        "keepalive_idle": str(KEEPALIVE_SECONDS),
        "keepalive_interval": str(KEEPALIVE_SECONDS),
    }


def _configure(settings: dict[str, str], conn: Conn) -> None:
    """Session settings of every pooled connection."""
    conn.execute(Q["configure_session"], settings)
    # JSON columns come back as the exact text stored; perdure.store.rows decodes it.
    conn.adapters.register_loader("json", TextLoader)


DATA_HINTS = {
    "22021": "remove NUL characters and bytes that are not UTF-8 from text",
    "22P05": "remove NUL characters from text",
    "22003": "keep numbers within 64 bits",
    "2201W": "give a limit of 0 or more",
    "2201X": "give an offset of 0 or more",
    "22P02": "give a value of the right type",
    "": "remove NUL characters from text (the driver refuses them before sending)",
}
"""One hint per SQLSTATE of class 22 (data exception); ``""``: psycopg's own refusal, which has
no SQLSTATE (text holding NUL)."""


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
    # connection_exception, admin_shutdown, crash_shutdown, cannot_connect_now, the session ended
    # by idle_in_transaction_session_timeout (or idle_session_timeout), or none at all
    lost = state[:2] == "08" or state in {"57P01", "57P02", "57P03", "25P03", "57P05"}
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
    if constraint == MESSAGE_NUMBER:
        return NumberingConflictError(f"a thread's messages were numbered twice: {detail}")
    if state[:2] == "23":  # integrity_constraint_violation
        return StoreError(f"a constraint refused the write: {constraint or detail}")
    if state == "55P03":  # lock_not_available: a lock_timeout ran out
        return LockTimeoutError(f"PostgreSQL gave up waiting for a lock at {where}: {detail}")
    if state in {"40001", "40P01"}:  # serialization_failure, deadlock_detected
        return StoreUnavailableError(
            f"PostgreSQL aborted a conflicting transaction: {detail}", fix="retry"
        )
    if state[:2] == "22" or isinstance(exc, psycopg.DataError):  # data_exception
        return InvalidInputError(
            f"PostgreSQL cannot store a value: {detail}",
            fix=DATA_HINTS.get(state, "check the values given (text, numbers, limits)"),
        )
    return StoreError(f"PostgreSQL failed at {where} (SQLSTATE {state or 'none'}): {detail}")


def _text(exc: Exception) -> str:
    return " ".join(str(exc).split())  # the driver's words on one line, for display
