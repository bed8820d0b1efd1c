"""Release 3: state schema 3 (adds ``email``); a retired model with a replacement, another
retired without one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome, wait_for_signal


@dataclass
class Profile:
    first: str = ""
    last: str = ""
    email: str = ""


@step(next=["complete"])
def collect(ctx: Context, s: Profile) -> Outcome:
    return wait_for_signal("go", next="complete")


@step
def complete(ctx: Context, s: Profile) -> Outcome:
    return done({"v3": [s.first, s.last, s.email], "model": ctx.release.model})


profile = Workflow(
    "profile",
    version=3,
    state_schema=3,
    state=Profile,
    steps=[collect, complete],
    renamed={"finish": "complete"},
    retired={"model": {"old-model": "new-model", "dead-model": None}},
)


@profile.migration(from_schema=1)
def split_name(data: dict[str, Any]) -> dict[str, Any]:
    first, _, last = data.pop("name", "").partition(" ")
    return {**data, "first": first, "last": last}


@profile.migration(from_schema=2)
def add_email(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "email": f"{data['first'].lower()}@example.com"}
