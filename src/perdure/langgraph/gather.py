"""The async side of :class:`~perdure.langgraph.store.PerdureStore`: calls made concurrently on
one event loop run together, as one batch in one worker thread.

A graph's parallel nodes, or ``asyncio.gather`` over many ``store.aget``/``aput``/``asearch``
calls, start their operations in the same turn of the loop. Each one alone would be a hop to a
worker thread and a transaction; gathered, the operations started in one turn run as one
``batch`` (its reads read, its puts and deletes committed together), with each distinct read
read once, and the next turn's wait while it runs (one batch at a time per loop), as LangGraph's
own ``AsyncBatchedBaseStore`` does. When the gathered batch is refused as bad input, each
caller's operations run again on their own, so only the caller at fault gets the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, Op, Result, SearchOp

from perdure.core.errors import InvalidInputError

Batch = Callable[[list[Op]], list[Result]]
"""The store's synchronous ``batch``."""


class Gather:
    """The operations waiting for the next batch, on each event loop that has some."""

    def __init__(self, batch: Batch) -> None:
        self._batch = batch
        self._pending: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, list[tuple[asyncio.Future[list[Result]], list[Op]]]
        ] = weakref.WeakKeyDictionary()
        self._tasks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()  # loops of other threads may share the store

    async def run(self, ops: list[Op]) -> list[Result]:
        """The results of ``ops``, run in the next batch of this loop."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[list[Result]] = loop.create_future()
        with self._lock:
            self._pending.setdefault(loop, []).append((fut, ops))
            task = self._tasks.get(loop)
            if task is None or task.done():
                self._tasks[loop] = loop.create_task(self._drain(loop))
        return await fut

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run the batches of ``loop`` one after the other while callers add operations."""
        while waiting := [(f, ops) for f, ops in self._taken(loop) if not f.done()]:
            try:
                outcomes = await asyncio.to_thread(self._run, [ops for _, ops in waiting])
            except BaseException as exc:  # the thread could not run (the loop is closing)
                for fut, _ in waiting:
                    if not fut.done():
                        fut.set_exception(exc)
                raise
            for (fut, _), outcome in zip(waiting, outcomes, strict=True):
                if fut.done():
                    continue
                if isinstance(outcome, BaseException):
                    fut.set_exception(outcome)
                else:
                    fut.set_result(outcome)

    def _taken(
        self, loop: asyncio.AbstractEventLoop
    ) -> list[tuple[asyncio.Future[list[Result]], list[Op]]]:
        with self._lock:
            return self._pending.pop(loop, [])

    def _run(self, groups: list[list[Op]]) -> list[list[Result] | BaseException]:
        """Each group's results (or the error it alone raises), all run as one batch."""
        try:
            return split(self._batch_once([op for ops in groups for op in ops]), groups)
        except InvalidInputError as exc:
            if len(groups) == 1:
                return [exc]
        except Exception as exc:  # the store's: every caller's batch would meet it
            return [exc] * len(groups)
        outcomes: list[list[Result] | BaseException] = []
        for ops in groups:
            try:
                outcomes.append(self._batch_once(ops))
            except Exception as exc:
                outcomes.append(exc)
        return outcomes

    def _batch_once(self, ops: list[Op]) -> list[Result]:
        """``batch`` of ``ops``, each distinct read read once."""
        distinct: list[Op] = []
        where: list[int] = []
        seen: dict[Any, int] = {}
        for op in ops:
            at = len(distinct)
            if isinstance(op, GetOp | SearchOp | ListNamespacesOp):
                with contextlib.suppress(TypeError):  # a filter holding a dict or a list
                    at = seen.setdefault(op, at)
            if at == len(distinct):
                distinct.append(op)
            where.append(at)
        results = self._batch(distinct)
        return [results[at] for at in where]


def split(
    results: list[Result], groups: Sequence[Sequence[Op]]
) -> list[list[Result] | BaseException]:
    """``results`` cut into one list per group, in order."""
    out: list[list[Result] | BaseException] = []
    start = 0
    for ops in groups:
        out.append(results[start : start + len(ops)])
        start += len(ops)
    return out
