"""The Anthropic messages adapter: ``AnthropicModel("claude-sonnet-4-5")`` is a model for
``ctx.model_call``. Install with ``pip install 'perdure[anthropic]'``.

System messages (and summaries) become the request's ``system`` text; assistant tool calls
become ``tool_use`` blocks and tool messages ``tool_result`` blocks (consecutive results in one
user turn). A streamed tool call's input arrives as raw JSON text in fragments: it is kept as
that text; a non-streamed one as the object the API sent. ``max_tokens`` is required by the API:
it defaults to 1024 unless ``params`` give it. Give the client ``max_retries=0`` (the default
here): perdure retries with durable waits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from perdure.core.chat import Delta, ModelRequest, ModelResponse, TokenUsage, ToolSpec
from perdure.core.model import JSON, Message, ToolCall
from perdure.core.tools import ToolArgumentError, lenient_json
from perdure.providers.sdk import SdkModel, transient

STOP_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
"""Anthropic stop reasons as the chat-completions finish reasons the rest of perdure uses."""


def to_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Thread messages as (system text, messages) in the messages-API shape."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.content)
            continue
        if m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                "content": m.content,
            }
            if m.content.startswith("error:"):
                block["is_error"] = True
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if m.role == "assistant" and m.tool_calls:
            content: list[dict[str, Any]] = (
                [{"type": "text", "text": m.content}] if m.content else []
            )
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": content})
            continue
        out.append({"role": m.role, "content": m.content})
    return "\n\n".join(system), out


def _input(arguments: JSON) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            found = lenient_json(arguments)
        except ToolArgumentError:
            return {}
        return found if isinstance(found, dict) else {}
    return {}


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as messages-API ``tools``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def to_request(request: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``client.messages.create``."""
    system, messages = to_messages(request.messages)
    kwargs: dict[str, Any] = {"model": request.model, "messages": messages, "max_tokens": 1024}
    kwargs.update(request.params)
    if system:
        kwargs["system"] = system
    if request.tools:
        kwargs["tools"] = to_tools(request.tools)
    if stream:
        kwargs["stream"] = True
    return kwargs


def from_response(response: Any) -> ModelResponse:
    """A ``Message`` of the API as a response."""
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in response.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(block.id, block.name, block.input))
    usage = response.usage
    return ModelResponse(
        Message("assistant", "".join(text), tuple(calls)),
        TokenUsage(usage.input_tokens or 0, usage.output_tokens or 0),
        STOP_REASONS.get(response.stop_reason or "", response.stop_reason),
    )


def from_event(event: Any) -> Iterator[Delta]:
    """The deltas of one stream event (the content block index is the tool call's index)."""
    kind = event.type
    if kind == "message_start":
        usage = event.message.usage
        yield Delta(usage=TokenUsage(usage.input_tokens or 0, 0))
    elif kind == "content_block_start" and event.content_block.type == "tool_use":
        block = event.content_block
        yield Delta(tool_index=event.index, tool_id=block.id, tool_name=block.name)
    elif kind == "content_block_delta":
        delta = event.delta
        if delta.type == "text_delta":
            yield Delta(text=delta.text)
        elif delta.type == "input_json_delta":
            yield Delta(tool_index=event.index, tool_arguments=delta.partial_json)
    elif kind == "message_delta":
        reason = event.delta.stop_reason
        output = getattr(event.usage, "output_tokens", 0) or 0
        yield Delta(
            usage=TokenUsage(0, output), finish_reason=STOP_REASONS.get(reason or "", reason)
        )


def translated(exc: Exception) -> Exception:
    """A connection failure or timeout of the SDK as a transient error; status errors (429,
    529 overloaded, 5xx) pass as they are, with their status and Retry-After."""
    import anthropic

    return transient(exc, anthropic.APITimeoutError, anthropic.APIConnectionError)


class AnthropicModel(SdkModel):
    """A :class:`perdure.core.chat.ChatModel` on an ``anthropic.Anthropic`` or
    ``anthropic.AsyncAnthropic`` client (built from ``client_options`` when none is given, with
    ``max_retries=0``). An ``Async…`` client class, or ``asynchronous=True``, makes every call a
    coroutine."""

    def _client(self, asynchronous: bool, options: dict[str, Any]) -> Any:
        import anthropic

        return (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(**options)

    def _create(self) -> Any:
        return self.client.messages.create

    def _request(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        return to_request(request, stream=stream)

    def _response(self, response: Any) -> ModelResponse:
        return from_response(response)

    def _deltas(self, item: Any) -> tuple[Iterable[Delta], bool]:
        return from_event(item), item.type == "message_stop"

    def _translated(self, exc: Exception) -> Exception:
        return translated(exc)


__all__ = ["AnthropicModel", "from_event", "from_response", "to_messages", "to_request"]
