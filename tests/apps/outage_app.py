"""One effect whose call waits at a gate, for the outage tests: ``charge`` books 5 on the light
``light`` (no reconciler: an outcome that is not recorded would need a person). With
``COUNTING_HOLD_AT=charge`` the call first reaches the waypoint ``COUNTING_GATE/charge.reached``
(``tests.waypoints``), then waits for the gate (see ``tests.apps.counting``) before it reaches the
light."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure import Context, Workflow, done, step
from perdure.core.workflow import Outcome
from perdure.demos.light import SmartLight
from tests.apps.counting import hold
from tests.waypoints import reach


@dataclass
class Charge:
    light: str = "light.db"


@step
def charge(ctx: Context, s: Charge) -> Outcome:
    def execute(request: Any, key: str) -> Any:
        if os.environ.get("COUNTING_HOLD_AT") == "charge":
            reach(Path(os.environ["COUNTING_GATE"], "charge.reached"))
            hold("charge")
        return SmartLight(s.light).adjust(request["delta"], key)

    out = ctx.effect(
        "charge", target="light", operation="adjust", request={"delta": 5}, execute=execute
    )
    return done({"brightness": out["brightness"]})


charging = Workflow("charging", state=Charge, steps=[charge])
