"""Tool schemas from type hints and pydantic models; lenient reading of a model's arguments."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from perdure.core.errors import DefinitionError
from perdure.core.tools import ToolArgumentError, ToolRegistry, lenient_json, make_tool


def search(query: str, limit: int = 5, lang: Literal["en", "fr"] | None = None) -> list[str]:
    """Search the web.

    More text that the model does not need."""
    return [query] * limit


class Email(BaseModel):
    to: str
    subject: str


def test_a_schema_comes_from_type_hints_and_the_docstring() -> None:
    tool = make_tool(search)
    assert tool.description == "Search the web."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "lang": {"enum": ["en", "fr"]},
        },
        "required": ["query"],
    }


def test_a_pydantic_parameter_gives_its_schema_and_is_validated() -> None:
    def send(email: Email) -> str:
        return email.to

    tool = make_tool(send, side_effect=True)
    assert tool.parameters["required"] == ["to", "subject"]
    assert tool.invoke(tool.bind('{"to": "a@b.c", "subject": "hi"}')) == "a@b.c"
    with pytest.raises(ToolArgumentError):
        tool.bind({"to": "a@b.c"})


def test_arguments_are_checked_against_the_schema() -> None:
    tool = make_tool(search)
    assert tool.bind('{"query": "x"}') == {"query": "x"}
    for bad in ('{"limit": 3}', '{"query": 3}', '{"query": "x", "other": 1}', "[1]"):
        with pytest.raises(ToolArgumentError):
            tool.bind(bad)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"q": "x"}', {"q": "x"}),
        ('```json\n{"q": "x"}\n```', {"q": "x"}),
        ('{"q": "x",}', {"q": "x"}),
        ('{"q": "x"', {"q": "x"}),
        ('{"q": "x"} trailing', {"q": "x"}),
        ("  ", {}),
    ],
)
def test_lenient_json_reads_what_models_write(text: str, value: object) -> None:
    assert lenient_json(text) == value


@pytest.mark.parametrize("text", ["{q: x}", "not json", '{"q": '])
def test_unreadable_arguments_are_a_tool_argument_error(text: str) -> None:
    with pytest.raises(ToolArgumentError):
        lenient_json(text)


def test_a_registry_refuses_a_name_twice_and_a_cached_side_effect() -> None:
    tools = ToolRegistry()
    tools.tool(search)
    with pytest.raises(DefinitionError):
        tools.tool(search)
    with pytest.raises(DefinitionError):
        tools.tool(side_effect=True, cache=True)(lambda x: x)
    assert [s.name for s in tools.specs()] == ["search"]


def test_huge_or_hostile_arguments_give_a_short_error_not_a_traceback() -> None:
    tool = make_tool(search)
    for text in ("\x00" * 1_000_000, "\udcff{", "{" * 100_000):
        with pytest.raises(ToolArgumentError) as caught:
            tool.bind(text)
        assert len(caught.value.message) < 400
