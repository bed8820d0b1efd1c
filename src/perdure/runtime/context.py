"""The step context: what a step may know about its run and what it may record."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.model import JSON, Approval, Message, Release, Run, Signal, ToolCall
from perdure.core.signals import Cancelled
from perdure.core.streams import StreamSink
from perdure.runtime.agent_calls import AgentCalls, tool_call
from perdure.runtime.artifact_calls import ArtifactCalls
from perdure.runtime.fanout import FanOut
from perdure.runtime.stream_sink import DEFAULT_BATCH, DEFAULT_MAX_DELAY

if TYPE_CHECKING:
    from perdure.core.artifacts import ArtifactRef
    from perdure.core.budget import BudgetState
    from perdure.core.history import SavepointMark
    from perdure.core.retry import RetryPolicy
    from perdure.core.streams import StreamSink
    from perdure.runtime.aio import Bridge
    from perdure.runtime.artifacts import Data
    from perdure.runtime.children import Spawner
    from perdure.runtime.claim import Claim
    from perdure.runtime.effect_outcomes import Compensate, Execute, Reconcile
    from perdure.runtime.effect_runner import EffectRunner
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


class Context(AgentCalls, ArtifactCalls, FanOut):
    """Handed to every step as its first argument.

    Attributes a step may read: ``run_id``, ``tenant_id``, ``thread_id``, ``workflow``, ``step``
    (the running step's name) and ``fence`` (the lease's fencing token: pass it to a downstream
    system so it can refuse writes from a worker that lost the run).

    Child runs, parallel branches and reducers: :class:`~perdure.runtime.fanout.FanOut`.
    Model calls and context windows: :class:`~perdure.runtime.agent_calls.AgentCalls`.
    Artifacts and savepoints: :class:`~perdure.runtime.artifact_calls.ArtifactCalls`.

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


__all__ = ["Context", "StepHost", "tool_call"]
