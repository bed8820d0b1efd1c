"""A small agent for the effect drills: a scripted model and a side-effecting tool, in a loop.

``helpdesk``: ``think`` asks the model (``model.1``), which first asks for the tool
``send_email``; ``act`` runs that tool call through ``run_tools`` (an effect named
``tool.call_1``); ``think`` runs again and the model's second reply ends the run. So the run
makes three effects: ``think#1/model.1``, ``act/tool.call_1`` and ``think#3/model.1`` — the same
effect name twice, in two occurrences of one step.

The outbox (the SQLite file ``outbox`` of the state, in the working folder) sends every message
it gets, without deduplication, and can be asked what it sent under a key: the tool passes its
idempotency key, its reconciler looks it up. The run's result counts the messages sent, so a
duplicate shows in the business result too.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from perdure import Context, Message, ToolRegistry, Workflow, done, goto, run_tools, step
from perdure.core.chat import ModelRequest
from perdure.core.effects import Reconciled
from perdure.core.model import ToolCall
from perdure.core.workflow import Outcome
from perdure.providers.scripted import Scripted, ScriptedModel


@dataclass
class Ticket:
    outbox: str = "outbox.db"
    to: str = "ada@example.com"


def script(request: ModelRequest) -> Scripted:
    """Ask for the email first; once the tool answered, end with a word."""
    if not any(m.role == "tool" for m in request.messages):
        email = '{"to": "ada@example.com", "body": "your refund is on its way"}'
        return Scripted("", (ToolCall("call_1", "send_email", email),))
    return Scripted("Sent: Ada knows her refund is on its way.")


model = ScriptedModel("scripted-helpdesk", script)
tools = ToolRegistry()
OUTBOX = {"path": "outbox.db"}


def _outbox() -> sqlite3.Connection:
    conn = sqlite3.connect(OUTBOX["path"], isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS sent (key TEXT, recipient TEXT, body TEXT)")
    return conn


def sent() -> int:
    """How many messages the outbox sent."""
    with _outbox() as conn:
        return int(conn.execute("SELECT count(*) FROM sent").fetchone()[0])


def find_sent(request: Any, key: str) -> Reconciled:
    with _outbox() as conn:
        row = conn.execute("SELECT recipient FROM sent WHERE key = ?", (key,)).fetchone()
    return Reconciled.not_found() if row is None else Reconciled.confirmed({"sent_to": row[0]})


@tools.tool(side_effect=True, reconcile=find_sent)
def send_email(to: str, body: str, idempotency_key: str) -> dict[str, str]:
    """Send an email."""
    with _outbox() as conn:
        conn.execute("INSERT INTO sent VALUES (?, ?, ?)", (idempotency_key, to, body))
    return {"sent_to": to}


@step(next=["act"])
def think(ctx: Context, s: Ticket) -> Outcome:
    OUTBOX["path"] = s.outbox
    asked = Message("user", f"tell {s.to} that the refund is on its way")
    reply = ctx.model_call(model, [asked, *ctx.context()], tools=tools)
    ctx.add_message("assistant", reply.text, tool_calls=reply.tool_calls)
    if reply.tool_calls:
        return goto("act")
    return done({"reply": reply.text, "sent": sent()})


@step(next=["think"])
def act(ctx: Context, s: Ticket) -> Outcome:
    OUTBOX["path"] = s.outbox
    (call,) = [m for m in ctx.context() if m.role == "assistant"][-1:]
    run_tools(ctx, call, tools)
    return goto("think")


helpdesk = Workflow("helpdesk", state=Ticket, steps=[think, act])
