"""Release 1 of the ``profile`` workflow: state schema 1 (``name``)."""

from __future__ import annotations

from dataclasses import dataclass

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome, wait_for_signal


@dataclass
class Profile:
    name: str = ""


@step(next=["finish"])
def collect(ctx: Context, s: Profile) -> Outcome:
    return wait_for_signal("go", next="finish")


@step
def finish(ctx: Context, s: Profile) -> Outcome:
    return done({"v1": s.name})


profile = Workflow("profile", version=1, state_schema=1, state=Profile, steps=[collect, finish])
