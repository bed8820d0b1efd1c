"""The step context: what a step may know about its run and what it may record."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.model import JSON, Approval, Message, Release, Run, Signal, ToolCall
from perdure.core.signals import Cancelled

if TYPE_CHECKING:
    from perdure.core.artifacts import ArtifactRef
    from perdure.core.history import SavepointMark
    from perdure.core.retry import RetryPolicy
    from perdure.runtime.aio import Bridge
    from perdure.runtime.artifacts import Data
    from perdure.runtime.effect_runner import Compensate, EffectRunner, Execute, Reconcile


class StepHost(Protocol):
    """What a context needs from the execution that runs the step."""

    effects: EffectRunner
    bridge: Bridge

    def now(self) -> datetime: ...
    def thread_messages(self) -> list[Message]: ...
    def approvals(self) -> list[Approval]: ...
    def signals(self) -> list[Signal]: ...
    def charge(self, cost: float, tokens: int) -> None: ...
    def budget_left(self) -> dict[str, float | int | None] | None: ...
    def cancel_requested(self) -> bool: ...
    def release(self) -> Release: ...
    def put_artifact(
        self, data: Data, media_type: str, parents: tuple[ArtifactRef, ...]
    ) -> ArtifactRef: ...
    def get_artifact(self, ref: ArtifactRef) -> bytes: ...
    def mark_savepoint(self, mark: SavepointMark) -> None: ...


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
        """
        if self._host.bridge.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.effect would block every run on the loop",
                fix=f"write `await ctx.aeffect({name!r}, ...)` in async steps",
            )
        return self._host.effects.effect(
            name,
            target=target,
            operation=operation,
            request=request,
            execute=execute,
            reconcile=reconcile,
            compensate=compensate,
            retry=retry,
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
        effects = self._host.effects
        return await self._host.bridge.call(
            lambda: effects.effect(
                name,
                target=target,
                operation=operation,
                request=request,
                execute=execute,
                reconcile=reconcile,
                compensate=compensate,
                retry=retry,
            )
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


def tool_call(id: str, name: str, arguments: JSON = None) -> ToolCall:
    """Shorthand for :class:`perdure.core.model.ToolCall`."""
    return ToolCall(id, name, arguments)
