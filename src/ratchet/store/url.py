"""Opening a store from a database URL (``--db``, ``RATCHET_DB``)."""

from __future__ import annotations

import os
from pathlib import Path

from ratchet.errors import ConfigError
from ratchet.store.base import Store

DEFAULT_DB = "sqlite:///.ratchet/ratchet.db"


def default_url() -> str:
    """``RATCHET_DB`` when set, else ``sqlite:///.ratchet/ratchet.db`` (relative to the cwd)."""
    return os.environ.get("RATCHET_DB") or DEFAULT_DB


def open_store(url: str | None = None) -> Store:
    """Open (but do not migrate) the store a URL names.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a bare file path select
    the embedded SQLite store.
    """
    url = url or default_url()
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path.startswith("/") or path == "/":
            raise ConfigError(
                f"database URL {url!r} has no file path",
                fix="write sqlite:///relative/file.db or sqlite:////absolute/file.db",
            )
        from ratchet.store.sqlite import SqliteStore

        return SqliteStore(Path(path[1:]))
    if url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            f"database URL {url!r} names PostgreSQL, which this build of ratchet cannot open yet",
            fix="use a sqlite:/// URL",
        )
    if "://" not in url:
        from ratchet.store.sqlite import SqliteStore

        return SqliteStore(Path(url))
    raise ConfigError(
        f"database URL {url!r} has an unknown scheme",
        fix="use sqlite:///path/to/file.db",
    )
