"""A side-effecting tool that receives its idempotency key, against an outbox that sends every
message it gets (no deduplication) and can be asked what it sent under a key.

``mail``: one step runs a round of one tool call, ``send_email`` (``side_effect=True``), whose
reconciler finds the message by the key the tool passed to the outbox. The outbox is the SQLite
file ``outbox`` of the state.
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from typing import Any

from perdure import Context, Message, ToolRegistry, Workflow, done, run_tools, step, tool_call
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome


@dataclass
class Letter:
    outbox: str = "outbox.db"
    to: str = "ada@example.com"
    body: str = "your refund is on its way"


def _outbox(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS sent (id TEXT, key TEXT, recipient TEXT, body TEXT)")
    return conn


tools = ToolRegistry()
OUTBOX = {"path": "outbox.db"}


def find_sent(request: Any, key: str) -> Reconciled:
    with _outbox(OUTBOX["path"]) as conn:
        row = conn.execute("SELECT id FROM sent WHERE key = ?", (key,)).fetchone()
    return Reconciled.not_found() if row is None else Reconciled.confirmed({"message_id": row[0]})


@tools.tool(side_effect=True, reconcile=find_sent)
def send_email(to: str, body: str, idempotency_key: str) -> dict[str, str]:
    """Send an email."""
    message_id = f"m-{uuid.uuid4().hex[:12]}"
    with _outbox(OUTBOX["path"]) as conn:
        conn.execute(
            "INSERT INTO sent VALUES (?, ?, ?, ?)", (message_id, idempotency_key, to, body)
        )
    return {"message_id": message_id}


@step
def write(ctx: Context, s: Letter) -> Outcome:
    OUTBOX["path"] = s.outbox
    call = tool_call("call_1", "send_email", {"to": s.to, "body": s.body})
    (sent,) = run_tools(ctx, Message("assistant", "", (call,)), tools)
    return done({"receipt": sent.content})


mail = Workflow("mail", state=Letter, steps=[write])
