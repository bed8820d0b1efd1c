"""A two-step workflow for memory crash tests.

``note`` logs ``ENTER note RUN_ID`` to the file named by ``COUNTING_LOG``, reads the visits
counted in memory under ``("user", "u1")``, writes one more and keeps the number in its state;
``finish`` ends the run with what the state and memory say. A write committed twice would count
two visits.
"""

from __future__ import annotations

from dataclasses import dataclass

from perdure import Context, Workflow, done, goto, step
from tests.apps.counting import log

USER = ("user", "u1")


@dataclass
class Visit:
    visits: int = 0


@step(next=["finish"])
def note(ctx: Context, state: Visit):  # type: ignore[no-untyped-def]
    log(f"ENTER note {ctx.run_id}")
    item = ctx.memory.get(USER, "visits")
    state.visits = (item.value if item is not None else 0) + 1
    ctx.memory.put(USER, "visits", state.visits)
    return goto("finish")


@step
def finish(ctx: Context, state: Visit):  # type: ignore[no-untyped-def]
    item = ctx.memory.get(USER, "visits")
    assert item is not None
    return done({"state": state.visits, "memory": item.value, "version": item.version})


remember = Workflow("remember", state=Visit, steps=[note, finish])
