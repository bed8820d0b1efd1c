"""Model calls, the pure parts: the request a step sends, the reply it gets, token usage and
cost, the deltas of a streamed reply, and the small protocol a model client implements.

A model is anything with a ``name`` (the model id: recorded on every call and in the run's
release manifest), a ``complete(request)`` that returns a :class:`ModelResponse`, and a
``stream(request)`` that yields :class:`Delta` items; either may be ``async``. The provider
adapters in :mod:`perdure.providers` implement it for the OpenAI and Anthropic SDKs; a test or a
demo implements it with a script. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.model import Message, ToolCall
from perdure.core.values import JSON

MODEL_TARGET = "model"
"""The effect target of every model call (its operation is the model id)."""


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens a call consumed: ``input_tokens`` (the prompt) and ``output_tokens`` (the reply)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        # figures come from a provider: what is not a count of tokens counts as none
        for name in ("input_tokens", "output_tokens"):
            value = getattr(self, name)
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
            object.__setattr__(self, name, value if ok else 0)

    @property
    def total(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, JSON]:
        """The usage as recorded on the call."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    @classmethod
    def from_json(cls, data: Any) -> TokenUsage:
        """Read what :meth:`to_json` wrote (missing figures are 0)."""
        data = data if isinstance(data, dict) else {}
        return cls(data.get("input_tokens") or 0, data.get("output_tokens") or 0)


@dataclass(frozen=True, slots=True)
class Pricing:
    """What a model costs, in your currency per million tokens."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DefinitionError(f"pricing {name}={value!r} is not a number")
            if not 0 <= value < float("inf"):
                raise DefinitionError(f"pricing {name}={value!r} must be a finite number >= 0")

    def cost(self, usage: TokenUsage) -> float:
        """The cost of ``usage``."""
        return round(
            usage.input_tokens * self.input_per_million / 1e6
            + usage.output_tokens * self.output_per_million / 1e6,
            10,
        )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: a name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, JSON] = field(default_factory=lambda: {"type": "object"})

    def to_json(self) -> dict[str, JSON]:
        """The spec as recorded in a request."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What one model call sends: the model id, the messages, the tools, and parameters such as
    ``temperature`` or ``max_tokens`` (passed on to the provider as they are)."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    params: dict[str, JSON] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        """The request as recorded and hashed (messages without their thread positions, so the
        same conversation hashes the same however it was read)."""
        return {
            "model": self.model,
            "messages": [message_json(m) for m in self.messages],
            "tools": [t.to_json() for t in self.tools],
            "params": dict(self.params),
        }


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model client returns: the assistant ``message``, the ``usage`` the provider
    reported, and why it stopped (``finish_reason``: ``stop``, ``tool_calls``, ``length``…)."""

    message: Message
    usage: TokenUsage = TokenUsage()
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed reply: reply ``text``, or a fragment of tool call number
    ``tool_index`` (its ``tool_id`` and ``tool_name`` come with the first fragment, the
    ``tool_arguments`` text in pieces), or the ``usage`` and ``finish_reason`` at the end."""

    text: str = ""
    tool_index: int | None = None
    tool_id: str | None = None
    tool_name: str | None = None
    tool_arguments: str = ""
    usage: TokenUsage | None = None
    finish_reason: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A model client: see the module docstring. ``complete`` and ``stream`` may be ``async``
    (return an awaitable, or an async iterable)."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse | Awaitable[ModelResponse]: ...

    def stream(self, request: ModelRequest) -> Iterable[Delta] | AsyncIterable[Delta]: ...


class ReplyBuilder:
    """Puts a streamed reply back together from its deltas (text, tool calls in order of their
    index with their raw argument text, usage, finish reason)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, list[str]] = {}
        self.ids: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.usage = TokenUsage()
        self.finish_reason: str | None = None

    def add(self, delta: Delta) -> None:
        """Take one delta."""
        if delta.text:
            self.text.append(delta.text)
        if delta.tool_index is not None:
            i = delta.tool_index
            self.calls.setdefault(i, [])
            if delta.tool_id:
                self.ids[i] = delta.tool_id
            if delta.tool_name:
                self.names[i] = self.names.get(i, "") + delta.tool_name
            if delta.tool_arguments:
                self.calls[i].append(delta.tool_arguments)
        if delta.usage is not None:
            self.usage = TokenUsage(
                delta.usage.input_tokens or self.usage.input_tokens,
                delta.usage.output_tokens or self.usage.output_tokens,
            )
        if delta.finish_reason:
            self.finish_reason = delta.finish_reason

    def response(self) -> ModelResponse:
        """The reply so far as a response."""
        calls = tuple(
            ToolCall(self.ids.get(i, f"call_{i}"), self.names.get(i, ""), "".join(parts))
            for i, parts in sorted(self.calls.items())
        )
        return ModelResponse(
            Message("assistant", "".join(self.text), calls), self.usage, self.finish_reason
        )


def message_json(message: Message) -> dict[str, JSON]:
    """A message as it is recorded in a model request or reply (no thread position)."""
    out: dict[str, JSON] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [c.to_json() for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def message_from_json(data: Any) -> Message:
    """Read what :func:`message_json` wrote."""
    if not isinstance(data, dict) or not isinstance(data.get("role"), str):
        raise InvalidInputError("a recorded message is not an object with a role")
    calls = tuple(
        ToolCall(str(c.get("id", "")), str(c.get("name", "")), c.get("arguments"))
        for c in data.get("tool_calls") or ()
        if isinstance(c, dict)
    )
    call_id = data.get("tool_call_id")
    return Message(
        data["role"],
        str(data.get("content") or ""),
        calls,
        call_id if isinstance(call_id, str) else None,
    )


def as_messages(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Check a step's message list: Message records with a known role."""
    for m in messages:
        if not isinstance(m, Message):
            raise InvalidInputError(
                f"model_call messages must be Message records, got {type(m).__name__}",
                fix="pass ctx.messages, ctx.context(...) or Message(role, content)",
            )
        if m.role not in {"system", "user", "assistant", "tool"}:
            raise InvalidInputError(f"message role {m.role!r} is unknown")
    return tuple(messages)
