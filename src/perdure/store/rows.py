"""Pure helpers every store shares: database rows to records, and why a guarded write failed.

A row is anything indexable by column name (``sqlite3.Row``, a psycopg dict row). JSON columns
arrive as the text the store wrote; times arrive in the driver's form and go through the
store's ``when`` converter (ISO text on SQLite, ``datetime`` already on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, cast

import orjson

from perdure.core.artifacts import ArtifactRef
from perdure.core.budget import BudgetState
from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.errors import (
    EffectNotFoundError,
    EffectStateError,
    InvalidInputError,
    LeaseLostError,
    RunClosedError,
    RunNotFoundError,
    StaleStateError,
)
from perdure.core.model import (
    JSON,
    Approval,
    Event,
    Message,
    Release,
    Run,
    RunStatus,
    Signal,
    StepRecord,
    ToolCall,
    WorkerInfo,
)
from perdure.core.observed import StepTiming
from perdure.core.records import (
    ApprovalStatus,
    EventType,
    Record,
    RunError,
    StepOutcome,
    waiting_from_json,
)
from perdure.store.base import Boundary, CommitRequest


class Row(Protocol):
    """A database row, read by column name."""

    def __getitem__(self, key: str, /) -> Any: ...


When = Callable[[Any], datetime | None]
"""Turns a stored time into a timezone-aware datetime (None stays None)."""

ERROR_STATUSES = frozenset(
    {RunStatus.FAILED, RunStatus.QUARANTINED, RunStatus.NEEDS_ATTENTION, RunStatus.CANCELLED}
)
"""Statuses whose ``set_status`` data is also kept on the run's ``error``."""

LEASED = frozenset({RunStatus.RUNNING, RunStatus.CANCEL_REQUESTED})
"""The only statuses in which a run may hold a lease."""


Params = Mapping[str, Any]
"""Named query parameters."""

Stamp = Callable[[datetime | None], Any]
"""Turns a time into what a driver stores (SQLite: ISO text; PostgreSQL: the datetime)."""


def same(value: datetime | None) -> datetime | None:
    """The :data:`Stamp` of a driver that stores datetimes as they are."""
    return value


def advance_params(request: CommitRequest, at: Any, stamp: Stamp) -> dict[str, Any]:
    """Parameters of the guarded run update (``advance_run``, ``commit_step``): the run row
    after the request's last boundary, under its fence and expected version."""
    boundaries = request.boundaries
    last = boundaries[-1]
    return {
        "tenant_id": request.tenant_id,
        "run_id": request.run_id,
        "status": str(last.status),
        "next_step": last.next_step,
        "steps": len(boundaries),
        "result": to_json(last.result),
        "error": to_json(last.error),
        "keep_lease": last.status is RunStatus.RUNNING,
        "waiting": to_json(last.waiting),
        "wake_at": stamp(last.wake_at),
        "budget": to_json(last.budget),
        "workflow_version": last.workflow_version,
        "state_schema": last.state_schema,
        "state_seal": last.state_seal,
        "now": at,
        "fence": request.fence,
        "expected_version": request.expected_version,
    }


def step_params(ids: Params, seq: int, b: Boundary, fence: int, stamp: Stamp) -> dict[str, Any]:
    """Parameters of ``insert_step`` for boundary ``b`` at position ``seq``."""
    return {
        **ids,
        "seq": seq,
        "name": b.step,
        "fence": fence,
        "outcome": str(b.outcome),  # plain text: sqlite3 looks for adapters of a subclass
        "next_step": b.next_step,
        "started_at": stamp(b.started_at),
        "finished_at": stamp(b.finished_at),
    }


def step_completed(seq: int, b: Boundary) -> dict[str, JSON]:
    """The data of a ``step_completed`` event."""
    return {"seq": seq, **step_completion(b)}


def step_completion(b: Boundary) -> dict[str, JSON]:
    """What a ``step_completed`` event's data holds after ``seq`` (which ``commit_step`` finds
    in the database and writes first)."""
    return {"outcome": b.outcome, "next": b.next_step}


def effect_change(
    expected: EffectStatus, status: EffectStatus, key: str, resolution: JSON
) -> dict[str, JSON]:
    """The data of an ``effect`` event for a status change (with a person's resolution)."""
    info: dict[str, JSON] = {"key": key, "from": str(expected), "to": str(status)}
    if resolution is not None:
        info["resolution"] = resolution
    return info


def iso(value: datetime) -> str:
    """A time as ISO-8601 text with microseconds (how times appear inside JSON data)."""
    return value.isoformat(timespec="microseconds")


def to_json(value: JSON | Record) -> str | None:
    """JSON text for a JSON column (None stays SQL NULL); a typed record is written as its
    ``to_json()`` object. Raises InvalidInputError for what JSON text cannot hold."""
    if value is None:
        return None
    if type(value) not in _PLAIN and isinstance(value, Record):
        value = value.to_json()  # (a Protocol isinstance is slow: plain JSON skips it)
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:  # a lone surrogate, a number beyond 64 bits, ...
        raise InvalidInputError(
            f"a value given to the store cannot be written as JSON ({exc})",
            fix="pass text as UTF-8, integers within 64 bits and only JSON values",
        ) from exc


_PLAIN = frozenset({dict, list, str, int, float, bool})


def from_json(value: str | None) -> JSON:
    """The value of a JSON column (SQL NULL is None)."""
    return None if value is None else orjson.loads(value)


def _at(when: When, value: Any) -> datetime:
    # Only for NOT NULL columns, whose converted value is never None.
    return cast(datetime, when(value))


def step_timing_from_row(row: Row, when: When) -> StepTiming:
    """A row of ``step_timings``."""
    return StepTiming(
        row["workflow"], row["name"], _at(when, row["started_at"]), _at(when, row["finished_at"])
    )


def run_from_row(row: Row, when: When) -> Run:
    """A :class:`~perdure.core.model.Run` from a row of ``runs``."""
    return Run(
        run_id=row["run_id"],
        tenant_id=row["tenant_id"],
        thread_id=row["thread_id"],
        workflow=row["workflow"],
        status=RunStatus(row["status"]),
        next_step=row["next_step"],
        state_version=row["state_version"],
        fence=row["fence"],
        owner=row["owner"],
        lease_until=when(row["lease_until"]),
        release=Release.from_json(orjson.loads(row["release"])),
        idempotency_key=row["idempotency_key"],
        result=from_json(row["result"]),
        error=RunError.from_json(from_json(row["error"])),
        steps_done=row["steps_done"],
        created_at=_at(when, row["created_at"]),
        updated_at=_at(when, row["updated_at"]),
        wake_at=when(row["wake_at"]),
        step_attempts=row["step_attempts"],
        step_takeovers=row["step_takeovers"],
        takeover_step=row["takeover_step"],
        retry_since=when(row["retry_since"]),
        waiting=waiting_from_json(from_json(row["waiting"])),
        budget=BudgetState.from_json(from_json(row["budget"])),
        workflow_version=row["workflow_version"],
        state_schema=row["state_schema"],
        state_seal=row["state_seal"],
    )


def approval_from_row(row: Row, when: When) -> Approval:
    """An :class:`~perdure.core.model.Approval` from a row of ``approvals``."""
    return Approval(
        id=row["id"],
        run_id=row["run_id"],
        step=row["step"],
        role=row["role"],
        request=from_json(row["request"]),
        on_approve=row["on_approve"],
        on_reject=row["on_reject"],
        status=ApprovalStatus(row["status"]),
        decided_by=row["decided_by"],
        decided_role=row["decided_role"],
        comment=row["comment"],
        requested_at=_at(when, row["requested_at"]),
        decided_at=when(row["decided_at"]),
    )


def signal_from_row(row: Row, when: When) -> Signal:
    """A :class:`~perdure.core.model.Signal` from a row of ``signals``."""
    return Signal(
        id=row["id"],
        run_id=row["run_id"],
        signal_id=row["signal_id"],
        name=row["name"],
        payload=from_json(row["payload"]),
        received_at=_at(when, row["received_at"]),
        consumed_at=when(row["consumed_at"]),
    )


def effect_from_row(row: Row, when: When) -> EffectRecord:
    """An :class:`~perdure.core.effects.EffectRecord` from a row of ``effects``."""
    return EffectRecord(
        key=row["effect_key"],
        tenant_id=row["tenant_id"],
        run_id=row["run_id"],
        step=row["step"],
        step_seq=row["step_seq"],
        name=row["name"],
        target=row["target"],
        operation=row["operation"],
        request_hash=row["request_hash"],
        request=from_json(row["request"]),
        status=EffectStatus(row["status"]),
        attempts=row["attempts"],
        result=from_json(row["result"]),
        receipt=row["receipt"],
        last_error=from_json(row["last_error"]),
        compensator=row["compensator"],
        resolution=from_json(row["resolution"]),
        created_at=_at(when, row["created_at"]),
        updated_at=_at(when, row["updated_at"]),
        deadline=when(row["deadline"]),
    )


def effect_from_values(values: Sequence[Any], when: When) -> EffectRecord:
    """An :class:`~perdure.core.effects.EffectRecord` from a row of ``effects`` read as a tuple,
    its columns in the order the queries that return one as a tuple list them (``effect_key,
    tenant_id, run_id, step, step_seq, name, target, operation, request_hash, request, status,
    attempts, result, receipt, last_error, compensator, resolution, created_at, updated_at,
    deadline``): no column names to decode and no dict to build, on the hot path of a recorded
    call."""
    (
        key,
        tenant_id,
        run_id,
        step,
        step_seq,
        name,
        target,
        operation,
        request_hash,
        request,
        status,
        attempts,
        result,
        receipt,
        last_error,
        compensator,
        resolution,
        created_at,
        updated_at,
        deadline,
    ) = values
    return EffectRecord(
        key=key,
        tenant_id=tenant_id,
        run_id=run_id,
        step=step,
        step_seq=step_seq,
        name=name,
        target=target,
        operation=operation,
        request_hash=request_hash,
        request=from_json(request),
        status=EffectStatus(status),
        attempts=attempts,
        result=from_json(result),
        receipt=receipt,
        last_error=from_json(last_error),
        compensator=compensator,
        resolution=from_json(resolution),
        created_at=_at(when, created_at),
        updated_at=_at(when, updated_at),
        deadline=when(deadline),
    )


def worker_from_row(row: Row, when: When) -> WorkerInfo:
    """A :class:`~perdure.core.model.WorkerInfo` from a row of ``workers``."""
    return WorkerInfo(
        owner=row["owner"],
        host=row["host"],
        pid=row["pid"],
        concurrency=row["concurrency"],
        runs_held=row["runs_held"],
        started_at=_at(when, row["started_at"]),
        last_beat=_at(when, row["last_beat"]),
        stopped_at=when(row["stopped_at"]),
        beat_seconds=row["beat_seconds"],
    )


def step_from_row(row: Row, when: When) -> StepRecord:
    """A :class:`~perdure.core.model.StepRecord` from a row of ``steps``."""
    return StepRecord(
        run_id=row["run_id"],
        seq=row["seq"],
        name=row["name"],
        fence=row["fence"],
        outcome=StepOutcome(row["outcome"]),
        next_step=row["next_step"],
        started_at=_at(when, row["started_at"]),
        finished_at=_at(when, row["finished_at"]),
    )


def event_from_row(row: Row, when: When) -> Event:
    """An :class:`~perdure.core.model.Event` from a row of ``events``."""
    return Event(
        run_id=row["run_id"],
        seq=row["seq"],
        type=EventType(row["type"]),
        step=row["step"],
        fence=row["fence"],
        data=from_json(row["data"]),
        at=_at(when, row["at"]),
    )


def message_from_values(values: tuple[Any, ...], when: When) -> Message:
    """A :class:`~perdure.core.model.Message` from a row of the ``list_messages`` query, read as
    a tuple (:meth:`~perdure.store.driver.Tx.values`) in its column order: ``seq, run_id, role,
    content, tool_calls, tool_call_id, at, content_artifact``. (A thread's load makes one per
    message, so the columns that are usually empty are tested before decoding.)"""
    seq, run_id, role, content, calls, tool_call_id, at, artifact = values
    return Message(
        role,
        content,
        ()
        if calls is None
        else tuple(
            ToolCall(c["id"], c["name"], c.get("arguments")) for c in from_json(calls) or ()
        ),
        tool_call_id,
        seq,
        run_id,
        when(at),
        None if artifact is None else ArtifactRef.from_json(from_json(artifact)),
    )


def message_object(message: Message) -> dict[str, JSON]:
    """A message as one object of the JSON array a one-statement commit numbers and inserts
    (``commit_steps``): the columns it fills, those that would be NULL left out."""
    out: dict[str, JSON] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [c.to_json() for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.artifact is not None:
        out["content_artifact"] = message.artifact.to_json()
    return out


def tool_calls_json(message: Message) -> str | None:
    """A message's tool calls as stored (None when it has none)."""
    return to_json([c.to_json() for c in message.tool_calls]) if message.tool_calls else None


def guard_failure(
    current: Row | None, ids: Mapping[str, Any], fence: int | None, expected_version: int
) -> Exception:
    """Explain why a guarded update matched no row, from the run as re-read in the same
    transaction (``current`` is None when the run does not exist for this tenant)."""
    run_id = ids["run_id"]
    if current is None:
        return RunNotFoundError(f"no run {run_id} in tenant {ids['tenant_id']}")
    status = RunStatus(current["status"])
    if fence is not None and current["fence"] != fence:
        return LeaseLostError(
            f"run {run_id}: fence {fence} was superseded by fence {current['fence']}; "
            "another worker owns the run"
        )
    if status.terminal:
        return RunClosedError(f"run {run_id} is already {status}")
    return StaleStateError(
        f"run {run_id} moved on (status {status}, version {current['state_version']}, "
        f"expected version {expected_version})"
    )


def effect_guard_failure(
    effect: Row | None,
    run: Row | None,
    tenant_id: str,
    key: str,
    fence: int | None,
    expected: EffectStatus,
) -> Exception:
    """Explain why a guarded effect update matched no row, from the effect and its run as
    re-read in the same transaction."""
    if effect is None:
        return EffectNotFoundError(f"no effect {key} in tenant {tenant_id}")
    ids = {"tenant_id": tenant_id, "run_id": effect["run_id"]}
    if fence is not None and (run is None or run["fence"] != fence):
        # the fence first: a worker that lost its run learns that, not the effect's new status
        return guard_failure(run, ids, fence, -1)
    if effect["status"] != str(expected):
        return EffectStateError(f"effect {key} is {effect['status']}, not {expected}")
    return guard_failure(run, ids, fence, -1)
