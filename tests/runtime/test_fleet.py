"""Workers in numbers: concurrency in one process, the workers table, the watchdog, wake-ups,
and commits that ride out a database that is briefly unavailable."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from perdure import Context, FakeClock, RunStatus, Runtime, Worker, Workflow, done, goto, step
from perdure.store.sqlite.store import SqliteStore
from perdure.store.url import open_store


@dataclass
class Job:
    n: int = 0


@step(next=["two"])
def one(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    s.n += 1
    return goto("two")


@step
def two(ctx: Context, s: Job):  # type: ignore[no-untyped-def]
    s.n += 1
    return done({"n": s.n, "fence": ctx.fence})


jobs = Workflow("jobs", state=Job, steps=[one, two])


def test_a_worker_with_concurrency_finishes_every_run_once(db_url: str) -> None:
    with Runtime(db_url, workflows=[jobs], owner="host:1") as rt:
        ids = [rt.start(jobs).run_id for _ in range(24)]
        seen: list[str] = []
        worker = Worker(rt, concurrency=4, on_stop=lambda run_id, why: seen.append(run_id))
        assert worker.run(until_idle=True) == 24
        assert sorted(seen) == sorted(ids)
        for run_id in ids:
            view = rt.status(run_id)
            assert view.run.result == {"n": 2, "fence": 1}
            assert view.completed_steps == ["one", "two"]
        (me,) = rt.activity.workers()
        assert (me.owner, me.concurrency, me.stopped_at is not None) == ("host:1", 4, True)


def test_the_watchdog_reports_runs_without_progress(db_url: str, clock: FakeClock) -> None:
    with Runtime(db_url, workflows=[jobs], clock=clock) as rt:
        run = rt.start(jobs)
        rt.store.claim("w", clock.now().replace(year=2100), clock.now(), ["jobs"])
        assert rt.activity.stuck(threshold_seconds=300) == []
        clock.advance(301)
        assert [r.run_id for r in rt.activity.stuck(threshold_seconds=300)] == [run.run_id]


def test_idle_workers_know_when_the_next_timer_is_due(db_url: str, clock: FakeClock) -> None:
    with Runtime(db_url, workflows=[jobs], clock=clock) as rt:
        assert rt.store.next_wake(clock.now()) is None
        run = rt.start(jobs)
        claimed = rt.store.claim("w", clock.now(), clock.now(), ["jobs"])
        assert claimed is not None
        due = clock.now().replace(microsecond=0).replace(year=2027)
        rt.store.defer(
            "default",
            run.run_id,
            fence=claimed.fence,
            expected_version=claimed.state_version,
            wake_at=due,
            step_attempts=1,
            now=clock.now(),
        )
        assert rt.store.next_wake(clock.now()) == due


def test_a_commit_blocked_by_a_lock_is_retried_and_lands_once(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SqliteStore(path, busy_timeout_ms=20)
    with Runtime(store, workflows=[jobs]) as rt:
        run = rt.start(jobs)
        locked, released = threading.Event(), threading.Event()

        def hold_the_lock() -> None:
            blocker = sqlite3.connect(path, isolation_level=None)
            blocker.execute("BEGIN IMMEDIATE")
            locked.set()
            time.sleep(0.4)
            blocker.execute("COMMIT")
            blocker.close()
            released.set()

        claimed = rt.store.claim("w", rt.clock.now().replace(year=2100), rt.clock.now(), ["jobs"])
        assert claimed is not None
        from perdure.runtime.execution.execution import Execution

        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        assert locked.wait(5)
        stopped = Execution(rt.services, claimed, jobs).execute()
        holder.join()
        assert released.is_set()
        assert stopped.reason == "ended"
        view = rt.status(run.run_id)
        assert view.run.status is RunStatus.SUCCEEDED
        assert view.completed_steps == ["one", "two"]


def test_idle_workers_are_notified_where_the_database_can(db_url: str) -> None:
    listener = open_store(db_url)
    if not db_url.startswith("postgresql"):
        # SQLite cannot notify other processes: the store says so and never blocks
        assert not listener.notifies
        assert listener.wait_for_work(5.0) is False
        listener.close()
        return
    assert listener.notifies
    listener.wait_for_work(0.01)  # LISTEN is in place from here on
    with Runtime(db_url, workflows=[jobs]) as rt:
        rt.start(jobs)
    assert listener.wait_for_work(5.0)
    listener.close()
