"""An app that is slow to import, for the worker's start-up: importing it creates
``STARTING_GATE.reached`` and then waits for a shared lock on the file ``STARTING_GATE``, which
the test holds exclusively (so the test knows the worker is still importing its app, and can
signal it there). Without the variable it imports at once."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome


@dataclass
class Nothing:
    pass


@step
def only(ctx: Context, s: Nothing) -> Outcome:
    return done("ok")


plain = Workflow("plain", state=Nothing, steps=[only])

_gate = os.environ.get("STARTING_GATE")
if _gate:
    Path(_gate + ".reached").touch()
    with open(_gate, "a") as held:  # the test holds it exclusively until it lets go
        fcntl.flock(held, fcntl.LOCK_SH)
