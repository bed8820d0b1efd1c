"""``ctx.context``: the window of a thread to send to a model, with older messages summarized
by a recorded model call (see :mod:`perdure.core.window` for what is chosen)."""

from __future__ import annotations

from collections.abc import Callable

from perdure.core.chat import ChatModel, ModelRequest
from perdure.core.model import Message
from perdure.core.serde import dumps
from perdure.core.tokens import TokenCounter, default_counter
from perdure.core.window import select, summary_marker, summary_range
from perdure.runtime.step.host import StepHost
from perdure.runtime.step.model_calls import CallSpec, call_steps, drain

SUMMARY_PROMPT = (
    "Summarize the conversation below for your own later use: keep facts, decisions, open "
    "questions, names and numbers; drop greetings and repetition. Answer with the summary only."
)


def transcript(messages: tuple[Message, ...]) -> str:
    """Messages as plain text for a summarizer (tool calls and results included)."""
    lines = []
    for m in messages:
        calls = "".join(f" [calls {c.name}({_text(c.arguments)})]" for c in m.tool_calls)
        lines.append(f"{m.role}: {m.content}{calls}")
    return "\n".join(lines)


def rebuild_context(
    host: StepHost,
    messages: list[Message],
    add_summary: Callable[[str, str], Message],
    recent: int,
    max_tokens: int | None,
    summarize: ChatModel | None,
    counter: TokenCounter | None,
) -> list[Message]:
    """See :meth:`perdure.runtime.step.context.Context.context`: the window of ``messages``
    (the thread as the step sees it); a new summary is added with ``add_summary(text,
    marker)``."""
    counter = counter or default_counter()
    window = select(messages, recent=recent, max_tokens=max_tokens, counter=counter)
    if summarize is None or not window.to_summarize:
        return list(window.messages)
    older = window.to_summarize
    first, last = older[0].seq or 0, older[-1].seq or 0
    earlier = summary_range(window.summary) if window.summary is not None else None
    if earlier is not None:
        first = min(first, earlier[0])
        older = (window.summary, *older) if window.summary is not None else older
    request = ModelRequest(
        host.model_id(summarize.name),
        (Message("system", SUMMARY_PROMPT), Message("user", transcript(older))),
    )
    spec = CallSpec(f"context.summary.{first}-{last}", summarize, request, False, None, None)
    reply = drain(call_steps(host, spec))
    text = f"Summary of messages {first} to {last}: {reply.text}"
    summary = add_summary(text, summary_marker(first, last))
    n = _prompt_len(window.messages)
    rest = [m for m in window.messages[n:] if m is not window.summary]
    return [*window.messages[:n], summary, *rest]


def _prompt_len(messages: tuple[Message, ...]) -> int:
    n = 0
    while n < len(messages) and messages[n].role == "system" and summary_range(messages[n]) is None:
        n += 1
    return n


def _text(value: object) -> str:
    return value if isinstance(value, str) else dumps(value).decode()
