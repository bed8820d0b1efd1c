"""A run under each checkpoint strategy, for the strategy tests and crash tests.

The run follows :data:`PLAN`: a step that only thinks, one that makes a model call (an effect
with target ``model``), one that makes a side effect (appends to a ledger that never
deduplicates). Each step first moves the clock :data:`TICK` seconds, so the timed strategies
flush at known boundaries. Every step start, model call and side effect writes one line to
``events`` in the run's folder: what happened, the plan index, and how many of the run's
boundaries were durable at that moment (read from the store on its own connection).

``python -m tests.apps.strategies_app start DB FOLDER STRATEGY`` starts one run and advances
it (with ``STRATEGY_HOLD=<i>`` and ``STRATEGY_WAYPOINT=<path>``, step ``i`` reaches the
waypoint after its ``start`` line and then blocks, for a test to SIGKILL the process there);
``python -m tests.apps.strategies_app resume DB STRATEGY`` advances what is left. The tests
crash the first with ``PERDURE_CRASH_AT`` or SIGKILL it, then check what was stored against
what the events say, and that the second finishes the run without repeating a side effect.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perdure import (
    CheckpointStrategy,
    Context,
    Runtime,
    Workflow,
    done,
    goto,
    hybrid,
    per_effect,
    per_step,
    step,
    timed,
)
from perdure.core.workflow import Outcome
from perdure.runtime.clock import TEST_CLOCK_VARIABLE, FileClock
from perdure.runtime.worker import Worker
from tests.waypoints import reach

PLAN = ("think", "ask", "think", "act", "think", "ask", "think", "act", "think")
"""What each step of the run does, by its index."""
TICK = 1.0
"""Seconds the clock moves at the start of every step."""
STRATEGIES: dict[str, CheckpointStrategy] = {
    "per_step": per_step(),
    "per_effect": per_effect(),
    "timed": timed(2.5),
    "hybrid": hybrid(2.5),
}

EXPECTED = {
    # durable boundaries when step i starts (i = 0..8), and when act 3 and act 7 are called:
    # the boundaries before a side effect are durable under every strategy
    "per_step": ([0, 1, 2, 3, 4, 5, 6, 7, 8], {3: 3, 7: 7}),
    "per_effect": ([0, 0, 1, 1, 3, 3, 5, 5, 7], {3: 3, 7: 7}),
    "timed": ([0, 0, 0, 3, 3, 3, 6, 6, 7], {3: 3, 7: 7}),
    "hybrid": ([0, 0, 0, 3, 4, 4, 4, 7, 8], {3: 3, 7: 7}),
}
"""Worked out from the plan (think, ask, think, act, think, ask, think, act, think), one
second per step, and the timed strategies' 2.5 seconds."""


@dataclass
class Plan:
    i: int = 0
    folder: str = ""


@dataclass
class Hooks:
    """How steps move the clock and read the run's durable progress (set by whoever runs)."""

    advance: Callable[[float], Any] = lambda _seconds: None
    durable: Callable[[str, str], int] = lambda _tenant, _run: -1


HOOKS = Hooks()


def note(folder: str, line: str) -> None:
    """Append one line to the folder's ``events`` file, durably, in one write."""
    fd = os.open(os.path.join(folder, "events"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def begin(ctx: Context, s: Plan) -> int:
    HOOKS.advance(TICK)
    durable = HOOKS.durable(ctx.tenant_id, ctx.run_id)
    note(s.folder, f"start {s.i} {durable}")
    if os.environ.get("STRATEGY_HOLD") == str(s.i):
        reach(os.environ["STRATEGY_WAYPOINT"])
        threading.Event().wait()  # until the test kills the process
    return durable


def then(s: Plan) -> Outcome:
    s.i += 1
    if s.i >= len(PLAN):
        return done({"steps": s.i})
    return goto(PLAN[s.i])


def call(ctx: Context, s: Plan, kind: str) -> Callable[[Any, str], Any]:
    i, folder, tenant, run = s.i, s.folder, ctx.tenant_id, ctx.run_id

    def execute(_request: Any, _key: str) -> Any:
        note(folder, f"{kind} {i} {HOOKS.durable(tenant, run)}")
        return {"i": i}

    return execute


@step(next=["think", "ask", "act"])
def think(ctx: Context, s: Plan) -> Outcome:
    begin(ctx, s)
    return then(s)


@step(next=["think", "ask", "act"])
def ask(ctx: Context, s: Plan) -> Outcome:
    begin(ctx, s)
    request = {"i": s.i}
    ctx.effect(
        f"ask-{s.i}", target="model", operation="fake", request=request, execute=call(ctx, s, "ask")
    )
    return then(s)


@step(next=["think", "ask", "act"])
def act(ctx: Context, s: Plan) -> Outcome:
    begin(ctx, s)
    request = {"i": s.i}
    ctx.effect(
        f"act-{s.i}",
        target="ledger",
        operation="append",
        request=request,
        execute=call(ctx, s, "act"),
    )
    return then(s)


def plan(strategy: str) -> Workflow[Plan]:
    """The plan's workflow under one strategy (by its name in :data:`STRATEGIES`)."""
    return Workflow("plan", state=Plan, steps=[think, ask, act], checkpoint=STRATEGIES[strategy])


def main(argv: list[str]) -> int:
    verb, db = argv[0], argv[1]
    strategy = argv[3] if verb == "start" else argv[2]
    wf = plan(strategy)
    clock = FileClock(os.environ[TEST_CLOCK_VARIABLE])
    with Runtime(db, workflows=[wf]) as rt:
        HOOKS.advance = clock.advance
        HOOKS.durable = lambda tenant, run: rt.store.get_run(tenant, run).steps_done
        if verb == "start":
            rt.start(wf, Plan(folder=argv[2]))
        Worker(rt, concurrency=1, poll_interval=0.01).run(until_idle=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
