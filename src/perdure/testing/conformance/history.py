"""History: events and thread messages, their order and numbering."""

from __future__ import annotations

import threading

import pytest

from perdure.core.clock import FakeClock
from perdure.core.model import Message, RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import LEASE, boundary, claim, claimed, needs, new_run


@pytest.fixture(autouse=True)
def needs_history_wing(store: Store) -> None:
    """Every test here needs the history wing: skipped on a store without."""
    needs(store, "history")


def test_message_seq_continues_across_runs_of_a_thread(store: Store, clock: FakeClock) -> None:
    for rid in ("r1", "r2"):
        store.create_run(new_run(rid), clock.now())
        run = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=rid)
        assert run is not None
        b = boundary(
            clock, next_step=None, status=RunStatus.SUCCEEDED, messages=(Message("user", rid),)
        )
        store.commit("t1", rid, run.fence, run.state_version, [b], clock.now())
    assert [(m.seq, m.content) for m in store.messages("t1", "th1")] == [(1, "r1"), (2, "r2")]


def test_a_run_and_outside_messages_appending_at_once_number_messages_without_gaps(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    start = threading.Barrier(2)

    def commit_steps() -> None:
        version = run.state_version
        start.wait()
        for n in range(5):
            now = clock.now()
            m = (Message("assistant", f"step-{n}"),)
            b = Boundary(
                "first", StepOutcome.NEXT, "first", RunStatus.RUNNING, now, now, messages=m
            )
            version = store.commit("t1", run.run_id, run.fence, version, [b], now)

    def post() -> None:
        start.wait()
        for n in range(5):
            store.post_message("t1", "th1", Message("user", f"outside-{n}"), None, clock.now())

    writers = [threading.Thread(target=commit_steps), threading.Thread(target=post)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    now = clock.now()
    end = Boundary("first", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now)
    store.commit("t1", run.run_id, run.fence, store.get_run("t1", "r1").state_version, [end], now)
    messages = store.messages("t1", "th1")
    assert [m.seq for m in messages] == list(range(1, 11))
    contents = [m.content for m in messages]
    assert [c for c in contents if c.startswith("step")] == [f"step-{n}" for n in range(5)]
    assert [c for c in contents if c.startswith("out")] == [f"outside-{n}" for n in range(5)]


def test_a_runs_messages_can_be_deleted(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    now = clock.now()
    b = Boundary(
        "first",
        StepOutcome.NEXT,
        "second",
        RunStatus.RUNNING,
        now,
        now,
        messages=(Message("assistant", "hi"),),
    )
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    assert store.delete_run_messages("t1", "r1") == 1
    assert store.messages("t1", "th1") == []


def test_events_page_by_sequence_number(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    every = store.events("t1", "r1")
    assert [e.seq for e in every] == sorted(e.seq for e in every)
    first = store.events("t1", "r1", limit=2)
    rest = store.events("t1", "r1", after=first[-1].seq)
    assert first + rest == every


def test_the_latest_events_come_oldest_first(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    for _ in range(3):
        clock.advance(31)
        claim(store, clock, "w")
    every = store.events("t1", "r1")
    latest = store.events("t1", "r1", limit=2, latest=True)
    assert [e.seq for e in latest] == [e.seq for e in every[-2:]]
    assert [e.seq for e in store.events("t1", "r1", after=every[0].seq, limit=1)] == [every[1].seq]
