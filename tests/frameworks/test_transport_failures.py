"""A model request that fails on the wire — the connection refused, closed halfway through the
reply, or stalled past the client's timeout — is retried under the model call's policy with a
durable wait, through the official SDKs built with ``max_retries=0`` (as the docs advise) and
pointed at the stub server on 127.0.0.1: pydantic-ai over the OpenAI and the Anthropic SDK, and
the OpenAI Agents SDK. A 401 and a 400 are not retried. A side effect whose request fails the
same way is sent again (under its retry policy) only when the request provably never left. On
each backend, with the fake clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from perdure import Context, FakeClock, RetryPolicy, Runtime, Workflow, done, step
from perdure.core.effects import EffectStatus
from perdure.core.workflow import Outcome
from perdure.openai_agents import PerdureRunner
from perdure.providers.stub import (
    StubReply,
    StubServer,
    anthropic_error,
    anthropic_reply,
    hang_up,
    openai_error,
    openai_reply,
    stall,
)
from perdure.pydantic_ai import PerdureDurability

CLIENT_TIMEOUT = 1.0
"""Seconds a client waits for a stalled reply (a real socket timeout, the only wall-clock wait
here; long enough that a loaded machine still answers the good replies in time)."""

FRAMEWORKS = ["pydantic-ai/openai", "pydantic-ai/anthropic", "openai-agents"]
FAULTS = ["refused", "hang_up", "stall"]


@dataclass
class Q:
    question: str = "go"


def reply(framework: str, text: str) -> StubReply:
    return anthropic_reply(text) if framework.endswith("anthropic") else openai_reply(text)


def error(framework: str, status: int) -> StubReply:
    if framework.endswith("anthropic"):
        kind = "authentication_error" if status == 401 else "invalid_request_error"
        return anthropic_error(status, kind)
    return openai_error(status, "refused")


def asker(framework: str, stub: StubServer) -> Any:
    """A step that asks the framework's agent one question, its client made with
    ``max_retries=0``."""
    if framework == "openai-agents":
        client = AsyncOpenAI(
            base_url=stub.url + "/v1", api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
        )
        agent = Agent(
            name="a", model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client)
        )

        @step
        async def ask(ctx: Context, q: Q) -> Outcome:
            config = RunConfig(tracing_disabled=True)
            return done(
                (await PerdureRunner(ctx).run(agent, q.question, run_config=config)).final_output
            )

        return ask
    if framework.endswith("anthropic"):
        anthropic = AsyncAnthropic(
            base_url=stub.url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
        )
        model: Any = AnthropicModel(
            "claude-test", provider=AnthropicProvider(anthropic_client=anthropic)
        )
    else:
        openai = AsyncOpenAI(
            base_url=stub.url + "/v1", api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
        )
        model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=openai))
    bot = PydanticAgent(model)

    @step
    async def ask(ctx: Context, q: Q) -> Outcome:  # type: ignore[no-redef]
        return done((await bot.run(q.question, capabilities=[PerdureDurability(ctx)])).output)

    return ask


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_model_request_cut_on_the_wire_is_retried_after_a_durable_wait_and_succeeds(
    db_url: str, stub: StubServer, framework: str, fault: str
) -> None:
    if fault == "refused":
        stub.refuse()
    else:
        stub.script(hang_up() if fault == "hang_up" else stall())
    clock = FakeClock()
    flow = Workflow(f"wire-{fault}", state=Q, steps=[asker(framework, stub)])
    with Runtime(db_url, workflows=[flow], clock=clock) as rt:
        run = rt.start(flow, Q())
        rt.run_until_idle()
        waiting = rt.store.get_run("default", run.run_id)
        assert waiting.status == "RUNNING" and waiting.wake_at is not None, (
            f"the failed request must wait to be retried, not go to a person: {waiting.status}"
        )
        assert stub.count == (0 if fault == "refused" else 1)
        stub.accept()
        stub.script(reply(framework, "answered"))
        clock.advance(60)
        rt.run_until_idle()
        stored = rt.get(run.run_id)
        assert stored.status == "SUCCEEDED", stored.error and stored.error.to_json()
        assert stored.result == "answered"
        (model,) = [e for e in rt.effects.list(run_id=run.run_id) if e.target == "model"]
        assert model.status is EffectStatus.CONFIRMED
        assert model.attempts == 2
    assert stub.count == (1 if fault == "refused" else 2)


@pytest.mark.parametrize("status", [401, 400])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_refused_credential_or_a_bad_request_is_not_retried(
    db_url: str, stub: StubServer, framework: str, status: int
) -> None:
    stub.script(error(framework, status), reply(framework, "never"))
    clock = FakeClock()
    flow = Workflow(f"refused-{status}", state=Q, steps=[asker(framework, stub)])
    with Runtime(db_url, workflows=[flow], clock=clock) as rt:
        run = rt.start(flow, Q())
        rt.run_until_idle()
        clock.advance(3600)
        rt.run_until_idle()
        stored = rt.get(run.run_id)
        (model,) = [e for e in rt.effects.list(run_id=run.run_id) if e.target == "model"]
    assert stored.status == "FAILED", "a rejected request fails the step at once"
    assert model.status is EffectStatus.REJECTED
    assert isinstance(model.last_error, dict)
    expected = "permission_denied" if status == 401 else "invalid_request"
    assert model.last_error["kind"] == expected
    assert stub.count == 1, "a refused request is never sent again"


def test_a_side_effect_whose_connection_was_refused_is_sent_again(
    db_url: str, stub: StubServer
) -> None:
    stub.refuse()
    clock = FakeClock()

    @step
    def post(ctx: Context, q: Q) -> Outcome:
        def send(request: Any, key: str) -> Any:
            answer = httpx.post(stub.url + "/v1/chat/completions", json=request, timeout=5)
            return answer.json()["choices"][0]["message"]["content"]

        booked = ctx.effect(
            "post", target="ledger", operation="book", request={}, execute=send, retry=RetryPolicy()
        )
        return done(booked)

    flow = Workflow("refused-effect", state=Q, steps=[post])
    with Runtime(db_url, workflows=[flow], clock=clock) as rt:
        run = rt.start(flow, Q())
        rt.run_until_idle()
        assert rt.store.get_run("default", run.run_id).wake_at is not None
        stub.accept()
        stub.script(openai_reply("booked"))
        clock.advance(60)
        rt.run_until_idle()
        stored = rt.get(run.run_id)
    assert stored.status == "SUCCEEDED" and stored.result == "booked"
    assert stub.count == 1


def test_a_side_effect_cut_after_its_request_went_out_is_not_sent_blindly_again(
    db_url: str, stub: StubServer
) -> None:
    stub.script(hang_up(), openai_reply("booked again"))
    clock = FakeClock()

    @step
    def post(ctx: Context, q: Q) -> Outcome:
        def send(request: Any, key: str) -> Any:
            return httpx.post(stub.url + "/v1/chat/completions", json=request, timeout=5).json()

        booked = ctx.effect(
            "post", target="ledger", operation="book", request={}, execute=send, retry=RetryPolicy()
        )
        return done(booked)

    flow = Workflow("cut-effect", state=Q, steps=[post])
    with Runtime(db_url, workflows=[flow], clock=clock) as rt:
        run = rt.start(flow, Q())
        rt.run_until_idle()
        clock.advance(3600)
        rt.run_until_idle()
        stored = rt.get(run.run_id)
        (effect,) = rt.effects.list(run_id=run.run_id)
    assert stored.status == "NEEDS_ATTENTION"
    assert effect.status is EffectStatus.AMBIGUOUS, "the outcome is unknown: a person decides"
    assert stub.count == 1
