"""The SQLite driver: one database file, a connection per thread, ``BEGIN IMMEDIATE`` writes.

Each thread gets its own connection (autocommit mode, so every transaction is explicit). The
pragmas: ``journal_mode=WAL`` (readers never block the writer), ``synchronous=FULL`` (a commit is
on disk when it returns), ``busy_timeout`` (writers of other processes queue instead of failing;
a process's own threads queue on a lock of its own first), ``foreign_keys``.
A write transaction starts with ``BEGIN IMMEDIATE``, so two writers serialise on the write lock
instead of deadlocking on a read-to-write upgrade; holding that lock is also what makes the
numbering of a thread's messages and the migrations safe, so neither takes a lock of its own.
Times are stored as ISO-8601 text, lists travel as JSON text (read with ``json_each``). SQLite
has no notifications: idle workers poll. Driver errors are translated once, by
:func:`translate_error`, from the SQLite result code.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from perdure.core.errors import (
    InvalidInputError,
    PerdureError,
    RunClosedError,
    StoreError,
    StoreUnavailableError,
)
from perdure.store.driver import NO_PARAMS, not_text
from perdure.store.queries import queries
from perdure.store.rows import Params, Row, to_json
from perdure.store.watch import NoWatch

Q = queries("sqlite")


def _same(value: bytes | None) -> bytes | None:
    return value


sqlite3.register_adapter(bool, int)
sqlite3.register_adapter(type(None), _same)
sqlite3.register_adapter(bytes, _same)
"""``sqlite3`` binds only exact ``int``, ``float`` and ``str`` values without asking its adapter
registry; any other parameter (``None``, ``bytes``, a ``bool``: several in every statement)
with no entry there first fails two attribute lookups (``__adapt__``, ``__conform__``), each
formatting an exception and clearing it. These entries bind each one as ``sqlite3`` would
anyway (NULL, a BLOB, 0 or 1), found at once."""

_DRIVER_ERRORS = (sqlite3.Error, UnicodeEncodeError, OverflowError)
"""What ``sqlite3`` raises that :meth:`SqliteDriver._translate` turns into a typed error."""

_NO_BATCH = nullcontext()
"""What :meth:`SqliteTx.batch` returns (stateless, so one serves every batch)."""

MIGRATE = "run `perdure migrate` if the database is new (a Runtime migrates on open)"


class SqliteTx:
    """A :class:`~perdure.store.driver.Tx` on one ``sqlite3`` connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def one(self, query: str, params: Params = NO_PARAMS) -> Row | None:
        """See :meth:`Tx.one`."""
        found: list[Row] = self.conn.execute(Q[query], params).fetchall()
        return found[0] if found else None

    def all(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        """See :meth:`Tx.all`."""
        return list(self.conn.execute(Q[query], params).fetchall())

    def values(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """See :meth:`Tx.values`: a cursor without the connection's ``sqlite3.Row`` factory."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        found: list[tuple[Any, ...]] = cursor.execute(Q[query], params).fetchall()
        return found

    def binary(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """See :meth:`Tx.binary`: :meth:`values` read with the connection's ``text_factory``
        set to ``bytes`` (the connection is this thread's own) and put back after."""
        self.conn.text_factory = bytes
        try:
            return self.values(query, params)
        finally:
            self.conn.text_factory = str

    def many(self, statements: Sequence[tuple[str, Params]]) -> list[Row | None]:
        """See :meth:`Tx.many`: one statement after the other."""
        return [self.one(query, params) for query, params in statements]

    def run(self, query: str, params: Params = NO_PARAMS) -> int:
        """See :meth:`Tx.run`."""
        return self.conn.execute(Q[query], params).rowcount

    def batch(self, *, last: bool = False) -> AbstractContextManager[None]:
        """See :meth:`Tx.batch`: an in-process database has no round trips to save (the
        transaction commits when it ends, ``last`` or not)."""
        return _NO_BATCH

    def lock_thread(self, tenant_id: str, thread_id: str) -> None:
        """See :meth:`Tx.lock_thread`: ``BEGIN IMMEDIATE`` already excludes every writer."""

    def script(self, sql: str) -> None:
        """See :meth:`Tx.script`: split with SQLite's own tokenizer."""
        buffer = ""
        for line in sql.splitlines(keepends=True):
            buffer += line
            if sqlite3.complete_statement(buffer):
                self.conn.execute(buffer)
                buffer = ""
        if any(ln.strip() and not ln.strip().startswith("--") for ln in buffer.splitlines()):
            raise StoreError("a migration ends with an incomplete statement")


class SqliteDriver:
    """A :class:`~perdure.store.driver.Driver` on one SQLite database file."""

    dialect = "sqlite"
    notifies = False
    parallel_writes = False
    one_statement_writes = False

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._last_stamp: tuple[datetime | None, str | None] = (None, None)
        self._all: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []
        self._lock = threading.Lock()
        self._writing = threading.RLock()
        """Held by a thread from ``BEGIN IMMEDIATE`` to its end: the threads of one process
        queue here for the write lock, woken in turn, instead of sleeping and retrying in
        SQLite's busy handler (other processes still meet at SQLite's lock). Reentrant, so a
        nested write fails as SQLite says, never hangs."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder for {self.path}: {exc.strerror}",
                fix="choose a writable location with --db or PERDURE_DB",
            ) from exc

    def when(self, value: str | None) -> datetime | None:
        """See :meth:`Driver.when`: times are stored as ISO-8601 text."""
        return None if value is None else datetime.fromisoformat(value)

    def stamp(self, value: datetime | None) -> str | None:
        """See :meth:`Driver.stamp`: ISO-8601 text with microseconds. A commit stamps the
        same time more than once (the step's end is the boundary's time): the last time
        stamped is kept with its text."""
        if value is None:
            return None
        last = self._last_stamp
        if last[0] is value:
            return last[1]
        text = value.isoformat(timespec="microseconds")
        self._last_stamp = (value, text)  # one tuple, replaced whole: safe across threads
        return text

    def array(self, values: Sequence[str]) -> str | None:
        """See :meth:`Driver.array`: JSON text, for ``json_each``."""
        return to_json(list(values))

    @contextmanager
    def write(self) -> Iterator[SqliteTx]:
        """See :meth:`Driver.write`: ``BEGIN IMMEDIATE`` ... ``COMMIT``, one thread of the
        process at a time."""
        with self._writing:
            try:
                conn = self._conn()
                conn.execute(Q["begin_write"])
                try:
                    yield SqliteTx(conn)
                    conn.execute(Q["commit_write"])
                except BaseException:
                    if conn.in_transaction:
                        conn.execute(Q["rollback_write"])
                    raise
            except _DRIVER_ERRORS as exc:  # one context for both (it runs on every write)
                raise self._translate(exc) from exc

    @contextmanager
    def read(self) -> Iterator[SqliteTx]:
        """See :meth:`Driver.read`: the thread's connection, outside any transaction."""
        with self._translated():
            yield SqliteTx(self._conn())

    def feed(self) -> AbstractContextManager[SqliteTx]:
        """See :meth:`Driver.feed`: a plain read (writers take turns for SQLite's write lock,
        so the events it sees were numbered in commit order)."""
        return self.read()

    def statement(self) -> AbstractContextManager[SqliteTx]:
        """See :meth:`Driver.statement`: the thread's connection is in autocommit mode."""
        return self.read()

    def migration(self) -> AbstractContextManager[SqliteTx]:
        """See :meth:`Driver.migration`: the write lock already admits one migrator."""
        return self.write()

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`Driver.wait_for_work`: no notifications; returns at once."""
        return False

    def watch(self, listen: str) -> NoWatch:
        """See :meth:`Driver.watch`: no notifications; readers poll."""
        return NoWatch()

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """See :meth:`Driver.wait_for_events`: no notifications; None at once."""
        return None

    def close(self) -> None:
        """Close every connection this driver opened, from any thread."""
        with self._lock:
            for _, conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except _DRIVER_ERRORS as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> PerdureError:
        """The typed error for what ``sqlite3`` raised."""
        if isinstance(exc, sqlite3.Error):
            return translate_error(exc, self.path)
        if isinstance(exc, UnicodeEncodeError):
            return not_text(exc)
        # sqlite3 refuses to bind an integer beyond 64 bits
        return InvalidInputError(
            f"SQLite cannot store a value: {exc}", fix="keep numbers within 64 bits"
        )

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,  # autocommit: every transaction is explicit
                check_same_thread=False,
                timeout=self._busy_timeout_ms / 1000,  # SQLite's busy_timeout
            )
            conn.row_factory = sqlite3.Row
            conn.executescript(Q["configure_connection"])
            self._local.conn = conn
            with self._lock:
                self._close_orphans()
                self._all.append((weakref.ref(threading.current_thread()), conn))
        return conn

    def _close_orphans(self) -> None:
        """Close connections whose thread has ended (short-lived writer threads)."""
        keep = []
        for ref, conn in self._all:
            thread = ref()
            if thread is not None and thread.is_alive():
                keep.append((ref, conn))
            else:
                conn.close()
        self._all = keep


def translate_error(exc: sqlite3.Error, path: Path) -> PerdureError:
    """The :class:`~perdure.core.errors.PerdureError` for a driver error, decided by its SQLite
    result code or class (the driver's message is only shown, never parsed)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = -1 if code is None else code & 0xFF
    detail = " ".join(str(exc).split())
    if code == sqlite3.SQLITE_CONSTRAINT_TRIGGER:  # only runs_terminal_is_final raises
        return RunClosedError("the run is finished and cannot change")
    if primary in {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}:
        return StoreUnavailableError(f"{path} is locked by another writer: {detail}", fix="retry")
    if primary == sqlite3.SQLITE_CONSTRAINT:
        return StoreError(f"a constraint refused the write: {detail}")
    if primary in {sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_PERM}:
        return StoreError(
            f"cannot open SQLite database {path}: {detail}",
            fix="check the path given with --db or PERDURE_DB and its permissions",
        )
    if primary in {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY}:
        return StoreUnavailableError(
            f"cannot write {path}: {detail}", fix="check the disk and the file's permissions"
        )
    if primary == sqlite3.SQLITE_ERROR:  # no such table or column: a schema this code lacks
        return StoreError(
            f"the perdure schema in {path} is missing or incomplete: {detail}", fix=MIGRATE
        )
    return StoreError(f"SQLite failed on {path} ({exc.__class__.__name__}): {detail}")
