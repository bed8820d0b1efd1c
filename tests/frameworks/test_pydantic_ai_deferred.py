"""pydantic-ai's calls deferred to an external system (``CallDeferred``) on perdure's signals,
on both databases: the run waits for the results holding no process, a signal delivers them,
the agent continues from its kept conversation with them, the deferring tool is not called
again, and a call the signal has no result for is told to the model as a failed call."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from perdure import Context, Runtime, Workflow, done, step, wait_for_signal
from perdure.core.errors import InvalidInputError
from perdure.core.workflow import Outcome
from perdure.providers.stub import StubServer, openai_reply
from perdure.pydantic_ai import PendingCalls, PerdureDurability

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
