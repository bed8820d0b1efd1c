"""Property: random interleavings of claims, commits, waits, approvals, signals, cancels,
releases and lease expiry never leave a terminal state, never make a status change outside the
transition table, never move a version or a fence backwards, and never leave a waiting run
holding a lease."""

from __future__ import annotations

import contextlib

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from perdure import FakeClock
from perdure.core import transitions
from perdure.core.errors import PerdureError
from perdure.core.model import Run, RunStatus
from perdure.core.records import (
    ApprovalRequest,
    ApprovalWait,
    SignalWait,
    StepOutcome,
    TimerWait,
    Waiting,
)
from perdure.store.base import Boundary
from perdure.testing.conformance.support import LEASE, new_run
from tests.backends import Backend

OWNERS = ["w1", "w2"]


class StoreMachine(RuleBasedStateMachine):
    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self.backend = backend
        self.clock = FakeClock()
        self.store = backend.new_store()
        self.store.create_run(new_run("r"), self.clock.now())
        self.leases: dict[str, Run] = {}
        self.last = self.store.get_run("t1", "r")
        self.was_terminal: RunStatus | None = None

    def teardown(self) -> None:
        self.backend.dispose(self.store)

    @rule(owner=st.sampled_from(OWNERS))
    def claim(self, owner: str) -> None:
        run = self.store.claim(owner, self.clock.now() + LEASE, self.clock.now(), ["wf"])
        if run is not None:
            self.leases[owner] = run

    @rule(
        owner=st.sampled_from(OWNERS),
        status=st.sampled_from([RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED]),
    )
    def commit(self, owner: str, status: RunStatus) -> None:
        held = self.leases.get(owner)
        if held is None:
            return
        now = self.clock.now()
        nxt = "first" if status is RunStatus.RUNNING else None
        outcome = StepOutcome.NEXT if status is RunStatus.RUNNING else StepOutcome.DONE
        b = Boundary("first", outcome, nxt, status, now, now, {"n": b"1"})
        try:
            version = self.store.commit("t1", "r", held.fence, held.state_version, [b], now)
        except PerdureError:
            return
        self.leases[owner] = self.store.get_run("t1", "r")
        assert self.leases[owner].state_version == version

    @rule(
        target_status=st.sampled_from(list(RunStatus)),
        fenced=st.booleans(),
        owner=st.sampled_from(OWNERS),
    )
    def change_status(self, target_status: RunStatus, fenced: bool, owner: str) -> None:
        current = self.store.get_run("t1", "r")
        if not transitions.allowed(current.status, target_status):
            return
        held = self.leases.get(owner)
        try:
            self.store.set_status(
                "t1",
                "r",
                expected_status=current.status,
                expected_version=current.state_version,
                status=target_status,
                fence=held.fence if (fenced and held) else None,
                now=self.clock.now(),
            )
        except PerdureError:
            return

    @rule(owner=st.sampled_from(OWNERS), kind=st.sampled_from(["approval", "signal", "timer"]))
    def commit_a_wait(self, owner: str, kind: str) -> None:
        held = self.leases.get(owner)
        if held is None:
            return
        now = self.clock.now()
        if kind == "approval":
            wait = ApprovalWait("r", "a", "b")
            b = Boundary(
                "first",
                StepOutcome.WAIT_APPROVAL,
                None,
                RunStatus.WAITING_APPROVAL,
                now,
                now,
                waiting=wait,
                approval=ApprovalRequest(wait, {}),
            )
        else:
            waiting: Waiting = (
                SignalWait("go", "first") if kind == "signal" else TimerWait("first", now + LEASE)
            )
            b = Boundary(
                "first",
                StepOutcome.WAIT_SIGNAL if kind == "signal" else StepOutcome.SLEEP,
                "first",
                RunStatus.WAITING_EXTERNAL,
                now,
                now,
                waiting=waiting,
                wake_at=now + LEASE,
            )
        try:
            self.store.commit("t1", "r", held.fence, held.state_version, [b], now)
        except PerdureError:
            return

    @rule(approve=st.booleans(), request=st.sampled_from(["q1", "q2", None]))
    def decide(self, approve: bool, request: str | None) -> None:
        for a in self.store.approvals("t1", run_id="r", pending=True):
            with contextlib.suppress(PerdureError):
                self.store.decide_approval(
                    "t1",
                    a.id,
                    approve=approve,
                    by="p",
                    role="r",
                    comment=None,
                    request_id=request,
                    now=self.clock.now(),
                )

    @rule(signal_id=st.sampled_from(["s1", "s2", "s3"]))
    def signal(self, signal_id: str) -> None:
        with contextlib.suppress(PerdureError):
            self.store.deliver_signal(
                "t1", "r", signal_id=signal_id, name="go", payload=None, now=self.clock.now()
            )

    @rule(seconds=st.integers(min_value=1, max_value=40))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule(owner=st.sampled_from(OWNERS))
    def release(self, owner: str) -> None:
        held = self.leases.get(owner)
        if held is not None:
            self.store.release("t1", "r", owner, held.fence, self.clock.now())

    @invariant()
    def runs_only_move_forward(self) -> None:
        run = self.store.get_run("t1", "r")
        assert run.state_version >= self.last.state_version
        assert run.fence >= self.last.fence
        if self.was_terminal is not None:
            assert run.status is self.was_terminal, "a terminal state was left"
        if run.status.terminal:
            self.was_terminal = run.status
        self.last = run

    @invariant()
    def a_waiting_run_holds_no_lease(self) -> None:
        run = self.store.get_run("t1", "r")
        if run.status in (RunStatus.WAITING_APPROVAL, RunStatus.WAITING_EXTERNAL):
            assert run.owner is None

    @invariant()
    def every_recorded_status_change_is_in_the_table(self) -> None:
        for e in self.store.events("t1", "r"):
            if e.type == "status":
                a, b = RunStatus(e.data["from"]), RunStatus(e.data["to"])
                assert transitions.allowed(a, b), f"{a} -> {b} skipped the table"


def test_random_interleavings_never_move_a_run_backwards(backend: Backend) -> None:
    run_state_machine_as_test(
        lambda: StoreMachine(backend),
        settings=settings(max_examples=60, stateful_step_count=30, deadline=None),
    )
