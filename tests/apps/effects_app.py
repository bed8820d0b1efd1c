"""Workflows with effects against external systems that do not deduplicate, for crash tests.

``two_effects``: ``dim`` lowers light A (with a reconciler), ``notify`` bumps light B (no
reconciler), ``finish`` ends. ``saga``: ``book`` reserves on light A with a compensator, then
``charge`` fails permanently, so the run fails and the reservation is compensated.
``flaky``: its effect fails transiently the first time (marker file) and is retried after a
durable wait.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure import Context, Workflow, done, goto, step
from perdure.core.effects import PermanentError, Reconciled, TransientError
from perdure.core.retry import RetryPolicy
from perdure.core.workflow import Outcome
from perdure.demos.light import SmartLight


@dataclass
class Lights:
    a: str = "a.db"
    b: str = "b.db"


def lookup(light: SmartLight):  # type: ignore[no-untyped-def]
    def reconcile(request: Any, key: str) -> Reconciled:
        found = light.lookup(key)
        return Reconciled.not_found() if found is None else Reconciled.confirmed(found)

    return reconcile


@step(next=["notify"])
def dim(ctx: Context, s: Lights) -> Outcome:
    a = SmartLight(s.a)
    ctx.effect(
        "dim",
        target="light-a",
        operation="adjust",
        request={"delta": -10},
        execute=lambda req, key: a.adjust(req["delta"], key),
        reconcile=lookup(a),
    )
    return goto("notify")


@step(next=["finish"])
def notify(ctx: Context, s: Lights) -> Outcome:
    b = SmartLight(s.b, initial=0)
    ctx.effect(
        "notify",
        target="light-b",
        operation="adjust",
        request={"delta": 1},
        execute=lambda req, key: b.adjust(req["delta"], key),
    )
    return goto("finish")


@step
def finish(ctx: Context, s: Lights) -> Outcome:
    return done({"a": SmartLight(s.a).status(), "b": SmartLight(s.b, initial=0).status()})


two_effects = Workflow("two_effects", state=Lights, steps=[dim, notify, finish])


def release(request: Any, key: str, result: Any) -> Any:
    return SmartLight(request["light"]).adjust(-request["delta"], key)


@step(next=["charge"])
def book(ctx: Context, s: Lights) -> Outcome:
    a = SmartLight(s.a)
    ctx.effect(
        "reserve",
        target="light-a",
        operation="adjust",
        request={"light": s.a, "delta": 5},
        execute=lambda req, key: a.adjust(req["delta"], key),
        compensate=release,
    )
    return goto("charge")


@step
def charge(ctx: Context, s: Lights) -> Outcome:
    def refuse(req: Any, key: str) -> Any:
        raise PermanentError("policy_rejected", "card declined")

    ctx.effect("charge", target="payments", operation="charge", request={}, execute=refuse)
    return done()


saga = Workflow("saga", state=Lights, steps=[book, charge], compensators=[release])


@step
def flaky_step(ctx: Context, s: Lights) -> Outcome:
    a = SmartLight(s.a)
    marker = Path(s.a).with_suffix(".failed-once")

    def execute(req: Any, key: str) -> Any:
        if not marker.exists():
            marker.write_text("1")
            raise TransientError(
                "rate_limited", retry_after=float(os.environ.get("RETRY_AFTER", "0.5"))
            )
        return a.adjust(req["delta"], key)

    out = ctx.effect(
        "dim",
        target="light-a",
        operation="adjust",
        request={"delta": -10},
        execute=execute,
        retry=RetryPolicy(max_attempts=3, jitter=False),
    )
    return done(out)


flaky = Workflow("flaky", state=Lights, steps=[flaky_step])
