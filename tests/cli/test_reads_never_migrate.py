"""A command that reads never creates perdure's schema: on a database without it (an empty
SQLite file, an empty PostgreSQL database) it says so in one line with the fix, and leaves the
database as it found it; ``perdure migrate`` creates the schema, and then the reads work."""

from __future__ import annotations

from pathlib import Path

import pytest

from perdure.store.url import open_store
from tests.conftest import run_cli

READS = [
    ("runs",),
    ("show", "nope"),
    ("approvals",),
    ("effects",),
    ("history", "nope"),
    ("workers",),
    ("audit",),
    ("memory", "list"),
    ("thread", "show", "t1"),
    ("stream", "nope"),
    ("keys", "list"),
]


@pytest.fixture
def empty_db(db_url: str) -> str:
    if db_url.startswith("sqlite:///"):
        Path(db_url.removeprefix("sqlite:///")).touch()  # a database file, without a schema
    return db_url


def schema_version(url: str) -> int:
    store = open_store(url)
    try:
        return store.schema_version()
    finally:
        store.close()


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_read_on_a_database_without_the_schema_says_so_and_creates_nothing(
    empty_db: str, args: tuple[str, ...]
) -> None:
    out = run_cli(empty_db, *args)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error[store_unavailable]: ")
    assert "no perdure schema" in lines[0] and "perdure migrate" in lines[0]
    assert schema_version(empty_db) == 0


def test_migrate_creates_the_schema_the_reads_then_use(empty_db: str) -> None:
    assert run_cli(empty_db, "runs").returncode == 1
    migrated = run_cli(empty_db, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert schema_version(empty_db) > 0
    listed = run_cli(empty_db, "runs")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""


def test_a_read_on_an_older_schema_says_so_and_upgrades_nothing(db_url: str) -> None:
    assert run_cli(db_url, "migrate").returncode == 0
    latest = schema_version(db_url)
    _forget_latest_migration(db_url)  # the database as the release before left it, by its record
    older = schema_version(db_url)
    assert 0 < older < latest
    out = run_cli(db_url, "runs")
    assert out.returncode == 1 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith("error[store_unavailable]: ")
    assert f"schema {older}, older than this release's {latest}" in line
    assert "perdure migrate" in line
    assert schema_version(db_url) == older, "the read upgraded nothing"


def _forget_latest_migration(url: str) -> None:
    """Delete the record of the newest applied migration, behind the store's back."""
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        with conn:
            conn.execute(
                "DELETE FROM perdure_migrations WHERE version = "
                "(SELECT max(version) FROM perdure_migrations)"
            )
        conn.close()
        return
    import psycopg

    with psycopg.connect(url) as pg:
        pg.execute(
            "DELETE FROM perdure.perdure_migrations WHERE version = "
            "(SELECT max(version) FROM perdure.perdure_migrations)"
        )
