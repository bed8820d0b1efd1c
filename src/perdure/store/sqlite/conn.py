"""SQLite connections and transactions, shared by the parts of the SQLite store.

Each thread gets its own connection (autocommit mode, so every transaction is explicit). The
pragmas: ``journal_mode=WAL`` (readers never block the writer), ``synchronous=FULL`` (a commit is
on disk when it returns), ``busy_timeout`` (writers queue instead of failing), ``foreign_keys``.
Write transactions start with ``BEGIN IMMEDIATE`` so two claimers serialise on the write lock
instead of deadlocking on a read-to-write upgrade.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from perdure.core.errors import RunClosedError, StoreError, StoreUnavailableError
from perdure.store.queries import queries
from perdure.store.rows import Params

Q = queries("sqlite")


def ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class SqliteConnections:
    """Per-thread connections to one SQLite file, and the transaction helpers."""

    _when = staticmethod(dt)

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder for {self.path}: {exc.strerror}",
                fix="choose a writable location with --db or PERDURE_DB",
            ) from exc

    # -- connections and transactions ---------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=0
                )
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot open SQLite database {self.path}: {exc}",
                    fix="check the path given with --db or PERDURE_DB and its permissions",
                ) from exc
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreUnavailableError(
                f"cannot start a write transaction on {self.path}: {exc}"
            ) from exc
        try:
            yield conn
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK")
            if str(exc) == "run_closed":
                raise RunClosedError("the run is finished and cannot change") from exc
            raise StoreError(f"a constraint refused the write: {exc}") from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"commit failed on {self.path}: {exc}") from exc

    def _read(self, name: str, params: Params) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(Q[name], params).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"reading {self.path} failed: {exc}",
                fix="run `perdure migrate` if the database is new, else check the file",
            ) from exc

    def close(self) -> None:
        """Close every connection this store opened, from any thread."""
        with self._lock:
            for _, conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
