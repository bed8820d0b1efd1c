"""A workflow whose state holds a list of large documents that each step appends to, for the
crash tests of field-log compaction.

``read`` appends one document of about 300 KB to ``docs`` and goes on until ``until`` steps
ran. From step 1 the list is a field log (it is over the default ``append_from``); with
documents this large its tails reach :data:`~perdure.core.logs.COMPACT_BYTES` after three of
them, so steps 5, 9, 13, … compact it. With ``LOG_APP_WAYPOINT`` set, the step whose number is
``LOG_APP_KILL_AT`` reaches that waypoint first (the test then kills the process while the
step's boundary, which compacts, is being written), and the step after it waits on the named
pipe ``LOG_APP_HOLD``, which nobody writes: the kill lands before that step is done.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from perdure import Context, Workflow, done, goto, step
from perdure.core.workflow import Outcome
from tests.waypoints import reach

DOC = 300_000
"""Characters of text in each document."""


def document(n: int) -> dict[str, object]:
    """The ``n``-th document (0-based): what a step appends."""
    return {"n": n, "text": chr(ord("a") + n % 26) * DOC}


@dataclass
class Reading:
    docs: list[dict[str, object]] = field(default_factory=list)
    until: int = 12


@step(next=["read"])
def read(ctx: Context, state: Reading) -> Outcome:
    n = len(state.docs)
    waypoint = os.environ.get("LOG_APP_WAYPOINT")
    kill_at = int(os.environ.get("LOG_APP_KILL_AT", "0"))
    if waypoint and n + 1 == kill_at:
        reach(waypoint)
    if waypoint and n + 1 == kill_at + 1:
        with open(os.environ["LOG_APP_HOLD"]) as hold:  # blocks: no writer ever comes
            hold.read()
    state.docs.append(document(n))
    return goto("read") if len(state.docs) < state.until else done({"docs": len(state.docs)})


library = Workflow("library", state=Reading, steps=[read])
