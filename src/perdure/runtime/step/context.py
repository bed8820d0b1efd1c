"""The step context: what a step may know about its run and what it may record.

:class:`Context` is handed to every step. It reads the run (thread, approvals, signals,
budget, release) and records what the step does (messages, effects, model calls, child runs,
parallel branches, artifacts, savepoints, token streams), all through the execution's
:class:`~perdure.runtime.step.host.StepHost`. ``docs/agents.md``, ``docs/parallel.md`` and
``docs/artifacts.md`` tell the whole.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, overload

from perdure.core.artifacts import ArtifactRef, Data
from perdure.core.budget import Budget
from perdure.core.chat import ChatModel, Pricing, ToolSpec
from perdure.core.children import ChildRecord, by_key
from perdure.core.effect_calls import Compensate, Execute, Reconcile
from perdure.core.effects import check_deadline
from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.history import SavepointMark
from perdure.core.ids import checked_id
from perdure.core.model import JSON, Approval, Message, Release, Run, Signal, ToolCall
from perdure.core.reducers import combine
from perdure.core.retry import RetryPolicy
from perdure.core.signals import Cancelled
from perdure.core.streams import DEFAULT_BATCH, DEFAULT_MAX_DELAY, StreamSink
from perdure.core.tokens import TokenCounter
from perdure.core.tools import ToolRegistry
from perdure.core.workflow import Workflow
from perdure.runtime.step.host import StepHost
from perdure.runtime.step.memory import StepMemory
from perdure.runtime.step.model_calls import (
    AsyncModelStream,
    CallSpec,
    ModelReply,
    ModelStream,
    call_spec,
    call_steps,
    drain,
)
from perdure.runtime.step.parallel import Call, run_branches
from perdure.runtime.step.rebuild import rebuild_context


class Context:
    """Handed to every step as its first argument.

    Attributes a step may read: ``run_id``, ``tenant_id``, ``thread_id``, ``workflow``, ``step``
    (the running step's name) and ``fence`` (the lease's fencing token: pass it to a downstream
    system so it can refuse writes from a worker that lost the run).

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
        self.memory = StepMemory(host)
        """The tenant's long-term memory: ``get``, ``put``, ``delete``, ``search`` by
        namespace; writes commit with this step's boundary
        (:class:`~perdure.runtime.step.memory.StepMemory`)."""

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
        self._no_loop("effect", f"await ctx.aeffect({name!r}, ...)")
        return self._effect(
            name, target, operation, request, execute, reconcile, compensate, retry, deadline
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
        self._in_async("aeffect", f"ctx.effect({name!r}, ...)")
        return await self._host.off_loop(
            lambda: self._effect(
                name, target, operation, request, execute, reconcile, compensate, retry, deadline
            )
        )

    def _effect(
        self,
        name: str,
        target: str,
        operation: str,
        request: JSON,
        execute: Execute,
        reconcile: Reconcile | None,
        compensate: Compensate | None,
        retry: RetryPolicy | None,
        deadline: float | None,
    ) -> JSON:
        """What :meth:`effect` and :meth:`aeffect` share, in the run's execution thread: the
        step's streamed text is stored first, then the effect is taken to an outcome."""
        check_deadline(name, deadline)
        host = self._host
        host.flush_streams()
        new = host.new_effect(name, target, operation, request, compensate)
        return drain(host.drive_effect(new, execute, reconcile, retry, deadline=deadline))

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
        ``rt.threads.stream(...)``). When the step runs
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

    # -- model calls and context windows ------------------------------------------------------

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
        (default :data:`perdure.runtime.step.model_calls.MODEL_RETRY`), honouring ``Retry-After``.

        ``stream=True`` returns a :class:`~perdure.runtime.step.model_calls.ModelStream`: iterate it
        for the deltas, then read ``.reply``. The reply's message id is fixed before the call.
        """
        self._no_loop("model_call", "await ctx.amodel_call(...)")
        spec = self._call_spec(model, messages, stream, tools, name, params, retry, pricing)
        steps = call_steps(self._host, spec)
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
        self._in_async("amodel_call", "ctx.model_call(...)")
        spec = self._call_spec(model, messages, stream, tools, name, params, retry, pricing)
        host = self._host
        if stream:
            return AsyncModelStream(host, lambda: call_steps(host, spec))
        return host.off_loop(lambda: drain(call_steps(host, spec)))

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
        self._no_loop("context", "await ctx.acontext(...)")
        return self._context(recent, max_tokens, summarize, counter)

    async def acontext(
        self,
        *,
        recent: int = 20,
        max_tokens: int | None = None,
        summarize: ChatModel | None = None,
        counter: TokenCounter | None = None,
    ) -> list[Message]:
        """:meth:`context` for ``async def`` steps."""
        return await self._host.off_loop(
            lambda: self._context(recent, max_tokens, summarize, counter)
        )

    def _context(
        self,
        recent: int,
        max_tokens: int | None,
        summarize: ChatModel | None,
        counter: TokenCounter | None,
    ) -> list[Message]:
        """What :meth:`context` and :meth:`acontext` share; a summary joins the thread as a
        system message, marked with the range it covers."""

        def add_summary(text: str, marker: str) -> Message:
            return self.add_message("system", text, tool_call_id=marker)

        window = self.messages
        return rebuild_context(
            self._host, window, add_summary, recent, max_tokens, summarize, counter
        )

    def _call_spec(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None,
        stream: bool,
        tools: ToolRegistry | Iterable[ToolSpec],
        name: str | None,
        params: dict[str, JSON] | None,
        retry: RetryPolicy | None,
        pricing: Pricing | None,
    ) -> CallSpec:
        """The next model call of this step, named ``name`` or ``model.N`` in call order (what
        :meth:`model_call` and :meth:`amodel_call` share)."""
        self._model_calls += 1
        label = name or f"model.{self._model_calls}"
        sent = self.messages if messages is None else messages
        return call_spec(self._host, model, sent, stream, tools, label, params, retry, pricing)

    # -- artifacts and savepoints -------------------------------------------------------------

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
        return await host.off_loop(lambda: host.put_artifact(data, media_type, parents))

    async def aget_artifact(self, ref: ArtifactRef | dict[str, JSON]) -> bytes:
        """:meth:`get_artifact` for ``async def`` steps (the read and the check run off the
        event loop)."""
        host, checked = self._host, ArtifactRef.from_json(ref)
        return await host.off_loop(lambda: host.get_artifact(checked))

    def savepoint(self, label: str, *, expires: timedelta | datetime | None = None) -> None:
        """Mark the state this step commits as savepoint ``label``: a confirmed point a
        person can fork the run from (``perdure fork RUN --savepoint LABEL``).

        It is recorded with the step's boundary (a step that does not commit marks nothing).
        ``expires`` (a duration from now, or a time) lets it lapse; until then it also keeps
        the run from being deleted by ``perdure gc``. A label is unique within a run."""
        checked_id(label, "savepoint label")
        at = self._host.now() + expires if isinstance(expires, timedelta) else expires
        self._host.mark_savepoint(SavepointMark(label, at))

    # -- child runs, parallel branches, reducers ----------------------------------------------

    def spawn(
        self,
        workflow: Workflow[Any],
        input: Any = None,
        *,
        key: str,
        budget: Budget | None = None,
        share: float | None = None,
    ) -> ChildRecord:
        """Start a child run of ``workflow`` with ``input`` under ``key`` and return its record.

        Idempotent by ``key``: the child's run id and idempotency key are derived from this run
        and ``key``, so when this step runs again (after a crash, a retry) it finds the child it
        started. The child runs on its own thread, in this run's tenant, by any worker that has
        ``workflow`` registered; it never writes this run's state. Its budget is ``budget``,
        else ``share`` (0..1] of each limit this run has left, else the workflow's own. Wait for
        children with ``wait_for_children(on_done=...)`` and read them with :attr:`children`.
        """
        self._no_loop("spawn", "await ctx.aspawn(...)")
        return self._host.spawn(workflow, input, key, budget, share)

    async def aspawn(
        self,
        workflow: Workflow[Any],
        input: Any = None,
        *,
        key: str,
        budget: Budget | None = None,
        share: float | None = None,
    ) -> ChildRecord:
        """:meth:`spawn` for ``async def`` steps (the write runs in the execution thread)."""
        host = self._host
        return await host.off_loop(lambda: host.spawn(workflow, input, key, budget, share))

    @property
    def children(self) -> dict[str, ChildRecord]:
        """This run's children by key (in key order): each with ``key``, ``run_id``,
        ``workflow``, ``status``, ``result`` and ``error``, read from the store."""
        return by_key(self._host.children())

    def merge(self, state: Any, updates: Mapping[str, Mapping[str, Any]]) -> Any:
        """``state`` with ``updates`` (``{branch id or key: {field: value}}``) applied in key
        order through the workflow's declared reducers; two writes of a field without a
        reducer raise :class:`~perdure.core.errors.ConflictingUpdatesError`."""
        return combine(state, updates, self._host.reducers())

    def merge_children(self, state: Any, *, keys: list[str] | None = None) -> Any:
        """``state`` with the result of every SUCCEEDED child (a dict of state fields) merged in
        key order through the declared reducers (:meth:`merge`). Children that did not succeed
        are left out: read :attr:`children` to decide what they mean."""
        found = self.children
        chosen = found if keys is None else {k: found[k] for k in keys if k in found}
        updates: dict[str, Mapping[str, Any]] = {}
        for key, child in chosen.items():
            if not child.succeeded:
                continue
            if not isinstance(child.result, Mapping):
                raise DefinitionError(
                    f"child {key!r} returned {type(child.result).__name__}, not a dict of fields",
                    fix="end the child with done({'field': value, ...}) to merge it",
                )
            updates[key] = child.result
        return self.merge(state, updates)

    def parallel(self, branches: Mapping[str, Call]) -> dict[str, Any]:
        """Run several effects or model calls at once and return their results by branch id,
        in branch-id order. ``branches`` maps a stable branch id to an
        :class:`~perdure.runtime.step.parallel.EffectCall` or a
        :class:`~perdure.runtime.step.parallel.ModelCall`; each gets its own effect key from its
        branch id, so after a crash only the branches not confirmed are called again. Plain
        callables run in threads, ``async def`` ones as tasks; the bookkeeping stays in the
        run's execution thread. See :mod:`perdure.runtime.step.parallel`."""
        self._no_loop("parallel", "await ctx.gather(...)")
        return self._branches(branches)

    async def gather(self, branches: Mapping[str, Call]) -> dict[str, Any]:
        """:meth:`parallel` for ``async def`` steps: ``results = await ctx.gather({...})``."""
        self._in_async("gather", "ctx.parallel({...})")
        return await self._host.off_loop(lambda: self._branches(branches))

    def _branches(self, branches: Mapping[str, Call]) -> dict[str, Any]:
        """What :meth:`parallel` and :meth:`gather` share (in the run's execution thread)."""
        return run_branches(self._host, lambda: self.messages, branches)

    def _no_loop(self, what: str, fix: str) -> None:
        """Refuse a blocking call from an ``async def`` step on the event loop."""
        if self._host.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.{what} would block every run on the loop",
                fix=f"write `{fix}` in async steps",
            )

    def _in_async(self, what: str, fix: str) -> None:
        """Refuse an ``a...`` call from a plain step."""
        if not self._host.in_async_step():
            raise DefinitionError(
                f"ctx.{what} is for async def steps; step {self.step!r} is a plain function",
                fix=f"write `{fix}` in plain steps",
            )


def tool_call(id: str, name: str, arguments: JSON = None) -> ToolCall:
    """Shorthand for :class:`perdure.core.model.ToolCall`."""
    return ToolCall(id, name, arguments)


__all__ = ["Context", "StepHost", "tool_call"]
