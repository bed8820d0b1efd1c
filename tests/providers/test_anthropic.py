"""The Anthropic adapter through the official SDK against a local stub server that speaks the
messages JSON and SSE formats: system text, tool_use and tool_result blocks, streamed text and
tool input fragments, 429 with Retry-After, 529 overloaded, a cut stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anthropic
import pytest

from perdure.core.chat import ModelRequest, ReplyBuilder, ToolSpec
from perdure.core.effects import ErrorClass, TransientError
from perdure.core.model import Message, ToolCall
from perdure.providers.anthropic import AnthropicModel
from perdure.providers.stub import (
    StubServer,
    anthropic_error,
    anthropic_reply,
    anthropic_stream,
)
from perdure.runtime.step.model_calls import classified

TOOL = ToolSpec("search", "Search", {"type": "object", "properties": {"q": {"type": "string"}}})
THREAD = (
    Message("system", "be brief"),
    Message("user", "find perdure"),
    Message(
        "assistant",
        "looking",
        (
            ToolCall("toolu_1", "search", '{"q": "perdure"}'),
            ToolCall("toolu_2", "search", "{q: broken"),
        ),
    ),
    Message("tool", "found it", (), "toolu_1"),
    Message("tool", "error: the arguments are not JSON", (), "toolu_2"),
)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def model(stub: StubServer, *, asynchronous: bool = False) -> AnthropicModel:
    return AnthropicModel(
        "claude-test", base_url=stub.url, api_key="test", asynchronous=asynchronous
    )


def test_a_request_has_the_messages_shape_and_the_reply_comes_back(stub: StubServer) -> None:
    stub.script(anthropic_reply("a runtime", [("toolu_3", "search", {"q": "more"})], (40, 6)))
    response = model(stub).complete(
        ModelRequest("claude-test", THREAD, (TOOL,), {"temperature": 0.5})
    )
    assert response.message == Message(
        "assistant", "a runtime", (ToolCall("toolu_3", "search", {"q": "more"}),)
    )
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 6)
    (sent,) = stub.requests
    assert sent.path == "/v1/messages"
    body = sent.body
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-test", 1024, 0.5)
    assert body["system"] == "be brief"
    assert body["messages"] == [
        {"role": "user", "content": "find perdure"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "perdure"}},
                {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found it"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "error: the arguments are not JSON",
                    "is_error": True,
                },
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "search", "description": "Search", "input_schema": TOOL.parameters}
    ]


def test_a_streamed_reply_with_tool_input_fragments_is_put_back_together(
    stub: StubServer,
) -> None:
    stub.script(anthropic_stream(["Let me ", "check"], [("toolu_4", "search", '{"q": "x"}')]))
    deltas = list(model(stub).stream(ModelRequest("claude-test", THREAD[:2], (TOOL,))))
    builder = ReplyBuilder()
    for d in deltas:
        builder.add(d)
    response = builder.response()
    assert response.message == Message(
        "assistant", "Let me check", (ToolCall("toolu_4", "search", '{"q": "x"}'),)
    )
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 5)


def test_a_429_and_a_529_are_transient_with_their_retry_after(stub: StubServer) -> None:
    stub.script(
        anthropic_error(429, "rate_limit_error", retry_after="12"),
        anthropic_error(529, "overloaded_error"),
    )
    with pytest.raises(anthropic.RateLimitError) as caught:
        model(stub).complete(ModelRequest("claude-test", THREAD[:2]))
    error = classified(caught.value)
    assert (error.error_class, error.kind, error.retry_after) == (
        ErrorClass.TRANSIENT,
        "rate_limited",
        12.0,
    )
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        model(stub).complete(ModelRequest("claude-test", THREAD[:2]))
    assert classified(overloaded.value).error_class is ErrorClass.TRANSIENT
    assert stub.count == 2


def test_a_stream_cut_mid_body_is_a_transient_error(stub: StubServer) -> None:
    stub.script(anthropic_stream(["one ", "two ", "three"], drop_after=4))
    seen: list[str] = []
    with pytest.raises(TransientError):
        for d in model(stub).stream(ModelRequest("claude-test", THREAD[:2])):
            seen.append(d.text)
    assert "".join(seen) == "one two "


def test_the_async_client_completes_and_streams(stub: StubServer) -> None:
    stub.script(anthropic_reply("async hello"), anthropic_stream(["a", "b"]))
    llm = model(stub, asynchronous=True)

    async def both() -> tuple[str, str]:
        response = await llm.complete(ModelRequest("claude-test", THREAD[:2]))
        pieces = [d.text async for d in llm.stream(ModelRequest("claude-test", THREAD[:2]))]
        return response.message.content, "".join(pieces)

    assert asyncio.run(both()) == ("async hello", "ab")
