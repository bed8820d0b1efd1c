"""The OpenAI chat-completions adapter: ``OpenAIModel("gpt-4.1-mini")`` is a model for
``ctx.model_call``. Install with ``pip install 'perdure[openai]'``.

Thread messages become chat-completions messages (assistant tool calls with their raw argument
text, tool results with their ``tool_call_id``); replies and streamed chunks come back as
messages whose tool calls keep the raw argument text exactly as the model wrote it (it may be
malformed: the tool round turns that into an error message for the model, never a failed run).
Give the client ``max_retries=0`` (the default here): perdure retries rate limits and 5xx
itself, with durable waits that honour ``Retry-After``, instead of the SDK sleeping in-process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from perdure.core.chat import (
    Delta,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolSpec,
)
from perdure.core.model import JSON, Message, ToolCall
from perdure.core.serde import dumps
from perdure.providers.sdk import SdkModel, transient


def to_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Thread messages in the chat-completions request shape."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": _raw(c.arguments)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as chat-completions ``tools``."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def to_request(request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``client.chat.completions.create``."""
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": to_messages(request.messages),
        **request.params,
    }
    if request.tools:
        kwargs["tools"] = to_tools(request.tools)
    if stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs


def from_response(response: Any) -> ModelResponse:
    """A ``ChatCompletion`` as a response (tool arguments kept as the raw text)."""
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(c.id, c.function.name, c.function.arguments or "")
        for c in (getattr(message, "tool_calls", None) or ())
    )
    usage = getattr(response, "usage", None)
    return ModelResponse(
        Message("assistant", message.content or "", calls),
        _usage(usage),
        choice.finish_reason,
    )


def from_chunk(chunk: Any) -> Iterator[Delta]:
    """The deltas of one ``ChatCompletionChunk``."""
    usage = getattr(chunk, "usage", None)
    for choice in chunk.choices or ():
        delta = choice.delta
        if getattr(delta, "content", None):
            yield Delta(text=delta.content)
        for call in getattr(delta, "tool_calls", None) or ():
            function = call.function
            yield Delta(
                tool_index=call.index,
                tool_id=call.id,
                tool_name=getattr(function, "name", None),
                tool_arguments=getattr(function, "arguments", None) or "",
            )
        if choice.finish_reason:
            yield Delta(finish_reason=choice.finish_reason)
    if usage is not None:
        yield Delta(usage=_usage(usage))


def _usage(usage: Any) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    return TokenUsage(usage.prompt_tokens or 0, usage.completion_tokens or 0)


def _raw(arguments: JSON) -> str:
    if isinstance(arguments, str):
        return arguments
    return dumps(arguments if arguments is not None else {}).decode()


def translated(exc: Exception) -> Exception:
    """A connection failure or timeout of the SDK (no HTTP status) as a transient error;
    status errors pass as they are (their status and Retry-After are read by perdure)."""
    import openai

    return transient(exc, openai.APITimeoutError, openai.APIConnectionError)


class OpenAIModel(SdkModel):
    """A :class:`perdure.core.chat.ChatModel` on an ``openai.OpenAI`` or ``openai.AsyncOpenAI``
    client (built from ``client_options`` when none is given, with ``max_retries=0``). An
    ``Async…`` client class, or ``asynchronous=True``, makes every call a coroutine."""

    def _client(self, asynchronous: bool, options: dict[str, Any]) -> Any:
        import openai

        return (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(**options)

    def _create(self) -> Any:
        return self.client.chat.completions.create

    def _request(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        return to_request(request, stream=stream)

    def _response(self, response: Any) -> ModelResponse:
        return from_response(response)

    def _deltas(self, item: Any) -> tuple[Iterable[Delta], bool]:
        deltas = list(from_chunk(item))
        return deltas, any(d.finish_reason is not None for d in deltas)

    def _translated(self, exc: Exception) -> Exception:
        return translated(exc)


__all__ = [
    "OpenAIModel",
    "from_chunk",
    "from_response",
    "to_messages",
    "to_request",
    "to_tools",
]
