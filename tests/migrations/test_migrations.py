from __future__ import annotations

import re
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from perdure import FakeClock
from perdure.core.errors import MigrationChecksumError, SchemaTooNewError
from perdure.store import migrate
from perdure.store.queries import DIALECT_ONLY, queries
from perdure.store.sqlite.store import SqliteStore
from tests.migrations.schema import fresh_sqlite_schema

SNAPSHOT = Path(__file__).with_name("schema.sqlite.sql")


def test_a_fresh_migrate_equals_the_checked_in_snapshot() -> None:
    assert fresh_sqlite_schema() == SNAPSHOT.read_text(), (
        "schema changed: add a migration, then refresh the snapshot with "
        "`python -m tests.migrations.schema > tests/migrations/schema.sqlite.sql`"
    )


def test_migration_files_are_numbered_in_order_each_number_once() -> None:
    versions = [m.version for m in migrate.discover("sqlite")]
    assert versions[0] == 1
    assert versions == sorted(set(versions))  # numbers are reserved per change: gaps are fine


def test_migrate_twice_applies_nothing_the_second_time(tmp_path: Path, clock: FakeClock) -> None:
    store = SqliteStore(tmp_path / "m.db")
    known = migrate.discover("sqlite")
    assert store.migrate(clock.now()) == [f"{m.version:04d}_{m.name}" for m in known]
    assert store.migrate(clock.now()) == []
    assert store.schema_version() == known[-1].version
    store.close()


def test_a_database_newer_than_the_code_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    store = SqliteStore(tmp_path / "m.db")
    store.migrate(clock.now())
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute(
        "INSERT INTO perdure_migrations VALUES (999, 'from_the_future', 'x', '2030-01-01')"
    )
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNewError, match="999"):
        store.migrate(clock.now())
    store.close()


def test_an_edited_applied_migration_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    store = SqliteStore(tmp_path / "m.db")
    store.migrate(clock.now())
    conn = sqlite3.connect(tmp_path / "m.db")
    conn.execute("UPDATE perdure_migrations SET checksum = 'edited' WHERE version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(MigrationChecksumError):
        store.migrate(clock.now())
    store.close()


def test_pending_is_pure_and_ordered() -> None:
    known = migrate.discover("sqlite")
    assert migrate.pending(known, []) == known
    done = [(m.version, m.name, m.checksum) for m in known]
    assert migrate.pending(known, done) == []


def test_upgrading_a_database_that_holds_finished_runs_succeeds(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = migrate.discover("sqlite")
    monkeypatch.setattr(migrate, "discover", lambda dialect: known[:3])  # an older perdure
    store = SqliteStore(tmp_path / "m.db")
    store.migrate(clock.now())
    conn = sqlite3.connect(tmp_path / "m.db")
    at = "2026-01-01T00:00:00.000000+00:00"
    release = '{"workflow_version": 3, "state_schema": 2}'
    conn.execute(
        "INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, release, created_at,"
        " updated_at) VALUES ('r1', 't1', 'th1', 'wf', 'SUCCEEDED', ?, ?, ?)",
        (release, at, at),
    )
    conn.commit()
    monkeypatch.undo()
    assert store.migrate(clock.now()) == [f"{m.version:04d}_{m.name}" for m in known[3:]]
    run = store.get_run("t1", "r1")
    assert (run.status, run.workflow_version, run.state_schema) == ("SUCCEEDED", 3, 2)
    with pytest.raises(sqlite3.IntegrityError, match="run_closed"):
        conn.execute("UPDATE runs SET status = 'RUNNING' WHERE run_id = 'r1'")
    conn.close()
    store.close()


def test_every_query_name_but_the_declared_dialect_only_ones_is_in_both_dialects() -> None:
    sqlite, postgres = set(queries("sqlite")), set(queries("postgres"))
    only = DIALECT_ONLY["sqlite"] | DIALECT_ONLY["postgres"]
    assert sqlite - only == postgres - only, (
        "a query name in one dialect only: add it to the other, or declare it in "
        "perdure.store.queries.DIALECT_ONLY"
    )


@pytest.mark.parametrize(("dialect", "other"), [("sqlite", "postgres"), ("postgres", "sqlite")])
def test_a_dialect_only_query_is_in_its_dialect_and_not_in_the_other(
    dialect: str, other: str
) -> None:
    declared = DIALECT_ONLY[dialect]
    assert declared - set(queries(dialect)) == set(), f"{dialect}/sql/queries.sql lacks them"
    assert declared & set(queries(other)) == set(), f"{other}/sql/queries.sql has them too"


def test_runs_sharing_a_thread_before_the_thread_queue_run_one_at_a_time_after_it(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = migrate.discover("sqlite")
    before = [m for m in known if m.version < 10]
    monkeypatch.setattr(migrate, "discover", lambda dialect: before)  # before the queue
    store = SqliteStore(tmp_path / "m.db")
    store.migrate(clock.now())
    conn = sqlite3.connect(tmp_path / "m.db")
    for run_id, at in (
        ("late", "2026-01-01T00:00:02.000000+00:00"),
        ("early", "2026-01-01T00:00:01.000000+00:00"),
    ):
        conn.execute(
            "INSERT INTO runs (run_id, tenant_id, thread_id, workflow, status, next_step, release,"
            " created_at, updated_at) VALUES (?, 't1', 'th1', 'wf', 'PENDING', 'first', ?, ?, ?)",
            (run_id, '{"workflow_version": 1, "state_schema": 1}', at, at),
        )
    conn.commit()
    conn.close()
    monkeypatch.undo()
    store.migrate(clock.now())
    assert store.thread("t1", "th1").active == "early"
    assert store.thread("t1", "th1").queued == ("late",)
    until = clock.now() + timedelta(seconds=30)
    claimed = store.claim("w", until, clock.now(), ["wf"])
    assert claimed is not None and claimed.run_id == "early"
    assert store.claim("w2", until, clock.now(), ["wf"]) is None
    store.close()


def test_a_plain_boundarys_run_update_names_no_indexed_column(
    tmp_path: Path, clock: FakeClock
) -> None:
    """SQLite rewrites the entry of every index whose column an UPDATE's SET names, even when
    the value stays: ``advance_plain`` (every plain step) must name none, or each step writes
    those index pages to the WAL again."""
    store = SqliteStore(tmp_path / "m.db")
    store.migrate(clock.now())
    conn = sqlite3.connect(tmp_path / "m.db")
    indexed = {
        column
        for (_, index, *_rest) in conn.execute("PRAGMA index_list('runs')").fetchall()
        for (_, _, column) in conn.execute(f"PRAGMA index_info('{index}')").fetchall()
    }
    conn.close()
    store.close()
    sql = queries("sqlite")["advance_plain"]
    assigned = set(
        re.findall(r"^\s*(\w+) = ", sql.split("\nSET ", 1)[1].split("\nWHERE ", 1)[0], re.M)
    )
    assert "next_step" in assigned and "state_version" in assigned
    assert {"status", "wake_at", "lease_until"} <= indexed
    assert assigned.isdisjoint(indexed), f"advance_plain names indexed {assigned & indexed}"
