"""A booking against an external system that applies every call it gets (no deduplication),
for the tests of what a cancel does to an effect in flight.

``booking``: step ``book`` books 5 on light ``light`` (an effect; its reconciler and its
compensator are chosen by the state), then ``confirm`` waits for an approval. With
``BOOKING_DIE_BEFORE_APPLY`` set, ``execute`` ends the process before the light applies the
call (an attempt that never reached the provider). ``trip`` starts a ``booking`` as its child
and waits for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from perdure import Context, Workflow, done, goto, step, wait_for_approval, wait_for_children
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome
from perdure.demos.light import SmartLight
from perdure.runtime.crashpoints import EXIT_CODE


@dataclass
class Booking:
    light: str = "light.db"
    reconcile: bool = True
    compensate: bool = True


def unbook(request: Any, key: str, result: Any) -> Any:
    return SmartLight(request["light"]).adjust(-request["delta"], f"{key}/undo")


def find(request: Any, key: str) -> Reconciled:
    found = SmartLight(request["light"]).lookup(key)
    return Reconciled.not_found() if found is None else Reconciled.confirmed(found)


def apply(request: Any, key: str) -> Any:
    if os.environ.get("BOOKING_DIE_BEFORE_APPLY"):
        os._exit(EXIT_CODE)
    return SmartLight(request["light"]).adjust(request["delta"], key)


@step(next=["confirm"])
def book(ctx: Context, s: Booking) -> Outcome:
    ctx.effect(
        "book",
        target="light",
        operation="adjust",
        request={"light": s.light, "delta": 5},
        execute=apply,
        reconcile=find if s.reconcile else None,
        compensate=unbook if s.compensate else None,
    )
    return goto("confirm")


@step(next=["end"])
def confirm(ctx: Context, s: Booking) -> Outcome:
    return wait_for_approval("ops", {"light": s.light}, on_approve="end", on_reject="end")


@step
def end(ctx: Context, s: Booking) -> Outcome:
    return done()


booking = Workflow("booking", state=Booking, steps=[book, confirm, end], compensators=[unbook])


@dataclass
class Trip:
    light: str = "light.db"


@step(next=["after"])
def go(ctx: Context, s: Trip) -> Outcome:
    ctx.spawn(booking, {"light": s.light}, key="booking")
    return wait_for_children(on_done="after")


@step
def after(ctx: Context, s: Trip) -> Outcome:
    return done()


trip = Workflow("trip", state=Trip, steps=[go, after])
