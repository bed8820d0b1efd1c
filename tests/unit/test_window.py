"""Choosing a model's context from a thread: prompt, latest summary, recent whole rounds."""

from __future__ import annotations

import pytest

from perdure.core.errors import InvalidInputError
from perdure.core.model import Message, ToolCall
from perdure.core.tokens import SimpleCounter
from perdure.core.window import select, summary_marker, summary_range

COUNTER = SimpleCounter()


def thread() -> list[Message]:
    return [
        Message("system", "you are helpful", seq=1),
        Message("user", "one", seq=2),
        Message("assistant", "two", seq=3),
        Message("user", "three", seq=4),
        Message("assistant", "", (ToolCall("a", "t"), ToolCall("b", "t")), seq=5),
        Message("tool", "ra", tool_call_id="a", seq=6),
        Message("tool", "rb", tool_call_id="b", seq=7),
    ]


def test_recent_messages_never_split_a_tool_call_from_its_results() -> None:
    window = select(thread(), recent=2, counter=COUNTER)
    assert [m.seq for m in window.messages] == [1, 5, 6, 7]
    assert [m.seq for m in window.to_summarize] == [2, 3, 4]


def test_a_summary_replaces_what_it_covers() -> None:
    summary = Message("system", "they said one, two", tool_call_id=summary_marker(2, 3), seq=8)
    window = select([*thread(), summary], recent=1, counter=COUNTER)
    assert window.summary == summary
    assert [m.seq for m in window.messages] == [1, 8, 5, 6, 7]
    assert [m.seq for m in window.to_summarize] == [4]
    assert summary_range(summary) == (2, 3)
    assert summary_range(thread()[0]) is None


def test_max_tokens_drops_the_oldest_rounds_but_never_the_last() -> None:
    everything = select(thread(), recent=100, counter=COUNTER)
    assert [m.seq for m in everything.messages] == [1, 2, 3, 4, 5, 6, 7]
    tight = select(thread(), recent=100, max_tokens=1, counter=COUNTER)
    assert [m.seq for m in tight.messages] == [1, 5, 6, 7]
    assert [m.seq for m in tight.to_summarize] == [2, 3, 4]


def test_unsent_messages_of_this_step_are_always_recent() -> None:
    window = select([*thread(), Message("user", "new")], recent=1, counter=COUNTER)
    assert [m.content for m in window.messages] == ["you are helpful", "new"]


def test_bad_limits_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        select(thread(), recent=0, counter=COUNTER)
    with pytest.raises(InvalidInputError):
        select(thread(), max_tokens=0, counter=COUNTER)
