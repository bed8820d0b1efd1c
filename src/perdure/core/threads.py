"""One writer per thread: the policy a thread applies to a new input while a run of it is
unfinished, and what a thread looks like (its runs in order, its inbox).

A thread runs its runs one at a time, in the order they were admitted: only the oldest
unfinished run of a thread may be claimed (so at most one is RUNNING), and the others wait
PENDING in the thread's queue. The store enforces this in its claim; this module only names the
policies and the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from perdure.core.errors import InvalidInputError


class ThreadPolicy(StrEnum):
    """What a new run (or an outside message) on a busy thread does."""

    ENQUEUE = "enqueue"  # wait in the thread's queue (or inbox) and run after, in order
    INTERRUPT = "interrupt"  # cancel the unfinished runs ahead at their next boundary, then run
    REJECT = "reject"  # refuse with ThreadBusyError; nothing is written

    @classmethod
    def parse(cls, value: ThreadPolicy | str) -> ThreadPolicy:
        """The policy named by ``value``, or :class:`InvalidInputError` naming the choices."""
        try:
            return cls(str(value).lower())
        except ValueError:
            raise InvalidInputError(
                f"thread policy {value!r} is unknown", fix="use enqueue, interrupt or reject"
            ) from None


DEFAULT_POLICY = ThreadPolicy.ENQUEUE
"""The policy of a thread nobody set one for."""


class Delivery(StrEnum):
    """What happened to a message added to a thread from outside a run."""

    APPENDED = "appended"  # the thread was idle: the message is in the thread now
    QUEUED = "queued"  # a run is unfinished: the message waits in the inbox for its boundary


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A thread as the store knows it.

    ``policy`` is the thread's own (the default when none was set); ``active`` is the run that
    holds the thread (its oldest unfinished run) or None when the thread is idle; ``queued`` are
    the unfinished runs behind it, in the order they will run; ``inbox`` counts messages added
    from outside that wait for the active run's next boundary.
    """

    tenant_id: str
    thread_id: str
    policy: ThreadPolicy
    active: str | None
    queued: tuple[str, ...]
    inbox: int

    def to_json(self) -> dict[str, object]:
        """The thread as a JSON object (what ``perdure thread show --json`` prints)."""
        return {
            "thread_id": self.thread_id,
            "policy": str(self.policy),
            "active": self.active,
            "queued": list(self.queued),
            "inbox": self.inbox,
        }
