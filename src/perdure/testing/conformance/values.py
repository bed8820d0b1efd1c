"""Values round-trip: what goes in comes out the same (state bytes, JSON text, times)."""

from __future__ import annotations

from perdure.core.clock import FakeClock
from perdure.core.model import RunStatus
from perdure.core.records import StepOutcome
from perdure.store.base import Boundary, Store
from perdure.testing.conformance.support import LEASE, new_run


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
