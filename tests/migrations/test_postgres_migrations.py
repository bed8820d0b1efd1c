"""PostgreSQL migrations, and the rule that both dialects ship the same migrations."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from perdure import FakeClock
from perdure.core.errors import MigrationChecksumError, RunClosedError, SchemaTooNewError
from perdure.core.model import RunStatus
from perdure.store import migrate
from perdure.store.postgres.driver import RUN_CLOSED_SQLSTATE, translate_error
from perdure.store.postgres.store import PostgresStore
from perdure.testing.conformance.support import LEASE, new_run
from tests.backends import PgServer
from tests.migrations.schema import fresh_postgres_schema

SNAPSHOT = Path(__file__).with_name("schema.postgres.sql")
ALL = [f"{m.version:04d}_{m.name}" for m in migrate.discover("postgres")]


def test_both_dialects_ship_the_same_migration_versions_and_names() -> None:
    sqlite = [(m.version, m.name) for m in migrate.discover("sqlite")]
    postgres = [(m.version, m.name) for m in migrate.discover("postgres")]
    assert sqlite == postgres, "add the migration to both src/perdure/store/<dialect>/sql/ folders"
    assert [v for v, _ in postgres] == sorted({v for v, _ in postgres})  # gaps are fine


def test_a_fresh_postgres_migrate_equals_the_checked_in_snapshot(pg_server: PgServer) -> None:
    assert fresh_postgres_schema(pg_server) == SNAPSHOT.read_text(), (
        "schema changed: add a migration, then refresh the snapshot with "
        "`python -m tests.migrations.schema postgres > tests/migrations/schema.postgres.sql`"
    )


def test_an_empty_database_has_schema_version_zero_and_migrates_once(
    pg_empty_url: str, clock: FakeClock
) -> None:
    store = PostgresStore(pg_empty_url)
    assert store.schema_version() == 0
    assert store.migrate(clock.now()) == ALL
    assert store.migrate(clock.now()) == []
    assert store.schema_version() == migrate.discover("postgres")[-1].version
    store.close()


def test_two_processes_migrating_at_once_apply_each_file_once(
    pg_empty_url: str, clock: FakeClock
) -> None:
    stores = [PostgresStore(pg_empty_url) for _ in range(2)]
    start = threading.Barrier(2)
    applied: list[list[str]] = []

    def migrate_one(store: PostgresStore) -> None:
        start.wait()
        applied.append(store.migrate(clock.now()))

    threads = [threading.Thread(target=migrate_one, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(applied) == [[], ALL]
    for s in stores:
        s.close()


def test_a_postgres_database_newer_than_the_code_is_refused(pg_url: str, clock: FakeClock) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO perdure.perdure_migrations VALUES (999, 'from_the_future', 'x', now())"
        )
    store = PostgresStore(pg_url)
    with pytest.raises(SchemaTooNewError, match="999"):
        store.migrate(clock.now())
    store.close()


def test_an_edited_applied_postgres_migration_is_refused(pg_url: str, clock: FakeClock) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE perdure.perdure_migrations SET checksum = 'edited' WHERE version = 1")
    store = PostgresStore(pg_url)
    with pytest.raises(MigrationChecksumError):
        store.migrate(clock.now())
    store.close()


def test_the_database_itself_refuses_to_change_a_finished_run(
    pg_url: str, clock: FakeClock
) -> None:
    store = PostgresStore(pg_url)
    store.create_run(new_run("r1"), clock.now())
    run = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    assert run is not None
    store.set_status(
        "t1",
        "r1",
        expected_status=run.status,
        expected_version=run.state_version,
        status=RunStatus.FAILED,
        fence=run.fence,
        now=clock.now(),
    )
    store.close()
    with psycopg.connect(pg_url) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute("UPDATE perdure.runs SET status = 'RUNNING' WHERE run_id = 'r1'")
    assert caught.value.sqlstate == RUN_CLOSED_SQLSTATE
    assert isinstance(translate_error(caught.value, "test"), RunClosedError)


def test_upgrading_a_postgres_database_that_holds_finished_runs_succeeds(
    pg_empty_url: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = migrate.discover("postgres")
    monkeypatch.setattr(migrate, "discover", lambda dialect: known[:3])  # an older perdure
    store = PostgresStore(pg_empty_url)
    store.migrate(clock.now())
    with psycopg.connect(pg_empty_url) as conn:
        conn.execute(
            "INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status, release,"
            " created_at, updated_at) VALUES ('r1', 't1', 'th1', 'wf', 'SUCCEEDED',"
            ' \'{"workflow_version": 3, "state_schema": 2}\', now(), now())'
        )
    monkeypatch.undo()
    assert store.migrate(clock.now()) == ALL[3:]
    run = store.get_run("t1", "r1")
    assert (run.status, run.workflow_version, run.state_schema) == (RunStatus.SUCCEEDED, 3, 2)
    store.close()
    with psycopg.connect(pg_empty_url) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute("UPDATE perdure.runs SET status = 'RUNNING' WHERE run_id = 'r1'")
    assert caught.value.sqlstate == RUN_CLOSED_SQLSTATE, "the trigger is on again"


def test_postgres_runs_sharing_a_thread_before_the_thread_queue_run_one_at_a_time_after_it(
    pg_empty_url: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = migrate.discover("postgres")
    before = [m for m in known if m.version < 10]
    monkeypatch.setattr(migrate, "discover", lambda dialect: before)  # before the queue
    store = PostgresStore(pg_empty_url)
    store.migrate(clock.now())
    with psycopg.connect(pg_empty_url) as conn:
        for run_id, offset in (("late", 2), ("early", 1), ("done", 0)):
            status = "SUCCEEDED" if run_id == "done" else "PENDING"
            conn.execute(
                "INSERT INTO perdure.runs (run_id, tenant_id, thread_id, workflow, status,"
                " next_step, release, created_at, updated_at) VALUES (%s, 't1', 'th1', 'wf', %s,"
                " 'first', '{\"workflow_version\": 1, \"state_schema\": 1}',"
                " now() + make_interval(secs => %s), now())",
                (run_id, status, offset),
            )
    monkeypatch.undo()
    store.migrate(clock.now())
    info = store.thread("t1", "th1")
    assert (info.active, info.queued) == ("early", ("late",))
    claimed = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"])
    assert claimed is not None and claimed.run_id == "early"
    assert store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"]) is None
    store.close()
