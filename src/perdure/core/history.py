"""Records of a run's past and of its end: state changes by step, savepoints, fork lineage,
artifact references, retention settings, and what a garbage collection or an erasure removed.

Step numbers (``step_seq``) count committed steps from 1; 0 is the state a run started with.
"The state at step N" is the state after step N was committed, with whatever a person or an
upgrade applied before step N+1 started: exactly what step N+1 saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import InvalidInputError
from perdure.core.values import JSON


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One state field written at one point of a run's history: after step ``step_seq``, at
    run ``version``. ``size`` is the stored size in bytes (None: the field was removed);
    ``offloaded`` when the value lives in the artifact store; ``appended`` when only the items
    appended to a field kept as a log were stored (``size`` is theirs; see
    :mod:`perdure.core.logs`)."""

    step_seq: int
    version: int
    field: str
    size: int | None
    offloaded: bool = False
    appended: bool = False

    def to_json(self) -> dict[str, JSON]:
        """The change as a JSON object."""
        return {
            "step_seq": self.step_seq,
            "version": self.version,
            "field": self.field,
            "size": self.size,
            "removed": self.size is None,
            "offloaded": self.offloaded,
            "appended": self.appended,
        }


@dataclass(frozen=True, slots=True)
class SavepointMark:
    """A savepoint a step asks for (``ctx.savepoint``), committed with the step's boundary."""

    label: str
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Savepoint:
    """A labelled, confirmed point of a run's history that a run may be forked from.

    It marks the state at ``step_seq``; ``created_by`` is the step (``step:NAME``) or the person
    who marked it; after ``expires_at`` (None: never) it no longer holds the run back from
    garbage collection and can no longer be forked from."""

    run_id: str
    label: str
    step_seq: int
    created_by: str
    created_at: datetime
    expires_at: datetime | None = None

    def live(self, now: datetime) -> bool:
        """True until the savepoint expires."""
        return self.expires_at is None or self.expires_at > now

    def to_json(self) -> dict[str, JSON]:
        """The savepoint as a JSON object."""
        return {
            "run_id": self.run_id,
            "label": self.label,
            "step_seq": self.step_seq,
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a forked run came from: ``source_run_id`` at ``step_seq`` (by ``savepoint`` when
    one was named), with the fields a person ``patched``."""

    run_id: str
    source_run_id: str
    step_seq: int
    savepoint: str | None
    patched: tuple[str, ...]
    created_by: str
    created_at: datetime

    def to_json(self) -> dict[str, JSON]:
        """The lineage as a JSON object."""
        return {
            "run_id": self.run_id,
            "source_run_id": self.source_run_id,
            "step_seq": self.step_seq,
            "savepoint": self.savepoint,
            "patched": list(self.patched),
            "created_by": self.created_by,
            "created_at": self.created_at.isoformat(),
        }


class ArtifactStatus(StrEnum):
    """``uploaded``: recorded and uploaded, not yet part of a committed boundary (an orphan
    if the run moves on without it); ``committed``: referenced by committed progress."""

    UPLOADED = "uploaded"
    COMMITTED = "committed"


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    """One reference a run holds to an artifact, with who made it and from what."""

    id: int
    tenant_id: str
    run_id: str
    step: str | None
    step_seq: int | None
    fence: int
    ref: ArtifactRef
    parents: tuple[str, ...]
    status: ArtifactStatus
    created_at: datetime
    committed_at: datetime | None = None

    def to_json(self) -> dict[str, JSON]:
        """The record as a JSON object."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "step": self.step,
            "step_seq": self.step_seq,
            **self.ref.to_json(),
            "parents": list(self.parents),
            "status": str(self.status),
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Retention:
    """How long finished runs are kept. ``finished`` is the default age (since the run ended)
    after which a SUCCEEDED, FAILED or CANCELLED run is deleted with everything it owns
    (steps, state and its history, events, effects, approvals, signals, savepoints, artifact
    references, and its messages unless its thread has a live run); ``workflows`` overrides it
    per workflow name (None: keep that workflow's runs). A run with a live savepoint is kept.
    ``orphan_grace`` protects artifact objects that no row references for that long after
    they were written (an upload a step is about to commit). ``batch`` runs are deleted per
    transaction. ``events`` and ``history`` prune those parts of finished runs sooner than the
    runs themselves."""

    finished: timedelta | None = timedelta(days=30)
    workflows: dict[str, timedelta | None] = field(default_factory=dict)
    orphan_grace: timedelta = timedelta(hours=1)
    batch: int = 100
    events: timedelta | None = None
    """Delete the events of finished runs this long after they ended, keeping the runs."""
    history: timedelta | None = None
    """Delete the state history of finished runs (without a live savepoint) this long after
    they ended, keeping the runs and their final state; they can no longer be forked."""

    def __post_init__(self) -> None:
        ages = [self.finished, self.orphan_grace, self.events, self.history]
        ages += list(self.workflows.values())
        if any(a is not None and a < timedelta(0) for a in ages):
            raise InvalidInputError("a retention period cannot be negative", fix="pass 0 or more")
        if not 1 <= self.batch <= 10_000:
            raise InvalidInputError(f"gc batch {self.batch} is out of range", fix="pass 1 to 10000")


@dataclass(frozen=True, slots=True)
class Removed:
    """What a deletion removed: rows per table, and the artifact objects no row references
    any more (``(tenant_id, digest)``), which the caller deletes from the object store."""

    rows: dict[str, int]
    freed: tuple[tuple[str, str], ...] = ()

    def plus(self, other: Removed) -> Removed:
        """Both deletions together."""
        rows = dict(self.rows)
        for k, v in other.rows.items():
            rows[k] = rows.get(k, 0) + v
        return Removed(rows, (*self.freed, *other.freed))


@dataclass(frozen=True, slots=True)
class GcReport:
    """What ``gc`` did: runs deleted, rows per table, orphaned uploads and objects removed."""

    runs: int
    rows: dict[str, int]
    orphan_uploads: int
    objects_deleted: int

    def to_json(self) -> dict[str, JSON]:
        """The report as a JSON object."""
        return {
            "runs": self.runs,
            "rows": dict(self.rows),
            "orphan_uploads": self.orphan_uploads,
            "objects_deleted": self.objects_deleted,
        }


@dataclass(frozen=True, slots=True)
class Erasure:
    """The record that a thread (or one run) was erased: ids and counts, never content."""

    tenant_id: str
    thread_id: str | None
    run_id: str | None
    rows: dict[str, int]
    objects_deleted: int
    erased_by: str
    at: datetime

    def to_json(self) -> dict[str, JSON]:
        """The erasure as a JSON object."""
        return {
            "tenant_id": self.tenant_id,
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "rows": dict(self.rows),
            "objects_deleted": self.objects_deleted,
            "erased_by": self.erased_by,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class ArchivedRow:
    """One row of a run as archived: its table (``runs``, ``steps``, ``state_fields``,
    ``history``, ``events``, ``effects``, ``approvals``, ``signals``, ``savepoints``, ``forks``,
    ``artifacts``, ``messages``) and its columns (times as ISO-8601 text, JSON columns as the
    text stored). One line of an archive file each."""

    table: str
    row: dict[str, JSON]

    def to_json(self) -> dict[str, JSON]:
        """The line as a JSON object."""
        return {"table": self.table, "row": dict(self.row)}

    @classmethod
    def from_json(cls, data: object) -> ArchivedRow:
        """A line read back; anything else is :class:`InvalidInputError`."""
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("table"), str)
            or not isinstance(data.get("row"), dict)
        ):
            raise InvalidInputError("an archive line is not {table, row}", fix="check the archive")
        return cls(data["table"], dict(data["row"]))
