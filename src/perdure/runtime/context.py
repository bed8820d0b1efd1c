"""The step context: what a step may know about its run and what it may record."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.model import JSON, Approval, Message, Release, Run, Signal, ToolCall
from perdure.core.signals import Cancelled
from perdure.core.streams import StreamSink
from perdure.runtime.fanout import FanOut
from perdure.runtime.stream_sink import DEFAULT_BATCH, DEFAULT_MAX_DELAY

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from perdure.core.artifacts import ArtifactRef
    from perdure.core.budget import BudgetState
    from perdure.core.chat import ChatModel, Pricing, ToolSpec
    from perdure.core.history import SavepointMark
    from perdure.core.retry import RetryPolicy
    from perdure.core.streams import StreamSink
    from perdure.core.tokens import TokenCounter
    from perdure.core.tools import ToolRegistry
    from perdure.runtime.aio import Bridge
    from perdure.runtime.artifacts import Data
    from perdure.runtime.children import Spawner
    from perdure.runtime.claim import Claim
    from perdure.runtime.effect_runner import Compensate, EffectRunner, Execute, Reconcile
    from perdure.runtime.model_calls import AsyncModelStream, ModelReply, ModelStream
    from perdure.store.base import Store


class StepHost(Protocol):
    """What a context needs from the execution that runs the step."""

    effects: EffectRunner
    bridge: Bridge
    spawner: Spawner
    claim: Claim
    store: Store
    budget: BudgetState | None

    def now(self) -> datetime: ...
    def thread_messages(self) -> list[Message]: ...
    def approvals(self) -> list[Approval]: ...
    def signals(self) -> list[Signal]: ...
    def charge(self, cost: float, tokens: int) -> None: ...
    def check_spend(self) -> None: ...
    def model_id(self, name: str) -> str: ...
    def budget_left(self) -> dict[str, float | int | None] | None: ...
    def cancel_requested(self) -> bool: ...
    def release(self) -> Release: ...
    def open_stream(
        self, message_id: str, batch: int, reopen: bool = ..., max_delay: float | None = ...
    ) -> StreamSink: ...
    def flush_streams(self) -> None: ...
    def put_artifact(
        self, data: Data, media_type: str, parents: tuple[ArtifactRef, ...]
    ) -> ArtifactRef: ...
    def get_artifact(self, ref: ArtifactRef) -> bytes: ...
    def mark_savepoint(self, mark: SavepointMark) -> None: ...


class Context(FanOut):
    """Handed to every step as its first argument.

    Attributes a step may read: ``run_id``, ``tenant_id``, ``thread_id``, ``workflow``, ``step``
    (the running step's name) and ``fence`` (the lease's fencing token: pass it to a downstream
    system so it can refuse writes from a worker that lost the run).

    Child runs, parallel branches and reducers: :class:`~perdure.runtime.fanout.FanOut`.

    Messages added with :meth:`add_message` are appended to the thread in the same transaction as
    the step's boundary, so they are recorded exactly when the step's progress is.
    """

    def __init__(self, run: Run, step: str, host: StepHost) -> None:
        self.run_id = run.run_id
        self.tenant_id = run.tenant_id
        self.thread_id = run.thread_id
        self.workflow = run.workflow
        self.step = step
        self.fence = run.fence
        self._host = host
        self.new_messages: list[Message] = []
        self._model_calls = 0

    def now(self) -> datetime:
        """The runtime clock's current time (use this, not ``datetime.now()``)."""
        return self._host.now()

    @property
    def messages(self) -> list[Message]:
        """The thread's messages so far, including those this step added."""
        return [*self._host.thread_messages(), *self.new_messages]

    def add_message(
        self,
        role: str,
        content: str = "",
        *,
        tool_calls: Iterable[ToolCall] = (),
        tool_call_id: str | None = None,
    ) -> Message:
        """Append a message to the run's thread at this step's boundary and return it.

        ``role`` is ``user``, ``assistant``, ``tool`` or ``system``; an assistant message may
        carry ``tool_calls`` and a tool message the ``tool_call_id`` it answers.
        """
        message = Message(role, content, tuple(tool_calls), tool_call_id, run_id=self.run_id)
        self.new_messages.append(message)
        return message

    @property
    def approval(self) -> Approval | None:
        """The run's most recent decided approval (who, role, decision, comment), or None."""
        decided = [a for a in self._host.approvals() if a.status != "pending"]
        return decided[-1] if decided else None

    def signal(self, name: str) -> JSON:
        """The payload of the most recent signal called ``name`` in the run's inbox, or None."""
        found = [s for s in self._host.signals() if s.name == name]
        return found[-1].payload if found else None

    @property
    def signals(self) -> list[Signal]:
        """Every signal the run received, oldest first."""
        return self._host.signals()

    def charge(self, *, cost: float = 0.0, tokens: int = 0) -> None:
        """Charge a model call (or anything) to the run's budget. When a limit is crossed the
        step still completes and commits; no further step starts."""
        if cost < 0 or tokens < 0:
            raise InvalidInputError("a charge cannot be negative", fix="pass cost/tokens >= 0")
        self._host.charge(cost, tokens)

    @property
    def budget(self) -> dict[str, float | int | None] | None:
        """What is left of each limit (None for no limit), or None when the run has no budget."""
        return self._host.budget_left()

    @property
    def release(self) -> Release:
        """The run's release manifest, with retired models/tools replaced as the workflow
        declares (``retired=``): call the model named here, not the one the run started with."""
        return self._host.release()

    @property
    def cancel_requested(self) -> bool:
        """True once someone asked to cancel the run (read from the store each time)."""
        return self._host.cancel_requested()

    def check_cancelled(self) -> None:
        """A safe point: leave the step at once if the run was cancelled (its work is dropped,
        compensations run, the run ends CANCELLED)."""
        if self._host.cancel_requested():
            raise Cancelled(f"run {self.run_id} was cancelled")

    def effect(
        self,
        name: str,
        *,
        target: str,
        operation: str,
        request: JSON,
        execute: Execute,
        reconcile: Reconcile | None = None,
        compensate: Compensate | None = None,
        retry: RetryPolicy | None = None,
        deadline: float | None = None,
    ) -> JSON:
        """Make an external side effect exactly once in business terms; return its result.

        The intent (target, operation, canonical hash of ``request``) is committed before
        ``execute(request, key)`` is called, and the outcome after. ``key`` is stable across
        retries and re-executions of this step: pass it to the provider as its idempotency key
        where it has one. When this step runs again (after a crash or a retry):

        * a ``confirmed`` effect returns its recorded result without a second call;
        * an effect whose call may have happened is checked with ``reconcile(request, key)``,
          which returns :class:`perdure.core.effects.Reconciled` (confirmed / not found / unknown);
          without a reconciler, or when still unknown, the effect becomes ``ambiguous`` and the
          run goes to NEEDS_ATTENTION: it is never resent blindly;
        * a ``rejected`` effect raises :class:`perdure.core.effects.EffectRejectedError` again.

        Errors raised by ``execute`` are classified (:mod:`perdure.core.effects`): transient are
        retried under ``retry`` with durable waits; permanent ones reject the effect; anything
        else may have reached the provider and is reconciled. ``compensate(request, key,
        result)`` — declared in ``Workflow(compensators=[...])`` — undoes a confirmed effect
        when the run is cancelled or fails. ``execute`` may return an
        :class:`perdure.core.effects.EffectResult` to record a receipt id with the result. A
        different ``request`` under the same ``name`` in the same step occurrence raises
        :class:`perdure.core.effects.EffectConflictError`.

        ``deadline`` (seconds) is the call's timeout: ``execute(request, key, timeout=deadline)``
        is called and must give up by then. It is recorded with the attempt, so a worker that
        takes the run over while that attempt is ``executing`` does not trust a reconcile's
        "not found" before the deadline has passed: the run sleeps durably until then and asks
        again. What this does and does not guarantee: ``docs/recovery.md``.
        """
        if self._host.bridge.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.effect would block every run on the loop",
                fix=f"write `await ctx.aeffect({name!r}, ...)` in async steps",
            )
        self._host.flush_streams()
        return self._host.effects.effect(
            name,
            target=target,
            operation=operation,
            request=request,
            execute=execute,
            reconcile=reconcile,
            compensate=compensate,
            retry=retry,
            deadline=deadline,
        )

    async def aeffect(
        self,
        name: str,
        *,
        target: str,
        operation: str,
        request: JSON,
        execute: Execute,
        reconcile: Reconcile | None = None,
        compensate: Compensate | None = None,
        retry: RetryPolicy | None = None,
        deadline: float | None = None,
    ) -> JSON:
        """:meth:`effect` for ``async def`` steps: ``result = await ctx.aeffect(...)``.

        Same contract, same key, same records. ``execute``, ``reconcile`` and ``compensate``
        may be sync or ``async def``. The bookkeeping (intent, outcome, reconcile, retries)
        runs in the run's own execution thread, so the event loop that runs every async step
        of the process never waits on the database; an async ``execute`` runs on the loop.
        """
        if not self._host.bridge.active:
            raise DefinitionError(
                f"ctx.aeffect is for async def steps; step {self.step!r} is a plain function",
                fix=f"write `ctx.effect({name!r}, ...)` in plain steps",
            )
        host = self._host

        def run() -> JSON:
            host.flush_streams()
            return host.effects.effect(
                name,
                target=target,
                operation=operation,
                request=request,
                execute=execute,
                reconcile=reconcile,
                compensate=compensate,
                retry=retry,
                deadline=deadline,
            )

        return await host.bridge.call(run)

    def open_stream(
        self,
        message_id: str,
        *,
        batch: int = DEFAULT_BATCH,
        max_delay: float | None = DEFAULT_MAX_DELAY,
        reopen: bool = False,
    ) -> StreamSink:
        """Start a new attempt of ``message_id``'s durable token stream and return its sink.

        ``sink.write(text)`` buffers a delta; every ``batch`` deltas (or at the first write after
        a delta waited ``max_delay`` seconds; None: no limit), before each effect and at the
        step's boundary the buffer is written (one transaction, fenced: a worker that lost the
        run writes nothing); ``sink.finish()`` writes the rest and marks the message whole.
        Give the message its id before generating (readers may already wait on it:
        :meth:`Runtime.stream <perdure.runtime.runtime.Runtime.stream>`). When the step runs
        again after a crash cut an earlier attempt, opening writes a ``superseded`` entry first,
        so readers drop the draft. A message already finished stays as it was (the sink's
        ``complete`` is True and its writes are dropped), unless ``reopen=True``: then the
        finished reply is superseded too and this attempt replaces it (for a reply generated
        again, e.g. a model call made again because a crash came before its result was
        recorded). Works in plain and ``async def`` steps alike (in async steps the writes
        never block the event loop).
        """
        return self._host.open_stream(
            checked_id(message_id, "message id"), batch, reopen, max_delay
        )

    # -- artifacts and savepoints ---------------------------------------------------------------

    def put_artifact(
        self,
        data: Data,
        *,
        media_type: str = "application/octet-stream",
        parents: Iterable[ArtifactRef] = (),
    ) -> ArtifactRef:
        """Store large or binary output in the artifact store; return its reference.

        ``data`` is bytes, a ``pathlib.Path`` (streamed, never loaded whole to hash it) or a
        binary file object. The bytes are uploaded *now*, before the step's boundary; the
        reference (SHA-256 digest, size, ``media_type``, this run and step, and the
        ``parents`` it was made from) is committed with the boundary. Keep the returned
        :class:`~perdure.core.artifacts.ArtifactRef` in the state: it is small. If the step
        does not commit (a crash, a retry), the upload is an orphan that ``perdure gc``
        collects; the run never refers to it.
        """
        return self._host.put_artifact(data, media_type, tuple(parents))

    def get_artifact(self, ref: ArtifactRef | dict[str, JSON]) -> bytes:
        """The bytes of an artifact, checked against the reference's digest and size.

        A missing object or bytes that do not match stop the run in NEEDS_ATTENTION with
        reason ``artifact_missing`` or ``artifact_corrupt`` and the evidence (digest, size
        expected and found, where it was read): never a wrong value handed to the step."""
        from perdure.core.artifacts import ArtifactRef

        return self._host.get_artifact(ArtifactRef.from_json(ref))

    async def aput_artifact(
        self,
        data: Data,
        *,
        media_type: str = "application/octet-stream",
        parents: Iterable[ArtifactRef] = (),
    ) -> ArtifactRef:
        """:meth:`put_artifact` for ``async def`` steps: the hashing, the database write and
        the upload run in the run's own execution thread, so the event loop never waits."""
        host, parents = self._host, tuple(parents)
        return await host.bridge.call(lambda: host.put_artifact(data, media_type, parents))

    async def aget_artifact(self, ref: ArtifactRef | dict[str, JSON]) -> bytes:
        """:meth:`get_artifact` for ``async def`` steps (the read and the check run off the
        event loop)."""
        from perdure.core.artifacts import ArtifactRef

        host, checked = self._host, ArtifactRef.from_json(ref)
        return await host.bridge.call(lambda: host.get_artifact(checked))

    def savepoint(self, label: str, *, expires: timedelta | datetime | None = None) -> None:
        """Mark the state this step commits as savepoint ``label``: a confirmed point a
        person can fork the run from (``perdure fork RUN --savepoint LABEL``).

        It is recorded with the step's boundary (a step that does not commit marks nothing).
        ``expires`` (a duration from now, or a time) lets it lapse; until then it also keeps
        the run from being deleted by ``perdure gc``. A label is unique within a run."""
        from perdure.core.history import SavepointMark
        from perdure.core.ids import checked_id

        checked_id(label, "savepoint label")
        at = self.now() + expires if isinstance(expires, timedelta) else expires
        self._host.mark_savepoint(SavepointMark(label, at))

    # -- the agent layer (docs/agents.md) -----------------------------------------------------

    @overload
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[False] = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelReply: ...
    @overload
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[True],
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelStream: ...
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: bool = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelReply | ModelStream:
        """Call a model as a recorded effect and return its :class:`ModelReply`.

        ``messages`` defaults to :attr:`messages` (pass :meth:`context` to send less). The
        request (model id, messages, tool specs, ``params``) is hashed and recorded under the
        effect key of ``name`` (default ``model.1``, ``model.2``… in call order), the reply
        with its token usage and cost (``pricing``, or the model's own) after the call. A
        re-executed step gets the recorded reply without calling the model; a call cut short by
        a crash is made again and the lost attempt's estimated cost is added. The cost and
        tokens are charged to the run's budget; an exhausted budget stops the step *before* the
        call. Rate limits, timeouts and 5xx are retried with durable waits under ``retry``
        (default :data:`perdure.runtime.model_calls.MODEL_RETRY`), honouring ``Retry-After``.

        ``stream=True`` returns a :class:`~perdure.runtime.model_calls.ModelStream`: iterate it
        for the deltas, then read ``.reply``. The reply's message id is fixed before the call.
        """
        if self._host.bridge.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.model_call would block every run",
                fix="write `await ctx.amodel_call(...)` in async steps",
            )
        from perdure.runtime.model_calls import ModelStream, call_spec, call_steps, drain

        label = self._label(name)
        spec = call_spec(self, model, messages, stream, tools, label, params, retry, pricing)
        steps = call_steps(self._host, spec, self._stream_sink)
        return ModelStream(steps) if stream else drain(steps)

    @overload
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[False] = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> Coroutine[Any, Any, ModelReply]: ...
    @overload
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[True],
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> AsyncModelStream: ...
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: bool = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> Coroutine[Any, Any, ModelReply] | AsyncModelStream:
        """:meth:`model_call` for ``async def`` steps: ``reply = await ctx.amodel_call(...)``,
        or ``async for delta in ctx.amodel_call(..., stream=True)``. Same records; the
        bookkeeping runs in the run's execution thread, an async client on the event loop."""
        if not self._host.bridge.active:
            raise DefinitionError(
                f"ctx.amodel_call is for async def steps; step {self.step!r} is a plain function",
                fix="write `ctx.model_call(...)` in plain steps",
            )
        from perdure.runtime.model_calls import AsyncModelStream, call_spec, call_steps, drain

        label = self._label(name)
        spec = call_spec(self, model, messages, stream, tools, label, params, retry, pricing)
        bridge, host, sink = self._host.bridge, self._host, self._stream_sink
        if stream:
            return AsyncModelStream(bridge, lambda: call_steps(host, spec, sink))
        return bridge.call(lambda: drain(call_steps(host, spec, sink)))

    def context(
        self,
        *,
        recent: int = 20,
        max_tokens: int | None = None,
        summarize: ChatModel | None = None,
        counter: TokenCounter | None = None,
    ) -> list[Message]:
        """The messages to send to a model: the thread's prompt (leading system messages), the
        latest summary, the ``recent`` messages (whole tool rounds; this round's tool results
        always), within ``max_tokens`` by ``counter`` (default: ``tiktoken`` if installed, else
        an estimate). With ``summarize``, messages that fall out of the window are summarized
        by that model (a recorded model call, so a crash never summarizes twice) and the
        summary is appended to the thread, marked with the range it covers."""
        if self._host.bridge.on_loop():
            raise DefinitionError(
                "ctx.context would block the event loop in an async def step",
                fix="write `await ctx.acontext(...)` in async steps",
            )
        from perdure.runtime.rebuild import rebuild_context

        return rebuild_context(self, recent, max_tokens, summarize, counter)

    async def acontext(
        self,
        *,
        recent: int = 20,
        max_tokens: int | None = None,
        summarize: ChatModel | None = None,
        counter: TokenCounter | None = None,
    ) -> list[Message]:
        """:meth:`context` for ``async def`` steps."""
        from perdure.runtime.rebuild import rebuild_context

        return await self._host.bridge.call(
            lambda: rebuild_context(self, recent, max_tokens, summarize, counter)
        )

    def _label(self, name: str | None) -> str:
        """The effect name of the next model call of this step."""
        self._model_calls += 1
        return name or f"model.{self._model_calls}"

    def _stream_sink(self, message_id: str) -> StreamSink:
        """Where a streamed model call writes its deltas: a new attempt of the reply's durable
        token stream. An earlier attempt is superseded, even a finished one: a call that
        crashed after its reply was streamed, before its outcome was recorded, is made again."""
        return self._host.open_stream(message_id, DEFAULT_BATCH, reopen=True)


def tool_call(id: str, name: str, arguments: JSON = None) -> ToolCall:
    """Shorthand for :class:`perdure.core.model.ToolCall`."""
    return ToolCall(id, name, arguments)
