"""Rebuilding a model's context from a thread; pure.

What is sent: the thread's leading system messages (the prompt), the latest summary, and the
recent messages, never splitting an assistant message that asks for tools from the tool
messages that answer it, and always including the last round (so this round's tool results
are there). The messages older than the recent ones and not yet covered by a summary are
returned as ``to_summarize``: the runtime summarizes them with a recorded model call and appends
the summary to the thread.

A summary is a ``system`` message whose ``tool_call_id`` is ``summary:<first>-<last>``: the
thread positions (``seq``) of the messages it covers. Providers never see that marker (it is not
a tool message); :func:`summary_range` reads it back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from perdure.core.errors import InvalidInputError
from perdure.core.model import Message
from perdure.core.tokens import TokenCounter

_SUMMARY = re.compile(r"^summary:(\d+)-(\d+)$")


def summary_marker(first: int, last: int) -> str:
    """The marker of a summary covering thread positions ``first`` to ``last``."""
    return f"summary:{first}-{last}"


def summary_range(message: Message) -> tuple[int, int] | None:
    """The thread positions a summary message covers, or None for any other message."""
    if message.role != "system" or message.tool_call_id is None:
        return None
    found = _SUMMARY.match(message.tool_call_id)
    return (int(found.group(1)), int(found.group(2))) if found else None


@dataclass(frozen=True, slots=True)
class Window:
    """What to send (``messages``), the latest ``summary`` in it, and what a new summary should
    cover (``to_summarize``, oldest first; empty when nothing fell out of the window)."""

    messages: tuple[Message, ...]
    summary: Message | None
    to_summarize: tuple[Message, ...]


def rounds(messages: Sequence[Message]) -> list[list[Message]]:
    """The messages in units that must travel together: an assistant message with tool calls
    and the tool messages after it; every other message alone."""
    units: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and units and _open_call(units[-1], m):
            units[-1].append(m)
        else:
            units.append([m])
    return units


def _open_call(unit: list[Message], tool: Message) -> bool:
    head = unit[0]
    return head.role == "assistant" and any(c.id == tool.tool_call_id for c in head.tool_calls)


def select(
    messages: Sequence[Message],
    *,
    recent: int = 20,
    max_tokens: int | None = None,
    counter: TokenCounter,
) -> Window:
    """Choose the context (see the module docstring). ``recent`` counts messages (rounded up to
    whole units); ``max_tokens`` drops the oldest recent units until the whole fits, but never
    the last one."""
    if recent < 1:
        raise InvalidInputError("ctx.context(recent=...) must be >= 1")
    if max_tokens is not None and max_tokens < 1:
        raise InvalidInputError("ctx.context(max_tokens=...) must be >= 1")
    prompt: list[Message] = []
    rest = list(messages)
    while rest and rest[0].role == "system" and summary_range(rest[0]) is None:
        prompt.append(rest.pop(0))
    summary: Message | None = None
    covered = 0
    for m in rest:
        found = summary_range(m)
        if found is not None and found[1] >= covered:
            summary, covered = m, found[1]
    body = [m for m in rest if summary_range(m) is None and (m.seq is None or m.seq > covered)]
    units = rounds(body)
    kept: list[list[Message]] = []
    count = 0
    while units and (not kept or count < recent):
        unit = units.pop()
        kept.insert(0, unit)
        count += len(unit)
    if max_tokens is not None:
        fixed = [*prompt, *([summary] if summary else [])]
        while (
            len(kept) > 1
            and counter.count_messages(fixed + [m for u in kept for m in u]) > max_tokens
        ):
            units.append(kept.pop(0))
    dropped = tuple(m for u in units for m in u if m.seq is not None)
    chosen = (*prompt, *([summary] if summary else []), *(m for u in kept for m in u))
    return Window(chosen, summary, dropped)
