"""Row mapping and shared write helpers of the SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from ratchet.effects import EffectRecord, EffectStatus
from ratchet.errors import (
    EffectNotFoundError,
    EffectStateError,
    LeaseLostError,
    RunClosedError,
    RunNotFoundError,
    StaleStateError,
)
from ratchet.model import JSON, Approval, Message, Release, Run, RunStatus, Signal
from ratchet.store.sqlite_conn import Params, Q, dt, from_json, to_json

ERROR_STATUSES = frozenset(
    {RunStatus.FAILED, RunStatus.QUARANTINED, RunStatus.NEEDS_ATTENTION, RunStatus.CANCELLED}
)


def run_row(row: sqlite3.Row) -> Run:
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
        lease_until=dt(row["lease_until"]),
        release=Release.from_json(orjson.loads(row["release"])),
        idempotency_key=row["idempotency_key"],
        result=from_json(row["result"]),
        error=from_json(row["error"]),
        steps_done=row["steps_done"],
        created_at=dt(row["created_at"]),  # type: ignore[arg-type]
        updated_at=dt(row["updated_at"]),  # type: ignore[arg-type]
        wake_at=dt(row["wake_at"]),
        step_attempts=row["step_attempts"],
        retry_since=dt(row["retry_since"]),
        waiting=from_json(row["waiting"]),
        budget=from_json(row["budget"]),
        workflow_version=row["workflow_version"],
        state_schema=row["state_schema"],
    )


def approval_row(row: sqlite3.Row) -> Approval:
    return Approval(
        id=row["id"],
        run_id=row["run_id"],
        step=row["step"],
        role=row["role"],
        request=from_json(row["request"]),
        on_approve=row["on_approve"],
        on_reject=row["on_reject"],
        status=row["status"],
        decided_by=row["decided_by"],
        decided_role=row["decided_role"],
        comment=row["comment"],
        requested_at=dt(row["requested_at"]),  # type: ignore[arg-type]
        decided_at=dt(row["decided_at"]),
    )


def signal_row(row: sqlite3.Row) -> Signal:
    return Signal(
        id=row["id"],
        run_id=row["run_id"],
        signal_id=row["signal_id"],
        name=row["name"],
        payload=from_json(row["payload"]),
        received_at=dt(row["received_at"]),  # type: ignore[arg-type]
        consumed_at=dt(row["consumed_at"]),
    )


def effect_row(row: sqlite3.Row) -> EffectRecord:
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
        created_at=dt(row["created_at"]),  # type: ignore[arg-type]
        updated_at=dt(row["updated_at"]),  # type: ignore[arg-type]
    )


def write_fields(conn: sqlite3.Connection, ids: Params, fields: dict[str, bytes]) -> None:
    for name, value in fields.items():
        conn.execute(Q["upsert_field"], {**ids, "field": name, "value": value.decode()})


def write_messages(
    conn: sqlite3.Connection,
    tenant_id: str,
    thread_id: str,
    run_id: str,
    messages: Sequence[Message],
    at: str | None,
) -> None:
    for m in messages:
        conn.execute(
            Q["insert_message"],
            {
                "tenant_id": tenant_id,
                "thread_id": thread_id,
                "run_id": run_id,
                "role": m.role,
                "content": m.content,
                "tool_calls": to_json([c.to_json() for c in m.tool_calls])
                if m.tool_calls
                else None,
                "tool_call_id": m.tool_call_id,
                "at": at,
            },
        )


def event(
    conn: sqlite3.Connection,
    ids: Params,
    type_: str,
    step: str | None,
    fence: int | None,
    data: JSON,
    at: str | None,
) -> None:
    conn.execute(
        Q["insert_event"],
        {**ids, "type": type_, "step": step, "fence": fence, "data": to_json(data), "at": at},
    )


def effect_guard_failure(
    conn: sqlite3.Connection,
    tenant_id: str,
    key: str,
    fence: int | None,
    expected: EffectStatus,
) -> Exception:
    """Explain why a guarded effect update matched no row."""
    row = conn.execute(Q["get_effect"], {"tenant_id": tenant_id, "key": key}).fetchone()
    if row is None:
        return EffectNotFoundError(f"no effect {key} in tenant {tenant_id}")
    if row["status"] != str(expected):
        return EffectStateError(f"effect {key} is {row['status']}, not {expected}")
    ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
    return guard_failure(conn, ids, fence, -1)


def guard_failure(
    conn: sqlite3.Connection, ids: Params, fence: int | None, expected_version: int
) -> Exception:
    """Explain why a guarded update matched no row (read inside the same transaction)."""
    row = conn.execute(Q["get_run"], ids).fetchone()
    run_id = ids["run_id"]
    if row is None:
        return RunNotFoundError(f"no run {run_id} in tenant {ids['tenant_id']}")
    status = RunStatus(row["status"])
    if fence is not None and row["fence"] != fence:
        return LeaseLostError(
            f"run {run_id}: fence {fence} was superseded by fence {row['fence']}; "
            "another worker owns the run"
        )
    if status.terminal:
        return RunClosedError(f"run {run_id} is already {status}")
    return StaleStateError(
        f"run {run_id} moved on (status {status}, version {row['state_version']}, "
        f"expected version {expected_version})"
    )
