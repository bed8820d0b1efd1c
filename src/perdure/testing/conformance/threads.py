"""One writer per thread: the queue, the policies and the inbox, on every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import StaleStateError, ThreadBusyError
from perdure.core.model import Message, RunStatus
from perdure.core.threads import Delivery, ThreadPolicy
from perdure.store.base import Store
from perdure.testing.conformance.support import LEASE, boundary, claim, new_run


def finish(store: Store, clock: FakeClock, run_id: str) -> None:
    """Claim ``run_id`` (it must be claimable) and commit its last boundary."""
    run = claim(store, clock, tenant_id="t1", run_id=run_id)
    assert run is not None, f"{run_id} should be claimable"
    end = boundary(clock, next_step=None, status=RunStatus.SUCCEEDED)
    store.commit("t1", run_id, run.fence, run.state_version, [end], clock.now())


def test_a_run_behind_an_unfinished_one_waits_and_runs_after_in_order(
    store: Store, clock: FakeClock
) -> None:
    for rid in ("r1", "r2", "r3"):
        store.create_run(new_run(rid), clock.now())
    assert claim(store, clock, tenant_id="t1", run_id="r2") is None, "r1 holds the thread"
    assert store.thread("t1", "th1").active == "r1"
    assert store.thread("t1", "th1").queued == ("r2", "r3")
    finish(store, clock, "r1")
    assert claim(store, clock, tenant_id="t1", run_id="r3") is None, "r2 is next, not r3"
    first = claim(store, clock, owner="w2")
    assert first is not None and first.run_id == "r2", "the worker's scan keeps the order"
    assert claim(store, clock, owner="w3") is None, "one writer: r3 is not claimable yet"


def test_a_waiting_run_still_holds_its_thread(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock, tenant_id="t1", run_id="r1")
    assert run is not None
    wait = boundary(clock, next_step="later", status=RunStatus.WAITING_EXTERNAL)
    store.commit("t1", "r1", run.fence, run.state_version, [wait], clock.now())
    store.create_run(new_run("r2"), clock.now())
    assert claim(store, clock) is None


def test_reject_refuses_a_busy_thread_and_writes_nothing(store: Store, clock: FakeClock) -> None:
    store.create_run(new_run("r1", key="k1"), clock.now())
    with pytest.raises(ThreadBusyError, match="r1") as refused:
        store.create_run(replace(new_run("r2"), policy=ThreadPolicy.REJECT), clock.now())
    assert refused.value.code == "thread_busy"
    assert [r.run_id for r in store.list_runs("t1")] == ["r1"]
    again, created = store.create_run(
        replace(new_run("r3", key="k1"), policy=ThreadPolicy.REJECT), clock.now()
    )
    assert (again.run_id, created) == ("r1", False), "a repeated start is not a second input"
    finish(store, clock, "r1")
    _, created = store.create_run(replace(new_run("r4"), policy=ThreadPolicy.REJECT), clock.now())
    assert created, "an idle thread takes a new run"


def test_the_threads_own_policy_applies_unless_a_start_gives_one(
    store: Store, clock: FakeClock
) -> None:
    store.set_thread_policy("t1", "th1", ThreadPolicy.REJECT, clock.now())
    store.create_run(new_run("r1"), clock.now())
    with pytest.raises(ThreadBusyError):
        store.create_run(new_run("r2"), clock.now())
    store.create_run(replace(new_run("r3"), policy=ThreadPolicy.ENQUEUE), clock.now())
    info = store.thread("t1", "th1")
    assert (info.policy, info.active, info.queued) == (ThreadPolicy.REJECT, "r1", ("r3",))
    assert store.thread("t2", "th1").policy is ThreadPolicy.ENQUEUE, "policies are per tenant"


def test_interrupt_asks_the_running_run_to_stop_and_runs_next(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r1"), clock.now())
    running = claim(store, clock, tenant_id="t1", run_id="r1")
    assert running is not None
    store.create_run(new_run("r2"), clock.now())  # queued (enqueue)
    store.create_run(replace(new_run("r3"), policy=ThreadPolicy.INTERRUPT), clock.now())
    r1, r2 = store.get_run("t1", "r1"), store.get_run("t1", "r2")
    assert r1.status is RunStatus.CANCEL_REQUESTED and r1.owner == "w1", "its worker finishes it"
    assert r2.status is RunStatus.CANCEL_REQUESTED
    asked = [e.data for e in store.events("t1", "r1") if e.type == "status"][-1]
    assert asked == {
        "from": "RUNNING",
        "to": "CANCEL_REQUESTED",
        "data": {"reason": "interrupted", "by": "r3"},
    }
    assert claim(store, clock, owner="w2") is None, "r1 still holds the thread"
    for rid, status in (("r1", RunStatus.CANCEL_REQUESTED), ("r2", RunStatus.CANCEL_REQUESTED)):
        run = store.get_run("t1", rid)
        store.set_status(
            "t1",
            rid,
            expected_status=status,
            expected_version=run.state_version,
            status=RunStatus.CANCELLED,
            fence=None,
            now=clock.now(),
            release_lease=True,
        )
    nxt = claim(store, clock, owner="w2")
    assert nxt is not None and nxt.run_id == "r3"


def test_a_queued_runs_messages_join_the_thread_when_it_starts(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(replace(new_run("r1"), messages=(Message("user", "first"),)), clock.now())
    store.create_run(replace(new_run("r2"), messages=(Message("user", "second"),)), clock.now())
    assert [m.content for m in store.messages("t1", "th1")] == ["first"]
    finish(store, clock, "r1")
    assert [m.content for m in store.messages("t1", "th1")] == ["first"]
    assert claim(store, clock, tenant_id="t1", run_id="r2") is not None
    joined = store.messages("t1", "th1")
    assert [(m.seq, m.content, m.run_id) for m in joined] == [
        (1, "first", "r1"),
        (2, "second", "r2"),
    ]


def test_an_outside_message_waits_for_the_next_boundary(store: Store, clock: FakeClock) -> None:
    idle = store.post_message("t1", "th1", Message("user", "hello"), None, clock.now())
    assert idle is Delivery.APPENDED
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock, tenant_id="t1", run_id="r1")
    assert run is not None
    queued = store.post_message("t1", "th1", Message("user", "also"), None, clock.now())
    assert queued is Delivery.QUEUED
    assert store.thread("t1", "th1").inbox == 1
    assert [m.content for m in store.messages("t1", "th1")] == ["hello"], "not mid-step"
    step = boundary(clock, messages=(Message("assistant", "reply"),))
    store.commit("t1", "r1", run.fence, run.state_version, [step], clock.now())
    contents = [m.content for m in store.messages("t1", "th1")]
    assert contents == ["hello", "reply", "also"], "after the boundary's own messages"
    since = store.messages("t1", "th1", after=1)
    assert [(m.seq, m.content) for m in since] == [(2, "reply"), (3, "also")], "only what is new"
    assert store.messages("t1", "th1", after=3) == []
    assert store.thread("t1", "th1").inbox == 0
    with pytest.raises(ThreadBusyError):
        store.post_message("t1", "th1", Message("user", "no"), ThreadPolicy.REJECT, clock.now())


def test_an_interrupting_message_waits_for_the_cancelled_runs_end(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r1"), clock.now())
    run = claim(store, clock, tenant_id="t1", run_id="r1")
    assert run is not None
    stop = Message("user", "stop")
    assert store.post_message("t1", "th1", stop, ThreadPolicy.INTERRUPT, clock.now()) == "queued"
    asked = store.get_run("t1", "r1")
    assert asked.status is RunStatus.CANCEL_REQUESTED
    store.set_status(
        "t1",
        "r1",
        expected_status=RunStatus.CANCEL_REQUESTED,
        expected_version=asked.state_version,
        status=RunStatus.CANCELLED,
        fence=run.fence,
        now=clock.now(),
        release_lease=True,
    )
    assert [m.content for m in store.messages("t1", "th1")] == ["stop"]


@pytest.mark.parametrize("policy", list(ThreadPolicy))
def test_two_starts_racing_on_one_thread_follow_its_policy(
    store: Store, clock: FakeClock, policy: ThreadPolicy
) -> None:
    for attempt in range(5):
        thread = f"race-{attempt}"
        start = threading.Barrier(2)
        outcomes: dict[str, str] = {}

        def create(
            rid: str,
            thread: str = thread,
            start: threading.Barrier = start,
            outcomes: dict[str, str] = outcomes,
        ) -> None:
            start.wait()
            try:
                store.create_run(replace(new_run(rid, thread=thread), policy=policy), clock.now())
                outcomes[rid] = "created"
            except ThreadBusyError:
                outcomes[rid] = "rejected"

        ids = (f"{thread}-a", f"{thread}-b")
        racers = [threading.Thread(target=create, args=(rid,)) for rid in ids]
        for t in racers:
            t.start()
        for t in racers:
            t.join()
        info = store.thread("t1", thread)
        holders = [rid for rid in ids if claim(store, clock, tenant_id="t1", run_id=rid)]
        assert len(holders) == 1, "exactly one run of the thread can be claimed"
        if policy is ThreadPolicy.REJECT:
            assert sorted(outcomes.values()) == ["created", "rejected"]
            assert info.queued == ()
        else:
            assert outcomes == dict.fromkeys(ids, "created")
            assert info.active in ids and len(info.queued) == 1
            assert holders == [info.active]
        if policy is ThreadPolicy.INTERRUPT:
            first = store.get_run("t1", info.active or "")
            assert first.status is RunStatus.CANCEL_REQUESTED, "the later start interrupted it"


def test_claimers_racing_over_one_thread_never_hold_two_of_its_runs(
    store: Store, clock: FakeClock
) -> None:
    for i in range(6):
        store.create_run(new_run(f"r{i}"), clock.now())
    start = threading.Barrier(4)
    won: list[str] = []

    def scan(owner: str) -> None:
        start.wait()
        for _ in range(10):
            run = store.claim(owner, clock.now() + LEASE, clock.now(), ["wf"])
            if run is not None:
                won.append(run.run_id)

    claimers = [threading.Thread(target=scan, args=(f"w{i}",)) for i in range(4)]
    for t in claimers:
        t.start()
    for t in claimers:
        t.join()
    assert won == ["r0"], "only the thread's oldest unfinished run was ever claimed"


def test_starts_messages_and_commits_on_one_thread_at_once_never_deadlock(
    store: Store, clock: FakeClock
) -> None:
    store.create_run(new_run("r0"), clock.now())
    run = claim(store, clock, tenant_id="t1", run_id="r0")
    assert run is not None
    start = threading.Barrier(3)
    failures: list[BaseException] = []

    def commit_steps() -> None:
        version = run.state_version
        start.wait()
        for n in range(10):
            now = clock.now()
            b = boundary(clock, next_step="first", messages=(Message("assistant", f"s{n}"),))
            try:
                version = store.commit("t1", "r0", run.fence, version, [b], now)
            except StaleStateError:
                return  # the interrupt arrived: the run is CANCEL_REQUESTED now

    def post() -> None:
        start.wait()
        for n in range(10):
            store.post_message("t1", "th1", Message("user", f"p{n}"), None, clock.now())

    def starts() -> None:
        start.wait()
        for n in range(5):
            policy = ThreadPolicy.INTERRUPT if n == 4 else ThreadPolicy.ENQUEUE
            new = replace(new_run(f"q{n}"), policy=policy, messages=(Message("user", f"q{n}"),))
            store.create_run(new, clock.now())

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run_it() -> None:
            try:
                fn()
            except BaseException as exc:  # reported below
                failures.append(exc)

        return run_it

    writers = [threading.Thread(target=guarded(f)) for f in (commit_steps, post, starts)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    assert failures == []
    assert store.get_run("t1", "r0").status is RunStatus.CANCEL_REQUESTED
    seqs = [m.seq for m in store.messages("t1", "th1")]
    assert seqs == list(range(1, len(seqs) + 1))
