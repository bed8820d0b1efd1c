"""Persisted records: frozen dataclasses and string enums.

These are the shapes that go into and come out of a :class:`perdure.store.base.Store`. They hold
plain data only (no handles, no callables), so they can be compared, logged and shown as JSON.
Times are timezone-aware UTC datetimes taken from the injected :class:`perdure.core.clock.Clock`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from perdure.core.artifacts import ArtifactRef
from perdure.core.budget import BudgetState
from perdure.core.records import ApprovalStatus, EventType, RunError, StepOutcome, Waiting
from perdure.core.values import JSON

__all__ = [
    "JSON",
    "TERMINAL",
    "Approval",
    "Durability",
    "Event",
    "Message",
    "Principal",
    "Release",
    "Run",
    "RunStatus",
    "Signal",
    "StepRecord",
    "ToolCall",
    "WorkerInfo",
]


class RunStatus(StrEnum):
    """Where a run is in its life. See ``perdure.core.transitions`` for the allowed changes."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    WAITING_APPROVAL = "WAITING_APPROVAL"
    WAITING_EXTERNAL = "WAITING_EXTERNAL"
    NEEDS_ATTENTION = "NEEDS_ATTENTION"
    QUARANTINED = "QUARANTINED"
    CANCEL_REQUESTED = "CANCEL_REQUESTED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        """True for SUCCEEDED, FAILED and CANCELLED: states a run never leaves."""
        return self in TERMINAL


TERMINAL = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED})


class Durability(StrEnum):
    """When a step-boundary commit becomes durable, and so how much a crash can lose (RPO).

    * ``sync``: each boundary is committed and fsync'd before the next step starts. RPO: nothing
      that a step completed.
    * ``async``: boundaries go to a background writer; the next step starts at once. The writer is
      drained before the run waits or ends. RPO: the steps since the last durable commit.
    * ``exit``: one commit when the run waits or ends, or before it calls an effect or a model
      (the ``per_effect()`` checkpoint strategy). RPO: the steps since the last effect call.

    A workflow may choose another strategy for its ``sync`` runs (``Workflow(checkpoint=...)``:
    :mod:`perdure.core.strategies`).
    """

    SYNC = "sync"
    ASYNC = "async"
    EXIT = "exit"


@dataclass(frozen=True, slots=True)
class Release:
    """The release manifest a run was started under; recorded on the run and never changed.

    ``workflow_version`` and ``state_schema`` come from the workflow definition; the release ids
    are whatever the user's deploy pipeline supplies (a git sha, a prompt bundle id, a model name,
    a tool catalogue version). ``durability`` is the run's commit mode.
    """

    workflow_version: int
    state_schema: int
    durability: Durability = Durability.SYNC
    code: str | None = None
    prompt: str | None = None
    model: str | None = None
    tools: str | None = None

    def to_json(self) -> dict[str, JSON]:
        """The manifest as a JSON object (the form stored on the run)."""
        return {
            "workflow_version": self.workflow_version,
            "state_schema": self.state_schema,
            "durability": str(self.durability),
            "code": self.code,
            "prompt": self.prompt,
            "model": self.model,
            "tools": self.tools,
        }

    @classmethod
    def from_json(cls, data: dict[str, JSON]) -> Release:
        """Read a manifest written by :meth:`to_json`."""
        return cls(
            workflow_version=int(data["workflow_version"]),
            state_schema=int(data["state_schema"]),
            durability=Durability(data.get("durability", "sync")),
            code=data.get("code"),
            prompt=data.get("prompt"),
            model=data.get("model"),
            tools=data.get("tools"),
        )


@dataclass(frozen=True, slots=True)
class Run:
    """One execution of a workflow toward one goal: the unit of ownership and recovery.

    ``state_version`` grows by one on every write to the run; ``fence`` grows by one on every
    claim. ``owner`` and ``lease_until`` describe the current lease (both None when free).
    ``next_step`` is the step the run continues with; None once it has ended. ``wake_at`` is
    set while the run sleeps before a retry (no worker claims it earlier); ``step_attempts`` and
    ``retry_since`` count failed attempts of ``next_step`` and when the first one failed.
    ``waiting`` says what a WAITING_* run waits for; ``budget`` holds the run's limits and usage;
    ``result`` is what the workflow returned with ``done``; ``error`` says why a FAILED,
    NEEDS_ATTENTION, QUARANTINED or CANCELLED run stopped.
    """

    run_id: str
    tenant_id: str
    thread_id: str
    workflow: str
    status: RunStatus
    next_step: str | None
    state_version: int
    fence: int
    owner: str | None
    lease_until: datetime | None
    release: Release
    idempotency_key: str | None
    result: JSON
    error: RunError | None
    steps_done: int
    created_at: datetime
    updated_at: datetime
    wake_at: datetime | None = None
    step_attempts: int = 0
    retry_since: datetime | None = None
    waiting: Waiting | None = None
    budget: BudgetState | None = None
    workflow_version: int = 1
    state_schema: int = 1
    state_seal: str | None = None
    """The sealed record of which state write each field comes from (None without a keyring,
    and for runs sealed before it existed); see :class:`perdure.core.seal.StateSeal`."""
    previous_owner: str | None = field(default=None, compare=False)
    """Only on a run just returned by a claim: who held the lease before (None: nobody)."""
    step_takeovers: int = 0
    """How many times a worker took the run over from one that still held its lease (it died
    or stalled) while step ``takeover_step + 1`` was in progress: each ran that step again."""
    takeover_step: int | None = None
    """``steps_done`` at the last takeover (None: never taken over)."""

    @property
    def durability(self) -> Durability:
        """The run's commit mode, from its release manifest."""
        return self.release.durability

    @property
    def interrupted_attempts(self) -> int:
        """Attempts of the step in progress (``next_step``) that a crash cut short: the
        takeovers since the last committed step."""
        return self.step_takeovers if self.takeover_step == self.steps_done else 0

    @property
    def attempt(self) -> int:
        """The attempt the step in progress is on, counted across crashes and failures: 1,
        plus each failed attempt (``step_attempts``), plus each run of it a crash cut short
        (:attr:`interrupted_attempts`)."""
        return 1 + self.step_attempts + self.interrupted_attempts


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One committed step boundary: which step ran, under which fence, and what it decided."""

    run_id: str
    seq: int
    name: str
    fence: int
    outcome: StepOutcome
    next_step: str | None
    started_at: datetime
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class Event:
    """An append-only record of something that happened to a run (audit trail, streaming)."""

    run_id: str
    seq: int
    type: EventType
    step: str | None
    fence: int | None
    data: JSON
    at: datetime


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to call a tool; ``id`` links it to the tool result message."""

    id: str
    name: str
    arguments: JSON = None

    def to_json(self) -> dict[str, JSON]:
        """The call in the OpenAI-compatible shape: ``{"id", "name", "arguments"}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Message:
    """A structured conversation message, stored per thread and never rewritten.

    ``role`` is ``user``, ``assistant``, ``tool`` or ``system``. An assistant message may carry
    ``tool_calls``; a tool message carries the ``tool_call_id`` of the call it answers. ``seq``
    (the position in the thread) and ``run_id`` are filled in by the store.
    """

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    seq: int | None = None
    run_id: str | None = None
    at: datetime | None = field(default=None, compare=False)
    artifact: ArtifactRef | None = field(default=None, compare=False)
    """Where the content is kept when it was too large to store inline (set by the store)."""

    def to_json(self) -> dict[str, JSON]:
        """The message as a JSON object (what ``perdure show --json`` prints)."""
        out: dict[str, JSON] = {"seq": self.seq, "role": self.role, "content": self.content}
        if self.artifact is not None:
            out["artifact"] = self.artifact.uri
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is acting: a tenant, a subject (a person or a service) and the roles it holds.
    ``via`` names the credential the request came through (``key:<key_id>`` or
    ``session:<session_id>``; None from the command line on the database): a decision records
    it beside the subject, for the audit trail."""

    tenant_id: str
    subject: str
    roles: frozenset[str] = frozenset()
    via: str | None = None


@dataclass(frozen=True, slots=True)
class Approval:
    """A request for a person's decision, and the decision once made."""

    id: int
    run_id: str
    step: str
    role: str
    request: JSON
    on_approve: str
    on_reject: str
    status: ApprovalStatus
    decided_by: str | None
    decided_role: str | None
    comment: str | None
    requested_at: datetime
    decided_at: datetime | None

    @property
    def approved(self) -> bool:
        """True once approved."""
        return self.status is ApprovalStatus.APPROVED


@dataclass(frozen=True, slots=True)
class Signal:
    """A signal delivered to a run's inbox; ``consumed_at`` is set when a wait took it."""

    id: int
    run_id: str
    signal_id: str
    name: str
    payload: JSON
    received_at: datetime
    consumed_at: datetime | None


class WorkerState(StrEnum):
    """``live``: beating; ``dead``: its process is gone (same host) or it missed its beats;
    ``stopped``: it drained and left."""

    LIVE = "live"
    DEAD = "dead"
    STOPPED = "stopped"


MISSED_BEATS = 2.5
"""A worker that has not beaten for this many of its beat intervals is dead."""

DEFAULT_BEAT_SECONDS = 10.0
"""The beat interval assumed for a worker that did not record one (the default lease / 3)."""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker process as it last reported itself (``stopped_at`` set once it drained).

    ``beat_seconds`` is how often it beats; ``state`` is what the reader concluded (see
    ``rt.activity.workers()``)."""

    owner: str
    host: str
    pid: int
    concurrency: int
    runs_held: int
    started_at: datetime
    last_beat: datetime
    stopped_at: datetime | None
    beat_seconds: float | None = None
    state: WorkerState = WorkerState.LIVE

    def missed_beats(self, now: datetime) -> bool:
        """True when the worker has been silent for :data:`MISSED_BEATS` beat intervals."""
        interval = self.beat_seconds or DEFAULT_BEAT_SECONDS
        return (now - self.last_beat).total_seconds() > MISSED_BEATS * interval
