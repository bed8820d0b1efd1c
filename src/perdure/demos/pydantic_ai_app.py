"""The pydantic-ai demo's agent (``perdure demo pydantic-ai``): a ``pydantic_ai.Agent`` on a
scripted local model (pydantic-ai's ``FunctionModel``: no network, no keys; it tallies every
request it answers) with one tool, ``send_email``, that needs a person's approval and sends
through the demo's mailbox with its idempotency key.

With perdure, the agent runs in one step with ``PerdureDurability``; pydantic-ai's approval
request becomes ``wait_for_approval`` (:class:`~perdure.pydantic_ai.PendingApproval`). On its
own (:func:`alone`), it runs as pydantic-ai's docs show: the run's messages are kept in a file
between the request for approval and the approved continuation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from perdure.core.workflow import Outcome, Workflow, done, step, wait_for_approval
from perdure.demos.framework_demo import (
    ALONE_MESSAGES,
    ALONE_OUTBOX,
    ALONE_REQUESTS,
    OUTBOX,
    REQUESTS,
)
from perdure.demos.mail_agent import (
    CALL,
    PRICING,
    QUESTION,
    ROLE,
    MailState,
    find_email,
    say,
)
from perdure.demos.mailbox import Mailbox, tally
from perdure.pydantic_ai import PendingApproval, PerdureDurability
from perdure.runtime.crashpoints import EXIT_CODE
from perdure.runtime.step.context import Context

FRAMEWORK = "pydantic-ai"
TOOL_EFFECT = f"pydantic_ai.tool.{CALL}.approved"


def build(requests: Path, outbox: Path, *, alone: bool = False) -> Agent[None, Any]:
    """The agent: a scripted model (tallied in ``requests``), and ``send_email`` on the
    mailbox at ``outbox`` (needs approval). With perdure the tool takes the effect's
    idempotency key; ``alone``, it has none to give the provider (and dies right after sending
    when the module's ``crash_after_tool`` is set)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        number = tally(requests)
        say(f"MODEL request {number}")
        answered = any(
            isinstance(part, ToolReturnPart) for m in messages for part in getattr(m, "parts", ())
        )
        usage = RequestUsage(input_tokens=120, output_tokens=30)
        if answered:
            return ModelResponse([TextPart("Sent: the summary is in Ana's inbox.")], usage=usage)
        email = {"to": "ana@example.com", "body": "Durable execution keeps progress safe."}
        return ModelResponse([ToolCallPart("send_email", json.dumps(email), CALL)], usage=usage)

    agent: Agent[None, Any] = Agent(
        FunctionModel(model, model_name="scripted-mail-1"),
        output_type=[str, DeferredToolRequests],
        instructions="You send the emails you are asked to send.",
    )

    def send(to: str, body: str, key: str) -> str:
        sent = Mailbox(outbox).send(to, body, key)
        say(f"SEND email to {to} ({sent})")
        return sent

    if not alone:

        @agent.tool_plain(requires_approval=True)
        def send_email(to: str, body: str, idempotency_key: str) -> str:
            """Send an email."""
            return send(to, body, idempotency_key)

        return agent

    @agent.tool_plain(requires_approval=True, name="send_email")
    def send_alone(to: str, body: str) -> str:
        """Send an email."""
        sent = send(to, body, "-")
        if crash_after_tool:
            say(f"CRASH after the tool, exit={EXIT_CODE} (no cleanup)")
            os._exit(EXIT_CODE)
        return sent

    return agent


crash_after_tool = False
"""Set by ``alone continue --crash-after-tool``."""


@step(next=["agent"])
async def agent(ctx: Context, s: MailState) -> Outcome:
    """Run the agent; wait for a person when it asks for approval."""
    say("ENTER agent")
    folder = Path(s.folder)
    bot = build(folder / REQUESTS, folder / OUTBOX)

    durable = PerdureDurability(
        ctx,
        side_effects={"send_email"},
        reconcile={"send_email": find_email(folder / OUTBOX)},
        pricing=PRICING,
    )
    if s.pending is None:
        result = await bot.run(QUESTION, capabilities=[durable])
    else:
        pending = PendingApproval.from_json(s.pending)
        result = await bot.run(capabilities=[durable], **pending.decided(ctx.approval))
    waiting = PendingApproval.of(result)
    if waiting is not None:
        s.pending = waiting.to_json()
        say("WAIT for a person with the role " + ROLE)
        return wait_for_approval(ROLE, waiting.request, on_approve="agent", on_reject="agent")
    return done({"answer": result.output})


WORKFLOW = Workflow("pydantic_ai_mail", state=MailState, steps=[agent])


def alone(folder: Path, chapter: str, crash: str | None) -> None:
    """One chapter of the same agent run by pydantic-ai on its own: ``ask`` runs until the
    approval request and keeps the messages in a file; ``continue`` runs on, approved, from
    the kept messages (dying after the tool, or before it saves, when ``crash`` says so)."""
    global crash_after_tool  # noqa: PLW0603 (one process, one chapter)
    crash_after_tool = crash == "after_tool"
    kept = folder / ALONE_MESSAGES
    bot = build(folder / ALONE_REQUESTS, folder / ALONE_OUTBOX, alone=True)
    if chapter == "ask":
        result = bot.run_sync(QUESTION)
    else:
        history = ModelMessagesTypeAdapter.validate_json(kept.read_text())
        output = [
            p for m in history for p in getattr(m, "parts", ()) if isinstance(p, ToolCallPart)
        ]
        approvals: dict[str, Any] = {p.tool_call_id: True for p in output}
        result = bot.run_sync(
            message_history=history,
            deferred_tool_results=DeferredToolResults(approvals=approvals),
        )
        if crash == "before_save":
            say(f"CRASH before the run is saved, exit={EXIT_CODE}")
            os._exit(EXIT_CODE)
    if isinstance(result.output, DeferredToolRequests):
        kept.write_bytes(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
        say("WAIT: the messages are kept in a file until someone approves")
        return
    say(f"answer: {result.output}")
