"""Workflows that wait for a signal or a timer, for CLI tests."""

from __future__ import annotations

from dataclasses import dataclass

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome, sleep, wait_for_signal


@dataclass
class Order:
    id: int = 1


@step(next=["ship"])
def wait_payment(ctx: Context, s: Order) -> Outcome:
    return wait_for_signal("paid", next="ship")


@step
def ship(ctx: Context, s: Order) -> Outcome:
    return done({"shipped": s.id, "payment": ctx.signal("paid")})


order = Workflow("order", state=Order, steps=[wait_payment, ship])


@step(next=["wake"])
def doze(ctx: Context, s: Order) -> Outcome:
    return sleep(3600, next="wake", now=ctx.now())


@step
def wake(ctx: Context, s: Order) -> Outcome:
    return done({"woke_at": ctx.now().isoformat()})


nap = Workflow("nap", state=Order, steps=[doze, wake])
