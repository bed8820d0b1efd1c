"""Typed records a run carries: why it stopped short (:class:`RunError`) and what it waits for
(:class:`ApprovalWait`, :class:`SignalWait`, :class:`TimerWait`), plus the string enums of step
outcomes, event types and stop reasons.

Each record is stored as a JSON object on the run; ``to_json`` writes that object and
``from_json`` reads it back. They are what ``perdure show --json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from perdure.core.values import JSON


@runtime_checkable
class Record(Protocol):
    """A typed record stored as a JSON object."""

    def to_json(self) -> dict[str, JSON]:
        """The record as a JSON object."""
        ...


class StepOutcome(StrEnum):
    """How a committed step ended (``StepRecord.outcome``)."""

    NEXT = "next"
    DONE = "done"
    FAIL = "fail"
    WAIT_APPROVAL = "wait_approval"
    WAIT_SIGNAL = "wait_signal"
    SLEEP = "sleep"
    WAIT_CHILDREN = "wait_children"


class EventType(StrEnum):
    """What an :class:`~perdure.core.model.Event` records."""

    CREATED = "created"
    CLAIMED = "claimed"
    RELEASED = "released"
    STATUS = "status"
    STEP_COMPLETED = "step_completed"
    RETRY_SCHEDULED = "retry_scheduled"
    EFFECT = "effect"
    APPROVAL_DECIDED = "approval_decided"
    SIGNAL_RECEIVED = "signal_received"
    SIGNAL_CONSUMED = "signal_consumed"
    RESUMED = "resumed"
    UPGRADED = "upgraded"
    LATE_COMMIT = "late_commit"
    LATE_APPROVAL = "late_approval"
    LATE_SIGNAL = "late_signal"
    LATE_STATUS = "late_status"
    GRAPH_CHECKPOINT = "graph_checkpoint"
    GRAPH_INTERRUPT = "graph_interrupt"
    GRAPH_THREAD_DELETED = "graph_thread_deleted"
    GRAPH_RUNS_DELETED = "graph_runs_deleted"
    GRAPH_THREAD_COPIED = "graph_thread_copied"
    GRAPH_PRUNED = "graph_pruned"
    SAVEPOINT = "savepoint"
    RESTORED = "restored"
    CHILDREN_SETTLED = "children_settled"
    CHILD_SPAWNED = "child_spawned"
    CACHE_REBUILT = "cache_rebuilt"
    MESSAGE_STREAM = "message_stream"
    """A streamed reply's token stream opened (an attempt): ``data`` names its ``message_id``
    and ``attempt``, so a reader of the run's events can follow the reply as it is written."""


class StopReason(StrEnum):
    """Why one execution of a run stopped (the run itself may go on later)."""

    ENDED = "ended"
    WAITING = "waiting"
    RETRY_SCHEDULED = "retry_scheduled"
    NEEDS_ATTENTION = "needs_attention"
    RELEASED = "released"
    LOST = "lost"
    QUARANTINED = "quarantined"
    CANCELLED = "cancelled"
    STORE_ERROR = "store_error"


class ApprovalStatus(StrEnum):
    """Where an approval request stands."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class WaitKind(StrEnum):
    """What a WAITING_* run waits for."""

    APPROVAL = "approval"
    SIGNAL = "signal"
    TIMER = "timer"
    CHILDREN = "children"


@dataclass(frozen=True, slots=True)
class RunError:
    """Why a run is FAILED, NEEDS_ATTENTION, QUARANTINED or CANCELLED.

    ``reason`` is a stable snake_case code (``retries_exhausted``, ``budget_exhausted``,
    ``step_raised``, ``schema_too_new``, ``cancelled``, or a workflow's own ``fail`` reason);
    ``message`` says it in words; ``step`` is where it happened; ``evidence`` holds the facts
    (the error that was raised, the limits reached, what was found in the database).
    For NEEDS_ATTENTION, ``suggested_action`` says what a person should do, ``resume_at`` where
    the run continues and ``completed_steps`` how far it got. ``unresolved_compensations``
    lists effects that could not be undone and ``kept_effects`` the confirmed effects a cancel
    or failure left in place because they declare no compensator; ``by`` is who failed the
    run by hand and ``via`` the credential the decision came through, with the run's
    ``previous`` error.
    """

    reason: str
    message: str = ""
    step: str | None = None
    evidence: dict[str, JSON] = field(default_factory=dict)
    suggested_action: str | None = None
    resume_at: str | None = None
    completed_steps: int | None = None
    unresolved_compensations: tuple[dict[str, JSON], ...] = ()
    kept_effects: tuple[dict[str, JSON], ...] = ()
    deleted_messages: int | None = None
    by: str | None = None
    previous: RunError | None = None
    via: str | None = None

    def to_json(self) -> dict[str, JSON]:
        """The error as stored on the run (fields left at their default are omitted)."""
        out: dict[str, JSON] = {"reason": self.reason, "message": self.message}
        if self.step is not None:
            out["step"] = self.step
        out["evidence"] = self.evidence
        optional: dict[str, JSON] = {
            "suggested_action": self.suggested_action,
            "resume_at": self.resume_at,
            "completed_steps": self.completed_steps,
            "deleted_messages": self.deleted_messages,
            "by": self.by,
            "via": self.via,
            "previous": None if self.previous is None else self.previous.to_json(),
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.unresolved_compensations:
            out["unresolved_compensations"] = list(self.unresolved_compensations)
        if self.kept_effects:
            out["kept_effects"] = list(self.kept_effects)
        return out

    @classmethod
    def from_json(cls, data: Any) -> RunError | None:
        """Read an error written by :meth:`to_json` (None stays None)."""
        if data is None:
            return None
        if not isinstance(data, dict):
            return cls(reason="unreadable_error", evidence={"stored": data})
        previous = data.get("previous")
        evidence = data.get("evidence")
        return cls(
            reason=str(data.get("reason", "unknown")),
            message=str(data.get("message", "")),
            step=data.get("step"),
            evidence=evidence if isinstance(evidence, dict) else {},
            suggested_action=data.get("suggested_action"),
            resume_at=data.get("resume_at"),
            completed_steps=data.get("completed_steps"),
            unresolved_compensations=tuple(data.get("unresolved_compensations") or ()),
            kept_effects=tuple(data.get("kept_effects") or ()),
            deleted_messages=data.get("deleted_messages"),
            by=data.get("by"),
            previous=cls.from_json(previous) if isinstance(previous, dict) else None,
            via=data.get("via"),
        )


@dataclass(frozen=True, slots=True)
class ApprovalWait:
    """The run waits for a person with ``role`` to approve (continue with ``on_approve``) or
    reject (continue with ``on_reject``)."""

    role: str
    on_approve: str
    on_reject: str
    kind: WaitKind = field(default=WaitKind.APPROVAL, init=False)

    def to_json(self) -> dict[str, JSON]:
        """The wait as stored on the run."""
        return {
            "kind": str(self.kind),
            "role": self.role,
            "on_approve": self.on_approve,
            "on_reject": self.on_reject,
        }


@dataclass(frozen=True, slots=True)
class SignalWait:
    """The run waits for the signal ``name``, then continues with ``next``; after ``timeout``
    seconds (None: never) it continues with ``on_timeout`` (None: it fails)."""

    name: str
    next: str
    on_timeout: str | None = None
    timeout: float | None = None
    kind: WaitKind = field(default=WaitKind.SIGNAL, init=False)

    def to_json(self) -> dict[str, JSON]:
        """The wait as stored on the run."""
        return {
            "kind": str(self.kind),
            "name": self.name,
            "next": self.next,
            "on_timeout": self.on_timeout,
            "timeout": self.timeout,
        }


@dataclass(frozen=True, slots=True)
class TimerWait:
    """The run sleeps until ``until``, then continues with ``next``."""

    next: str
    until: datetime
    kind: WaitKind = field(default=WaitKind.TIMER, init=False)

    def to_json(self) -> dict[str, JSON]:
        """The wait as stored on the run."""
        return {"kind": str(self.kind), "next": self.next, "until": self.until.isoformat()}


@dataclass(frozen=True, slots=True)
class ChildrenWait:
    """The run waits until its children named in ``keys`` (None: every child it started) are
    settled (SUCCEEDED, FAILED, CANCELLED, NEEDS_ATTENTION or QUARANTINED), then continues
    with ``next``."""

    next: str
    keys: tuple[str, ...] | None = None
    kind: WaitKind = field(default=WaitKind.CHILDREN, init=False)

    def to_json(self) -> dict[str, JSON]:
        """The wait as stored on the run."""
        keys: JSON = None if self.keys is None else list(self.keys)
        return {"kind": str(self.kind), "next": self.next, "keys": keys}


Waiting = ApprovalWait | SignalWait | TimerWait | ChildrenWait
"""What a WAITING_* run waits for."""


def waiting_from_json(data: Any) -> Waiting | None:
    """Read a wait written by one of the ``to_json`` methods (None, or an unknown kind: None)."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if kind == WaitKind.APPROVAL:
        return ApprovalWait(str(data["role"]), str(data["on_approve"]), str(data["on_reject"]))
    if kind == WaitKind.SIGNAL:
        timeout = data.get("timeout")
        return SignalWait(
            str(data["name"]),
            str(data["next"]),
            data.get("on_timeout"),
            None if timeout is None else float(timeout),
        )
    if kind == WaitKind.TIMER:
        return TimerWait(str(data["next"]), datetime.fromisoformat(str(data["until"])))
    if kind == WaitKind.CHILDREN:
        keys = data.get("keys")
        return ChildrenWait(str(data["next"]), None if keys is None else tuple(map(str, keys)))
    return None


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a step that waits for approval asks: the wait, and the request a person reads."""

    wait: ApprovalWait
    request: JSON
