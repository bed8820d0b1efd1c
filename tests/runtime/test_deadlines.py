"""An effect's deadline: a worker that takes over an ``executing`` effect from a frozen worker
does not trust a reconcile's "not found" before that attempt's deadline has passed.

Worker A freezes inside the effect's call before the provider applies it (its heartbeat frozen
too); the clock passes A's lease; worker B takes the run over and reconciles. The provider here
does not deduplicate by key, so only the deadline stands between A's late call and a second row.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, step
from perdure.core.effects import Reconciled, check_deadline
from perdure.core.errors import InvalidInputError
from perdure.core.workflow import Outcome

LEASE = 30


@dataclass
class Provider:
    """Applies every call it gets (no idempotency): ``rows`` are the applied keys."""

    rows: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    entered: threading.Event = field(default_factory=threading.Event)
    thaw: threading.Event = field(default_factory=threading.Event)

    def execute(self, request: Any, key: str, **options: Any) -> dict[str, int]:
        self.calls.append({"key": key, **options})
        if len(self.calls) == 1:  # the first caller freezes before the provider applies it
            self.entered.set()
            assert self.thaw.wait(30), "the test never thawed the frozen worker"
        self.rows.append(key)
        return {"row": len(self.rows)}

    def reconcile(self, request: Any, key: str) -> Reconciled:
        return Reconciled.confirmed({"row": 1}) if key in self.rows else Reconciled.not_found()


@dataclass
class Order:
    deadline: float | None = None


def flow_for(provider: Provider) -> Workflow[Order]:
    @step
    def charge(ctx: Context, s: Order) -> Outcome:
        result = ctx.effect(
            "charge",
            target="payments",
            operation="charge",
            request={"amount": 5},
            execute=provider.execute,
            reconcile=provider.reconcile,
            deadline=s.deadline,
        )
        return done(result)

    return Workflow("order", state=Order, steps=[charge])


@dataclass
class Takeover:
    provider: Provider
    run_id: str
    b: Runtime
    frozen: threading.Thread
    a: Runtime

    def thaw(self) -> None:
        """Let A's frozen call land now, and wait for A to give the run up."""
        self.provider.thaw.set()
        self.frozen.join(30)
        self.a.close()


def take_over(db_url: str, clock: FakeClock, deadline: float | None) -> Takeover:
    """A freezes in the call; the clock passes its lease; B takes the run over."""
    provider = Provider()
    flow = flow_for(provider)
    a = Runtime(db_url, clock=clock, workflows=[flow], owner="host-a:1", lease_seconds=LEASE)
    b = Runtime(db_url, clock=clock, workflows=[flow], owner="host-b:2", lease_seconds=LEASE)
    a.services.heartbeat.stop()  # a frozen worker's heartbeat is frozen with it
    run_id = a.start(flow, {"deadline": deadline}).run_id
    frozen = threading.Thread(target=a.run_until_idle)
    frozen.start()
    assert provider.entered.wait(30), "worker A never reached the call"
    clock.advance(LEASE + 1)
    b.run_until_idle()
    return Takeover(provider, run_id, b, frozen, a)


def test_without_a_deadline_a_frozen_workers_late_call_lands_twice(
    db_url: str, clock: FakeClock
) -> None:
    """The finding, kept as the documented limit: without a deadline (and a provider that does
    not honour the key), B's "not found" is taken at its word and A's call lands later."""
    t = take_over(db_url, clock, None)
    with t.b:
        assert len(t.provider.calls) == 2, "B called again at once"
        t.thaw()
    assert len(t.provider.rows) == 2


def test_a_takeover_waits_for_the_attempts_deadline_before_calling_again(
    db_url: str, clock: FakeClock
) -> None:
    t = take_over(db_url, clock, 60.0)
    provider, b = t.provider, t.b
    with b:
        assert len(provider.calls) == 1, "B must not call while A's attempt may land"
        assert provider.calls[0]["timeout"] == 60.0, "the deadline is the call's timeout"
        effect = b.effects.list(run_id=t.run_id)[0]
        assert str(effect.status) == "executing" and effect.deadline is not None
        assert b.get(t.run_id).wake_at == effect.deadline, "B sleeps durably until then"
        assert b.run_until_idle() == 0, "nothing to do before the deadline"
        t.thaw()  # A's call lands now, late; its outcome is refused by the fence
        assert provider.rows == [effect.key]
        clock.advance((effect.deadline - clock.now()).total_seconds() + 1)
        b.run_until_idle()
        run = b.get(t.run_id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    assert len(provider.rows) == 1 and len(provider.calls) == 1, "applied exactly once"


def test_after_the_deadline_not_found_means_not_applied(db_url: str, clock: FakeClock) -> None:
    t = take_over(db_url, clock, 10.0)  # the deadline passed with the lease
    with t.b:
        assert len(t.provider.calls) == 2, "past the deadline, B reconciles and calls again"
        assert t.b.get(t.run_id).status is RunStatus.SUCCEEDED
        t.thaw()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "30", True])
def test_a_deadline_is_a_positive_number_of_seconds(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="deadline"):
        check_deadline("charge", bad)


def test_a_frozen_worker_whose_call_returns_late_stops_at_once_without_compensating(
    db_url: str, clock: FakeClock
) -> None:
    """Item 5 of the review, end to end: A's late outcome meets B's confirmed record. The guard
    checks the fence first (LeaseLostError, not "confirmed, not executing"); A's step code after
    the effect never runs and A tries no compensation with its stale fence."""
    provider = Provider()
    after_effect: list[int] = []
    compensated: list[str] = []

    def undo(request: Any, key: str, result: Any) -> None:
        compensated.append(key)

    raised: list[str] = []

    @step
    def charge(ctx: Context, s: Order) -> Outcome:
        try:
            ctx.effect(
                "charge",
                target="payments",
                operation="charge",
                request={"amount": 5},
                execute=provider.execute,
                reconcile=provider.reconcile,
                compensate=undo,
            )
        except Exception as exc:  # what the step's own code sees
            raised.append(type(exc).__name__)
            raise
        after_effect.append(ctx.fence)
        return done("charged")

    flow = Workflow("order", state=Order, steps=[charge], compensators=[undo])
    a = Runtime(db_url, clock=clock, workflows=[flow], owner="host-a:1", lease_seconds=LEASE)
    b = Runtime(db_url, clock=clock, workflows=[flow], owner="host-b:2", lease_seconds=LEASE)
    a.services.heartbeat.stop()
    with a, b:
        run_id = a.start(flow, {}).run_id
        claimed = a.claim_next()
        assert claimed is not None
        stopped: list[Any] = []
        frozen = threading.Thread(target=lambda: stopped.append(a.advance_claimed(claimed)))
        frozen.start()
        assert provider.entered.wait(30)
        clock.advance(LEASE + 1)
        b.run_until_idle()  # B reconciles "not found", calls, confirms, finishes
        assert b.get(run_id).status is RunStatus.SUCCEEDED
        provider.thaw.set()  # A's call returns now; recording its outcome meets B's fence
        frozen.join(30)
        events = b.store.events(b.get(run_id).tenant_id, run_id, limit=1000)
    assert raised == ["LeaseLostError"], "A learns it lost the run, not the effect's new status"
    assert stopped and str(stopped[0].reason) == "lost", stopped
    assert after_effect == [claimed.fence + 1], "only B's execution went past the effect"
    assert compensated == [], "A tried no compensation with its stale fence"
    assert not [e for e in events if e.type == "late_commit"], "A did not even try to commit"
