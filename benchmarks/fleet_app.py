"""The workflow the fleet benchmark's workers serve (``perdure worker --app fleet_app``): a
linear run of ``FLEET_STEPS`` no-op steps (default 20). ``step_overhead.py`` times the same
shape."""

from __future__ import annotations

import os
from dataclasses import dataclass

from perdure import Context, Workflow, done, goto
from perdure.core.workflow import Outcome, StepDef


@dataclass
class Counter:
    n: int = 0


def linear(steps: int, name: str = "fleet") -> Workflow[Counter]:
    """``steps`` no-op steps in a row; each only moves to the next."""

    def make(i: int) -> StepDef:
        def fn(ctx: Context, state: Counter) -> Outcome:
            return goto(f"s{i + 1}") if i < steps - 1 else done()

        return StepDef(f"s{i}", fn, frozenset({f"s{i + 1}"}) if i < steps - 1 else frozenset())

    return Workflow(name, state=Counter, steps=[make(i) for i in range(steps)])


fleet = linear(int(os.environ.get("FLEET_STEPS", "20")))
