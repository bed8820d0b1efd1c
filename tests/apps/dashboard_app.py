"""Runs for the dashboard's views, each step taking a known time on the test's clock.

``research``: ``fetch`` takes 2 s; ``think`` fails once after 1 s (a transient error retried
3 s later), then takes 4 s and asks the scripted model (priced), which first asks for the tool
``search``; ``act`` runs it (1 s); ``think`` runs again (4 s) and the model's second reply
ends the loop; ``ask`` waits for an approver; ``finish`` ends the run. ``broken``: ``explode``
raises a ``ValueError``, so the run needs a person, with the traceback as evidence.

The test sets :data:`CLOCK` to the runtime's :class:`FakeClock` and :data:`FAILS` to how many
times ``think`` fails before it succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass

from perdure import (
    Context,
    FakeClock,
    Message,
    Pricing,
    RetryPolicy,
    ToolRegistry,
    TransientError,
    Workflow,
    done,
    goto,
    run_tools,
    step,
    wait_for_approval,
)
from perdure.core.chat import ModelRequest
from perdure.core.model import ToolCall
from perdure.core.workflow import Outcome
from perdure.providers.scripted import Scripted, ScriptedModel

CLOCK = FakeClock()
"""The runtime's clock: each step advances it by the time it "takes"."""
FAILS = {"think": 1}
"""How many more times ``think`` fails before it succeeds."""
ARGUMENTS = '{"query": "durable \\"agents\\"", "limit": 3}'


def script(request: ModelRequest) -> Scripted:
    """Ask for a search first; once the tool answered, end with a summary."""
    if not any(m.role == "tool" for m in request.messages):
        return Scripted("", (ToolCall("call_1", "search", ARGUMENTS),))
    return Scripted("Three papers on durable agents.")


model = ScriptedModel("scripted-research", script, pricing=Pricing(3.0, 15.0))
tools = ToolRegistry()


@tools.tool()
def search(query: str, limit: int) -> dict[str, object]:
    """Search the papers."""
    return {"query": query, "found": limit}


@dataclass
class Topic:
    topic: str = "durable agents"


@step(next=["think"])
def fetch(ctx: Context, s: Topic) -> Outcome:
    CLOCK.advance(2)
    return goto("think")


@step(next=["act", "ask"], retry=RetryPolicy(max_attempts=3, initial_delay=3, jitter=False))
def think(ctx: Context, s: Topic) -> Outcome:
    if FAILS["think"] > 0:
        FAILS["think"] -= 1
        CLOCK.advance(1)
        raise TransientError("the model is overloaded")
    CLOCK.advance(4)
    reply = ctx.model_call(model, [Message("user", s.topic), *ctx.context()], tools=tools)
    ctx.add_message("assistant", reply.text, tool_calls=reply.tool_calls)
    return goto("act" if reply.tool_calls else "ask")


@step(next=["think"])
def act(ctx: Context, s: Topic) -> Outcome:
    CLOCK.advance(1)
    (call,) = [m for m in ctx.context() if m.role == "assistant"][-1:]
    run_tools(ctx, call, tools)
    return goto("think")


@step(next=["finish"])
def ask(ctx: Context, s: Topic) -> Outcome:
    return wait_for_approval(
        "approver", {"topic": s.topic}, on_approve="finish", on_reject="finish"
    )


@step
def finish(ctx: Context, s: Topic) -> Outcome:
    return done({"topic": s.topic})


research = Workflow("research", state=Topic, steps=[fetch, think, act, ask, finish])


@step
def explode(ctx: Context, s: Topic) -> Outcome:
    raise ValueError(f"cannot parse {s.topic!r}")


broken = Workflow("broken", state=Topic, steps=[explode])
