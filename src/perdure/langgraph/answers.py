"""What records a person's answer to a LangGraph interrupt: the pending write LangGraph itself
makes for ``Command(resume=value)`` — channel ``__resume__`` of the null task on the thread's
newest checkpoint — decided from that checkpoint's pending writes, without I/O.

LangGraph reads a task's status from the writes of its superstep: a task that recorded an
``__interrupt__`` write and no output write is waiting for an answer; a null-task
``__resume__`` write is the answer the next run hands to the one waiting interrupt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME

from perdure.core.errors import (
    GraphInterruptAnsweredError,
    GraphNotInterruptedError,
    InvalidInputError,
)

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""The task id LangGraph files a ``Command``'s writes under (a stored format, so stable)."""

_CONTROL = frozenset({ERROR, INTERRUPT, RESUME, "__error_source_node__"})
"""Writes that say what happened to a task rather than what it produced."""


def pending_interrupts(writes: Sequence[tuple[str, str, Any]]) -> list[Any]:
    """The interrupts waiting for an answer (LangGraph's ``Interrupt``: ``id``, ``value``): the
    latest interrupt of each task that has no output write (LangGraph's rule: a task with an
    output write finished)."""
    finished = {task for task, channel, _ in writes if channel not in _CONTROL}
    found: list[Any] = []
    for task, channel, value in writes:
        if channel != INTERRUPT or task == NULL_TASK_ID or task in finished:
            continue
        found.extend(value if isinstance(value, (list, tuple)) else [value])
    return found


def pending_interrupt_ids(writes: Sequence[tuple[str, str, Any]]) -> list[str]:
    """The ids of :func:`pending_interrupts`."""
    return [str(getattr(one, "id", "")) for one in pending_interrupts(writes)]


def recorded_answer(writes: Sequence[tuple[str, str, Any]]) -> tuple[bool, Any]:
    """Whether the checkpoint holds an answer for its waiting interrupt, and which."""
    for task, channel, value in writes:
        if task == NULL_TASK_ID and channel == RESUME:
            return True, value
    return False, None


def needs_write(
    writes: Sequence[tuple[str, str, Any]],
    value: Any,
    same: Callable[[Any, Any], bool],
    interrupt_id: str | None = None,
) -> bool:
    """Whether ``value`` must be written to answer the checkpoint's waiting interrupt (False: the
    same answer, by ``same``, is recorded already). Raises :class:`GraphNotInterruptedError`
    when nothing waits (or ``interrupt_id`` does not), :class:`GraphInterruptAnsweredError` when
    another answer is recorded, and :class:`InvalidInputError` for what one answer cannot do
    (several interrupts waiting, an answer keyed by interrupt id, None)."""
    if value is None:
        raise InvalidInputError(
            "None is not an answer to an interrupt (LangGraph reads it as no answer)",
            fix="answer with a value, e.g. resume(graph, 'yes', config)",
        )
    if isinstance(value, dict) and value and all(_interrupt_id(k) for k in value):
        raise InvalidInputError(
            "answers keyed by interrupt id are not recorded by perdure.langgraph.resume",
            fix="answer one interrupt at a time with its value, or use "
            "graph.invoke(Command(resume={...}), config)",
        )
    waiting = pending_interrupt_ids(writes)
    if interrupt_id is not None and interrupt_id not in waiting:
        raise GraphNotInterruptedError(f"interrupt {interrupt_id} waits for no answer")
    answered, earlier = recorded_answer(writes)
    if answered:
        if not same(earlier, value):
            raise GraphInterruptAnsweredError(
                f"this interrupt was answered {earlier!r} already; {value!r} is not recorded"
            )
        return False
    if not waiting:
        raise GraphNotInterruptedError("the thread's newest checkpoint waits for no answer")
    if len(waiting) > 1:
        raise InvalidInputError(
            f"{len(waiting)} interrupts wait for an answer; one value cannot answer them all",
            fix="answer them with graph.invoke(Command(resume={interrupt_id: value, ...}))",
        )
    return True


def _interrupt_id(key: object) -> bool:
    return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)
