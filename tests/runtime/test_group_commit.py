"""Group commit in a runtime: the runs of one worker share commit transactions, every step is
committed exactly once, and bad settings are refused clearly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from perdure import Context, FakeClock, Runtime, Workflow, done, goto, step
from perdure.core.effects import EffectStatus as E
from perdure.core.errors import ConfigError
from perdure.core.model import RunStatus
from perdure.core.workflow import Outcome
from perdure.runtime.grouping import GroupCommit
from perdure.runtime.worker import Worker
from perdure.store.url import open_store

RUNS = 8
STEPS = 10


@dataclass
class Count:
    n: int = 0


@step(next=["tick"])
def tick(ctx: Context, state: Count) -> Outcome:
    state.n += 1
    return goto("tick") if state.n < STEPS else done({"n": state.n})


ticks = Workflow("ticks", state=Count, steps=[tick])


def drain_ticks(rt: Runtime) -> None:
    """Start ``RUNS`` runs of ``ticks``, drain them with a worker running them all at once, and
    check each one succeeded with every step committed once, in order."""
    runs = [rt.start(ticks, Count()).run_id for _ in range(RUNS)]
    Worker(rt, concurrency=RUNS, poll_interval=0.01).run(until_idle=True)
    for run_id in runs:
        run = rt.get(run_id)
        assert run.status is RunStatus.SUCCEEDED and run.result == {"n": STEPS}
        seqs = [s.seq for s in rt.store.steps("default", run_id)]
        assert seqs == list(range(1, STEPS + 1)), "each step committed once, in order"


def test_the_runs_of_a_worker_share_transactions_and_commit_every_step_once(
    db_url: str, clock: FakeClock
) -> None:
    sizes: list[int] = []
    grouping = GroupCommit(max_batch=RUNS, max_wait=0.5)  # a leader waits for the others
    with Runtime(db_url, clock=clock, workflows=[ticks], group_commit=grouping) as rt:
        assert rt.services.group is not None
        rt.services.group.on_group = sizes.append
        drain_ticks(rt)
    assert sum(sizes) == RUNS * STEPS, "every boundary was in exactly one transaction"
    assert max(sizes) > 1, "some transactions carried several runs"
    assert len(sizes) < RUNS * STEPS


def test_on_postgres_two_groups_are_written_at_once_and_on_sqlite_one(
    db_url: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(db_url)
    parallel = store.parallel_writes
    lock = threading.Lock()
    flying: list[int] = [0, 0]  # commit transactions in flight now, and the most at once
    second = threading.Event()

    def counted(write: Callable[..., Any]) -> Callable[..., Any]:
        def counting(*args: Any) -> Any:
            with lock:
                flying[0] += 1
                flying[1] = max(flying)
                if flying[0] == 2:
                    second.set()
            try:
                if parallel:  # the first write goes on once a second one is being written
                    assert second.wait(timeout=60), "no group was written beside the first"
                return write(*args)
            finally:
                with lock:
                    flying[0] -= 1

        return counting

    monkeypatch.setattr(store, "commit", counted(store.commit))
    monkeypatch.setattr(store, "commit_many", counted(store.commit_many))
    grouping = GroupCommit(in_flight=2)
    with Runtime(store, clock=clock, workflows=[ticks], group_commit=grouping) as rt:
        drain_ticks(rt)
    assert flying[1] == (2 if parallel else 1), "PostgreSQL writes two at once, SQLite one"


def charge(request: dict[str, int], key: str) -> dict[str, int]:
    CALLS.append(key)  # a ledger that never deduplicates
    return {"paid": request["n"]}


@step(next=["pay"])
def pay(ctx: Context, state: Count) -> Outcome:
    ctx.effect("pay", target="payments", operation="charge", request={"n": state.n}, execute=charge)
    state.n += 1
    return goto("pay") if state.n < STEPS else done({"n": state.n})


CALLS: list[str] = []
payments = Workflow("payments", state=Count, steps=[pay])


def test_the_effects_of_a_workers_runs_are_written_together_and_each_call_is_made_once(
    db_url: str, clock: FakeClock
) -> None:
    CALLS.clear()
    sizes: list[int] = []
    plans: list[int] = []
    grouping = GroupCommit(max_batch=RUNS, max_wait=0.5)  # a leader waits for the others
    with Runtime(db_url, clock=clock, workflows=[payments], group_commit=grouping) as rt:
        rt.services.effect_moves.on_group = sizes.append
        rt.services.effect_plans.on_group = plans.append
        runs = [rt.start(payments, Count()).run_id for _ in range(RUNS)]
        Worker(rt, concurrency=RUNS, poll_interval=0.01).run(until_idle=True)
        for run_id in runs:
            assert rt.get(run_id).status is RunStatus.SUCCEEDED
            effects = rt.store.list_effects("default", run_id=run_id)
            assert [(e.status, e.attempts) for e in effects] == [(E.CONFIRMED, 1)] * STEPS
            assert [e.result for e in effects] == [{"paid": n} for n in range(STEPS)]
    assert len(CALLS) == len(set(CALLS)) == RUNS * STEPS, "each call was made once"
    assert sum(sizes) == 2 * RUNS * STEPS, "every move (executing, confirmed) written once"
    assert max(sizes) > 1, "some transactions carried several runs' moves"
    assert sum(plans) == RUNS * STEPS and max(plans) > 1, "intents too, once each, grouped"


def test_grouping_can_be_turned_off(db_url: str, clock: FakeClock) -> None:
    with Runtime(db_url, clock=clock, group_commit=False) as rt:
        assert rt.services.group is None
    with Runtime(db_url, clock=clock, group_commit=GroupCommit(max_batch=1)) as rt:
        assert rt.services.group is None


@pytest.mark.parametrize(
    "options",
    [
        {"max_batch": 0},
        {"max_batch": 2.5},
        {"max_batch": True},
        {"max_wait": -1},
        {"max_wait": 2},
        {"in_flight": 0},
        {"in_flight": 1.5},
        {"in_flight": 65},
    ],
)
def test_bad_group_settings_are_refused_clearly(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"group_commit (max_|in_flight)"):
        GroupCommit(**options)  # type: ignore[arg-type]
