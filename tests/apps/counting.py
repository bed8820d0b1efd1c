"""A ten-step workflow for crash tests.

Each step appends ``ENTER sN RUN_ID`` to the file named by ``COUNTING_LOG`` before doing
anything, so a test can count how many times each step was entered across processes.
``COUNTING_HOLD_AT=sN`` makes step N wait, after logging, at the gate ``COUNTING_GATE/sN``: a
lock file the test holds exclusively (see ``tests.conftest.Gates``) until it lets the step go, or
forever when it SIGKILLs, SIGSTOPs or SIGTERMs the process meanwhile. No wait depends on time.
"""

from __future__ import annotations

import fcntl
import os
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


def hold(name: str) -> None:
    """Wait until the test opens the gate of step ``name`` (a shared lock on its lock file)."""
    with open(os.path.join(os.environ["COUNTING_GATE"], name), "a") as gate:
        fcntl.flock(gate, fcntl.LOCK_SH)


def make_step(i: int) -> StepDef:
    name = f"s{i}"

    def run(ctx: Context, state: Tally) -> Outcome:
        log(f"ENTER {name} {ctx.run_id}")
        if os.environ.get("COUNTING_HOLD_AT") == name:
            hold(name)
        state.total += i
        state.seen.append(name)
        if i < STEPS:
            return goto(f"s{i + 1}")
        return done({"total": state.total})

    return StepDef(name, run, frozenset({f"s{i + 1}"}) if i < STEPS else frozenset())


counting = Workflow("counting", state=Tally, steps=[make_step(i) for i in range(1, STEPS + 1)])
