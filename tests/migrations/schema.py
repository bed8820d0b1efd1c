"""Dump a migrated database's schema as text; run as a script to refresh the snapshots:

python -m tests.migrations.schema > tests/migrations/schema.sqlite.sql
PERDURE_TEST_PG_DSN=postgresql://postgres@127.0.0.1:5432/test \
    python -m tests.migrations.schema postgres > tests/migrations/schema.postgres.sql
"""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
from pathlib import Path

from perdure.core.clock import SystemClock
from perdure.store.sqlite.store import SqliteStore
from tests.backends import DSN_VARIABLE, PgServer


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


# PostgreSQL: read back from the catalog, everything in schema perdure, in name order, so the
# text depends only on the migrations (and not on the order objects were created in).
_PG_COLUMNS = """
SELECT c.relname AS table_name, a.attname AS name,
       format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
       a.attidentity AS identity, pg_get_expr(d.adbin, d.adrelid) AS default_value
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = 'perdure'::regnamespace AND c.relkind = 'r'
  AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY c.relname, a.attnum
"""
_PG_CONSTRAINTS = """
SELECT conrelid::regclass::text AS table_name, conname AS name,
       pg_get_constraintdef(oid) AS definition
FROM pg_constraint
WHERE connamespace = 'perdure'::regnamespace
ORDER BY conrelid::regclass::text, conname
"""
_PG_INDEXES = """
SELECT i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE i.relnamespace = 'perdure'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
ORDER BY i.relname
"""
_PG_FUNCTIONS = """
SELECT proname AS name, pg_get_functiondef(oid) AS definition
FROM pg_proc WHERE pronamespace = 'perdure'::regnamespace ORDER BY proname
"""
_PG_TRIGGERS = """
SELECT t.tgname AS name, pg_get_triggerdef(t.oid, true) AS definition
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = 'perdure'::regnamespace AND NOT t.tgisinternal
ORDER BY t.tgname
"""


def postgres_schema(url: str) -> str:
    """Schema ``perdure`` of a PostgreSQL database as SQL-like text."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, row_factory=dict_row) as conn:
        columns = conn.execute(_PG_COLUMNS).fetchall()
        constraints = conn.execute(_PG_CONSTRAINTS).fetchall()
        parts: list[str] = []
        for table in sorted({c["table_name"] for c in columns}):
            lines = []
            for c in (c for c in columns if c["table_name"] == table):
                line = f"    {c['name']} {c['type']}"
                if c["identity"]:
                    kind = "ALWAYS" if c["identity"] == "a" else "BY DEFAULT"
                    line += f" GENERATED {kind} AS IDENTITY"
                if c["default_value"] is not None:
                    line += f" DEFAULT {c['default_value']}"
                lines.append(line + (" NOT NULL" if c["not_null"] else ""))
            for k in constraints:
                if k["table_name"] == f"perdure.{table}":
                    lines.append(f"    CONSTRAINT {k['name']} {k['definition']}")
            body = ",\n".join(lines)
            parts.append(f"-- table {table}\nCREATE TABLE perdure.{table} (\n{body}\n);")
        for kind, query in (
            ("index", _PG_INDEXES),
            ("function", _PG_FUNCTIONS),
            ("trigger", _PG_TRIGGERS),
        ):
            for row in conn.execute(query).fetchall():
                parts.append(f"-- {kind} {row['name']}\n{row['definition'].strip()};")
    return "\n\n".join(parts) + "\n"


def fresh_postgres_schema(server: PgServer) -> str:
    """The schema of a new PostgreSQL database right after ``migrate``."""
    url = server.empty()
    try:
        store = server.store(url)
        store.migrate(SystemClock().now())
        store.close()
        return postgres_schema(url)
    finally:
        server.drop(url)


if __name__ == "__main__":
    if sys.argv[1:] == ["postgres"]:
        server = PgServer(os.environ[DSN_VARIABLE])
        try:
            sys.stdout.write(fresh_postgres_schema(server))
        finally:
            server.close()
    else:
        sys.stdout.write(fresh_sqlite_schema())
