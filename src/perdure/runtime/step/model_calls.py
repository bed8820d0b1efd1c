"""Model calls as recorded effects: one implementation for plain and ``async def`` steps,
streamed or not.

A model call is an effect whose target is ``model`` and whose operation is the model id. Its
request (model id, messages, tools, parameters) is hashed and recorded before the call; the
reply, the token usage and the cost after it. What differs from other effects is what an unknown
outcome means: a model call has no side effect, so a call cut short (the process died during it)
is simply made again, and the lost attempt's estimated cost is recorded with the reply. Failures
are classified by :func:`perdure.core.failures.describe`: rate limits, timeouts and 5xx are
retried with durable waits (honouring ``Retry-After``), other 4xx are rejected.

The whole call is a generator (:func:`call_steps`) that yields the deltas of a streamed reply
and returns the :class:`ModelReply`; a plain step drains it in its own thread, an async step
has its execution thread drain it and hands the deltas over to the event loop.
"""

from __future__ import annotations

import hashlib
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from perdure.core.chat import (
    MODEL_TARGET,
    ChatModel,
    Delta,
    ModelRequest,
    ModelResponse,
    Pricing,
    ReplyBuilder,
    TokenUsage,
    ToolSpec,
    as_messages,
    message_from_json,
    message_json,
)
from perdure.core.effects import (
    PERMANENT_KINDS,
    EffectError,
    PermanentError,
    Reconciled,
    TransientError,
    UnknownOutcomeError,
)
from perdure.core.errors import DefinitionError
from perdure.core.failures import describe
from perdure.core.model import JSON, Message, ToolCall
from perdure.core.retry import RetryPolicy
from perdure.core.streams import DEFAULT_BATCH, StreamSink
from perdure.core.tokens import TokenCounter, default_counter
from perdure.core.tools import ToolRegistry
from perdure.runtime.step.host import StepHost

if TYPE_CHECKING:  # imported where used: a sync-only process never loads asyncio
    import asyncio


MODEL_RETRY = RetryPolicy(max_attempts=5, initial_delay=1.0, max_delay=60.0)
"""The default retry policy of a model call: five attempts, durable waits, Retry-After
honoured."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What ``ctx.model_call`` returns: the assistant ``message``, its ``usage`` and ``cost``,
    why the model stopped, the ``message_id`` fixed for the reply before the call, whether the
    reply was ``replayed`` from the record (no call, nothing paid), and the estimated
    ``lost_cost``/``lost_tokens`` of attempts cut short by a crash."""

    message: Message
    usage: TokenUsage
    cost: float
    finish_reason: str | None
    message_id: str
    key: str
    replayed: bool = False
    lost_cost: float = 0.0
    lost_tokens: int = 0

    @property
    def text(self) -> str:
        """The reply's text."""
        return self.message.content

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model asked for (arguments as the provider sent them)."""
        return self.message.tool_calls


@dataclass(slots=True)
class CallSpec:
    """One ``ctx.model_call`` as the step asked for it."""

    name: str
    model: ChatModel
    request: ModelRequest
    stream: bool
    retry: RetryPolicy | None
    pricing: Pricing | None
    counter: TokenCounter = field(default_factory=default_counter)


def call_spec(
    host: StepHost,
    model: ChatModel,
    messages: Sequence[Message],
    stream: bool,
    tools: ToolRegistry | Iterable[ToolSpec],
    name: str,
    params: dict[str, JSON] | None,
    retry: RetryPolicy | None,
    pricing: Pricing | None,
) -> CallSpec:
    """The call a step asked for. The model id is the model's ``name``, unless the run's release
    manifest names that model and the workflow retired it: then its replacement is called."""
    model_name = getattr(model, "name", None)
    if not isinstance(model_name, str) or not model_name:
        raise DefinitionError(
            f"model {model!r} has no name", fix="give the model client a `name` (the model id)"
        )
    model_id = host.model_id(model_name)
    specs = tools.specs() if hasattr(tools, "specs") else tuple(tools)
    request = ModelRequest(
        model_id,
        as_messages(messages),
        tuple(specs),
        dict(params or {}),
    )
    return CallSpec(name, model, request, stream, retry, pricing)


def reply_message_id(key: str) -> str:
    """The id of the reply to the model call with effect ``key``: fixed before the call and the
    same for every attempt, so a reader of its stream sees one message."""
    return "msg_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def call_steps(host: StepHost, spec: CallSpec) -> Generator[Delta, None, ModelReply]:
    """Make (or replay) one model call; yield its deltas when streamed; return the reply.

    A streamed reply is written to a new attempt of its durable token stream; an earlier
    attempt is superseded, even a finished one: a call that crashed after its reply was
    streamed, before its outcome was recorded, is made again."""
    request = spec.request
    new = host.new_effect(spec.name, MODEL_TARGET, request.model, request.to_json(), None)
    message_id = reply_message_id(new.key)
    pricing = spec.pricing or getattr(spec.model, "pricing", None) or Pricing()
    lost: list[int] = []
    called = [False]

    def repeat(_request: Any, key: str) -> Reconciled:
        # a model call changes nothing: an attempt whose outcome is unknown is made again; its
        # estimated input tokens are kept on the record (with those of earlier lost attempts)
        record = host.recorded_effect(key)
        earlier = record.last_error if record is not None else None
        found = earlier.get("found") if isinstance(earlier, dict) else None
        before = found.get("lost_tokens") if isinstance(found, dict) else None
        total = (before if isinstance(before, int) else 0) + spec.counter.count_messages(
            request.messages
        )
        lost[:] = [total]
        return Reconciled("not_found", {"lost_tokens": total})

    def execute(_request: Any, _key: str) -> Any:
        called[0] = True
        if spec.stream:
            sink = host.open_stream(message_id, DEFAULT_BATCH, reopen=True)
            return _streamed(spec, host.awaited, sink, done)
        try:
            response = host.awaited(spec.model.complete(request))
        except Exception as exc:
            raise classified(exc) from exc
        return done(response)

    def done(response: ModelResponse) -> JSON:
        lost_tokens = sum(lost)
        lost_cost = pricing.cost(TokenUsage(lost_tokens, 0))
        return {
            "message": message_json(response.message),
            "usage": response.usage.to_json(),
            "cost": pricing.cost(response.usage),
            "finish_reason": response.finish_reason,
            "message_id": message_id,
            "lost_tokens": lost_tokens,
            "lost_cost": lost_cost,
        }

    retry = spec.retry if spec.retry is not None else MODEL_RETRY
    recorded = yield from host.drive_effect(new, execute, repeat, retry, host.check_spend)
    reply = _reply(recorded, new.key, replayed=not called[0])
    if reply.replayed and spec.stream:
        yield Delta(text=reply.text, finish_reason=reply.finish_reason)
    host.charge(reply.cost + reply.lost_cost, reply.usage.total + reply.lost_tokens)
    return reply


def _streamed(
    spec: CallSpec,
    awaited: Callable[[Any], Any],
    sink: StreamSink,
    done: Callable[[ModelResponse], JSON],
) -> Generator[Delta, None, JSON]:
    builder = ReplyBuilder()
    try:
        for delta in _deltas(spec.model.stream(spec.request), awaited):
            builder.add(delta)
            if delta.text:
                sink.write(delta.text)
            yield delta
    except Exception as exc:
        raise classified(exc) from exc
    sink.finish()
    return done(builder.response())


def _deltas(source: Any, awaited: Callable[[Any], Any]) -> Iterator[Delta]:
    """The deltas of a sync or async stream, pulled from the execution thread."""
    if isinstance(source, Awaitable):
        source = awaited(source)
    if isinstance(source, AsyncIterable):
        it = aiter(source)
        while True:
            try:
                yield cast(Delta, awaited(anext(it)))
            except StopAsyncIteration:
                return
    yield from source


def _reply(recorded: JSON, key: str, *, replayed: bool) -> ModelReply:
    data = recorded if isinstance(recorded, dict) else {}
    cost = data.get("cost")
    lost_cost = data.get("lost_cost")
    lost_tokens = data.get("lost_tokens")
    return ModelReply(
        message=message_from_json(data.get("message")),
        usage=TokenUsage.from_json(data.get("usage")),
        cost=float(cost) if isinstance(cost, int | float) else 0.0,
        finish_reason=str(data["finish_reason"]) if data.get("finish_reason") else None,
        message_id=str(data.get("message_id") or reply_message_id(key)),
        key=key,
        replayed=replayed,
        lost_cost=float(lost_cost) if isinstance(lost_cost, int | float) else 0.0,
        lost_tokens=int(lost_tokens) if isinstance(lost_tokens, int) else 0,
    )


def classified(exc: Exception) -> EffectError:
    """A provider failure as the effect protocol's error: transient ones (timeouts, refused,
    reset or closed connections, DNS failures — the SDKs' ``APIConnectionError`` and
    ``APITimeoutError``, httpx's transport errors, pydantic-ai's ``ModelConnectionError`` —,
    408/409/425/429, 5xx) are retried, other HTTP 4xx rejected, anything else repeated only if
    a retry policy allows its kind (otherwise a person looks).

    A transport failure after the request went out is transient here, not an unknown outcome:
    a model request changes nothing outside, so sending it again costs tokens, never a second
    side effect."""
    if isinstance(exc, EffectError):
        return exc
    failure = describe(exc)
    if failure.transient:
        return TransientError(failure.kind, failure.message, retry_after=failure.retry_after)
    if failure.kind in PERMANENT_KINDS:
        return PermanentError(failure.kind, failure.message)
    if failure.status is not None:
        kind = "permission_denied" if failure.status in (401, 403) else "invalid_request"
        return PermanentError(kind, failure.message)
    return UnknownOutcomeError(failure.kind, failure.message)


def drain(steps: Generator[Delta, None, T], push: Callable[[Delta], None] | None = None) -> T:
    """Run a call to its end, handing each delta to ``push``."""
    while True:
        try:
            delta = next(steps)
        except StopIteration as end:
            return cast(T, end.value)
        if push is not None:
            push(delta)


class ModelStream:
    """A streamed model call in a plain step: iterate for the deltas as they arrive; once the
    iteration is over, :attr:`reply` holds the whole reply. Leaving the loop early still lets
    the call finish (its deltas are no longer handed to the step) and records the reply."""

    def __init__(self, steps: Generator[Delta, None, ModelReply]) -> None:
        self._steps = steps
        self._reply: ModelReply | None = None

    def __iter__(self) -> Iterator[Delta]:
        # not `yield from`: closing this iterator must not close the call it delegates to
        steps = self._steps
        try:
            while True:
                try:
                    delta = next(steps)
                except StopIteration as end:
                    self._reply = cast(ModelReply, end.value)
                    return
                yield delta
        finally:
            if self._reply is None:  # the step left the loop (or the call raised: a no-op)
                self._reply = drain(steps)

    @property
    def reply(self) -> ModelReply:
        """The whole reply (read it after the loop)."""
        if self._reply is None:
            self._reply = drain(self._steps)
        return self._reply


_END = object()


class AsyncModelStream:
    """A streamed model call in an ``async def`` step: ``async for delta in stream``; then
    :attr:`reply`. The call runs in the run's execution thread; the deltas come to the event
    loop as they arrive."""

    def __init__(self, host: StepHost, steps: Callable[[], Generator[Delta, None, ModelReply]]):
        self._host = host
        self._steps = steps
        self._reply: ModelReply | None = None

    async def __aiter__(self) -> AsyncIterator[Delta]:
        import asyncio

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()

        def push(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def job() -> ModelReply:
            try:
                return drain(self._steps(), push)
            finally:
                push(_END)

        task = asyncio.ensure_future(self._host.off_loop(job))

        def keep(done: asyncio.Future[ModelReply]) -> None:
            if not done.cancelled() and done.exception() is None:
                self._reply = done.result()

        task.add_done_callback(keep)  # a step that leaves the loop early still gets the reply
        while (item := await queue.get()) is not _END:
            yield cast(Delta, item)
        self._reply = await task

    @property
    def reply(self) -> ModelReply:
        """The whole reply (read it after the loop)."""
        if self._reply is None:
            raise RuntimeError("read AsyncModelStream.reply after `async for` has finished")
        return self._reply
