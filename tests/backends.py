"""The tests' databases: a fresh SQLite file, or a fresh PostgreSQL database per test.

PostgreSQL tests read the server from ``PERDURE_TEST_PG_DSN`` (for example
``postgresql://postgres@127.0.0.1:5432/test``). Once per session a template database is created
and migrated; each test gets ``CREATE DATABASE ... TEMPLATE`` of it (made ahead of time by
threads of this process) and drops it afterwards (in those threads, while the next tests run).
Without the variable the PostgreSQL tests skip, except under CI (``CI`` set), where they fail;
with it set but the server unreachable they fail.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import pytest

from perdure.core.clock import SystemClock
from perdure.store.base import Store
from perdure.store.sqlite.store import SqliteStore

DSN_VARIABLE = "PERDURE_TEST_PG_DSN"
BACKENDS = ["sqlite", "postgres"]


def database_url(dsn: str, name: str) -> str:
    """The server's URL with the database part replaced by ``name``."""
    return urlsplit(dsn)._replace(path=f"/{name}").geturl()


def database_name(url: str) -> str:
    """The database part of a PostgreSQL URL."""
    return urlsplit(url).path.lstrip("/")


class PgServer:
    """The PostgreSQL server the tests use: creates and drops their databases.

    Every test still gets a database of its own, but the tests do not wait for ``CREATE
    DATABASE`` and ``DROP DATABASE`` (each mostly a wait for the disk, about half a second on a
    loaded machine): a thread of this process, on a connection of its own, keeps the next
    databases of each kind made ahead of time and drops the used ones while the tests run.
    """

    AHEAD = 3
    """How many databases of each kind (from the migrated template, empty) are made ahead."""
    THREADS = 3
    """How many threads make and drop them (each waits mostly for the disk, so they overlap)."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        self.dsn = dsn
        self.prefix = f"perdure_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        try:
            self.admin = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
            makers = [
                psycopg.connect(dsn, autocommit=True, connect_timeout=10)
                for _ in range(self.THREADS)
            ]
        except psycopg.Error as exc:
            pytest.fail(
                f"{DSN_VARIABLE} is {dsn}, but PostgreSQL cannot be reached there: {exc}. "
                "Start PostgreSQL (.ci/run does) or unset the variable to skip these tests.",
                pytrace=False,
            )
        self.template = self._create(self.admin, "template0")
        store = self.store(self.template)
        store.migrate(SystemClock().now())
        store.close()
        self._lock = threading.Condition()
        self._made: dict[str, list[str]] = {}  # template -> URLs made ahead, not handed out
        self._making: dict[str, int] = {}  # template -> how many are being made
        self._wanted = {database_name(self.template)}  # templates asked for (or soon)
        self._to_drop: list[str] = []
        self._closing = False
        self._failure: BaseException | None = None
        self._threads = [
            threading.Thread(target=self._make_and_drop, args=(conn,), daemon=True)
            for conn in makers
        ]
        for thread in self._threads:
            thread.start()

    def store(self, url: str) -> Store:
        from perdure.store.postgres.store import PostgresStore

        return PostgresStore(url)

    def _create(self, conn: Any, template: str) -> str:
        from psycopg import sql

        name = f"{self.prefix}_{uuid.uuid4().hex[:8]}"
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
        conn.execute(query)
        return database_url(self.dsn, name)

    def _drop(self, conn: Any, url: str) -> None:
        from psycopg import sql

        query = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        conn.execute(query.format(sql.Identifier(database_name(url))))

    def _next_job(self) -> tuple[str, str] | None:
        """What the thread does next (under the lock): drop a used database first, then make
        one of a kind that is short; None when closing and nothing is left to drop."""
        while True:
            if self._to_drop:
                return "drop", self._to_drop.pop(0)
            if self._closing:
                return None
            for template in sorted(self._wanted):
                ready = len(self._made.setdefault(template, []))
                if ready + self._making.get(template, 0) < self.AHEAD:
                    self._making[template] = self._making.get(template, 0) + 1
                    return "make", template
            self._lock.wait()

    def _make_and_drop(self, conn: Any) -> None:
        """One of the threads: drop and make databases on ``conn`` until :meth:`close`."""
        try:
            while True:
                with self._lock:
                    job = self._next_job()
                if job is None:
                    return
                kind, what = job
                if kind == "drop":
                    self._drop(conn, what)
                    continue
                url = self._create(conn, what)
                with self._lock:
                    self._making[what] -= 1
                    # made while closing: nobody takes it any more, so it is dropped next
                    (self._to_drop if self._closing else self._made[what]).append(url)
                    self._lock.notify_all()
        except BaseException as exc:  # a test waiting for a database reports it
            with self._lock:
                self._failure = exc
                self._closing = True
                self._lock.notify_all()
        finally:
            conn.close()

    def _take(self, template: str) -> str:
        with self._lock:
            self._wanted.add(template)
            self._lock.notify_all()
            while not self._made.get(template):
                if self._failure is not None:
                    raise RuntimeError("the thread that makes test databases failed") from (
                        self._failure
                    )
                self._lock.wait()
            return self._made[template].pop(0)

    def empty(self) -> str:
        """The URL of a new database without any perdure schema."""
        return self._take("template0")

    def migrated(self) -> str:
        """The URL of a new database copied from the migrated template."""
        return self._take(database_name(self.template))

    def drop(self, url: str) -> None:
        """Drop a database created here, closing whatever is still connected to it (done by
        the thread, after the test; :meth:`close` waits for every drop)."""
        with self._lock:
            self._to_drop.append(url)
            self._lock.notify_all()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            for urls in self._made.values():
                self._to_drop.extend(urls)
                urls.clear()
            self._lock.notify_all()
        for thread in self._threads:
            thread.join()
        for url in self._to_drop:  # left if the thread failed
            self._drop(self.admin, url)
        self._drop(self.admin, self.template)
        self.admin.close()
        if self._failure is not None:
            raise self._failure


DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
"""The server the README's test command uses when :data:`DSN_VARIABLE` is not set (the one CI
starts)."""


def default_dsn() -> str | None:
    """:data:`DSN_VARIABLE` when set (empty: PostgreSQL tests off); else :data:`DEFAULT_DSN`
    when a server answers there, else None."""
    dsn = os.environ.get(DSN_VARIABLE)
    if dsn is not None:
        return dsn or None
    try:
        import psycopg
    except ImportError:
        return None
    try:
        psycopg.connect(DEFAULT_DSN, connect_timeout=3).close()
    except psycopg.Error:
        return None
    return DEFAULT_DSN


def pg_server_or_skip() -> PgServer:
    """The test server, or a skip (a failure under CI) when none is configured."""
    dsn = os.environ.get(DSN_VARIABLE)
    if not dsn:
        reason = (
            f"{DSN_VARIABLE} is not set: PostgreSQL tests need a server, e.g. "
            f"{DSN_VARIABLE}=postgresql://postgres@127.0.0.1:5432/test"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run them", pytrace=False)
        pytest.skip(reason)
    return PgServer(dsn)


def overwrite_state_field(db_url: str, run_id: str, field: str | None, value: str) -> None:
    """Write a state field's stored text (every field of the run when ``field`` is None) behind
    the store's back, to simulate a damaged or tampered checkpoint."""
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        with conn:
            conn.execute(
                "UPDATE state_fields SET value = ? WHERE run_id = ? AND (? IS NULL OR field = ?)",
                (value, run_id, field, field),
            )
        conn.close()
        return
    import psycopg

    with psycopg.connect(db_url) as pg:
        pg.execute(
            "UPDATE perdure.state_fields SET value = %(value)s"
            " WHERE run_id = %(run_id)s AND (%(field)s::text IS NULL OR field = %(field)s)",
            {"value": value, "run_id": run_id, "field": field},
        )


def read_state_field(db_url: str, run_id: str, field: str) -> str:
    """A state field's stored text, read behind the store's back."""
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        row = conn.execute(
            "SELECT value FROM state_fields WHERE run_id = ? AND field = ?", (run_id, field)
        ).fetchone()
        conn.close()
    else:
        import psycopg

        with psycopg.connect(db_url) as pg:
            row = pg.execute(
                "SELECT value FROM perdure.state_fields WHERE run_id = %s AND field = %s",
                (run_id, field),
            ).fetchone()
    assert row is not None, f"run {run_id} has no state field {field}"
    return str(row[0])


class Backend(Protocol):
    """Makes fresh, migrated, isolated stores of one kind, and disposes of them."""

    name: str

    def new_store(self) -> Store: ...

    def unmigrated_store(self) -> Store:
        """A store on a fresh database that was never migrated."""
        ...

    def dispose(self, store: Store) -> None: ...


class SqliteBackend:
    name = "sqlite"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def new_store(self) -> Store:
        store = self.unmigrated_store()
        store.migrate(SystemClock().now())
        return store

    def unmigrated_store(self) -> SqliteStore:
        return SqliteStore(self.folder / f"{uuid.uuid4().hex}.db")

    def dispose(self, store: Store) -> None:
        store.close()
        assert isinstance(store, SqliteStore)
        for path in self.folder.glob(f"{store.path.name}*"):
            path.unlink()


class PostgresBackend:
    name = "postgres"

    def __init__(self, server: PgServer) -> None:
        self.server = server

    def new_store(self) -> Store:
        return self.server.store(self.server.migrated())

    def unmigrated_store(self) -> Store:
        return self.server.store(self.server.empty())

    def dispose(self, store: Store) -> None:
        store.close()
        self.server.drop(store.url)


def overwrite_run_column(db_url: str, run_id: str, column: str, value: str | None) -> None:
    """Write one column of a run's row behind the store's back (``column`` is a name from the
    schema, never user input)."""
    assert column.isidentifier(), column
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        with conn:
            conn.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))
        conn.close()
        return
    import psycopg

    with psycopg.connect(db_url) as pg:
        pg.execute(
            f"UPDATE perdure.runs SET {column} = %s WHERE run_id = %s",  # type: ignore[arg-type]
            (value, run_id),
        )


GRAPH_COUNTS = {
    "graph_checkpoints": "SELECT count(*) FROM {s}graph_checkpoints WHERE thread_id = {p}",
    "graph_blobs": "SELECT count(*) FROM {s}graph_blobs WHERE thread_id = {p}",
    "graph_writes": "SELECT count(*) FROM {s}graph_writes WHERE thread_id = {p}",
}
GRAPH_DAMAGE = {
    "graph_checkpoints": "UPDATE {s}graph_checkpoints SET checkpoint = {p} WHERE thread_id = {p}",
    "graph_blobs": "UPDATE {s}graph_blobs SET blob = {p} WHERE thread_id = {p}",
    "graph_blobs_type": "UPDATE {s}graph_blobs SET type = {p} WHERE thread_id = {p}",
}


def _graph_sql(db_url: str, template: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        with conn:
            rows = conn.execute(template.format(s="", p="?"), params).fetchall()
        conn.close()
        return rows
    import psycopg

    with psycopg.connect(db_url) as pg:
        cur = pg.execute(template.format(s="perdure.", p="%s"), params)  # type: ignore[arg-type]
        return list(cur.fetchall()) if cur.description else []


def graph_rows(db_url: str, table: str, thread_id: str) -> int:
    """How many rows a LangGraph thread has in one of the graph tables, read behind the store's
    back."""
    (row,) = _graph_sql(db_url, GRAPH_COUNTS[table], (thread_id,))
    return int(row[0])  # type: ignore[call-overload]


def damage_graph(db_url: str, what: str, thread_id: str, value: bytes | str) -> None:
    """Overwrite a thread's stored checkpoints or channel values (``what`` in GRAPH_DAMAGE)
    behind the store's back."""
    _graph_sql(db_url, GRAPH_DAMAGE[what], (value, thread_id))


def rows_mentioning(db_url: str, *needles: str) -> dict[str, int]:
    """For every table of the database (read behind the store's back): how many rows hold one
    of ``needles`` anywhere in their text. Tables with no such row are left out."""
    found: dict[str, int] = {}
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            hits = sum(1 for row in rows if any(n in " ".join(map(str, row)) for n in needles))
            if hits:
                found[table] = hits
        conn.close()
        return found
    import psycopg

    with psycopg.connect(db_url) as pg:
        tables = [
            r[0]
            for r in pg.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'perdure'"
            ).fetchall()
        ]
        for table in tables:
            rows = pg.execute(f'SELECT t::text FROM perdure."{table}" t').fetchall()
            hits = sum(1 for (text,) in rows if any(n in text for n in needles))
            if hits:
                found[table] = hits
    return found


def server_waits(store: Any, trace: Path, action: Callable[[], object]) -> int:
    """How many times ``action`` waited for PostgreSQL on the one pooled connection of
    ``store`` (a ``PostgresStore`` opened with ``max_connections=1``): a run of messages the
    client sent, then one the server sent, in libpq's protocol trace (written to ``trace``).
    The count does not depend on the machine's load; the tests and
    ``benchmarks/round_trips.py`` count with it."""
    with trace.open("w") as out:
        with store.driver._pool.connection() as conn:
            conn.pgconn.trace(out.fileno())
        action()
        with store.driver._pool.connection() as conn:
            conn.pgconn.untrace()
    lines = trace.read_text().splitlines()  # a query's text continues on lines of its own
    directions = [line.split("\t")[1] for line in lines if "\t" in line]
    return sum(1 for pair in pairwise(directions) if pair == ("F", "B"))
