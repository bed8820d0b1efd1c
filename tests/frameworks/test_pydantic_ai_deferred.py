"""pydantic-ai's calls deferred to an external system (``CallDeferred``) on perdure's signals,
on both databases: the run waits for the results holding no process, a signal delivers them,
the agent continues from its kept conversation with them, the deferring tool is not called
again, and a call the signal has no result for is told to the model as a failed call; a reply
that asks an approval and defers a call at once is answered with both, once both are in."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from perdure import (
    Context,
    Principal,
    Runtime,
    Workflow,
    done,
    step,
    wait_for_approval,
    wait_for_signal,
)
from perdure.core.errors import InvalidInputError
from perdure.core.workflow import Outcome
from perdure.providers.stub import StubServer, openai_reply
from perdure.pydantic_ai import PendingApproval, PendingCalls, PerdureDurability

RENDER = ("call_7", "render", '{"doc": "q3"}')


@dataclass
class Job:
    question: str = "render q3"
    pending: dict[str, Any] | None = None


def flow(stub: StubServer, calls: list[str]) -> Workflow[Job]:
    client = AsyncOpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    bot: Agent[None, Any] = Agent(model, output_type=[str, DeferredToolRequests])

    @bot.tool_plain
    def render(doc: str) -> str:
        """Render a document (done by the render farm)."""
        calls.append(doc)
        raise CallDeferred(metadata={"queue": "render"})

    @step(next=["agent"])
    async def agent(ctx: Context, j: Job) -> Outcome:
        durable = PerdureDurability(ctx)
        if j.pending is None:
            result = await bot.run(j.question, capabilities=[durable])
        else:
            pending = PendingCalls.from_json(j.pending)
            delivered = pending.delivered(ctx.signal(pending.signal))
            result = await bot.run(capabilities=[durable], **delivered)
        waiting = PendingCalls.of(result)
        if waiting is not None:
            j.pending = waiting.to_json()
            return wait_for_signal(waiting.signal, next="agent")
        j.pending = None
        return done(result.output)

    return Workflow("deferred", state=Job, steps=[agent])


def tool_message(stub: StubServer, n: int) -> Any:
    (message,) = [m for m in stub.requests[n].body["messages"] if m["role"] == "tool"]
    return message["content"]


@pytest.mark.parametrize("delivered", [{"call_7": "q3.pdf"}, {}], ids=["result", "none"])
def test_a_deferred_call_waits_for_a_signal_and_the_agent_continues_with_its_result(
    db_url: str, stub: StubServer, delivered: dict[str, Any]
) -> None:
    stub.script(openai_reply("", [RENDER]), openai_reply("Rendered."))
    calls: list[str] = []
    wf = flow(stub, calls)
    with Runtime(db_url, workflows=[wf]) as rt:
        run = rt.start(wf, Job())
        rt.run_until_idle()
        waiting = rt.get(run.run_id)
        assert waiting.status == "WAITING_EXTERNAL"
        kept: Any = rt.state(run.run_id)["pending"]
        assert kept["signal"] == "tool_results"
        assert kept["calls"][0]["id"] == "call_7"
        assert kept["calls"][0]["arguments"] == {"doc": "q3"}
        assert kept["calls"][0]["metadata"] == {"queue": "render"}
        assert (stub.count, calls) == (1, ["q3"])

        rt.signal(run.run_id, "tool_results", delivered)
        rt.run_until_idle()
        final = rt.get(run.run_id)
        assert (final.status, final.result) == ("SUCCEEDED", "Rendered.")
    assert calls == ["q3"], "the deferring tool was not called again"
    assert stub.count == 2
    told = tool_message(stub, 1)
    if delivered:
        assert told == "q3.pdf"
    else:
        assert "no result was delivered for the call call_7" in json_text(told)


def json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def test_a_signal_that_is_not_an_object_of_results_is_refused() -> None:
    pending = PendingCalls(history=[], calls=({"id": "c1", "tool": "t", "arguments": {}},))
    with pytest.raises(InvalidInputError, match="object of results"):
        pending.delivered(["not", "an", "object"])
    with pytest.raises(InvalidInputError, match="no calls"):
        PendingCalls.from_json({"calls": []})


# -- one reply that asks an approval and defers a call at once -----------------------------------
# The scenario of pydantic-ai's own durable-execution tests (DBOS, Temporal): one model reply
# calls a tool that needs a person's approval and another whose result comes from outside.
# pydantic-ai continues only with an answer for every call of that reply, so the run waits for
# the decision, then for the external result, and continues once with both.

REFUND = ("call_r", "refund", '{"amount": 40}')
LOOKUP = ("call_l", "lookup", '{"order": "A-7"}')
OPS = Principal("default", "ana", frozenset({"ops"}))


@dataclass
class Case:
    question: str = "refund order A-7"
    approval: dict[str, Any] | None = None
    pending: dict[str, Any] | None = None


def mixed_flow(stub: StubServer, refunds: list[int], lookups: list[str]) -> Workflow[Case]:
    client = AsyncOpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    bot: Agent[None, Any] = Agent(model, output_type=[str, DeferredToolRequests])

    @bot.tool_plain(requires_approval=True)
    def refund(amount: int) -> str:
        """Refund the customer (a person approves)."""
        refunds.append(amount)
        return f"refunded {amount}"

    @bot.tool_plain
    def lookup(order: str) -> str:
        """Look the order up (done by the warehouse system)."""
        lookups.append(order)
        raise CallDeferred(metadata={"queue": "warehouse"})

    @step(next=["agent"])
    async def agent(ctx: Context, c: Case) -> Outcome:
        durable = PerdureDurability(ctx, side_effects={"refund"})
        if c.approval is not None:  # a person decided
            decided = PendingApproval.from_json(c.approval)
            c.approval = None
            after = decided.after(ctx.approval)
            if after is not None:  # the same reply deferred calls: wait for their results
                c.pending = after.to_json()
                return wait_for_signal(after.signal, next="agent")
            result = await bot.run(capabilities=[durable], **decided.decided(ctx.approval))
        elif c.pending is not None:  # the external results came
            pending = PendingCalls.from_json(c.pending)
            c.pending = None
            delivered = pending.delivered(ctx.signal(pending.signal))
            result = await bot.run(capabilities=[durable], **delivered)
        else:
            result = await bot.run(c.question, capabilities=[durable])
        asked = PendingApproval.of(result)
        if asked is not None:
            c.approval = asked.to_json()
            return wait_for_approval("ops", asked.request, on_approve="agent", on_reject="agent")
        waiting = PendingCalls.of(result)
        if waiting is not None:
            c.pending = waiting.to_json()
            return wait_for_signal(waiting.signal, next="agent")
        return done(result.output)

    return Workflow("mixed", state=Case, steps=[agent])


def tool_messages(stub: StubServer, n: int) -> dict[str, Any]:
    return {
        m["tool_call_id"]: m["content"]
        for m in stub.requests[n].body["messages"]
        if m["role"] == "tool"
    }


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_an_approval_and_a_deferred_call_in_one_reply_are_answered_together(
    db_url: str, stub: StubServer, approve: bool
) -> None:
    stub.script(openai_reply("", [REFUND, LOOKUP]), openai_reply("Handled."))
    refunds: list[int] = []
    lookups: list[str] = []
    wf = mixed_flow(stub, refunds, lookups)
    with Runtime(db_url, workflows=[wf]) as rt:
        run = rt.start(wf, Case())
        rt.run_until_idle()
        assert rt.get(run.run_id).status == "WAITING_APPROVAL"
        (asked,) = rt.approvals(run_id=run.run_id)
        assert isinstance(asked.request, dict)
        assert [c["tool"] for c in asked.request["tool_calls"]] == ["refund"]
        if approve:
            rt.approve(run.run_id, OPS, comment="ok")
        else:
            rt.reject(run.run_id, OPS, comment="not this one")
        rt.run_until_idle()
        assert rt.get(run.run_id).status == "WAITING_EXTERNAL", "the lookup's result is needed"
        assert refunds == [] and stub.count == 1, "nothing runs before every answer is in"

        rt.signal(run.run_id, "tool_results", {"call_l": "A-7: shipped"})
        rt.run_until_idle()
        final = rt.get(run.run_id)
        assert (final.status, final.result) == ("SUCCEEDED", "Handled."), (
            final.error and final.error.to_json()
        )
        refund_effects = [e for e in rt.effects.list(run_id=run.run_id) if e.target == "tool"]
    assert refunds == ([40] if approve else [])
    assert len(refund_effects) == int(approve), "the approved refund is one recorded effect"
    assert lookups == ["A-7"], "the deferring tool was not called again"
    assert stub.count == 2
    told = tool_messages(stub, 1)
    assert told["call_l"] == "A-7: shipped"
    if approve:
        assert told["call_r"] == "refunded 40"
    else:
        assert "not this one" in json_text(told["call_r"])


def test_continuing_a_mixed_reply_after_the_approval_alone_is_refused_with_the_fix() -> None:
    pending = PendingApproval.from_json(
        {
            "history": [],
            "calls": [{"id": "call_r", "tool": "refund", "arguments": {}}],
            "deferred": [{"id": "call_l", "tool": "lookup", "arguments": {}, "metadata": None}],
        }
    )
    with pytest.raises(InvalidInputError, match="also deferred calls") as refused:
        pending.decided(None)
    assert "pending.after(ctx.approval)" in refused.value.one_line()
    assert PendingApproval.from_json(pending.to_json()) == pending
