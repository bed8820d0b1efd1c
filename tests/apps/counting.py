"""A ten-step workflow for crash tests.

Each step appends ``ENTER sN RUN_ID`` to the file named by ``COUNTING_LOG`` before doing
anything, so a test can count how many times each step was entered across processes.
``COUNTING_SLEEP_AT=sN`` makes step N sleep ``COUNTING_SLEEP`` seconds after logging
(a window to SIGKILL, SIGSTOP or SIGTERM); with ``COUNTING_GATE=FOLDER`` the step goes on as
soon as the file ``FOLDER/sN`` exists, so a test holds the step exactly as long as it needs to.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from perdure import Context, Workflow, done, goto
from perdure.core.workflow import Outcome, StepDef

STEPS = 10


@dataclass
class Tally:
    total: int = 0
    seen: list[str] = field(default_factory=list)


def log(line: str) -> None:
    path = os.environ.get("COUNTING_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def hold(seconds: float, gate: str | None) -> None:
    """Sleep ``seconds``, or less when the file ``gate`` appears."""
    if gate is None:
        time.sleep(seconds)
        return
    deadline = time.monotonic() + seconds
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


def make_step(i: int) -> StepDef:
    name = f"s{i}"

    def run(ctx: Context, state: Tally) -> Outcome:
        log(f"ENTER {name} {ctx.run_id}")
        if os.environ.get("COUNTING_SLEEP_AT") == name:
            gate = os.environ.get("COUNTING_GATE")
            hold(float(os.environ.get("COUNTING_SLEEP", "30")), gate and os.path.join(gate, name))
        state.total += i
        state.seen.append(name)
        if i < STEPS:
            return goto(f"s{i + 1}")
        return done({"total": state.total})

    return StepDef(name, run, frozenset({f"s{i + 1}"}) if i < STEPS else frozenset())


counting = Workflow("counting", state=Tally, steps=[make_step(i) for i in range(1, STEPS + 1)])
