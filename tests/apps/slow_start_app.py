"""An app that is slow to import, for the worker's start-up: importing it reaches the waypoint
``STARTING_GATE.reached`` (``tests.waypoints``) and then waits for a shared lock on the file
``STARTING_GATE``, which the test holds exclusively (so the test knows the worker is still importing
its app, and can signal it there). Without the variable it imports at once."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome
from tests.waypoints import reach


@dataclass
class Nothing:
    pass


@step
def only(ctx: Context, s: Nothing) -> Outcome:
    return done("ok")


plain = Workflow("plain", state=Nothing, steps=[only])

_gate = os.environ.get("STARTING_GATE")
if _gate:
    reach(_gate + ".reached")
    with open(_gate, "a") as held:  # the test holds it exclusively until it lets go
        fcntl.flock(held, fcntl.LOCK_SH)
