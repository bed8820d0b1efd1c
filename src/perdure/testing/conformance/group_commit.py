"""Group commit (``Store.commit_many``): several runs' boundaries in one transaction, each under
its own guard, each with its own answer."""

from __future__ import annotations

from typing import Any

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import (
    InvalidInputError,
    LeaseLostError,
    RunClosedError,
    StaleStateError,
)
from perdure.core.model import Message, Run, RunStatus
from perdure.store.base import CommitRequest, Store
from perdure.testing.conformance.support import LEASE, boundary, claim, new_run


def claimed(store: Store, clock: FakeClock, run_id: str, owner: str = "w1") -> Run:
    """A new run of tenant t1 on a thread of its own, claimed by ``owner``."""
    store.create_run(new_run(run_id, thread=f"th-{run_id}"), clock.now())
    run = claim(store, clock, owner=owner, tenant_id="t1", run_id=run_id)
    assert run is not None
    return run


def request(run: Run, clock: FakeClock, **kw: Any) -> CommitRequest:
    """The commit of one boundary by the holder of ``run`` as it was claimed."""
    return CommitRequest("t1", run.run_id, run.fence, run.state_version, [boundary(clock, **kw)])


def step_names(store: Store, run_id: str) -> list[str]:
    return [s.name for s in store.steps("t1", run_id)]


def test_a_group_commits_every_run_and_answers_each_with_its_version(
    store: Store, clock: FakeClock
) -> None:
    runs = [claimed(store, clock, f"r{i}") for i in range(4)]
    answers = store.commit_many(
        [request(r, clock, state={"n": str(i).encode()}) for i, r in enumerate(runs)], clock.now()
    )
    assert answers == [r.state_version + 1 for r in runs]
    for i, r in enumerate(runs):
        assert step_names(store, r.run_id) == ["first"]
        assert store.load_state("t1", r.run_id) == {"n": str(i).encode()}
        assert store.get_run("t1", r.run_id).steps_done == 1


def test_a_stale_fence_in_a_group_is_refused_alone_and_the_others_commit(
    store: Store, clock: FakeClock
) -> None:
    first = claimed(store, clock, "r1", owner="w1")
    stale = claimed(store, clock, "r2", owner="w1")
    third = claimed(store, clock, "r3", owner="w1")
    clock.advance(LEASE.total_seconds() + 1)
    for r in (first, third):  # w1 renews these; r2's lease runs out and w2 takes it over
        store.heartbeat("t1", r.run_id, "w1", r.fence, clock.now() + LEASE)
    taken = claim(store, clock, owner="w2", tenant_id="t1", run_id="r2")
    assert taken is not None and taken.fence == stale.fence + 1
    answers = store.commit_many(
        [request(first, clock), request(stale, clock, state={"n": b"9"}), request(third, clock)],
        clock.now(),
    )
    assert answers[0] == first.state_version + 1
    assert isinstance(answers[1], LeaseLostError)
    assert answers[2] == third.state_version + 1
    assert step_names(store, "r1") == step_names(store, "r3") == ["first"]
    assert step_names(store, "r2") == [], "the stale holder wrote nothing"
    assert store.load_state("t1", "r2") == {"n": b"0"}
    late = [e for e in store.events("t1", "r2") if e.type == "late_commit"]
    assert [e.data for e in late] == [
        {"fence": stale.fence, "steps": ["first"], "refused": "lease_lost"}
    ]


def test_a_finished_and_a_moved_on_run_are_refused_with_their_own_errors(
    store: Store, clock: FakeClock
) -> None:
    done = claimed(store, clock, "r1")
    moved = claimed(store, clock, "r2")
    ok = claimed(store, clock, "r3")
    ended = boundary(clock, next_step=None, status=RunStatus.SUCCEEDED)
    store.commit("t1", "r1", done.fence, done.state_version, [ended], clock.now())
    store.commit("t1", "r2", moved.fence, moved.state_version, [boundary(clock)], clock.now())
    answers = store.commit_many(
        [request(done, clock), request(moved, clock), request(ok, clock)], clock.now()
    )
    assert isinstance(answers[0], RunClosedError)
    assert isinstance(answers[1], StaleStateError)
    assert answers[2] == ok.state_version + 1
    assert step_names(store, "r1") == step_names(store, "r2") == ["first"]
    assert step_names(store, "r3") == ["first"]


def test_a_write_that_fails_after_its_guard_fails_alone(store: Store, clock: FakeClock) -> None:
    good = claimed(store, clock, "r1")
    bad = claimed(store, clock, "r2")
    also = claimed(store, clock, "r3")
    broken = Message("assistant", "not text: \udcff")  # a lone surrogate cannot be stored
    answers = store.commit_many(
        [request(good, clock), request(bad, clock, messages=(broken,)), request(also, clock)],
        clock.now(),
    )
    assert answers[0] == good.state_version + 1
    assert isinstance(answers[1], InvalidInputError)
    assert answers[2] == also.state_version + 1
    assert step_names(store, "r2") == []
    assert store.get_run("t1", "r2").state_version == bad.state_version, "r2 is unchanged"
    assert step_names(store, "r1") == step_names(store, "r3") == ["first"]


@pytest.mark.parametrize("size", [1, 2])
def test_a_group_that_ends_runs_records_their_status_and_releases_them(
    store: Store, clock: FakeClock, size: int
) -> None:
    runs = [claimed(store, clock, f"r{i}") for i in range(size)]
    ended = {"next_step": None, "status": RunStatus.SUCCEEDED, "result": {"ok": True}}
    answers = store.commit_many([request(r, clock, **ended) for r in runs], clock.now())
    for r, answer in zip(runs, answers, strict=True):
        finished = store.get_run("t1", r.run_id)
        assert answer == finished.state_version
        assert finished.status is RunStatus.SUCCEEDED and finished.owner is None
        assert finished.result == {"ok": True}
        changes = [e.data for e in store.events("t1", r.run_id) if e.type == "status"]
        assert {"from": "RUNNING", "to": "SUCCEEDED"} in changes


def test_a_group_of_plain_and_ending_boundaries_delivers_waiting_input(
    store: Store, clock: FakeClock
) -> None:
    """Plain boundaries (one statement each on PostgreSQL) and a run that ends share a group;
    input that waited on a plain run's thread joins it at that boundary."""
    going, ending = claimed(store, clock, "r1"), claimed(store, clock, "r2")
    store.post_message("t1", "th-r1", Message("user", "also"), None, clock.now())
    answers = store.commit_many(
        [
            request(going, clock, state={"n": b"5"}),
            request(ending, clock, next_step=None, status=RunStatus.SUCCEEDED, result={"ok": 1}),
        ],
        clock.now(),
    )
    assert answers == [going.state_version + 1, ending.state_version + 1]
    assert [(m.seq, m.content) for m in store.messages("t1", "th-r1")] == [(1, "also")]
    assert store.load_state("t1", "r1") == {"n": b"5"}
    assert store.get_run("t1", "r1").status is RunStatus.RUNNING
    assert store.get_run("t1", "r2").status is RunStatus.SUCCEEDED
    completed = [e.data for e in store.events("t1", "r1") if e.type == "step_completed"]
    assert completed == [{"seq": 1, "outcome": "next", "next": "second"}]


def test_a_groups_messages_are_numbered_on_each_runs_own_thread(
    store: Store, clock: FakeClock
) -> None:
    runs = [claimed(store, clock, f"r{i}") for i in range(3)]
    store.post_message("t1", "th-r1", Message("user", "meanwhile"), None, clock.now())
    said = {
        "r0": (Message("assistant", "a"), Message("assistant", "b")),
        "r1": (Message("assistant", "c"),),
        "r2": (),
    }
    answers = store.commit_many(
        [request(run, clock, messages=said[run.run_id]) for run in runs], clock.now()
    )
    assert answers == [run.state_version + 1 for run in runs]
    assert [(m.seq, m.content) for m in store.messages("t1", "th-r0")] == [(1, "a"), (2, "b")]
    # input posted while r1's step ran joins its thread after the step's own messages
    assert [(m.seq, m.content) for m in store.messages("t1", "th-r1")] == [
        (1, "c"),
        (2, "meanwhile"),
    ]
    assert store.messages("t1", "th-r2") == []
    assert [step_names(store, run.run_id) for run in runs] == [["first"]] * 3
