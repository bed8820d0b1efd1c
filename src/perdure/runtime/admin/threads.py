"""The Runtime's operations on threads: their policy, what they hold, messages from outside a
run, and finishing the cancels an ``interrupt`` asked for."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from perdure.core.errors import InvalidInputError
from perdure.core.ids import MAX_MESSAGE_LENGTH, checked_id, checked_text
from perdure.core.model import Message, RunStatus, ToolCall
from perdure.core.threads import Delivery, ThreadInfo, ThreadPolicy
from perdure.runtime.admin.control import cancel_run
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.admin.stream_reader import StreamReader
from perdure.runtime.admin.verbs import reader, verb
from perdure.runtime.settings import setting

ROLES = ("user", "assistant", "tool", "system")


class Threads:
    """The Runtime's part for threads (``rt.threads``): ``get``, ``set_policy``, ``post`` (a
    message from outside a run) and ``stream`` (a message's durable stream).

    A thread runs one run at a time: only its oldest unfinished run is claimed, the others wait
    PENDING in order (see :mod:`perdure.core.threads`). The store enforces it on both
    databases; these methods only set and show the policy and add input.
    """

    def __init__(self, parts: RuntimeParts, shutdown: threading.Event) -> None:
        self.parts = parts
        self.shutdown = shutdown

    @verb
    def get(self, thread: str, *, tenant: Tenant = DEFAULT_TENANT) -> ThreadInfo:
        """The thread's policy, the run that holds it (its oldest unfinished run), the runs
        queued behind it in the order they will run, and how many outside messages wait in
        its inbox."""
        return self.parts.store.thread(tenant_of(tenant), checked_id(thread, "thread"))

    @verb
    def set_policy(
        self, thread: str, policy: ThreadPolicy | str, *, tenant: Tenant = DEFAULT_TENANT
    ) -> ThreadInfo:
        """Set what a new run or message does while the thread is busy: ``enqueue`` (the
        default: wait and run after, in order), ``interrupt`` (the unfinished runs are cancelled
        at their next boundary, with compensations, then the new one runs) or ``reject``
        (:class:`~perdure.core.errors.ThreadBusyError`). A start or message may still pass its
        own ``policy``. Returns the thread afterwards."""
        tenant_id, thread = tenant_of(tenant), checked_id(thread, "thread")
        chosen = ThreadPolicy.parse(policy)
        self.parts.store.set_thread_policy(tenant_id, thread, chosen, self.parts.clock.now())
        return self.parts.store.thread(tenant_id, thread)

    @verb
    def post(
        self,
        thread: str,
        role: str,
        content: str = "",
        *,
        tool_calls: Iterable[ToolCall] = (),
        tool_call_id: str | None = None,
        tenant: Tenant = DEFAULT_TENANT,
        policy: ThreadPolicy | str | None = None,
    ) -> Delivery:
        """Add a message to a thread from outside any run.

        On an idle thread it is appended at once (``appended``). While a run of the thread is
        unfinished it waits in the thread's inbox and joins the thread at that run's next step
        boundary, after the boundary's own messages, never in the middle of a step
        (``queued``); under ``interrupt`` the unfinished runs are also cancelled (the message
        joins when they end); under ``reject`` it raises
        :class:`~perdure.core.errors.ThreadBusyError` and nothing is written.
        """
        tenant_id, thread = tenant_of(tenant), checked_id(thread, "thread")
        if role not in ROLES:
            raise InvalidInputError(f"role {role!r} is unknown", fix=f"use {', '.join(ROLES)}")
        chosen = None if policy is None else ThreadPolicy.parse(policy)
        checked_text(content, "message", max_length=MAX_MESSAGE_LENGTH)
        message = Message(role, content, tuple(tool_calls), tool_call_id)
        delivery = self.parts.store.post_message(
            tenant_id, thread, message, chosen, self.parts.clock.now()
        )
        self.finish_interrupts(tenant_id, thread)
        return delivery

    @reader
    def stream(
        self,
        message_id: str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        after: int = 0,
        follow: bool = False,
        poll: float = 0.05,
    ) -> StreamReader:
        """The entries of ``message_id``'s durable stream with ``seq > after``, oldest first
        (a :class:`StreamReader`; tenant-scoped: another tenant's message reads as empty).

        Each entry is a :class:`~perdure.core.streams.StreamEntry`: ``delta`` (a piece of
        text of attempt ``attempt``), ``superseded`` (the attempts before this entry's were cut
        by a crash: drop their draft; the new attempt follows) or ``finished`` (the message is
        whole). Without ``follow`` it returns what is stored now; with ``follow`` it waits for
        more until the message is finished (PostgreSQL: woken by LISTEN/NOTIFY; SQLite: polls
        every ``poll`` seconds). Reconnect with ``after=reader.last_seq`` to see every entry
        exactly once.
        """
        tenant_id = tenant_of(tenant)
        checked_id(message_id, "message id")
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidInputError(
                f"after {after!r} is not a sequence number", fix="give 0 or a seq already seen"
            )
        poll = setting("poll", poll, 0.001, 60)
        return StreamReader(self.parts, tenant_id, message_id, after, follow, poll, self.shutdown)

    def finish_interrupts(self, tenant_id: str, thread: str) -> None:
        """End at once the runs of the thread an interrupt asked to stop that no worker holds
        and that have nothing to compensate (the cancel chain of
        :meth:`~perdure.runtime.runtime.Runtime.cancel`); a worker finishes the others at
        their next boundary."""
        asked = self.parts.store.list_runs(
            tenant_id, statuses=[RunStatus.CANCEL_REQUESTED], thread_id=thread
        )
        for run in asked:
            cancel_run(self.parts, tenant_id, run.run_id, "interrupted by new input", None)
