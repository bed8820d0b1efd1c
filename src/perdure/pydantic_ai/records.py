"""pydantic-ai values as perdure records: a model request's fingerprint, a reply and its cost, a
tool call's outcome. Pure functions; pydantic-ai's own serialisation
(``ModelMessagesTypeAdapter``) does the work.

A request is recorded and hashed without what changes from one execution of the step to the next
(each part's ``timestamp``, the agent run's ``run_id`` and ``conversation_id``): the same
conversation hashes the same when the step runs again, so its recorded reply is returned. A reply
is recorded whole and handed to pydantic-ai as read back from its record, the first time too, so
the conversation that follows is the same on every execution.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from perdure.core.chat import Pricing, TokenUsage
from perdure.core.errors import InvalidInputError
from perdure.core.model import JSON

VOLATILE = frozenset({"timestamp", "run_id", "conversation_id"})
"""Message fields that differ between two executions of the same step: not part of the hash."""

CONTROL_FLOW = (ModelRetry, ToolFailed, ApprovalRequired, CallDeferred)
"""What a pydantic-ai tool raises to steer the run, recorded as the call's outcome."""


def jsonable(value: Any) -> JSON:
    """``value`` as JSON, by pydantic's rules (models, dataclasses, dates, bytes as base64)."""
    found: JSON = to_jsonable_python(value, fallback=repr, bytes_mode="base64")
    return found


def fingerprint(
    model: str,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    parameters: ModelRequestParameters,
) -> dict[str, JSON]:
    """The recorded request of one model call: the model id, the conversation without its
    volatile fields, the tools offered and the settings."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return {
        "model": model,
        "messages": _stable(dumped),
        "tools": [t.name for t in parameters.function_tools],
        "output_tools": [t.name for t in parameters.output_tools],
        "settings": jsonable(dict(settings or {})),
    }


def reply_json(response: ModelResponse) -> JSON:
    """A reply as it is recorded."""
    dumped: list[JSON] = ModelMessagesTypeAdapter.dump_python([response], mode="json")
    return dumped[0]


def reply_from(data: JSON) -> ModelResponse:
    """Read a recorded reply back."""
    (message,) = ModelMessagesTypeAdapter.validate_python([data])
    if not isinstance(message, ModelResponse):
        raise InvalidInputError("a recorded pydantic-ai reply is not a model response")
    return message


def usage_of(response: ModelResponse) -> TokenUsage:
    """The reply's tokens as perdure counts them."""
    usage = response.usage
    return TokenUsage(int(usage.input_tokens or 0), int(usage.output_tokens or 0))


def cost_of(response: ModelResponse, pricing: Pricing | None) -> float:
    """The reply's cost: by ``pricing`` when given, else what pydantic-ai priced it at (0 when
    it could not)."""
    if pricing is not None:
        return pricing.cost(usage_of(response))
    price = getattr(response.usage, "cost", None)
    try:
        return float(price) if price is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def returned(value: Any) -> dict[str, JSON]:
    """A tool call's outcome when it returned ``value``."""
    return {"return": jsonable(value)}


def raised(exc: BaseException) -> dict[str, JSON]:
    """A tool call's outcome when it steered the run (:data:`CONTROL_FLOW`)."""
    if isinstance(exc, ModelRetry | ToolFailed):
        return {"raise": type(exc).__name__, "message": exc.message}
    if isinstance(exc, ApprovalRequired):
        return {"raise": "ApprovalRequired", "metadata": jsonable(exc.metadata)}
    if isinstance(exc, CallDeferred):
        return {"raise": "CallDeferred", "metadata": jsonable(exc.metadata), "kind": exc.kind}
    raise TypeError(f"{type(exc).__name__} is not a pydantic-ai control-flow exception")


def outcome(recorded: JSON) -> Any:
    """The tool call's result from its recorded outcome, or the exception it raised, raised
    again."""
    data = recorded if isinstance(recorded, Mapping) else {}
    kind = data.get("raise")
    if kind is None:
        return data.get("return")
    metadata = data.get("metadata")
    meta = dict(metadata) if isinstance(metadata, Mapping) else None
    message = str(data.get("message") or "")
    if kind == "ModelRetry":
        raise ModelRetry(message)
    if kind == "ToolFailed":
        raise ToolFailed(message)
    if kind == "ApprovalRequired":
        raise ApprovalRequired(meta)
    if data.get("kind") == "question":
        raise CallDeferred(meta, kind="question")
    raise CallDeferred(meta, kind="external")


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value
