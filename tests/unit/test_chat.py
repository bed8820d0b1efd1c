"""Model-call records: usage from a provider is never negative, pricing is validated, a reply
is put back together from its deltas."""

from __future__ import annotations

import pytest

from perdure.core.chat import Delta, Pricing, ReplyBuilder, TokenUsage, message_from_json
from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.model import ToolCall


def test_usage_a_provider_reports_badly_counts_as_none() -> None:
    assert TokenUsage(-5, 3) == TokenUsage(0, 3)
    assert TokenUsage.from_json({"input_tokens": "many", "output_tokens": True}) == TokenUsage()
    assert TokenUsage.from_json(None).total == 0


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan"), "1", True])
def test_pricing_refuses_what_is_not_a_finite_price(bad: object) -> None:
    with pytest.raises(DefinitionError):
        Pricing(input_per_million=bad)  # type: ignore[arg-type]


def test_pricing_costs_per_million_tokens() -> None:
    assert Pricing(3.0, 15.0).cost(TokenUsage(1_000_000, 100_000)) == 4.5


def test_deltas_are_put_back_together_in_index_order() -> None:
    builder = ReplyBuilder()
    for d in (
        Delta(text="Hel"),
        Delta(tool_index=1, tool_id="b", tool_name="second", tool_arguments='{"x"'),
        Delta(tool_index=0, tool_id="a", tool_name="first", tool_arguments="{}"),
        Delta(text="lo"),
        Delta(tool_index=1, tool_arguments=": 1}"),
        Delta(usage=TokenUsage(7, 0)),
        Delta(usage=TokenUsage(0, 3), finish_reason="tool_calls"),
    ):
        builder.add(d)
    reply = builder.response()
    assert reply.message.content == "Hello"
    assert reply.message.tool_calls == (
        ToolCall("a", "first", "{}"),
        ToolCall("b", "second", '{"x": 1}'),
    )
    assert (reply.usage, reply.finish_reason) == (TokenUsage(7, 3), "tool_calls")


def test_a_recorded_message_that_is_not_one_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        message_from_json(["not", "a", "message"])
