"""The agent demo: a research-and-email agent on a scripted local model (no network, no keys).

``plan`` asks the model, which calls the read-only ``search`` tool; ``write`` streams the answer
to the terminal and the model calls ``send_email`` (a side effect, on an outbox that keeps
every email it is given, duplicates included); ``finish`` asks the model for a last word. Each
model call is a recorded effect: a process killed in the middle of the stream, or after the
email went out but before the step's boundary, resumes without paying again for the calls that
completed and without sending the email twice. The state keeps what the replays saved.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure.core.chat import MODEL_TARGET, ModelRequest, Pricing
from perdure.core.effects import EffectRecord
from perdure.core.model import ToolCall
from perdure.core.tools import ToolRegistry
from perdure.core.workflow import Done, Next, Workflow, done, goto, step
from perdure.providers.scripted import Scripted, ScriptedModel
from perdure.runtime.crashpoints import EXIT_CODE
from perdure.runtime.step.context import Context
from perdure.runtime.step.model_calls import ModelReply
from perdure.runtime.step.tools import run_tools

QUESTION = "What is durable execution? Email a short summary to ana@example.com."
MODEL = "scripted-research-1"
PRICING = Pricing(input_per_million=3.0, output_per_million=15.0)
ANSWER = (
    "Durable execution keeps a program's progress in a database, step by step, so that a "
    "crash, a redeploy or a lost machine does not lose what was done. After a restart the "
    "program continues from the last confirmed step. Side effects such as payments or emails "
    "are recorded before and after they happen, so a retry never repeats them, and model "
    "calls are recorded with their replies, so they are never paid for twice."
)
FACTS = [
    "Durable execution persists progress at each step boundary.",
    "Recorded side effects are never repeated after a crash.",
]

crash_mid_stream = False
"""Set by ``perdure demo agent start --crash-mid-stream``: the process dies in the stream."""


@dataclass
class AgentState:
    """Where the outbox file is, and what replaying recorded model calls saved."""

    outbox: str = ".perdure/outbox.jsonl"
    saved_tokens: int = 0
    saved_cost: float = 0.0


def paid(effects: list[EffectRecord]) -> dict[str, float]:
    """What the model calls of a run cost, from their records (lost attempts included)."""
    tokens = cost = lost = 0.0
    for e in effects:
        reply = e.result
        if e.target != MODEL_TARGET or not isinstance(reply, dict):
            continue
        usage = reply.get("usage")
        used = sum(_num(v) for v in usage.values()) if isinstance(usage, dict) else 0.0
        tokens += used + _num(reply.get("lost_tokens"))
        cost += _num(reply.get("cost")) + _num(reply.get("lost_cost"))
        lost += _num(reply.get("lost_tokens"))
    return {"tokens": int(tokens), "cost": round(cost, 10), "lost_tokens": int(lost)}


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def say(line: str = "", *, end: str = "\n") -> None:
    """Print narration at once."""
    print(line, end=end, flush=True)


def script(request: ModelRequest) -> Scripted:
    """The model's part: search, then write and email, then a last word."""
    answered = [m for m in request.messages if m.role == "tool"]
    if not answered:
        return Scripted(
            "", (ToolCall("call-search-1", "search", '{"query": "durable execution"}'),)
        )
    if len(answered) == 1:
        email = {"to": "ana@example.com", "subject": "Durable execution", "body": ANSWER}
        return Scripted(ANSWER, (ToolCall("call-email-1", "send_email", json.dumps(email)),))
    return Scripted("Done: the summary is in Ana's inbox.")


def _on_delta(n: int) -> None:
    if crash_mid_stream and n == 12:
        say("\nCRASH mid-stream, exit=75 (no cleanup)")
        os._exit(EXIT_CODE)


model = ScriptedModel(MODEL, script, pricing=PRICING, on_delta=_on_delta)


class Outbox:
    """The mail provider: appends every email it is handed (it does not deduplicate)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def send(self, to: str, subject: str, body: str) -> dict[str, Any]:
        """Deliver one email; return its provider id."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"to": to, "subject": subject, "body": body}) + "\n")
        return {"delivered": True, "id": f"mail-{len(self.sent())}"}

    def sent(self) -> list[dict[str, Any]]:
        """Every email delivered so far."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]


def tools_for(state: AgentState) -> ToolRegistry:
    """The agent's tools: a read-only search and a side-effecting email."""
    tools = ToolRegistry()

    @tools.tool
    def search(query: str) -> list[str]:
        """Search the notes for a topic."""
        return [f for f in FACTS if any(w in f.lower() for w in query.lower().split())]

    @tools.tool(side_effect=True)
    def send_email(to: str, subject: str, body: str) -> dict[str, Any]:
        """Send an email."""
        say(f"SEND email to {to}: {subject!r}")
        return Outbox(state.outbox).send(to, subject, body)

    return tools


def account(state: AgentState, reply: ModelReply) -> None:
    """Keep what a call cost, or saved when it was replayed from its record."""
    if reply.replayed:
        state.saved_tokens += reply.usage.total
        state.saved_cost = round(state.saved_cost + reply.cost, 10)
        say(f"  (model call {reply.key.rsplit('/', 2)[-2]} replayed from its record: not paid)")


@step(next=["write"])
def plan(ctx: Context, state: AgentState) -> Next:
    """The model decides to search; the search runs."""
    say("ENTER plan")
    reply = ctx.model_call(model, ctx.context(), tools=tools_for(state))
    account(state, reply)
    ctx.add_message("assistant", reply.text, tool_calls=reply.tool_calls)
    run_tools(ctx, reply.message, tools_for(state))
    return goto("write")


@step(next=["finish"])
def write(ctx: Context, state: AgentState) -> Next:
    """The model streams its answer and asks to email it; the email goes out once."""
    say("ENTER write")
    say("assistant: ", end="")
    stream = ctx.model_call(model, ctx.context(), tools=tools_for(state), stream=True)
    for delta in stream:
        say(delta.text, end="")
    say()
    reply = stream.reply
    account(state, reply)
    ctx.add_message("assistant", reply.text, tool_calls=reply.tool_calls)
    run_tools(ctx, reply.message, tools_for(state))
    return goto("finish")


@step
def finish(ctx: Context, state: AgentState) -> Done:
    """A last word from the model."""
    say("ENTER finish")
    reply = ctx.model_call(model, ctx.context(), tools=tools_for(state))
    account(state, reply)
    ctx.add_message("assistant", reply.text)
    return done({"saved_tokens": state.saved_tokens, "saved_cost": state.saved_cost})


research = Workflow("research", state=AgentState, steps=[plan, write, finish], model=MODEL)
