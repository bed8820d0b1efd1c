"""The Runtime for applications that are themselves async (a FastAPI or Starlette handler).

``AsyncRuntime`` has the :class:`~perdure.runtime.runtime.Runtime`'s verbs as coroutines:
``await art.start(...)``, ``await art.status(run_id)``, ``await art.approve(...)``. Each runs the
same method of the wrapped Runtime in a thread of its own pool, so the application's event loop
never waits on the database. There is one implementation of every verb: the sync one.

    art = AsyncRuntime(Runtime("postgresql://...", workflows=[agent]))

    @app.post("/runs")
    async def start_run(body: dict) -> dict:
        run = await art.start(agent, body, idempotency_key=body["request_id"])
        return {"run_id": run.run_id}
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from perdure.core.streams import StreamEntry
from perdure.runtime.admin.stream_reader import StreamReader
from perdure.runtime.runtime import Runtime

P = ParamSpec("P")
R = TypeVar("R")


def _offload(
    method: Callable[Concatenate[Runtime, P], R],
) -> Callable[Concatenate[AsyncRuntime, P], Coroutine[Any, Any, R]]:
    """The async form of a Runtime method: same arguments, same result, awaited."""

    async def call(self: AsyncRuntime, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = functools.partial(method, self.runtime, *args, **kwargs)
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(self._pool, bound)

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class AsyncRuntime:
    """A :class:`Runtime` whose verbs are awaited (see the module docstring).

    ``threads`` bounds how many calls run at once (each holds a database connection while it
    runs). Advancing runs is a worker's job (``perdure worker``); :meth:`resume` is here for a
    handler that must continue one run inline.
    """

    def __init__(self, runtime: Runtime, *, threads: int = 8) -> None:
        self.runtime = runtime
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="perdure-async")

    start = _offload(Runtime.start)
    get = _offload(Runtime.get)
    status = _offload(Runtime.status)
    runs = _offload(Runtime.runs)
    run_page = _offload(Runtime.run_page)
    resume = _offload(Runtime.resume)
    cancel = _offload(Runtime.cancel)
    approvals = _offload(Runtime.approvals)
    approve = _offload(Runtime.approve)
    reject = _offload(Runtime.reject)
    signal = _offload(Runtime.signal)
    effects = _offload(Runtime.effects)
    resolve_effect = _offload(Runtime.resolve_effect)
    workers = _offload(Runtime.workers)
    stuck = _offload(Runtime.stuck)
    history = _offload(Runtime.history)
    state_at = _offload(Runtime.state_at)
    savepoint = _offload(Runtime.savepoint)
    fork = _offload(Runtime.fork)
    gc = _offload(Runtime.gc)
    delete_thread = _offload(Runtime.delete_thread)
    delete_run = _offload(Runtime.delete_run)
    get_artifact = _offload(Runtime.get_artifact)
    memory = _offload(Runtime.memory)
    memory_item = _offload(Runtime.memory_item)
    erase_memory = _offload(Runtime.erase_memory)

    thread = _offload(Runtime.thread)
    set_thread_policy = _offload(Runtime.set_thread_policy)
    add_message = _offload(Runtime.add_message)

    def stream(
        self, message_id: str, *, after: int = 0, follow: bool = False, **kwargs: Any
    ) -> AsyncIterator[StreamEntry]:
        """:meth:`Runtime.stream` as an async iterator: ``async for entry in
        art.stream(message_id, after=last_seq, follow=True)``. Each read (and each wait of a
        follower) runs in a thread of the loop's default executor, never on the loop; leaving
        the loop early closes the reader."""
        reader = self.runtime.stream(message_id, after=after, follow=follow, **kwargs)
        return _entries(reader)

    async def aclose(self) -> None:
        """Close the wrapped Runtime and this wrapper's threads."""
        import asyncio

        await asyncio.get_running_loop().run_in_executor(self._pool, self.runtime.close)
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _entries(reader: StreamReader) -> AsyncIterator[StreamEntry]:
    import asyncio

    loop = asyncio.get_running_loop()
    try:
        while True:
            entry = await loop.run_in_executor(None, next, reader, None)
            if entry is None:
                return
            yield entry
    finally:
        reader.close()
