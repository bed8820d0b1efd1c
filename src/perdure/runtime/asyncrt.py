"""The Runtime for applications that are themselves async (a FastAPI or Starlette handler).

``AsyncRuntime`` has every verb of the :class:`~perdure.runtime.runtime.Runtime` and of its
parts as coroutines: ``await art.start(...)``, ``await art.status(run_id)``,
``await art.memory.erase(prefix)``, ``await art.keys.create(name)``. Each runs the same method
of the wrapped Runtime in a thread of its own pool, so the application's event loop never
waits on the database. There is one implementation of every verb, the sync one, and no list of
them here: the async view is derived from the verbs the Runtime and its parts mark
(:mod:`perdure.runtime.admin.verbs`), so a verb added to a part is awaitable at once.

    art = AsyncRuntime(Runtime("postgresql://...", workflows=[agent]))

    @app.post("/runs")
    async def start_run(body: dict) -> dict:
        run = await art.start(agent, body, idempotency_key=body["request_id"])
        return {"run_id": run.run_id}
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from perdure.runtime.admin.verbs import Kind, is_part, verbs_of, warn_renamed
from perdure.runtime.renamed import CALLED, RENAMED
from perdure.runtime.runtime import Runtime


class AsyncPart:
    """A part of the Runtime (``art.memory``, ``art.keys`` ...) whose verbs are awaited: one
    coroutine function per marked verb of the part, same arguments and docstring."""

    def __init__(self, name: str, part: object, offload: Callable[..., Any]) -> None:
        self._name = name
        self._offload = offload
        for verb_name, kind in verbs_of(type(part)).items():
            setattr(self, verb_name, offload(getattr(part, verb_name), kind))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated: the old verb of this name (``await art.memory(...)`` is
        ``await art.memory.search(...)``)."""
        new = CALLED.get(self._name)
        if new is None:
            raise TypeError(f"'AsyncRuntime.{self._name}' is not callable")
        warn_renamed(f"AsyncRuntime.{self._name}(...)", f"AsyncRuntime.{new}(...)")
        return getattr(self, new.split(".")[1])(*args, **kwargs)

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...


class AsyncRuntime:
    """A :class:`Runtime` whose verbs, and its parts' verbs, are awaited (see the module
    docstring).

    ``threads`` bounds how many calls run at once (each holds a database connection while it
    runs). Advancing runs is a worker's job (``perdure worker``); :meth:`resume` is here for a
    handler that must continue one run inline. A verb that returns a reader
    (``art.threads.stream(...)``) returns an async iterator instead: each read runs in a thread
    of the loop's default executor, never on the loop, and leaving the loop early closes the
    reader.
    """

    def __init__(self, runtime: Runtime, *, threads: int = 8) -> None:
        self.runtime = runtime
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="perdure-async")
        for name, kind in verbs_of(type(runtime)).items():
            setattr(self, name, self._offload(getattr(runtime, name), kind))
        for name, value in vars(runtime).items():
            if not name.startswith("_") and is_part(value):
                setattr(self, name, AsyncPart(name, value, self._offload))

    def _offload(self, method: Callable[..., Any], kind: Kind) -> Callable[..., Any]:
        """The async form of a bound verb: a coroutine function, or for a reader a function
        returning an async iterator."""
        if kind == "reader":

            @functools.wraps(method)
            def read(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                return _entries(method(*args, **kwargs))

            return read

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            import asyncio

            bound = functools.partial(method, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self._pool, bound)

        return call

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...

    else:  # the deprecated names, as on the Runtime (perdure.runtime.renamed)

        def __getattr__(self, name: str) -> Any:
            new = RENAMED.get(name)
            part, _, verb_name = (new or "").partition(".")
            if name.startswith("_") or not verb_name or part not in vars(self):
                raise AttributeError(f"'AsyncRuntime' object has no attribute {name!r}")
            warn_renamed(f"AsyncRuntime.{name}", f"AsyncRuntime.{new}")
            return getattr(vars(self)[part], verb_name)

    async def aclose(self) -> None:
        """Close the wrapped Runtime and this wrapper's threads."""
        import asyncio

        await asyncio.get_running_loop().run_in_executor(self._pool, self.runtime.close)
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _entries(reader: Iterator[Any]) -> AsyncIterator[Any]:
    import asyncio

    loop = asyncio.get_running_loop()
    try:
        while True:
            entry = await loop.run_in_executor(None, next, reader, None)
            if entry is None:
                return
            yield entry
    finally:
        close = getattr(reader, "close", None)
        if close is not None:
            close()
