"""A step commit's prepared statement lost under a live connection (PostgreSQL only).

A plain step boundary is committed by a statement prepared once per connection
(``perdure_commit_step``, store/postgres/prepared.py). The server may drop it while the
connection lives on (psycopg's ``DEALLOCATE ALL`` after a rollback, a ``DISCARD ALL``), or end
the session under the pool (``pg_terminate_backend``, a server-side timeout); either way the run
goes on at its next boundary, never stopping with ``store_error``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, goto, step
from perdure.store.postgres.store import PostgresStore


@dataclass
class Tally:
    steps: int = 0


def deallocate_all(store: PostgresStore, url: str) -> None:
    """Drop every prepared statement of the store's one pooled connection."""
    with store.driver.read() as tx:
        tx.conn.execute(b"DEALLOCATE ALL")


def rollback_after_psycopg_prepared(store: PostgresStore, url: str) -> None:
    """What psycopg does by itself: a query run often enough is prepared by psycopg, and a
    rolled-back transaction on that connection then sends ``DEALLOCATE ALL``."""
    with store.driver.read() as tx:
        for _ in range(8):  # past psycopg's prepare_threshold (5)
            tx.conn.execute(b"SELECT %s::int", (1,))
        tx.conn.execute(b"BEGIN")
        tx.conn.execute(b"ROLLBACK")


def terminate_backend(store: PostgresStore, url: str) -> None:
    """End the store's sessions from another connection, as a restart or a timeout would."""
    other = PostgresStore(url)
    try:
        assert other.terminate_sessions() >= 1
    finally:
        other.close()


@pytest.mark.parametrize(
    "lose", [deallocate_all, rollback_after_psycopg_prepared, terminate_backend]
)
def test_a_run_goes_on_when_its_prepared_commit_was_lost_between_two_steps(
    pg_url: str, clock: FakeClock, lose: Callable[[PostgresStore, str], None]
) -> None:
    store = PostgresStore(pg_url, max_connections=1)  # one connection: the one that lost it
    lost: list[int] = []

    @step(next=["count"])
    def count(ctx: Context, s: Tally):  # type: ignore[no-untyped-def]
        s.steps += 1
        if s.steps == 3:  # the first two commits prepared the statement on the connection
            lose(store, pg_url)
            lost.append(s.steps)
        return done({"steps": s.steps}) if s.steps == 5 else goto("count")

    wf = Workflow("prepared_lost", state=Tally, steps=[count])
    with Runtime(store, clock=clock, owner="w1", workflows=[wf]) as rt:
        run = rt.start(wf, {})
        rt.run_until_idle()
        got = rt.get(run.run_id)
    assert lost == [3]
    assert (got.status, got.result, got.error) == (RunStatus.SUCCEEDED, {"steps": 5}, None)
