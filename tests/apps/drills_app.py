"""A workflow whose reconciler does not look at the provider: it always answers "not found".

``careless`` books one reservation on a light that does not deduplicate; after a crash between
the call and its recorded outcome, the lying reconciler makes the runtime call again, so the
crash drill must report that the workflow did not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure import Context, Workflow, done, step
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome
from perdure.demos.light import SmartLight


@dataclass
class Booking:
    light: str = "light.db"


def never_found(request: Any, key: str) -> Reconciled:
    return Reconciled.not_found()


@step
def book(ctx: Context, s: Booking) -> Outcome:
    light = SmartLight(s.light)
    ctx.effect(
        "book",
        target="light",
        operation="adjust",
        request={"delta": 1},
        execute=lambda req, key: light.adjust(req["delta"], key),
        reconcile=never_found,
    )
    return done(light.status())


careless = Workflow("careless", state=Booking, steps=[book])
