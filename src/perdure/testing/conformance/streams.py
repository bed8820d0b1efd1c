"""Durable token streams: attempts, numbering, fencing and reads, on every backend."""

from __future__ import annotations

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import LeaseLostError, RunClosedError, StreamClosedError
from perdure.core.model import RunStatus
from perdure.core.streams import StreamEventKind as K
from perdure.store.base import Store
from perdure.testing.conformance.support import LEASE, boundary, claimed, new_run


def kinds(store: Store, message: str = "m1", after: int = 0) -> list[tuple[int, int, str, str]]:
    return [
        (e.seq, e.attempt, str(e.kind), e.text)
        for e in store.stream_entries("t1", message, after=after)
    ]


def test_an_attempt_writes_numbered_deltas_in_batches_and_finishes(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    opened = store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    assert (opened.attempt, opened.superseded, opened.finished) == (1, False, False)
    assert (
        store.write_stream("t1", "r1", run.fence, "m1", 1, ["Hel", "lo"], False, clock.now()) == 2
    )
    assert store.write_stream("t1", "r1", run.fence, "m1", 1, [","], True, clock.now()) == 4
    assert kinds(store) == [
        (1, 1, "delta", "Hel"),
        (2, 1, "delta", "lo"),
        (3, 1, "delta", ","),
        (4, 1, "finished", ""),
    ]
    assert kinds(store, after=2) == [(3, 1, "delta", ","), (4, 1, "finished", "")]
    info = store.stream_info("t1", "m1")
    assert info is not None
    assert (info.attempt, info.last_seq, info.finished, info.run_ended) == (1, 4, True, False)


def test_a_new_attempt_of_a_cut_stream_supersedes_it_and_numbers_go_on(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    store.write_stream("t1", "r1", run.fence, "m1", 1, ["dra", "ft"], False, clock.now())
    clock.advance(LEASE.total_seconds() + 1)  # the worker died; another takes the run over
    again = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id="r1")
    assert again is not None
    opened = store.open_stream("t1", "r1", again.fence, "m1", clock.now())
    assert (opened.attempt, opened.superseded) == (2, True)
    store.write_stream("t1", "r1", again.fence, "m1", 2, ["final"], True, clock.now())
    assert kinds(store) == [
        (1, 1, "delta", "dra"),
        (2, 1, "delta", "ft"),
        (3, 2, "superseded", ""),
        (4, 2, "delta", "final"),
        (5, 2, "finished", ""),
    ]


def test_a_worker_that_lost_the_run_cannot_write_to_its_stream(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    clock.advance(LEASE.total_seconds() + 1)
    again = store.claim("w2", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id="r1")
    assert again is not None
    with pytest.raises(LeaseLostError):
        store.write_stream("t1", "r1", run.fence, "m1", 1, ["late"], True, clock.now())
    with pytest.raises(LeaseLostError):
        store.open_stream("t1", "r1", run.fence, "m2", clock.now())
    assert kinds(store) == [] and store.stream_info("t1", "m2") is None


def test_an_older_attempt_cannot_write_after_a_newer_one_opened(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    with pytest.raises(StreamClosedError, match="superseded by attempt 2"):
        store.write_stream("t1", "r1", run.fence, "m1", 1, ["old"], False, clock.now())


def test_a_finished_message_is_never_reopened(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    store.write_stream("t1", "r1", run.fence, "m1", 1, ["whole"], True, clock.now())
    opened = store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    assert (opened.attempt, opened.superseded, opened.finished) == (1, False, True)
    with pytest.raises(StreamClosedError, match="finished"):
        store.write_stream("t1", "r1", run.fence, "m1", 1, ["more"], False, clock.now())
    assert [e.kind for e in store.stream_entries("t1", "m1")] == [K.DELTA, K.FINISHED]


def test_a_message_belongs_to_the_run_that_streams_it_and_to_its_tenant(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.create_run(new_run("r2", thread="th2"), clock.now())
    other = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id="r2")
    assert other is not None
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    with pytest.raises(StreamClosedError, match="r1"):
        store.open_stream("t1", "r2", other.fence, "m1", clock.now())
    store.write_stream("t1", "r1", run.fence, "m1", 1, ["mine"], False, clock.now())
    assert store.stream_entries("t2", "m1") == [] and store.stream_info("t2", "m1") is None


def test_a_stream_whose_run_ended_says_so(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    end = boundary(clock, next_step=None, status=RunStatus.SUCCEEDED)
    store.commit("t1", "r1", run.fence, run.state_version, [end], clock.now())
    info = store.stream_info("t1", "m1")
    assert info is not None and info.run_ended and not info.finished
    with pytest.raises(RunClosedError):
        store.write_stream("t1", "r1", run.fence, "m1", 1, ["late"], False, clock.now())


def test_entries_are_read_in_pages(store: Store, clock: FakeClock) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    texts = [f"t{i}" for i in range(250)]
    store.write_stream("t1", "r1", run.fence, "m1", 1, texts, True, clock.now())
    page = store.stream_entries("t1", "m1", after=100, limit=50)
    assert [e.seq for e in page] == list(range(101, 151))
    assert [e.text for e in page] == texts[100:150]


def test_each_attempt_announces_its_message_on_the_runs_events(
    store: Store, clock: FakeClock
) -> None:
    run = claimed(store, clock)
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())  # a cut attempt: a new one
    announced = [(e.data, e.fence) for e in store.events("t1", "r1") if e.type == "message_stream"]
    assert announced == [
        ({"message_id": "m1", "attempt": 1}, run.fence),
        ({"message_id": "m1", "attempt": 2}, run.fence),
    ]
    store.write_stream("t1", "r1", run.fence, "m1", 2, ["x"], True, clock.now())
    store.open_stream("t1", "r1", run.fence, "m1", clock.now())  # finished, not reopened
    assert sum(e.type == "message_stream" for e in store.events("t1", "r1")) == 2
