"""The brightness demo: "lower the brightness by another 10%" on a light that does not
deduplicate, with a crash at any point and a resume that never applies the command twice.

``plan`` has a (simulated) model decide to call the light; ``dim`` makes the change through the
effect protocol, with the light's ``lookup`` as reconciler; ``reply`` reports. Start at 80: after a
crash anywhere and a resume the light is at 70 and exactly one command was applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perdure.core.effects import EffectResult, Reconciled
from perdure.core.model import ToolCall
from perdure.core.workflow import Done, Next, Workflow, done, goto, step
from perdure.demos.light import SmartLight
from perdure.runtime.step.context import Context

QUESTION = "Lower the living-room brightness by another 10%."
CALL_ID = "call-brightness-1"


@dataclass
class BrightnessState:
    """The light's database file (the external system) and the change asked for."""

    light: str = ".perdure/light.db"
    delta: int = -10


def say(line: str) -> None:
    """Print a narration line at once."""
    print(line, flush=True)


@step(next=["dim"])
def plan(ctx: Context, state: BrightnessState) -> Next:
    """The model decides to call the light with the requested change."""
    say("ENTER plan")
    call = ToolCall(CALL_ID, "adjust_brightness", {"room": "living room", "delta": state.delta})
    ctx.add_message("assistant", "", tool_calls=[call])
    return goto("dim")


@step(next=["reply"])
def dim(ctx: Context, state: BrightnessState) -> Next:
    """Change the brightness once, whatever crashes around the call."""
    say("ENTER dim")
    light = SmartLight(state.light)

    def execute(request: dict[str, Any], key: str) -> EffectResult:
        say("CALL light.adjust")
        out = light.adjust(request["delta"], op_id=key)
        return EffectResult(out, receipt=f"command-{out['command']}")

    def reconcile(request: dict[str, Any], key: str) -> Reconciled:
        found = light.lookup(key)
        if found is None:
            return Reconciled.not_found()
        return Reconciled.confirmed(found, receipt=f"command-{found['command']}")

    out = ctx.effect(
        "adjust",
        target="smart-light",
        operation="adjust_brightness",
        request={"room": "living room", "delta": state.delta},
        execute=execute,
        reconcile=reconcile,
    )
    ctx.add_message("tool", f"brightness is now {out['brightness']}%", tool_call_id=CALL_ID)
    return goto("reply")


@step
def reply(ctx: Context, state: BrightnessState) -> Done:
    """Tell the user the new level, from the recorded tool result."""
    say("ENTER reply")
    result = next(m.content for m in reversed(ctx.messages) if m.role == "tool")
    text = f"Done: {result}."
    ctx.add_message("assistant", text)
    return done({"reply": text})


brightness = Workflow("brightness", version=1, state=BrightnessState, steps=[plan, dim, reply])
