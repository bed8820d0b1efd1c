"""The step-boundary commit and status changes: guarded by fence, version and status; all or
nothing."""

from __future__ import annotations

import pytest

from perdure.core.artifacts import ArtifactRef
from perdure.core.clock import FakeClock
from perdure.core.errors import (
    LeaseLostError,
    RunClosedError,
    StaleStateError,
)
from perdure.core.model import Message, RunStatus, ToolCall
from perdure.store.base import Store
from perdure.testing.conformance.support import boundary, claim, needs, new_run


def test_a_commit_writes_steps_state_messages_and_events_at_once(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    call = ToolCall("call-1", "lookup", {"q": 1})
    b1 = boundary(
        clock,
        state={"n": b"1"},
        messages=(Message("assistant", "", (call,)), Message("tool", "42", tool_call_id="call-1")),
    )
    b2 = boundary(clock, "second", None, RunStatus.SUCCEEDED, state={"m": b"2"}, result={"ok": 1})
    version = store.commit("t1", "r1", run.fence, run.state_version, [b1, b2], clock.now())
    after = store.get_run("t1", "r1")
    assert after.state_version == version == run.state_version + 1
    assert (after.status, after.next_step, after.result, after.steps_done) == (
        RunStatus.SUCCEEDED,
        None,
        {"ok": 1},
        2,
    )
    assert after.owner is None, "ending a run releases its lease"
    assert [s.name for s in store.steps("t1", "r1")] == ["first", "second"]
    assert store.load_state("t1", "r1") == {"n": b"1", "m": b"2"}
    msgs = store.messages("t1", "th1")
    assert [m.seq for m in msgs] == [1, 2]
    assert msgs[0].tool_calls == (call,)
    assert msgs[1].tool_call_id == "call-1"
    types = [e.type for e in store.events("t1", "r1")]
    assert types[-3:] == ["step_completed", "step_completed", "status"]


def test_a_stale_owner_cannot_commit_and_changes_nothing(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    old = claim(store, clock, "w1")
    clock.advance(31)
    new = claim(store, clock, "w2")
    assert old is not None and new is not None
    with pytest.raises(LeaseLostError):
        store.commit(
            "t1",
            "r1",
            old.fence,
            old.state_version,
            [boundary(clock, state={"n": b"9"})],
            clock.now(),
        )
    after = store.get_run("t1", "r1")
    assert after.state_version == new.state_version
    assert after.next_step == "first"
    assert store.load_state("t1", "r1") == {"n": b"0"}
    assert store.steps("t1", "r1") == []


def test_a_commit_with_a_stale_version_is_refused(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    with pytest.raises(StaleStateError):
        store.commit("t1", "r1", run.fence, run.state_version - 1, [boundary(clock)], clock.now())


def test_a_finished_run_refuses_every_write(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    done = boundary(clock, status=RunStatus.SUCCEEDED, next_step=None)
    version = store.commit("t1", "r1", run.fence, run.state_version, [done], clock.now())
    with pytest.raises(RunClosedError):
        store.commit("t1", "r1", run.fence, version, [boundary(clock)], clock.now())
    assert claim(store, clock) is None
    with pytest.raises(RunClosedError):
        store.set_status(
            "t1",
            "r1",
            expected_status=RunStatus.SUCCEEDED,
            expected_version=version,
            status=RunStatus.FAILED,
            fence=None,
            now=clock.now(),
        )


def test_set_status_is_guarded_and_records_the_change(store: Store, clock: FakeClock) -> None:
    created, _ = store.create_run(new_run("r1"), clock.now())
    run = store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.PENDING,
        expected_version=created.state_version,
        status=RunStatus.CANCEL_REQUESTED,
        fence=None,
        now=clock.now(),
        data={"reason": "user"},
    )
    assert run.status is RunStatus.CANCEL_REQUESTED
    with pytest.raises(StaleStateError):
        store.set_status(
            "t1",
            "r1",
            expected_status=RunStatus.PENDING,
            expected_version=created.state_version,
            status=RunStatus.CANCEL_REQUESTED,
            fence=None,
            now=clock.now(),
        )
    last = store.events("t1", "r1")[-1]
    assert (last.type, last.data["from"], last.data["to"]) == (
        "status",
        "PENDING",
        "CANCEL_REQUESTED",
    )


def test_a_plain_boundary_writes_what_any_boundary_writes(store: Store, clock: FakeClock) -> None:
    """A boundary with only its step and changed fields (one statement on PostgreSQL) leaves the
    same rows as one with messages: the step, its numbered event, the fields and history."""
    needs(store, "history")
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    state = {"n": b"1", "notes": b'["a"]'}
    version = store.commit(
        "t1", "r1", run.fence, run.state_version, [boundary(clock, state=state)], clock.now()
    )
    second = boundary(clock, "second", "third", state={"n": b"2"})
    version = store.commit("t1", "r1", run.fence, version, [second], clock.now())
    after = store.get_run("t1", "r1")
    assert (after.status, after.next_step, after.steps_done) == (RunStatus.RUNNING, "third", 2)
    assert after.owner == run.owner, "a run that goes on keeps its lease"
    assert after.state_version == version == run.state_version + 2
    assert [(s.seq, s.name, s.next_step) for s in store.steps("t1", "r1")] == [
        (1, "first", "second"),
        (2, "second", "third"),
    ]
    assert store.load_state("t1", "r1") == {"n": b"2", "notes": b'["a"]'}
    assert store.history.state_at("t1", "r1", 1) == {"n": b"1", "notes": b'["a"]'}
    changes = [(c.step_seq, c.version, c.field) for c in store.history.state_changes("t1", "r1")]
    assert changes[-3:] == [
        (1, run.state_version + 1, "n"),
        (1, run.state_version + 1, "notes"),
        (2, version, "n"),
    ]
    completed = [e for e in store.events("t1", "r1") if e.type == "step_completed"]
    assert [(e.step, e.fence, e.data) for e in completed] == [
        ("first", run.fence, {"seq": 1, "outcome": "next", "next": "second"}),
        ("second", run.fence, {"seq": 2, "outcome": "next", "next": "third"}),
    ]


def test_a_plain_boundary_delivers_what_waited_in_the_inbox(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock, tenant_id="t1", run_id="r1")
    assert run is not None
    store.post_message("t1", "th1", Message("user", "also"), None, clock.now())
    store.commit("t1", "r1", run.fence, run.state_version, [boundary(clock)], clock.now())
    assert [(m.seq, m.content) for m in store.messages("t1", "th1")] == [(1, "also")]
    assert store.thread("t1", "th1").inbox == 0


def test_a_refused_plain_boundary_writes_nothing(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    store.commit("t1", "r1", run.fence, run.state_version, [boundary(clock)], clock.now())
    with pytest.raises(StaleStateError):
        store.commit(
            "t1",
            "r1",
            run.fence,
            run.state_version,
            [boundary(clock, "second", "third", state={"n": b"7"})],
            clock.now(),
        )
    assert [s.name for s in store.steps("t1", "r1")] == ["first"]
    assert store.load_state("t1", "r1") == {"n": b"0"}
    assert store.get_run("t1", "r1").next_step == "second"


def test_a_plain_boundarys_messages_follow_the_thread_with_their_step(
    store: Store, clock: FakeClock
) -> None:
    """A boundary that goes on with messages (an agent's usual step: one statement on
    PostgreSQL) numbers them after the thread's last message and keeps every column."""
    needs(store, "history")
    store.post_message("t1", "th1", Message("user", "hello"), None, clock.now())
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock)
    assert run is not None
    ref = ArtifactRef("ab" * 32, 3_000_000, "text/plain")
    said = (
        Message("assistant", "", (ToolCall("c1", "lookup", {"q": "é"}),)),
        Message("tool", "42", tool_call_id="c1"),
        Message("assistant", "see the file", artifact=ref),
    )
    first = boundary(clock, state={"n": b"1"}, messages=said)
    version = store.commit("t1", "r1", run.fence, run.state_version, [first], clock.now())
    clock.advance(1)
    second = boundary(clock, "second", "third", messages=(Message("assistant", "more"),))
    store.commit("t1", "r1", run.fence, version, [second], clock.now())
    got = store.messages("t1", "th1")
    assert [(m.seq, m.role, m.content, m.run_id) for m in got] == [
        (1, "user", "hello", None),
        (2, "assistant", "", "r1"),
        (3, "tool", "42", "r1"),
        (4, "assistant", "see the file", "r1"),
        (5, "assistant", "more", "r1"),
    ]
    assert got[1].tool_calls == (ToolCall("c1", "lookup", {"q": "é"}),)
    assert (got[2].tool_call_id, got[2].tool_calls, got[1].tool_call_id) == ("c1", (), None)
    assert (got[3].artifact, got[1].artifact) == (ref, None)
    assert [m.at for m in got[1:]] == [first.finished_at] * 3 + [second.finished_at]
    upto_first = store.history.messages_until("t1", "th1", "r1", 1)
    assert [m.seq for m in upto_first] == [1, 2, 3, 4], "each message keeps the step it came in"
    assert [s.name for s in store.steps("t1", "r1")] == ["first", "second"]
