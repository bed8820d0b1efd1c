"""Counting tokens, to fit a context into a model's window and to estimate lost attempts; pure.

A :class:`TokenCounter` counts the tokens of a text and of a list of messages. The default,
:class:`SimpleCounter`, estimates four characters per token plus a few tokens per message (no
dependency, close enough to budget a context). :func:`default_counter` uses ``tiktoken`` when it
is installed and its encoding is available locally, and the simple estimate otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Protocol

from perdure.core.model import Message
from perdure.core.serde import dumps

PER_MESSAGE = 4
"""Tokens a message costs besides its text (role, separators)."""


class TokenCounter(Protocol):
    """Counts tokens; pass one to ``ctx.context(counter=...)`` or ``ctx.model_call``."""

    def count(self, text: str) -> int: ...

    def count_messages(self, messages: Sequence[Message]) -> int: ...


class SimpleCounter:
    """About four characters per token, plus :data:`PER_MESSAGE` per message."""

    def __init__(self, encode: Callable[[str], int] | None = None) -> None:
        self._encode = encode

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        if self._encode is not None:
            return self._encode(text)
        return (len(text) + 3) // 4

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` as a request (text, tool calls, per-message overhead)."""
        total = 0
        for m in messages:
            total += PER_MESSAGE + self.count(m.content)
            for call in m.tool_calls:
                args = call.arguments if isinstance(call.arguments, str) else dumps(call.arguments)
                total += self.count(call.name) + self.count(
                    args if isinstance(args, str) else args.decode()
                )
        return total


@cache
def default_counter() -> TokenCounter:
    """``tiktoken``'s ``o200k_base`` when installed and loadable, else :class:`SimpleCounter`."""
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be loaded here
        return SimpleCounter()
    return SimpleCounter(lambda text: len(encoding.encode(text, disallowed_special=())))
