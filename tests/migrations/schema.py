"""Dump a migrated database's schema as text; run as a script to refresh the snapshot:

python -m tests.migrations.schema > tests/migrations/schema.sqlite.sql
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

from ratchet.clock import SystemClock
from ratchet.store.sqlite import SqliteStore


def sqlite_schema(path: Path) -> str:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
        "AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    conn.close()
    return "\n\n".join(f"-- {t} {n}\n{sql};" for t, n, sql in rows) + "\n"


def fresh_sqlite_schema() -> str:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "fresh.db")
        store.migrate(SystemClock().now())
        store.close()
        return sqlite_schema(Path(folder) / "fresh.db")


if __name__ == "__main__":
    sys.stdout.write(fresh_sqlite_schema())
