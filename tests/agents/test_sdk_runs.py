"""Runs whose model is an official SDK pointed at the local stub server: malformed tool
arguments go back to the model as a tool error and the run goes on; a 429 with Retry-After
waits durably; a cut stream is retried under the same message id; async steps stream through
the async clients. On each backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest

from perdure import Context, FakeClock, Message, RunStatus, Runtime, Workflow, done, goto, step
from perdure.core.tools import ToolRegistry
from perdure.providers.anthropic import AnthropicModel
from perdure.providers.openai import OpenAIModel
from perdure.providers.stub import (
    StubServer,
    anthropic_error,
    anthropic_stream,
    openai_error,
    openai_reply,
    openai_stream,
)
from perdure.runtime.step.tools import run_tools


@dataclass
class S:
    pass


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def gpt(stub: StubServer, **options: object) -> OpenAIModel:
    return OpenAIModel("gpt-test", base_url=stub.url + "/v1", api_key="test", **options)


def test_malformed_tool_arguments_reach_the_model_as_a_tool_error_and_the_run_goes_on(
    runtime: Runtime, stub: StubServer
) -> None:
    stub.script(
        openai_reply(None, [("call_1", "search", '{"query": "perdure", oops}')]),
        openai_reply("I could not search; perdure is a durable runtime."),
    )
    tools = ToolRegistry()

    @tools.tool
    def search(query: str) -> list[str]:
        """Search."""
        return [query]

    llm = gpt(stub)

    @step(next=["think"])
    def think(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        reply = ctx.model_call(llm, tools=tools)
        ctx.add_message("assistant", reply.text, tool_calls=reply.tool_calls)
        if not reply.tool_calls:
            return done(reply.text)
        run_tools(ctx, reply.message, tools)
        return goto("think")

    run = runtime.start(
        Workflow("agent", state=S, steps=[think]), messages=[Message("user", "what is perdure?")]
    )
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    assert view.status is RunStatus.SUCCEEDED
    assert view.result == "I could not search; perdure is a durable runtime."
    sent = stub.requests[1].body["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"query": "perdure", oops}'
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "call_1"
    assert sent[2]["content"].startswith("error: the arguments are not JSON")


def test_a_429_with_retry_after_waits_durably_then_the_call_succeeds(
    runtime: Runtime, clock: FakeClock, stub: StubServer
) -> None:
    stub.script(openai_error(429, "slow down", retry_after="7"), openai_reply("hello"))
    llm = gpt(stub)

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        return done(ctx.model_call(llm, [Message("user", "hi")]).text)

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    stored = runtime.store.get_run("default", run.run_id)
    assert stored.wake_at == clock.now() + timedelta(seconds=7)
    assert stub.count == 1
    runtime.run_until_idle()
    assert stub.count == 1, "nothing runs before Retry-After"
    clock.advance(7)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == "hello"
    assert stub.count == 2


def test_a_cut_stream_is_retried_under_the_same_message_id(
    runtime: Runtime, clock: FakeClock, stub: StubServer
) -> None:
    stub.script(
        openai_stream(["one ", "two ", "three"], drop_after=3),
        openai_stream(["one ", "two ", "three"]),
    )
    llm = gpt(stub)
    attempts: list[list[str]] = []

    @step
    def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.model_call(llm, [Message("user", "count")], stream=True)
        attempts.append([])
        for delta in stream:
            attempts[-1].append(delta.text)
        return done({"text": stream.reply.text, "id": stream.reply.message_id})

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    assert runtime.store.get_run("default", run.run_id).wake_at is not None
    clock.advance(60)
    runtime.run_until_idle()
    result = runtime.get(run.run_id).result
    assert isinstance(result, dict)
    assert result["text"] == "one two three"
    assert "".join(attempts[0]) == "one two "
    (record,) = runtime.effects.list(run_id=run.run_id)
    assert isinstance(record.result, dict) and record.result["message_id"] == result["id"]
    assert stub.count == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_async_steps_stream_through_the_async_clients(
    runtime: Runtime, clock: FakeClock, stub: StubServer, provider: str
) -> None:
    if provider == "openai":
        stub.script(openai_error(503), openai_stream(["as", "ync"]))
        llm: OpenAIModel | AnthropicModel = gpt(stub, asynchronous=True)
    else:
        stub.script(
            anthropic_error(429, "rate_limit_error", retry_after="3"),
            anthropic_stream(["as", "ync"]),
        )
        llm = AnthropicModel("claude-test", base_url=stub.url, api_key="test", asynchronous=True)

    @step
    async def ask(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        stream = ctx.amodel_call(llm, [Message("user", "hi")], stream=True)
        pieces = [d.text async for d in stream if d.text]
        return done({"pieces": pieces, "tokens": stream.reply.usage.total})

    run = runtime.start(Workflow("ask", state=S, steps=[ask]))
    runtime.run_until_idle()
    assert runtime.store.get_run("default", run.run_id).wake_at is not None
    assert stub.count == 1
    clock.advance(60)
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == {"pieces": ["as", "ync"], "tokens": 15}
    assert stub.count == 2
