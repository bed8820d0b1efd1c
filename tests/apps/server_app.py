"""Workflows for the server and browser tests.

``job`` ticks ``ticks`` times, each tick waiting for a permit of :data:`GATE` (the test
releases them, so a worker advances the run exactly as far as the test allows, with no
sleep), then asks a person with role ``approver`` and finishes. ``charge`` makes an effect
whose outcome is unknown, so the run needs a person. ``plain`` ends at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from perdure import Budget, Context, RetryPolicy, TransientError, Workflow, done, goto, step
from perdure.core.effects import UnknownOutcomeError
from perdure.core.workflow import Outcome, wait_for_approval

GATE = threading.Semaphore(0)
"""One permit per tick; ``GATE.release(n)`` lets ``n`` ticks run."""


@dataclass
class Job:
    ticks: int = 0
    done_ticks: int = 0
    amount: int = 10


@step(next=["tick", "ask"])
def begin(ctx: Context, s: Job) -> Outcome:
    return goto("tick" if s.ticks > 0 else "ask")


@step(next=["tick", "ask"])
def tick(ctx: Context, s: Job) -> Outcome:
    if not GATE.acquire(timeout=120):  # a safeguard for a broken test, not a timing
        raise RuntimeError("the test never opened the gate")
    s.done_ticks += 1
    return goto("tick" if s.done_ticks < s.ticks else "ask")


@step(next=["finish", "refuse"])
def ask(ctx: Context, s: Job) -> Outcome:
    return wait_for_approval(
        "approver", {"amount": s.amount}, on_approve="finish", on_reject="refuse"
    )


@step
def finish(ctx: Context, s: Job) -> Outcome:
    return done({"ticks": s.done_ticks, "approved": True})


@step
def refuse(ctx: Context, s: Job) -> Outcome:
    return done({"ticks": s.done_ticks, "approved": False})


job = Workflow("job", state=Job, steps=[begin, tick, ask, finish, refuse])


@dataclass
class Bill:
    amount: int = 5


@step
def pay(ctx: Context, s: Bill) -> Outcome:
    def execute(request: Any, key: str) -> Any:
        raise UnknownOutcomeError("the provider timed out after the request was sent")

    ctx.effect(
        "charge", target="bank", operation="charge", request={"amount": s.amount}, execute=execute
    )
    return done({"paid": s.amount})


charge = Workflow("charge", state=Bill, steps=[pay])


@step
def only(ctx: Context, s: Bill) -> Outcome:
    return done({"ok": True})


plain = Workflow("plain", state=Bill, steps=[only])


ATTEMPTS: dict[str, int] = {}
"""Calls of ``wobble`` by run: its first call fails."""


@step(retry=RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=False))
def wobble(ctx: Context, s: Bill) -> Outcome:
    ATTEMPTS[ctx.run_id] = ATTEMPTS.get(ctx.run_id, 0) + 1
    if ATTEMPTS[ctx.run_id] < 2:
        raise TransientError("the service is warming up")
    return done({"attempts": ATTEMPTS[ctx.run_id]})


flaky = Workflow("flaky", state=Bill, steps=[wobble])


@step
def think(ctx: Context, s: Bill) -> Outcome:
    ctx.charge(tokens=50, cost=0.125)  # what a model call would record
    return done({"thought": True})


spend = Workflow("spend", state=Bill, steps=[think], budget=Budget(tokens=10_000))


WORDS = ["a ", "reply ", "streamed ", "token ", "by ", "token"]


@dataclass
class Talk:
    message_id: str = "m-1"


@step
def talk(ctx: Context, s: Talk) -> Outcome:
    """Streams :data:`WORDS` as a message's deltas, one write per permit of :data:`GATE`."""
    sink = ctx.open_stream(s.message_id, batch=1)
    for word in WORDS:
        if not GATE.acquire(timeout=120):  # a safeguard for a broken test, not a timing
            raise RuntimeError("the test never opened the gate")
        sink.write(word)
    sink.finish()
    return done({"message_id": s.message_id})


talk_flow = Workflow("talk", state=Talk, steps=[talk])
