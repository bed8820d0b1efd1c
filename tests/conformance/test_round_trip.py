"""What goes in comes out the same, and concurrent writers never collide, on every backend."""

from __future__ import annotations

import threading

from perdure import FakeClock
from perdure.core.model import Message, RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, Store
from tests.conformance.conftest import LEASE, new_run


def test_state_fields_round_trip_byte_for_byte(store: Store, clock: FakeClock) -> None:
    values = {
        "text": '"café \\u0000 \\" \\\\ 🔥"'.encode(),
        "number": b"1.0000000000000002",
        "big": b"123456789012345678901234567890",
        "nested": b'{"z":[1,{"b":null,"a":true}],"a":-0.0}',
    }
    store.create_run(new_run("r1"), clock.now())
    run = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    assert run is not None
    now = clock.now()
    b = Boundary("first", StepOutcome.NEXT, "second", RunStatus.RUNNING, now, now, state=values)
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    assert store.load_state("t1", "r1") == {"n": b"0", **values}


def test_results_errors_and_event_data_keep_their_json_as_written(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    assert run is not None
    now = clock.now()
    result = {"zeta": "é 🔥", "alpha": [1, 2.5, None], "nested": {"b": 1, "a": 2}}
    b = Boundary("first", StepOutcome.DONE, None, RunStatus.SUCCEEDED, now, now, result=result)
    store.commit("t1", "r1", run.fence, run.state_version, [b], now)
    after = store.get_run("t1", "r1")
    assert after.result == result
    assert list(after.result) == ["zeta", "alpha", "nested"]
    assert list(after.result["nested"]) == ["b", "a"]


def test_times_come_back_as_the_same_utc_instants(store: Store, clock: FakeClock) -> None:
    clock.advance(0.123456)
    created, _ = store.create_run(new_run("r1"), clock.now())
    assert created.created_at == clock.now()
    assert created.created_at.utcoffset() is not None
    assert created.created_at.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    run = store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    assert run is not None and run.lease_until == clock.now() + LEASE


def test_events_page_by_sequence_number(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    store.claim("w1", clock.now() + LEASE, clock.now(), ["wf"])
    every = store.events("t1", "r1")
    assert [e.seq for e in every] == sorted(e.seq for e in every)
    first = store.events("t1", "r1", limit=2)
    rest = store.events("t1", "r1", after=first[-1].seq)
    assert first + rest == every


def test_concurrent_creates_with_one_idempotency_key_make_one_run(
    store: Store, clock: FakeClock
) -> None:
    start = threading.Barrier(4)
    got: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        start.wait()
        run, created = store.create_run(new_run(f"r{i}", key="same"), clock.now())
        with lock:
            got.append((run.run_id, created))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({run_id for run_id, _ in got}) == 1
    assert sorted(created for _, created in got) == [False, False, False, True]
    assert len(store.list_runs("t1")) == 1


def test_runs_of_one_thread_appending_at_once_number_messages_without_gaps(
    store: Store, clock: FakeClock
) -> None:
    runs = []
    for rid in ("r1", "r2", "r3"):
        store.create_run(new_run(rid), clock.now())
        run = store.claim("w", clock.now() + LEASE, clock.now(), ["wf"], tenant_id="t1", run_id=rid)
        assert run is not None
        runs.append(run)
    start = threading.Barrier(len(runs))

    def append(i: int) -> None:
        run = runs[i]
        version = run.state_version
        start.wait()
        for n in range(5):
            now = clock.now()
            m = (Message("assistant", f"{run.run_id}-{n}"),)
            b = Boundary(
                "first", StepOutcome.NEXT, "first", RunStatus.RUNNING, now, now, messages=m
            )
            version = store.commit("t1", run.run_id, run.fence, version, [b], now)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = store.messages("t1", "th1")
    assert [m.seq for m in messages] == list(range(1, 16))
    for run in runs:
        mine = [m.content for m in messages if m.run_id == run.run_id]
        assert mine == [f"{run.run_id}-{n}" for n in range(5)], "each run's order is kept"
