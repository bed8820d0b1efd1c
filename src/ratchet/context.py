"""The step context: what a step may know about its run and what it may record."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from ratchet.model import JSON, Message, ToolCall

if TYPE_CHECKING:
    from ratchet.effect_runner import Compensate, EffectRunner, Execute, Reconcile
    from ratchet.retry import RetryPolicy


class Context:
    """Handed to every step as its first argument.

    Attributes a step may read: ``run_id``, ``tenant_id``, ``thread_id``, ``workflow``, ``step``
    (the running step's name) and ``fence`` (the lease's fencing token: pass it to a downstream
    system so it can refuse writes from a worker that lost the run).

    Messages added with :meth:`add_message` are appended to the thread in the same transaction as
    the step's boundary, so they are recorded exactly when the step's progress is.
    """

    def __init__(
        self,
        *,
        run_id: str,
        tenant_id: str,
        thread_id: str,
        workflow: str,
        step: str,
        fence: int,
        now: Callable[[], datetime],
        thread_messages: Callable[[], list[Message]],
        effects: EffectRunner,
    ) -> None:
        self.run_id = run_id
        self.tenant_id = tenant_id
        self.thread_id = thread_id
        self.workflow = workflow
        self.step = step
        self.fence = fence
        self._now = now
        self._thread_messages = thread_messages
        self._effects = effects
        self.new_messages: list[Message] = []

    def now(self) -> datetime:
        """The runtime clock's current time (use this, not ``datetime.now()``)."""
        return self._now()

    @property
    def messages(self) -> list[Message]:
        """The thread's messages so far, including those this step added."""
        return [*self._thread_messages(), *self.new_messages]

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
          which returns :class:`ratchet.effects.Reconciled` (confirmed / not found / unknown);
          without a reconciler, or when still unknown, the effect becomes ``ambiguous`` and the
          run goes to NEEDS_ATTENTION: it is never resent blindly;
        * a ``rejected`` effect raises :class:`ratchet.effects.EffectRejectedError` again.

        Errors raised by ``execute`` are classified (:mod:`ratchet.effects`): transient ones are
        retried under ``retry`` with durable waits; permanent ones reject the effect; anything
        else may have reached the provider and is reconciled. ``compensate(request, key,
        result)`` — declared in ``Workflow(compensators=[...])`` — undoes a confirmed effect
        when the run is cancelled or fails. ``execute`` may return an
        :class:`ratchet.effects.EffectResult` to record a receipt id with the result. A
        different ``request`` under the same ``name`` in the same step occurrence raises
        :class:`ratchet.effects.EffectConflictError`.
        """
        return self._effects.effect(
            name,
            target=target,
            operation=operation,
            request=request,
            execute=execute,
            reconcile=reconcile,
            compensate=compensate,
            retry=retry,
        )


def tool_call(id: str, name: str, arguments: JSON = None) -> ToolCall:
    """Shorthand for :class:`ratchet.model.ToolCall`."""
    return ToolCall(id, name, arguments)
