"""The OpenAI Agents SDK demo's agent (``perdure demo openai-agents``): an ``agents.Agent`` on a
scripted local model (an ``agents.Model`` that answers from a script: no network, no keys; it
tallies every request it answers) with one function tool, ``send_email``, that
``needs_approval`` and sends through the demo's mailbox with its idempotency key.

With perdure, the agent runs in one step through ``PerdureRunner``; the SDK's interruption for
approval becomes ``wait_for_approval`` (:class:`~perdure.openai_agents.PendingApproval`). On its
own (:func:`alone`), it runs as the SDK's docs show: the ``RunState`` is kept in a file between
the interruption and the approved continuation. Tracing is off (it would need the network).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.run_state import RunState
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

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
from perdure.openai_agents import PendingApproval, PerdureRunner
from perdure.runtime.crashpoints import EXIT_CODE
from perdure.runtime.step.context import Context

FRAMEWORK = "openai-agents"
TOOL_EFFECT = f"openai_agents.tool.{CALL}"
CONFIG = RunConfig(tracing_disabled=True)

crash_after_tool = False
"""Set by ``alone continue --crash-after-tool``."""


class ScriptedMailModel(Model):
    """Asks to send the email, then says it is sent (once the tool's output is in the input)."""

    def __init__(self, requests: Path) -> None:
        self.requests = requests
        self.model = "scripted-mail-1"

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        """The script's next reply."""
        say(f"MODEL request {tally(self.requests)}")
        items = input if isinstance(input, list) else []
        answered = any(_kind(i) == "function_call_output" for i in items)
        usage = Usage(requests=1, input_tokens=120, output_tokens=30, total_tokens=150)
        if answered:
            text = ResponseOutputText(
                annotations=[], text="Sent: the summary is in Ana's inbox.", type="output_text"
            )
            message = ResponseOutputMessage(
                id="msg-1", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[message], usage=usage, response_id=None)
        email = {"to": "ana@example.com", "body": "Durable execution keeps progress safe."}
        call = ResponseFunctionToolCall(
            arguments=json.dumps(email), call_id=CALL, name="send_email", type="function_call"
        )
        return ModelResponse(output=[call], usage=usage, response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """Not scripted (the demo does not stream)."""
        raise NotImplementedError("the demo's model does not stream")
        yield  # pragma: no cover


def _kind(item: Any) -> Any:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


def build(requests: Path, outbox: Path, *, alone: bool = False) -> Agent[Any]:
    """The agent: the scripted model (tallied in ``requests``) and ``send_email`` on the
    mailbox at ``outbox`` (needs approval). With perdure the tool takes the effect's
    idempotency key; ``alone``, it has none to give the provider."""

    def send(to: str, body: str, key: str) -> str:
        sent = Mailbox(outbox).send(to, body, key)
        say(f"SEND email to {to} ({sent})")
        return sent

    @function_tool(name_override="send_email", needs_approval=True)
    def send_email(to: str, body: str, idempotency_key: str) -> str:
        """Send an email."""
        return send(to, body, idempotency_key)

    @function_tool(name_override="send_email", needs_approval=True)
    def send_alone(to: str, body: str) -> str:
        """Send an email."""
        sent = send(to, body, "-")
        if crash_after_tool:
            say(f"CRASH after the tool, exit={EXIT_CODE} (no cleanup)")
            os._exit(EXIT_CODE)
        return sent

    return Agent(
        name="mailer",
        instructions="You send the emails you are asked to send.",
        model=ScriptedMailModel(requests),
        tools=[send_alone if alone else send_email],
    )


@step(next=["agent"])
async def agent(ctx: Context, s: MailState) -> Outcome:
    """Run the agent; wait for a person when it asks for approval."""
    say("ENTER agent")
    folder = Path(s.folder)
    bot = build(folder / REQUESTS, folder / OUTBOX)

    runner = PerdureRunner(
        ctx,
        side_effects={"send_email"},
        reconcile={"send_email": find_email(folder / OUTBOX)},
        pricing=PRICING,
    )
    if s.pending is None:
        result = await runner.run(bot, QUESTION, run_config=CONFIG)
    else:
        pending = PendingApproval.from_json(s.pending)
        result = await runner.resume(bot, pending, ctx.approval, run_config=CONFIG)
    waiting = PendingApproval.of(result)
    if waiting is not None:
        s.pending = waiting.to_json()
        say("WAIT for a person with the role " + ROLE)
        return wait_for_approval(ROLE, waiting.request, on_approve="agent", on_reject="agent")
    return done({"answer": result.final_output})


WORKFLOW = Workflow("openai_agents_mail", state=MailState, steps=[agent])


def alone(folder: Path, chapter: str, crash: str | None) -> None:
    """One chapter of the same agent run by the SDK on its own: ``ask`` runs until the
    interruption and keeps the ``RunState`` in a file; ``continue`` approves and runs on from
    the kept state (dying after the tool, or before it saves, when ``crash`` says so)."""
    global crash_after_tool  # noqa: PLW0603 (one process, one chapter)
    crash_after_tool = crash == "after_tool"
    kept = folder / ALONE_MESSAGES
    bot = build(folder / ALONE_REQUESTS, folder / ALONE_OUTBOX, alone=True)
    if chapter == "ask":
        result = Runner.run_sync(bot, QUESTION, run_config=CONFIG)
    else:
        state = asyncio.run(RunState.from_json(bot, json.loads(kept.read_text())))
        for item in state.get_interruptions():
            state.approve(item)
        result = Runner.run_sync(bot, state, run_config=CONFIG)
        if crash == "before_save":
            say(f"CRASH before the run is saved, exit={EXIT_CODE}")
            os._exit(EXIT_CODE)
    if result.interruptions:
        kept.write_text(json.dumps(result.to_state().to_json()))
        say("WAIT: the run state is kept in a file until someone approves")
        return
    say(f"answer: {result.final_output}")
