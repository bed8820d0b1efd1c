"""Running ``async def`` steps and async effect callables.

One event loop per :class:`~perdure.runtime.runtime.Runtime` runs in a background thread
(:class:`EventLoop`). Every run still has its own execution thread that owns the run's lease
and talks to the store; the step loop, the committer and the effect runner stay one
implementation for sync and async code. When a step is ``async def``, the execution thread
hands the coroutine to the loop and waits on a :class:`Bridge`: the coroutine runs on the loop
beside the coroutines of every other run, and whatever it asks of the store (``await
ctx.aeffect(...)``) is sent back to its execution thread, so the loop itself never blocks on the
database. An async ``execute``, ``reconcile`` or ``compensate`` called from the execution thread
runs on the loop the same way.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # asyncio is imported on first use: a sync-only process never loads it
    import asyncio

T = TypeVar("T")

Job = tuple[Callable[[], Any], "asyncio.Future[Any]"]


class EventLoop:
    """An asyncio event loop in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started now if it was not)."""
        with self._lock:
            if self._loop is None:
                import asyncio

                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name="perdure-loop", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` on the loop and wait for its result (from any other thread)."""
        if self.on_loop():
            raise RuntimeError("perdure: a blocking call was made on the event loop thread")
        import asyncio

        return asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), self.loop).result()

    def on_loop(self) -> bool:
        """True when called from the loop's own thread."""
        return self._thread is threading.current_thread()

    def bridge(self) -> Bridge:
        """A bridge for one execution thread (see :class:`Bridge`)."""
        return Bridge(self)

    def close(self) -> None:
        """Stop the loop and its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()


class Bridge:
    """Runs one step coroutine on the loop while its execution thread serves the blocking
    work the coroutine hands back with :meth:`call`."""

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._active = False

    def on_loop(self) -> bool:
        """True when called from the event loop's thread (inside a step coroutine)."""
        return self._active and self._loop.on_loop()

    @property
    def active(self) -> bool:
        """True while a step coroutine of this bridge is running (``call`` may be used)."""
        return self._active

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop; meanwhile run, in this thread, every job it sends."""
        import asyncio

        loop = self._loop.loop
        self._active = True
        try:
            future = asyncio.run_coroutine_threadsafe(self._guarded(coroutine), loop)
            while True:
                job = self._jobs.get()
                if job is None:  # the coroutine is over
                    return future.result()
                self._serve(loop, *job)
        finally:
            self._active = False

    async def call(self, fn: Callable[[], T]) -> T:
        """From the step coroutine: run ``fn`` in the execution thread and await its result."""
        import asyncio

        result: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((fn, result))
        return await result

    def post(self, fn: Callable[[], Any]) -> None:
        """From the step coroutine: run ``fn`` in the execution thread, in order with every
        other job, without waiting for it (``fn`` must not raise). Every job posted before the
        coroutine ends runs before :meth:`run` returns."""
        import asyncio

        self._jobs.put((fn, asyncio.get_running_loop().create_future()))

    async def _guarded(self, coroutine: Coroutine[Any, Any, T]) -> T:
        try:
            return await coroutine
        finally:
            self._jobs.put(None)

    @staticmethod
    def _serve(
        loop: asyncio.AbstractEventLoop, fn: Callable[[], Any], result: asyncio.Future[Any]
    ) -> None:
        def settle(ok: bool, value: Any) -> None:
            if result.done():
                return
            if ok:
                result.set_result(value)
            else:
                result.set_exception(value)

        try:
            value = fn()
        except BaseException as exc:  # handed to the coroutine, which decides
            loop.call_soon_threadsafe(settle, False, exc)
        else:
            loop.call_soon_threadsafe(settle, True, value)


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable
