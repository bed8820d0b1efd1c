"""The temperature demo: a three-step agent that survives a crash before its reply.

The user asks for the living-room temperature. ``plan`` has a (simulated) model decide to call the
thermometer tool, ``tool`` reads it (simulated: 23.5°C), ``reply`` has the model answer from the
recorded reading. Each step's messages are committed with its boundary, so a process killed before
``reply`` leaves three messages and ``next_step = reply``; a new process enters only ``reply`` and
answers from the stored tool result. Nothing here touches a network.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from perdure.core.model import Message, ToolCall
from perdure.core.workflow import Done, Next, Workflow, done, goto, step
from perdure.runtime.crashpoints import EXIT_CODE
from perdure.runtime.step.context import Context

QUESTION = "What is the temperature in the living room?"
CALL_ID = "call-7"
READING = "23.5°C"

crash_before_reply = False
"""Set by ``perdure demo start --crash-before-reply``: ``reply`` exits the process at entry."""


@dataclass
class TemperatureState:
    """The demo's state: which room is asked about. The facts live in the thread's messages."""

    room: str = "living room"


def say(line: str) -> None:
    """Print a narration line at once (a crash right after must not swallow it)."""
    print(line, flush=True)


class FakeModel:
    """A deterministic stand-in for a chat model (OpenAI-compatible message shapes)."""

    def plan(self, messages: list[Message], room: str) -> ToolCall:
        """Decide to read the thermometer of ``room``."""
        return ToolCall(CALL_ID, "read_temperature", {"room": room})

    def reply(self, messages: list[Message]) -> str:
        """Answer from the tool result recorded for the last tool call."""
        calls = [c for m in messages for c in m.tool_calls]
        results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
        if not calls or calls[-1].id not in results:
            return "I could not read the thermometer."
        room = (calls[-1].arguments or {}).get("room", "room")
        return f"It is {results[calls[-1].id]} in the {room}."


model = FakeModel()


@step(next=["tool"])
def plan(ctx: Context, state: TemperatureState) -> Next:
    """The model decides to call the thermometer tool."""
    say("ENTER plan")
    call = model.plan(ctx.messages, state.room)
    ctx.add_message("assistant", "", tool_calls=[call])
    return goto("tool")


@step(next=["reply"])
def tool(ctx: Context, state: TemperatureState) -> Next:
    """Read the thermometer (simulated) and record the result under the call's id."""
    say("ENTER tool (simulated read)")
    call = next(c for m in reversed(ctx.messages) for c in m.tool_calls)
    ctx.add_message("tool", READING, tool_call_id=call.id)
    return goto("reply")


@step
def reply(ctx: Context, state: TemperatureState) -> Done:
    """The model answers from the recorded reading."""
    say("ENTER reply")
    if crash_before_reply:
        say(f"CRASH before reply, exit={EXIT_CODE} (no cleanup)")
        sys.stderr.flush()
        os._exit(EXIT_CODE)
    text = model.reply(ctx.messages)
    ctx.add_message("assistant", text)
    return done({"reply": text})


temperature = Workflow("temperature", version=1, state=TemperatureState, steps=[plan, tool, reply])
