"""Named SQL queries, loaded from the kernel's ``<dialect>/sql/queries.sql`` and from each wing's
``wings/<wing>/<dialect>.sql``, into one namespace per dialect.

Each file is a sequence of blocks, each introduced by a ``-- name: NAME`` line. Queries use named
parameters. SQL is never assembled from strings at run time. Both dialects define the same
names, except those :data:`DIALECT_ONLY` declares for one of them; ``tests/migrations/`` keeps
the two files to that.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent
"""The folder of ``perdure.store``, whose ``<dialect>/sql/`` folders hold the migrations and the
named queries (read as plain files: no resource loader is imported for them)."""

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)

DIALECT_ONLY: dict[str, frozenset[str]] = {
    "sqlite": frozenset(
        {
            # the pragmas of every connection (WAL, synchronous, foreign keys, cache)
            "configure_connection",
            # a plain boundary's run update naming no indexed column (no one_statement_writes)
            "advance_plain",
            # the worker's scan, before claim_run in the same transaction (no claim_next)
            "pick_next",
            # an effect's move, its event written after it (no one-statement move_effect)
            "update_effect",
        }
    ),
    "postgres": frozenset(
        {
            # the settings of every session (synchronous commit, UTC)
            "configure_session",
            # the event feed waits for in-flight event writers (SQLite's writers take turns)
            "feed_lock_timeout",
            "feed_barrier",
            # an advisory lock for numbering a thread's messages (SQLite's write lock does it)
            "lock_thread",
            # one migrator at a time (SQLite's write lock admits one)
            "lock_migrations",
            # LISTEN for new work, stream entries, events (SQLite has no notifications)
            "listen_work",
            "listen_streams",
            "listen_events",
            # plain boundaries of one run or of several in one statement (one_statement_writes)
            "commit_step",
            "commit_steps",
            # the worker's scan and claim in one statement
            "claim_next",
            # an effect's intent and its event in one statement
            "plan_effect",
            # an effect's status change and its event in one statement (every move)
            "move_effect",
            # PostgresStore.terminate_sessions, for the fault drills' outage
            "terminate_sessions",
            # the listener's bound on a transaction left waiting for a frozen client
            "end_stalled_transactions",
        }
    ),
}
"""The query names only one dialect defines, by dialect; every other name is in both files."""


def sql_text(dialect: str, filename: str) -> str:
    """The text of a file shipped in ``perdure/store/<dialect>/sql/``."""
    return (SHIPPED / dialect / "sql" / filename).read_text("utf-8")


def query_files(dialect: str) -> list[Path]:
    """The files a dialect's named queries are read from: the kernel's, then each wing's."""
    wings = sorted((SHIPPED / "wings").glob(f"*/{dialect}.sql"))
    return [SHIPPED / dialect / "sql" / "queries.sql", *wings]


@cache
def queries(dialect: str) -> dict[str, str]:
    """Every named query of a dialect, by name. A name defined twice (in one file or in two)
    is a packaging bug."""
    found: dict[str, str] = {}
    for path in query_files(dialect):
        parts = _HEADER.split(path.read_text("utf-8"))
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise RuntimeError(f"query {name!r} is defined twice ({path.name} of {dialect})")
            found[name] = body.strip()
    return found
