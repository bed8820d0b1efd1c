"""A simulated smart light: an external system that does NOT deduplicate.

It keeps its own SQLite file (it is not perdure's store: it stands for a device or a provider
API). Every command it receives is applied, even a repeated one. It logs each command with the
caller's operation id and answers :meth:`SmartLight.lookup` for it, which is what a reconciler
needs.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS light (id INTEGER PRIMARY KEY CHECK (id = 1), brightness INTEGER);
CREATE TABLE IF NOT EXISTS commands (
    seq INTEGER PRIMARY KEY, op_id TEXT NOT NULL, delta INTEGER NOT NULL, brightness INTEGER
);
"""


class SmartLight:
    """One light in one file; brightness starts at ``initial`` when the file is new."""

    def __init__(self, path: str | Path, initial: int = 80) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._conn() as conn:
            conn.executescript(SCHEMA)
            conn.execute("INSERT OR IGNORE INTO light (id, brightness) VALUES (1, ?)", (initial,))

    def _conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10)
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def adjust(self, delta: int, op_id: str) -> dict[str, Any]:
        """Change the brightness by ``delta`` points, whatever came before. Returns the new
        brightness and the command's sequence number."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            (level,) = conn.execute("SELECT brightness FROM light").fetchone()
            level = max(0, min(100, level + delta))
            conn.execute("UPDATE light SET brightness = ?", (level,))
            cur = conn.execute(
                "INSERT INTO commands (op_id, delta, brightness) VALUES (?, ?, ?)",
                (op_id, delta, level),
            )
            return {"brightness": level, "command": cur.lastrowid}

    def lookup(self, op_id: str) -> dict[str, Any] | None:
        """What the light did for ``op_id`` (the first such command), or None."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT seq, brightness FROM commands WHERE op_id = ? ORDER BY seq LIMIT 1",
                (op_id,),
            ).fetchone()
        return None if row is None else {"brightness": row[1], "command": row[0]}

    def status(self) -> dict[str, int]:
        """Current brightness and how many commands were applied in all."""
        with self._conn() as conn:
            (level,) = conn.execute("SELECT brightness FROM light").fetchone()
            (count,) = conn.execute("SELECT COUNT(*) FROM commands").fetchone()
        return {"brightness": level, "commands": count}
