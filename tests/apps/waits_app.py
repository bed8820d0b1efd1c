"""A workflow that waits for a signal, for CLI tests."""

from __future__ import annotations

from dataclasses import dataclass

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome, wait_for_signal


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
