"""An OpenAI Agents SDK agent run in a perdure step, for process-level tests: its model is the SDK's
chat-completions model on the official OpenAI client, pointed at a stub server (``AGENT_STUB_URL``);
a triage agent hands off to a mailer agent whose one side-effecting tool, ``send_email``, appends to
an outbox that keeps every message with the key it was sent under (no deduplication); its reconciler
finds a message by that key. Tracing is off (no network).

``AGENT_HOLD=<path>``: inside the tool, after the message is written, the process reaches the
waypoint ``<path>.reached`` (``tests.waypoints``) and waits for a shared lock on ``<path>`` (the
test SIGKILLs it there).

Workflows: ``oai_mail`` (an ``async def`` step: ``run`` or ``run_streamed``), ``oai_mail_sync`` (a
plain step: ``run_sync``), ``oai_approval`` (the tool ``needs_approval``: the step waits for a
person, then resumes the SDK's run)."""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
from openai import AsyncOpenAI

from perdure import Context, Workflow, done, step, wait_for_approval
from perdure.core.chat import Pricing
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome
from perdure.openai_agents import PendingApproval, PerdureRunner
from tests.apps.outbox import sent
from tests.waypoints import reach

PRICING = Pricing(input_per_million=1_000_000, output_per_million=1_000_000)
CONFIG = RunConfig(tracing_disabled=True)


@dataclass
class Task:
    question: str = "email ana"
    outbox: str = "outbox.jsonl"
    stream: bool = False
    pending: dict[str, Any] | None = None


def _hold() -> None:
    where = os.environ.get("AGENT_HOLD")
    if not where:
        return
    reach(where + ".reached")
    with open(where, "a") as gate:  # the test holds it exclusively and kills the process here
        fcntl.flock(gate, fcntl.LOCK_SH)


def agents(outbox: str, *, approval: bool = False) -> Agent[Any]:
    """The triage agent (it hands off to the mailer)."""
    client = AsyncOpenAI(
        base_url=os.environ["AGENT_STUB_URL"] + "/v1", api_key="test", max_retries=0
    )
    model = OpenAIChatCompletionsModel(model="gpt-test", openai_client=client)

    @function_tool(needs_approval=approval)
    def send_email(to: str, body: str, idempotency_key: str) -> str:
        """Send an email."""
        number = len(sent(outbox)) + 1
        with Path(outbox).open("a") as f:
            f.write(json.dumps({"key": idempotency_key, "to": to, "body": body}) + "\n")
        _hold()
        return f"mail-{number}"

    mailer = Agent(name="mailer", instructions="You send emails.", model=model, tools=[send_email])
    return Agent(name="triage", instructions="Hand off.", model=model, handoffs=[mailer])


def runner(ctx: Context, t: Task) -> PerdureRunner:
    def find_email(request: Any, key: str) -> Reconciled:
        for number, message in enumerate(sent(t.outbox), 1):
            if message["key"] == key:
                return Reconciled.confirmed(f"mail-{number}")
        return Reconciled.not_found()

    return PerdureRunner(
        ctx, side_effects={"send_email"}, reconcile={"send_email": find_email}, pricing=PRICING
    )


@step
async def work(ctx: Context, t: Task) -> Outcome:
    triage = agents(t.outbox)
    if t.stream:
        streamed = runner(ctx, t).run_streamed(triage, t.question, run_config=CONFIG)
        async for _event in streamed.stream_events():
            pass
        output = streamed.final_output
    else:
        output = (await runner(ctx, t).run(triage, t.question, run_config=CONFIG)).final_output
    return done({"output": output})


@step
def work_sync(ctx: Context, t: Task) -> Outcome:
    result = runner(ctx, t).run_sync(agents(t.outbox), t.question, run_config=CONFIG)
    return done({"output": result.final_output})


@step(next=["decide"])
async def decide(ctx: Context, t: Task) -> Outcome:
    triage = agents(t.outbox, approval=True)
    if t.pending is None:
        result = await runner(ctx, t).run(triage, t.question, run_config=CONFIG)
    else:
        pending = PendingApproval.from_json(t.pending)
        result = await runner(ctx, t).resume(triage, pending, ctx.approval, run_config=CONFIG)
    waiting = PendingApproval.of(result)
    if waiting is not None:
        t.pending = waiting.to_json()
        return wait_for_approval("ops", waiting.request, on_approve="decide", on_reject="decide")
    return done({"output": result.final_output})


oai_mail = Workflow("oai_mail", state=Task, steps=[work])
oai_mail_sync = Workflow("oai_mail_sync", state=Task, steps=[work_sync])
oai_approval = Workflow("oai_approval", state=Task, steps=[decide])
