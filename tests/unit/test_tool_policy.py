"""Which of a framework's tools are side-effecting or cached, and the key they are given: a tool
declared twice, a reconciler for a read-only tool and a plain tool that takes a key are refused;
the key leaves the schema the model sees."""

from __future__ import annotations

import pytest

from perdure.core.effects import Reconciled
from perdure.core.errors import DefinitionError
from perdure.runtime.step.tool_policy import ToolKind, ToolPolicy, without_key

SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "idempotency_key": {"type": "string"}},
    "required": ["to", "idempotency_key"],
}


def test_each_tool_has_the_kind_it_was_declared_with() -> None:
    policy = ToolPolicy.of(side_effects={"send"}, cached={"search"})
    assert [policy.kind(t) for t in ("send", "search", "clock")] == [
        ToolKind.SIDE_EFFECT,
        ToolKind.CACHED,
        ToolKind.PLAIN,
    ]


def test_a_tool_cannot_be_both_side_effecting_and_cached() -> None:
    with pytest.raises(DefinitionError, match="both side-effecting and cached"):
        ToolPolicy.of(side_effects={"send"}, cached={"send"})


def test_a_reconciler_needs_a_side_effecting_tool() -> None:
    with pytest.raises(DefinitionError, match="not side-effecting"):
        ToolPolicy.of(cached={"search"}, reconcile={"search": lambda r, k: Reconciled.unknown()})


def test_a_single_name_given_as_a_string_is_refused() -> None:
    with pytest.raises(DefinitionError, match="not the string"):
        ToolPolicy.of(side_effects="send")


def test_the_key_leaves_the_schema_of_an_effect_tool_and_is_refused_to_a_plain_one() -> None:
    policy = ToolPolicy.of(side_effects={"send"})
    assert policy.keyed_schema("send", SCHEMA) == {
        "type": "object",
        "properties": {"to": {"type": "string"}},
        "required": ["to"],
    }
    assert policy.keyed_schema("send", {"type": "object", "properties": {}}) is None
    with pytest.raises(DefinitionError, match="neither side-effecting nor cached"):
        policy.keyed_schema("other", SCHEMA)
    assert without_key({"to": "ana", "idempotency_key": "k"}) == {"to": "ana"}
