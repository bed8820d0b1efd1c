"""A workflow whose first step kills its own process the first time it runs, for the tests of
``perdure worker --respawn``.

Step ``fragile`` logs ``ENTER fragile RUN_ID`` to the file named by ``COUNTING_LOG``; the first
time (no file named by ``RESPAWN_MARKER`` yet) it creates the marker and SIGKILLs its process,
as the kernel's OOM killer would; with ``COUNTING_GATE`` set it first reaches the waypoint
``RESPAWN_WAYPOINT`` and waits at the gate ``fragile`` (see ``tests.apps.counting``). Step
``finish`` logs too and ends the run.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from perdure import Context, Workflow, done, goto
from perdure.core.workflow import Outcome, StepDef
from tests.apps.counting import hold, log
from tests.waypoints import reach


@dataclass
class Plain:
    n: int = 0


def fragile(ctx: Context, state: Plain) -> Outcome:
    log(f"ENTER fragile {ctx.run_id}")
    marker = Path(os.environ["RESPAWN_MARKER"])
    if not marker.exists():
        if os.environ.get("COUNTING_GATE"):
            reach(os.environ["RESPAWN_WAYPOINT"])
            hold("fragile")
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    state.n += 1
    return goto("finish")


def finish(ctx: Context, state: Plain) -> Outcome:
    log(f"ENTER finish {ctx.run_id}")
    return done({"n": state.n})


respawn = Workflow(
    "respawn",
    state=Plain,
    steps=[
        StepDef("fragile", fragile, frozenset({"finish"})),
        StepDef("finish", finish, frozenset()),
    ],
)
