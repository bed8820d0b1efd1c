"""Workflows for the outage tests.

``charging``: one effect whose call waits at a gate: ``charge`` books 5 on the light ``light``
(no reconciler: an outcome that is not recorded would need a person). With
``COUNTING_HOLD_AT=charge`` the call first reaches the waypoint ``COUNTING_GATE/charge.reached``
(``tests.waypoints``), then waits for the gate (see ``tests.apps.counting``) before it reaches the
light.

``booking``: five steps, the third of which books into a ledger that applies every command it
receives (with a reconciler that looks the booking up by its key); each booking takes
``BOOKING_SECONDS`` (default 0), as a provider's call takes time, under a deadline of
``BOOKING_DEADLINE`` seconds (default 30): a call in flight when another worker takes the run
over is waited for, not sent again (docs/recovery.md, deadlines)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure import Context, Reconciled, Workflow, done, goto, step
from perdure.core.workflow import Outcome
from perdure.demos.light import SmartLight
from tests.apps.counting import hold
from tests.waypoints import reach


@dataclass
class Charge:
    light: str = "light.db"


@step
def charge(ctx: Context, s: Charge) -> Outcome:
    def execute(request: Any, key: str) -> Any:
        if os.environ.get("COUNTING_HOLD_AT") == "charge":
            reach(Path(os.environ["COUNTING_GATE"], "charge.reached"))
            hold("charge")
        return SmartLight(s.light).adjust(request["delta"], key)

    out = ctx.effect(
        "charge", target="light", operation="adjust", request={"delta": 5}, execute=execute
    )
    return done({"brightness": out["brightness"]})


charging = Workflow("charging", state=Charge, steps=[charge])


@dataclass
class Booking:
    ledger: str = "ledger.db"


def _ledger(s: Booking) -> SmartLight:
    return SmartLight(s.ledger, initial=50)


@step(next=["hold"])
def quote(ctx: Context, s: Booking) -> Outcome:
    return goto("hold")


@step(next=["book"], name="hold")
def hold_seat(ctx: Context, s: Booking) -> Outcome:
    return goto("book")


@step(next=["confirm"])
def book(ctx: Context, s: Booking) -> Outcome:
    """Books into a ledger that applies every command it receives; the reconciler looks the
    booking up by its key."""
    ledger = _ledger(s)

    def reconcile(request: Any, key: str) -> Reconciled:
        found = ledger.lookup(key)
        return Reconciled.not_found() if found is None else Reconciled.confirmed(found)

    def execute(request: Any, key: str, timeout: float | None = None) -> Any:
        time.sleep(float(os.environ.get("BOOKING_SECONDS", "0")))  # a provider that takes time
        return ledger.adjust(request["delta"], key)

    ctx.effect(
        "book",
        target="ledger",
        operation="book",
        request={"delta": 0},
        execute=execute,
        reconcile=reconcile,
        deadline=float(os.environ.get("BOOKING_DEADLINE", "30")),
    )
    return goto("confirm")


@step(next=["receipt"])
def confirm(ctx: Context, s: Booking) -> Outcome:
    return goto("receipt")


@step
def receipt(ctx: Context, s: Booking) -> Outcome:
    return done({"booked": True})


booking = Workflow("booking", state=Booking, steps=[quote, hold_seat, book, confirm, receipt])
