"""Release 2: state schema 2 (``first``/``last``); step ``finish`` renamed ``complete``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome, wait_for_signal


@dataclass
class Profile:
    first: str = ""
    last: str = ""


@step(next=["complete"])
def collect(ctx: Context, s: Profile) -> Outcome:
    return wait_for_signal("go", next="complete")


@step
def complete(ctx: Context, s: Profile) -> Outcome:
    return done({"v2": [s.first, s.last]})


profile = Workflow(
    "profile",
    version=2,
    state_schema=2,
    state=Profile,
    steps=[collect, complete],
    renamed={"finish": "complete"},
)


@profile.migration(from_schema=1)
def split_name(data: dict[str, Any]) -> dict[str, Any]:
    first, _, last = data.pop("name", "").partition(" ")
    return {**data, "first": first, "last": last}
