"""OpenAI Agents SDK values as perdure records: a model request's fingerprint, a reply and its
usage, a tool's output. Pure functions; the SDK's own pydantic types do the work.

A reply is recorded whole (its Responses-API output items, usage and ids) and handed to the SDK
as read back from its record, the first time too, so the turns that follow (tool calls,
handoffs, the final output) are the same on every execution of the step. Items are recorded by
their aliases and with only the fields that were set, as the SDK itself copies them: read back,
they are the items the provider sent.
"""

from __future__ import annotations

from typing import Any

from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseOutputItem
from agents.model_settings import ModelSettings
from agents.tool import Tool
from agents.usage import Usage
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from perdure.core.chat import Pricing, TokenUsage
from perdure.core.model import JSON

_OUTPUT: TypeAdapter[list[TResponseOutputItem]] = TypeAdapter(list[TResponseOutputItem])
_USAGE: TypeAdapter[Usage] = TypeAdapter(Usage)


def jsonable(value: Any) -> JSON:
    """``value`` as JSON, by pydantic's rules."""
    found: JSON = to_jsonable_python(value, fallback=repr, bytes_mode="base64")
    return found


def fingerprint(
    model: str,
    instructions: str | None,
    input: Any,
    settings: ModelSettings,
    tools: list[Tool],
    output: AgentOutputSchemaBase | None,
    handoffs: list[Handoff[Any, Any]],
) -> dict[str, JSON]:
    """The recorded request of one model call: the model, the instructions, the input items,
    the names of the tools and handoffs offered, the output type and the settings."""
    return {
        "model": model,
        "instructions": instructions,
        "input": jsonable(input),
        "tools": [getattr(t, "name", type(t).__name__) for t in tools],
        "handoffs": [h.tool_name for h in handoffs],
        "output": None if output is None else output.name(),
        "settings": jsonable(settings.to_json_dict()),
    }


def reply_json(response: ModelResponse) -> dict[str, JSON]:
    """A reply as it is recorded."""
    return {
        "output": _OUTPUT.dump_python(
            response.output, mode="json", by_alias=True, exclude_unset=True
        ),
        "usage": _USAGE.dump_python(response.usage, mode="json"),
        "response_id": response.response_id,
        "request_id": response.request_id,
    }


def reply_from(data: JSON) -> ModelResponse:
    """Read a recorded reply back."""
    found = data if isinstance(data, dict) else {}
    response_id, request_id = found.get("response_id"), found.get("request_id")
    return ModelResponse(
        output=_OUTPUT.validate_python(found.get("output") or []),
        usage=_USAGE.validate_python(found.get("usage") or {}),
        response_id=response_id if isinstance(response_id, str) else None,
        request_id=request_id if isinstance(request_id, str) else None,
    )


def usage_of(response: ModelResponse) -> TokenUsage:
    """The reply's tokens as perdure counts them."""
    return TokenUsage(response.usage.input_tokens, response.usage.output_tokens)


def cost_of(response: ModelResponse, pricing: Pricing | None) -> float:
    """The reply's cost by ``pricing`` (0 without one: the SDK does not price replies)."""
    return 0.0 if pricing is None else pricing.cost(usage_of(response))
