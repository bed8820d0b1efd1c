"""A simulated provider (payments, email) with its own SQLite file, for the refund demo.

Like the light, it applies every request it receives (no deduplication), logs each with the
caller's operation id, and answers :meth:`Ledger.lookup` so a reconciler can ask what happened.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS operations (
    seq INTEGER PRIMARY KEY, op_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL
);
"""


class Ledger:
    """An append-only record of what the provider did."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._conn() as conn:
            conn.executescript(SCHEMA)

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """A connection for one transaction: committed when the block ends (rolled back on an
        error) and closed either way, so no lock outlives the call."""
        conn = sqlite3.connect(self.path, timeout=10)
        try:
            conn.execute("PRAGMA synchronous = FULL")
            with conn:
                yield conn
        finally:
            conn.close()

    def apply(self, kind: str, payload: dict[str, Any], op_id: str) -> dict[str, Any]:
        """Do ``kind`` (``refund``, ``email``) with ``payload``; return its receipt."""
        with self._conn() as conn:
            cur = conn.execute(
                "INSERT INTO operations (op_id, kind, payload) VALUES (?, ?, ?)",
                (op_id, kind, json.dumps(payload, sort_keys=True)),
            )
            return {"id": f"{kind}-{cur.lastrowid}", **payload}

    def lookup(self, op_id: str) -> dict[str, Any] | None:
        """The first operation done for ``op_id``, or None."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT seq, kind, payload FROM operations WHERE op_id = ? ORDER BY seq LIMIT 1",
                (op_id,),
            ).fetchone()
        return None if row is None else {"id": f"{row[1]}-{row[0]}", **json.loads(row[2])}

    def count(self, kind: str) -> int:
        """How many operations of ``kind`` were done."""
        with self._conn() as conn:
            (n,) = conn.execute(
                "SELECT COUNT(*) FROM operations WHERE kind = ?", (kind,)
            ).fetchone()
        return int(n)
