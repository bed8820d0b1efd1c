"""Opening a store from a database URL (``--db``, ``PERDURE_DB``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from perdure.core.errors import ConfigError, StoreUnavailableError
from perdure.store.base import Store

DEFAULT_DB = "sqlite:///.perdure/perdure.db"


def default_url() -> str:
    """``PERDURE_DB`` when set, else ``sqlite:///.perdure/perdure.db`` (relative to the cwd)."""
    return os.environ.get("PERDURE_DB") or DEFAULT_DB


def open_store(url: str | None = None, *, lease_seconds: float = 30.0) -> Store:
    """Open (but do not migrate) the store a URL names.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a bare file path select
    the embedded SQLite store; ``postgresql://`` (or ``postgres://``) URLs select the PostgreSQL
    store, whose driver is imported only then (``pip install 'perdure[postgres]'``).
    ``lease_seconds`` is the lease of the runtime that opens it: PostgreSQL bounds how long a
    transaction may wait for its client by it (see
    :func:`perdure.store.postgres.driver.idle_transaction_seconds_for`).
    """
    return opener(url, lease_seconds=lease_seconds)()


def opener(url: str | None = None, *, lease_seconds: float = 30.0) -> Callable[[], Store]:
    """What opens the store a URL names (see :func:`open_store`), with its modules imported
    but nothing opened yet: a supervisor prepares this before it forks its workers."""
    url = url or default_url()
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path.startswith("/") or path == "/":
            raise ConfigError(
                f"database URL {url!r} has no file path",
                fix="write sqlite:///relative/file.db or sqlite:////absolute/file.db",
            )
        from perdure.store.sqlite.store import SqliteStore

        return lambda: SqliteStore(Path(path[1:]))
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from perdure.store.postgres.store import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                f"the database URL names PostgreSQL, but its driver is not installed ({exc.name})",
                fix="pip install 'perdure[postgres]'",
            ) from exc
        return lambda: PostgresStore(url, lease_seconds=lease_seconds)
    if "://" not in url:
        from perdure.store.sqlite.store import SqliteStore

        return lambda: SqliteStore(Path(url))
    raise ConfigError(
        f"database URL {url!r} has an unknown scheme",
        fix="use sqlite:///path/to/file.db or postgresql://user@host:5432/database",
    )


def existing(url: str | None = None) -> str:
    """The URL (default: ``PERDURE_DB``), when the database it names exists. A SQLite path with
    no file raises :class:`~perdure.core.errors.StoreUnavailableError` and creates nothing: a
    command that only reads must not make an empty database out of a mistyped path (a
    PostgreSQL server refuses a database that does not exist on its own)."""
    url = url or default_url()
    path = url.removeprefix("sqlite://")[1:] if url.startswith("sqlite://") else url
    if (url.startswith("sqlite://") or "://" not in url) and not Path(path).exists():
        raise StoreUnavailableError(
            f"no database at {path}",
            fix="check --db or PERDURE_DB, or create it with `perdure migrate`",
        )
    return url


def safe_url(url: str) -> str:
    """The URL with any password replaced by ``***``, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
