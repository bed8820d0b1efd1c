"""The OpenAI adapter through the official SDK against a local stub server that speaks the
chat-completions JSON and SSE formats: requests in the real shape, replies and streamed chunks
back to messages, raw tool arguments kept, 429 with Retry-After, 500, a cut stream."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import openai
import pytest

from perdure.core.chat import ModelRequest, ReplyBuilder, ToolSpec
from perdure.core.effects import ErrorClass, TransientError
from perdure.core.model import Message, ToolCall
from perdure.providers.openai import OpenAIModel
from perdure.providers.stub import StubServer, openai_error, openai_reply, openai_stream
from perdure.runtime.step.model_calls import classified

TOOL = ToolSpec(
    "search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}}
)
THREAD = (
    Message("system", "be brief"),
    Message("user", "find perdure"),
    Message("assistant", "", (ToolCall("call_1", "search", '{"q": "perdure"}'),)),
    Message("tool", "found it", (), "call_1"),
)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def model(stub: StubServer, *, asynchronous: bool = False) -> OpenAIModel:
    return OpenAIModel(
        "gpt-test", base_url=stub.url + "/v1", api_key="test", asynchronous=asynchronous
    )


def test_a_request_has_the_chat_completions_shape_and_the_reply_comes_back(
    stub: StubServer,
) -> None:
    stub.script(openai_reply("it is a runtime", usage=(31, 4)))
    request = ModelRequest("gpt-test", THREAD, (TOOL,), {"temperature": 0})
    response = model(stub).complete(request)
    assert response.message == Message("assistant", "it is a runtime")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 4)
    assert response.finish_reason == "stop"
    (sent,) = stub.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["temperature"] == 0
    assert sent.body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "find perdure"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "perdure"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "found it"},
    ]
    assert sent.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the web",
                "parameters": TOOL.parameters,
            },
        }
    ]


def test_malformed_tool_arguments_are_kept_as_the_raw_text(stub: StubServer) -> None:
    stub.script(openai_reply(None, [("call_9", "search", '{"q": "unterminated')]))
    response = model(stub).complete(ModelRequest("gpt-test", THREAD[:2], (TOOL,)))
    assert response.message.tool_calls == (ToolCall("call_9", "search", '{"q": "unterminated'),)
    assert response.finish_reason == "tool_calls"


def test_a_streamed_reply_with_a_tool_call_is_put_back_together(stub: StubServer) -> None:
    stub.script(
        openai_stream(["Look", "ing ", "it up"], [("call_2", "search", '{"q": "durable"}')])
    )
    builder = ReplyBuilder()
    deltas = list(model(stub).stream(ModelRequest("gpt-test", THREAD[:2], (TOOL,))))
    for d in deltas:
        builder.add(d)
    response = builder.response()
    assert [d.text for d in deltas if d.text] == ["Look", "ing ", "it up"]
    assert response.message == Message(
        "assistant", "Looking it up", (ToolCall("call_2", "search", '{"q": "durable"}'),)
    )
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 5)
    assert stub.requests[0].body["stream"] is True
    assert stub.requests[0].body["stream_options"] == {"include_usage": True}


def test_a_429_is_transient_with_its_retry_after(stub: StubServer) -> None:
    stub.script(openai_error(429, "slow down", retry_after="7"))
    with pytest.raises(openai.RateLimitError) as caught:
        model(stub).complete(ModelRequest("gpt-test", THREAD[:2]))
    error = classified(caught.value)
    assert error.error_class is ErrorClass.TRANSIENT
    assert (error.kind, error.retry_after) == ("rate_limited", 7.0)
    assert stub.count == 1, "the SDK's own retries are off: perdure retries durably"


def test_a_500_is_transient_and_a_400_is_rejected(stub: StubServer) -> None:
    stub.script(openai_error(500), openai_error(400, "bad request"))
    for expected in (ErrorClass.TRANSIENT, ErrorClass.PERMANENT):
        with pytest.raises(openai.APIStatusError) as caught:
            model(stub).complete(ModelRequest("gpt-test", THREAD[:2]))
        assert classified(caught.value).error_class is expected


def test_a_stream_cut_mid_body_is_a_transient_error(stub: StubServer) -> None:
    stub.script(openai_stream(["one ", "two ", "three"], drop_after=3))
    seen: list[str] = []
    with pytest.raises(TransientError) as caught:
        for d in model(stub).stream(ModelRequest("gpt-test", THREAD[:2])):
            seen.append(d.text)
    assert caught.value.kind == "dependency_unavailable"
    assert "".join(seen) == "one two "


def test_the_async_client_completes_and_streams(stub: StubServer) -> None:
    stub.script(openai_reply("async hello"), openai_stream(["a", "b"]))
    llm = model(stub, asynchronous=True)

    async def both() -> tuple[str, str]:
        response = await llm.complete(ModelRequest("gpt-test", THREAD[:2]))
        pieces = [d.text async for d in llm.stream(ModelRequest("gpt-test", THREAD[:2]))]
        return response.message.content, "".join(pieces)

    assert asyncio.run(both()) == ("async hello", "ab")
