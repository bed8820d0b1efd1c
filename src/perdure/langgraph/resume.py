"""Answering a LangGraph interrupt so that no crash loses the answer.

``graph.invoke(Command(resume=value), config)`` hands the answer to LangGraph's loop, which
queues its write on a background thread and runs the interrupted node at once: a process that
dies in that node (or, with ``durability="async"``, in the next one, while the step's
checkpoint is still being written) can leave no trace of the answer, and the graph asks again.
:func:`resume` records the answer first — the same write, committed — and only then runs the
graph, with ``graph.invoke(None, config)``: after a crash at any point after it recorded the
answer, ``graph.invoke(None, config)`` (or :func:`resume` again) continues with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig

from perdure.core.errors import GraphNotInterruptedError, InvalidInputError
from perdure.langgraph.saver import PerdureSaver


def resume(
    graph: Any,
    value: Any,
    config: RunnableConfig,
    *,
    interrupt_id: str | None = None,
    **kwargs: Any,
) -> Any:
    """Answer the interrupt the config's thread waits for with ``value``, durably, then run
    the graph on (``graph.invoke(None, config, **kwargs)``) and return what it returns.

    ``graph`` is compiled with a :class:`~perdure.langgraph.PerdureSaver`. The answer is
    committed before any node runs, so a crash at any later point never asks the person again:
    ``graph.invoke(None, config)`` or the same ``resume`` call continues with the recorded
    answer. When the thread waits for no answer (it was consumed before a crash), the graph is
    run on as it stands. ``interrupt_id`` (the ``id`` of the ``Interrupt`` shown to the person)
    makes sure the answer goes to that question and no later one. See
    :meth:`PerdureSaver.record_resume` for what is refused."""
    _record(saver_of(graph), value, config, interrupt_id)
    return graph.invoke(None, config, **kwargs)


async def aresume(
    graph: Any,
    value: Any,
    config: RunnableConfig,
    *,
    interrupt_id: str | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`resume` for async code: the answer is committed in a worker thread, then
    ``await graph.ainvoke(None, config, **kwargs)``."""
    await asyncio.to_thread(_record, saver_of(graph), value, config, interrupt_id)
    return await graph.ainvoke(None, config, **kwargs)


def saver_of(graph: Any) -> PerdureSaver:
    """The :class:`PerdureSaver` a compiled graph checkpoints with."""
    saver = getattr(graph, "checkpointer", None)
    if not isinstance(saver, PerdureSaver):
        raise InvalidInputError(
            f"the graph's checkpointer is {type(saver).__name__}, not a PerdureSaver",
            fix="compile the graph with checkpointer=PerdureSaver(...) (or AsyncPerdureSaver)",
        )
    return saver


def _record(
    saver: PerdureSaver, value: Any, config: RunnableConfig, interrupt_id: str | None
) -> None:
    try:
        saver.record_resume(config, value, interrupt_id=interrupt_id)
    except GraphNotInterruptedError:
        if saver.get_tuple(config) is None:
            raise  # a thread that never ran has nothing to answer or continue
