"""A pydantic-ai agent run in a perdure step, for process-level tests: its model is pydantic-ai's
OpenAI model on the official SDK, pointed at a stub server (``AGENT_STUB_URL``); its one
side-effecting tool, ``send_email``, appends to an outbox that keeps every message with the key it
was sent under (no deduplication), and its reconciler finds a message by that key.

``pyd_mcp``: the same email, but ``send_email`` is the tool of a real MCP server
(``tests.apps.mcp_mail_server``, a stdio subprocess of the step's process).

``AGENT_HOLD=<path>``: inside the tool, after the message is written, the process reaches the
waypoint ``<path>.reached`` (``tests.waypoints``) and waits for a shared lock on ``<path>`` (the
test holds it exclusively and SIGKILLs the process there).

Workflows: ``pyd_mail`` (an ``async def`` step, ``agent.run`` or ``run_stream``), ``pyd_mail_sync``
(a plain step, ``agent.run_sync``), ``pyd_approval`` (the tool needs a person's approval: the step
waits for it, then runs the agent on)."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from perdure import Context, Workflow, done, step, wait_for_approval
from perdure.core.chat import Pricing
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome
from perdure.pydantic_ai import PendingApproval, PerdureDurability
from tests.apps.outbox import sent
from tests.waypoints import reach

PRICING = Pricing(input_per_million=1_000_000, output_per_million=1_000_000)


@dataclass
class Task:
    question: str = "email ana"
    outbox: str = "outbox.jsonl"
    stream: bool = False
    pending: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)


def _hold() -> None:
    where = os.environ.get("AGENT_HOLD")
    if not where:
        return
    reach(where + ".reached")
    with open(where, "a") as gate:  # the test holds it exclusively and kills the process here
        fcntl.flock(gate, fcntl.LOCK_SH)


def model() -> OpenAIChatModel:
    client = AsyncOpenAI(
        base_url=os.environ["AGENT_STUB_URL"] + "/v1", api_key="test", max_retries=0
    )
    return OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))


def agent(outbox: str, *, approval: bool = False) -> Agent[None, Any]:
    bot: Agent[None, Any] = Agent(
        model(),
        instructions="You send emails.",
        output_type=[str, DeferredToolRequests] if approval else str,
    )

    @bot.tool_plain(requires_approval=approval)
    def send_email(to: str, body: str, idempotency_key: str) -> dict[str, str]:
        """Send an email."""
        number = len(sent(outbox)) + 1
        with Path(outbox).open("a") as f:
            f.write(json.dumps({"key": idempotency_key, "to": to, "body": body}) + "\n")
        _hold()
        return {"id": f"mail-{number}"}

    return bot


def durable(ctx: Context, t: Task) -> PerdureDurability:
    def find_email(request: Any, key: str) -> Reconciled:
        for number, message in enumerate(sent(t.outbox), 1):
            if message["key"] == key:
                return Reconciled.confirmed({"id": f"mail-{number}"})
        return Reconciled.not_found()

    return PerdureDurability(
        ctx, side_effects={"send_email"}, reconcile={"send_email": find_email}, pricing=PRICING
    )


@step
async def work(ctx: Context, t: Task) -> Outcome:
    bot = agent(t.outbox)
    if t.stream:
        async with bot.run_stream(t.question, capabilities=[durable(ctx, t)]) as streamed:
            output = await streamed.get_output()
    else:
        output = (await bot.run(t.question, capabilities=[durable(ctx, t)])).output
    return done({"output": output})


@step
def work_sync(ctx: Context, t: Task) -> Outcome:
    result = agent(t.outbox).run_sync(t.question, capabilities=[durable(ctx, t)])
    return done({"output": result.output})


@step(next=["decide"])
async def decide(ctx: Context, t: Task) -> Outcome:
    bot = agent(t.outbox, approval=True)
    if t.pending is None:
        result = await bot.run(t.question, capabilities=[durable(ctx, t)])
    else:
        pending = PendingApproval.from_json(t.pending)
        result = await bot.run(capabilities=[durable(ctx, t)], **pending.decided(ctx.approval))
    waiting = PendingApproval.of(result)
    if waiting is not None:
        t.pending = waiting.to_json()
        return wait_for_approval("ops", waiting.request, on_approve="decide", on_reject="decide")
    return done({"output": result.output})


def mcp_agent(outbox: str) -> Agent[None, Any]:
    """An agent whose only tool is the MCP server's ``send_email``."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    env = {**os.environ, "MCP_OUTBOX": outbox}
    server = StdioTransport(
        sys.executable,
        ["-m", "tests.apps.mcp_mail_server"],
        env=env,
        cwd=os.getcwd(),
        log_file=Path(outbox).with_suffix(".mcp.log"),  # not the step process's stderr
    )
    return Agent(model(), instructions="You send emails.", toolsets=[MCPToolset(server)])


@step
async def work_mcp(ctx: Context, t: Task) -> Outcome:
    result = await mcp_agent(t.outbox).run(t.question, capabilities=[durable(ctx, t)])
    return done({"output": result.output})


pyd_mail = Workflow("pyd_mail", state=Task, steps=[work])
pyd_mail_sync = Workflow("pyd_mail_sync", state=Task, steps=[work_sync])
pyd_approval = Workflow("pyd_approval", state=Task, steps=[decide])
pyd_mcp = Workflow("pyd_mcp", state=Task, steps=[work_mcp])
