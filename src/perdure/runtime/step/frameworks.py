"""The effects of an agent framework's own loop (pydantic-ai, the OpenAI Agents SDK): its model
requests and its tool calls, recorded by the step that runs it.

A framework drives its agent loop as coroutines: in an ``async def`` step they run on the
runtime's event loop, in a plain step on the framework's own loop (``run_sync``) in the step's
thread. :class:`FrameworkCalls` records one call either way with the step's own machinery, not a
second one: the intent is committed before the call and the outcome after it (by the run's
execution thread in an async step, by the step's thread in a plain one), and the call itself runs
on the runtime's event loop, in a copy of the caller's context variables (the framework keeps its
run state there). A model call is an effect whose target is ``model``: replayed from its record
when the step runs again, made again when a crash cut it (it changes nothing), stopped before the
call when the run's budget is spent, and charged to the budget. A tool call is an effect whose
target is ``tool``: replayed, or reconciled, never repeated blindly.

Names are the framework's to choose; they must be stable across re-executions of the step (a
model call's number in call order, a tool call's id from the recorded reply). One
:class:`FrameworkCalls` serves every framework run of one step occurrence (:meth:`of`), so two
runs in one step number their model calls one after the other.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

if TYPE_CHECKING:  # imported where used: a sync-only process never loads asyncio
    import asyncio

from perdure.core.chat import MODEL_TARGET, TokenUsage
from perdure.core.effect_calls import Reconcile
from perdure.core.effects import Reconciled, TransientError
from perdure.core.errors import DefinitionError
from perdure.core.model import JSON
from perdure.core.retry import RetryPolicy
from perdure.core.streams import DEFAULT_BATCH, StreamSink
from perdure.runtime.step.context import Context
from perdure.runtime.step.model_calls import MODEL_RETRY, classified, drain, reply_message_id

T = TypeVar("T")

_CALLS: WeakKeyDictionary[Context, FrameworkCalls] = WeakKeyDictionary()

_INSIDE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "perdure_framework_call", default=None
)
"""The effect whose call is running in this context (a call cannot record another one)."""

_DONE = object()


@dataclass(frozen=True, slots=True)
class FrameworkReply:
    """A framework's model reply as it is recorded: the ``reply`` in the framework's own JSON
    form (read back on a replay), its token ``usage`` and its ``cost``."""

    reply: JSON
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0

    def to_json(self) -> dict[str, JSON]:
        """The effect's recorded result."""
        return {"reply": self.reply, "usage": self.usage.to_json(), "cost": self.cost}

    @classmethod
    def from_json(cls, data: JSON) -> FrameworkReply:
        """Read what :meth:`to_json` wrote."""
        found = data if isinstance(data, dict) else {}
        cost = found.get("cost")
        return cls(
            found.get("reply"),
            TokenUsage.from_json(found.get("usage")),
            float(cost) if isinstance(cost, int | float) else 0.0,
        )


@dataclass(frozen=True, slots=True)
class Recorded:
    """What a framework's model call returned: the reply, and whether it was ``replayed`` from
    its record (no request was made, nothing was paid)."""

    reply: FrameworkReply
    replayed: bool


class FrameworkCalls:
    """Records the model and tool calls of framework runs inside one step occurrence."""

    def __init__(self, ctx: Context) -> None:
        self._host = ctx._host  # not the context itself: it keys this object's weak entry
        self._counts: dict[str, int] = {}
        self._cached: dict[str, JSON] = {}
        self._flying: dict[str, asyncio.Future[JSON]] = {}

    @classmethod
    def of(cls, ctx: Context) -> FrameworkCalls:
        """The calls of the step occurrence ``ctx`` belongs to (one per occurrence)."""
        if not isinstance(ctx, Context):
            raise DefinitionError(
                f"expected the step's perdure Context, got {type(ctx).__name__}",
                fix="pass the `ctx` your step received",
            )
        found = _CALLS.get(ctx)
        if found is None:
            found = _CALLS[ctx] = cls(ctx)
        return found

    def now(self) -> datetime:
        """The runtime clock's current time."""
        return self._host.now()

    def next_name(self, prefix: str) -> str:
        """``prefix.N``: the next number in call order under ``prefix`` in this occurrence."""
        n = self._counts.get(prefix, 0) + 1
        self._counts[prefix] = n
        return f"{prefix}.{n}"

    # -- effects -------------------------------------------------------------------------------

    async def effect(
        self,
        name: str,
        *,
        target: str,
        operation: str,
        request: JSON,
        execute: Callable[[JSON, str], Awaitable[JSON]],
        reconcile: Reconcile | None = None,
        retry: RetryPolicy | None = None,
        cache: bool = False,
    ) -> JSON:
        """Record one call as effect ``name`` and return its result: ``await execute(request,
        key)`` makes it (on the runtime's event loop, in the caller's context variables); a
        re-executed step gets the recorded result. With ``cache``, a second call under the
        same name in this occurrence returns the first one's result (a cached read-only tool)."""
        _not_nested(name)
        run = self._within(name, execute)

        def job() -> JSON:
            self._host.flush_streams()
            new = self._host.new_effect(name, target, operation, request, None)
            return drain(self._host.drive_effect(new, run, reconcile, retry))

        if not cache:
            return await self._serve(job)
        if name in self._cached:
            return self._cached[name]
        import asyncio

        flying = self._flying.get(name)  # the same call already under way (a parallel round)
        if flying is None or flying.get_loop() is not asyncio.get_running_loop():
            flying = self._flying[name] = asyncio.ensure_future(self._serve(job))
        result = await asyncio.shield(flying)
        self._cached[name] = result
        self._flying.pop(name, None)
        return result

    async def model_call(
        self,
        name: str,
        *,
        operation: str,
        request: JSON,
        call: Callable[[], Awaitable[FrameworkReply]],
        retry: RetryPolicy | None = None,
    ) -> Recorded:
        """Record one model request as effect ``name`` (target ``model``, operation the model
        id) and return its reply. ``call()`` makes the request; its failures are classified as
        for ``ctx.model_call`` (rate limits, timeouts, 5xx retried with durable waits; other 4xx
        rejected). The reply's cost and tokens are charged to the run's budget; a spent budget
        stops the step before the request."""
        called = [False]

        async def execute(_request: JSON, _key: str) -> JSON:
            called[0] = True
            try:
                reply = await call()
            except Exception as exc:
                raise classified(exc) from exc
            return reply.to_json()

        _not_nested(name)
        run = self._within(name, execute)
        host = self._host

        def job() -> JSON:
            host.flush_streams()
            new = host.new_effect(name, MODEL_TARGET, operation, request, None)
            steps = host.drive_effect(new, run, _call_again, retry or MODEL_RETRY, host.check_spend)
            return drain(steps)

        reply = FrameworkReply.from_json(await self._serve(job))
        host.charge(reply.cost, reply.usage.total)
        return Recorded(reply, replayed=not called[0])

    async def stream_model_call(
        self,
        name: str,
        *,
        operation: str,
        request: JSON,
        stream: Callable[[], AsyncIterator[Any]],
        text: Callable[[Any], str],
        retry: RetryPolicy | None = None,
    ) -> AsyncIterator[Any]:
        """A streamed model request recorded as effect ``name``: yields the framework's events
        as they arrive, then one :class:`Recorded` with the reply.

        ``stream()`` makes the request: an async iterator of the framework's events that ends
        with the whole reply (a :class:`FrameworkReply`); it runs as one task on the runtime's
        event loop. ``text(event)`` is the reply text an event adds: the thread that owns the
        store writes it to the reply's durable token stream (``reply_message_id`` of the
        effect's key; a call made again supersedes the cut attempt). A replayed call yields no
        event, only its record."""
        import asyncio

        _not_nested(name)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[object] = asyncio.Queue()
        called = [False]
        captured = contextvars.copy_context()
        host = self._host

        def push(event: object) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        def execute(_request: JSON, key: str) -> Generator[Any, None, JSON]:
            called[0] = True
            sink = host.open_stream(reply_message_id(key), DEFAULT_BATCH, reopen=True)
            return self._pump(name, captured, stream, text, sink)

        def job() -> JSON:
            host.flush_streams()
            new = host.new_effect(name, MODEL_TARGET, operation, request, None)
            steps = host.drive_effect(
                new, execute, _call_again, retry or MODEL_RETRY, host.check_spend
            )
            return drain(steps, push)

        task = asyncio.ensure_future(self._serve(job))
        task.add_done_callback(lambda _: events.put_nowait(_DONE))
        while (item := await events.get()) is not _DONE:
            yield item
        reply = FrameworkReply.from_json(await task)
        host.charge(reply.cost, reply.usage.total)
        yield Recorded(reply, replayed=not called[0])

    def _pump(
        self,
        name: str,
        captured: contextvars.Context,
        stream: Callable[[], AsyncIterator[Any]],
        text: Callable[[Any], str],
        sink: StreamSink,
    ) -> Generator[Any, None, JSON]:
        """In the thread that owns the store: start ``stream()`` as one task on the event loop
        and take its events as they come, writing their text to ``sink``."""
        import asyncio
        import queue

        channel: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

        async def produce() -> None:
            _INSIDE.set(name)
            try:
                async for item in stream():
                    channel.put(("item", item))
                channel.put(("end", None))
            except BaseException as exc:  # handed to the thread that owns the store
                channel.put(("error", exc))

        held: list[asyncio.Task[None]] = []  # a strong reference while the task runs

        async def begin() -> None:
            held.append(asyncio.get_running_loop().create_task(produce(), context=captured.copy()))

        start: Callable[[Awaitable[None]], None] = self._host.awaited
        start(begin())
        reply: FrameworkReply | None = None
        while True:
            kind, value = channel.get()
            if kind == "error":
                if isinstance(value, Exception):
                    raise classified(value) from value
                raise value
            if kind == "end":
                break
            if isinstance(value, FrameworkReply):
                reply = value
                continue
            piece = text(value)
            if piece:
                sink.write(piece)
            yield value
        if reply is None:
            raise TransientError("stream_cut", "the stream ended before its reply")
        sink.finish()
        return reply.to_json()

    # -- how a call reaches the store and the loop ---------------------------------------------

    async def _serve(self, job: Callable[[], T]) -> T:
        """Run ``job`` (store work) where the step's store work runs: the execution thread of
        an async step, or this thread in a plain step (whose framework loop it blocks)."""
        if self._host.in_async_step():
            return await self._host.off_loop(job)
        if self._host.on_loop():  # pragma: no cover - a framework run outside the step's task
            raise DefinitionError(
                "a framework call ran on the event loop outside its step",
                fix="run the agent inside the step's own coroutine",
            )
        return job()

    def _within(
        self, name: str, execute: Callable[[JSON, str], Awaitable[T]]
    ) -> Callable[[JSON, str], Awaitable[T]]:
        """``execute`` run in a copy of the caller's context variables (taken now), marked as
        the call of effect ``name``."""
        captured = contextvars.copy_context()

        async def run(request: JSON, key: str) -> T:
            import asyncio

            task = asyncio.get_running_loop().create_task(
                _inside(name, execute(request, key)), context=captured.copy()
            )
            return await task

        return run


def _call_again(_request: Any, _key: str) -> Reconciled:
    """A model request cut by a crash changed nothing: it is made again."""
    return Reconciled.not_found()


async def _inside(name: str, value: Awaitable[T]) -> T:
    _INSIDE.set(name)
    return await value


def _not_nested(name: str) -> None:
    """Refuse to record an effect inside another one's call: the thread that records them is
    waiting for that call to end (it would wait for ever)."""
    outer = _INSIDE.get()
    if outer is not None:
        raise DefinitionError(
            f"effect {name!r} would be recorded inside the call of effect {outer!r}",
            fix="do not declare the outer tool side-effecting or cached, or run the inner "
            "agent in a step of its own (a child run)",
        )
