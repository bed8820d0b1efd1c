"""Row mapping and shared write helpers of the SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.model import JSON, Approval, Message, Run, Signal
from perdure.store import rows
from perdure.store.rows import Params, to_json
from perdure.store.sqlite.conn import Q, dt


def run_row(row: sqlite3.Row) -> Run:
    return rows.run_from_row(row, dt)


def approval_row(row: sqlite3.Row) -> Approval:
    return rows.approval_from_row(row, dt)


def signal_row(row: sqlite3.Row) -> Signal:
    return rows.signal_from_row(row, dt)


def effect_row(row: sqlite3.Row) -> EffectRecord:
    return rows.effect_from_row(row, dt)


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
                "tool_calls": rows.tool_calls_json(m),
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
    effect = conn.execute(Q["get_effect"], {"tenant_id": tenant_id, "key": key}).fetchone()
    run = None
    if effect is not None:
        ids = {"tenant_id": tenant_id, "run_id": effect["run_id"]}
        run = conn.execute(Q["get_run"], ids).fetchone()
    return rows.effect_guard_failure(effect, run, tenant_id, key, fence, expected)


def guard_failure(
    conn: sqlite3.Connection, ids: Params, fence: int | None, expected_version: int
) -> Exception:
    """Explain why a guarded update matched no row (read inside the same transaction)."""
    current = conn.execute(Q["get_run"], ids).fetchone()
    return rows.guard_failure(current, ids, fence, expected_version)
