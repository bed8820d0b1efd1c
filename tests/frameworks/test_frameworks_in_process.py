"""The framework integrations inside one process (a Runtime and the stub server here): replies
charged to the run's budget, a spent budget stops the step before the next request, a cached
tool runs once per arguments, a plain tool cannot take a key, an effect is never recorded inside
another one's call, and a rejected approval is told to the model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from perdure import Budget, Context, Runtime, Workflow, done, step
from perdure.core.chat import Pricing
from perdure.core.workflow import Outcome
from perdure.openai_agents import PerdureRunner
from perdure.providers.stub import StubServer, openai_reply
from perdure.pydantic_ai import PerdureDurability

PRICE = Pricing(input_per_million=1_000_000, output_per_million=1_000_000)  # 1 a token


@dataclass
class Q:
    question: str = "go"


def pyd_agent(stub: StubServer) -> PydanticAgent[None, str]:
    client = AsyncOpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)
    return PydanticAgent(OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client)))


def oai_model(stub: StubServer) -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-test", openai_client=client)


def run(db_url: str, workflow: Workflow[Any]) -> Any:
    with Runtime(db_url, workflows=[workflow]) as rt:
        started = rt.start(workflow, Q())
        rt.run_until_idle()
        return rt.get(started.run_id), rt.effects.list(run_id=started.run_id)


def test_replies_are_charged_and_a_spent_budget_stops_before_the_next_request(
    db_url: str, stub: StubServer
) -> None:
    stub.script(openai_reply("", [("c1", "look", "{}")], usage=(10, 5)), openai_reply("done"))
    bot = pyd_agent(stub)

    @bot.tool_plain
    def look() -> str:
        """Look."""
        return "seen"

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:
        durable = PerdureDurability(ctx, pricing=PRICE)
        return done((await bot.run(q.question, capabilities=[durable])).output)

    flow = Workflow("charged", state=Q, steps=[ask], budget=Budget(cost=12))
    stored, effects = run(db_url, flow)
    assert stored.status == "NEEDS_ATTENTION"
    assert stored.error.reason == "budget_exhausted"
    assert stub.count == 1, "the second request was never sent"
    assert [e.name for e in effects] == ["pydantic_ai.model.1"], "no intent was recorded"


def test_a_cached_tool_runs_once_for_the_same_arguments(db_url: str, stub: StubServer) -> None:
    twice = [("c1", "search", '{"q": "x"}'), ("c2", "search", '{"q": "x"}')]
    stub.script(openai_reply("", twice), openai_reply("found"))
    calls: list[str] = []

    @function_tool
    def search(q: str) -> str:
        """Search."""
        calls.append(q)
        return f"result for {q}"

    bot = Agent(name="finder", model=oai_model(stub), tools=[search])

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:
        runner = PerdureRunner(ctx, cached={"search"})
        result = await runner.run(bot, q.question, run_config=RunConfig(tracing_disabled=True))
        return done(result.final_output)

    stored, effects = run(db_url, Workflow("cached", state=Q, steps=[ask]))
    assert stored.status == "SUCCEEDED", stored.error.message
    assert calls == ["x"]
    assert [e.target for e in effects].count("tool") == 1


def test_a_plain_tool_cannot_take_an_idempotency_key(db_url: str, stub: StubServer) -> None:
    stub.script(openai_reply("never"))
    bot = pyd_agent(stub)

    @bot.tool_plain
    def send(to: str, idempotency_key: str) -> str:
        """Send."""
        return "sent"

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:
        return done((await bot.run(q.question, capabilities=[PerdureDurability(ctx)])).output)

    stored, _ = run(db_url, Workflow("unkeyed", state=Q, steps=[ask]))
    assert stored.status == "NEEDS_ATTENTION"
    assert "neither side-effecting nor cached" in json.dumps(stored.error.to_json())
    assert stub.count == 0


def test_an_agent_is_not_recorded_inside_a_recorded_tool_call(
    db_url: str, stub: StubServer
) -> None:
    stub.script(openai_reply("", [("c1", "delegate", "{}")]), openai_reply("inner"))
    outer, inner = pyd_agent(stub), pyd_agent(stub)
    holder: dict[str, Context] = {}

    @outer.tool_plain
    async def delegate() -> str:
        """Ask another agent."""
        durable = PerdureDurability(holder["ctx"], prefix="inner")
        return (await inner.run("inner question", capabilities=[durable])).output

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:
        holder["ctx"] = ctx
        durable = PerdureDurability(ctx, side_effects={"delegate"})
        return done((await outer.run(q.question, capabilities=[durable])).output)

    stored, _ = run(db_url, Workflow("nested", state=Q, steps=[ask]))
    assert stored.status != "SUCCEEDED"
    assert "inside the call of effect 'pydantic_ai.tool.c1'" in json.dumps(stored.error.to_json())
    assert stub.count == 1


@pytest.mark.parametrize("framework", ["pydantic-ai", "openai-agents"])
def test_two_agent_runs_in_one_step_number_their_requests_in_call_order(
    db_url: str, stub: StubServer, framework: str
) -> None:
    stub.script(openai_reply("one"), openai_reply("two"))

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:
        if framework == "pydantic-ai":
            bot = pyd_agent(stub)
            first = await bot.run("a", capabilities=[PerdureDurability(ctx)])
            second = await bot.run("b", capabilities=[PerdureDurability(ctx)])
            return done([first.output, second.output])
        agent = Agent(name="a", model=oai_model(stub))
        config = RunConfig(tracing_disabled=True)
        one = await PerdureRunner(ctx).run(agent, "a", run_config=config)
        two = await PerdureRunner(ctx).run(agent, "b", run_config=config)
        return done([one.final_output, two.final_output])

    stored, effects = run(db_url, Workflow("twice", state=Q, steps=[ask]))
    assert stored.result == ["one", "two"]
    prefix = framework.replace("-", "_")
    assert [e.name for e in effects] == [f"{prefix}.model.1", f"{prefix}.model.2"]
