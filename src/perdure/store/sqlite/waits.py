"""The SQLite store's waits: approvals, the signal inbox, person-led resumes, late events and
remembered client requests (see :class:`perdure.store.base.Store` for contracts)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from perdure.core.errors import ApprovalStateError, RunClosedError, RunNotFoundError
from perdure.core.model import JSON, Approval, Run, RunStatus, Signal
from perdure.store.rows import from_json, to_json
from perdure.store.sqlite.conn import Q, SqliteConnections, ts
from perdure.store.sqlite.rows import (
    approval_row,
    event,
    guard_failure,
    run_row,
    signal_row,
    write_fields,
)


def wake(
    conn: sqlite3.Connection,
    ids: dict[str, str],
    signal: sqlite3.Row,
    next_step: str,
    fence: int | None,
    at: str | None,
) -> int | None:
    """Consume ``signal`` and move a WAITING_EXTERNAL run to RUNNING at ``next_step``."""
    row = conn.execute(
        Q["wake_run"],
        {**ids, "next_step": next_step, "expected_status": "WAITING_EXTERNAL", "now": at},
    ).fetchone()
    if row is None:
        return None
    conn.execute(Q["consume_signal"], {"id": signal["id"], "now": at})
    info = {"signal_id": signal["signal_id"], "name": signal["name"]}
    event(conn, ids, "signal_consumed", next_step, fence, info, at)
    event(conn, ids, "status", next_step, fence, {"from": "WAITING_EXTERNAL", "to": "RUNNING"}, at)
    return int(row["state_version"])


class SqliteWaits(SqliteConnections):
    """Approvals, signals, resumes by a person, late events, client requests."""

    def approvals(
        self, tenant_id: str, *, run_id: str | None = None, pending: bool = False
    ) -> list[Approval]:
        """See :meth:`Store.approvals`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "pending": pending}
        return [approval_row(r) for r in self._read("list_approvals", params)]

    def decide_approval(
        self,
        tenant_id: str,
        approval_id: int,
        *,
        approve: bool,
        by: str,
        role: str,
        comment: str | None,
        request_id: str | None,
        now: datetime,
    ) -> tuple[Approval, bool]:
        """See :meth:`Store.decide_approval`."""
        at = ts(now)
        with self._write() as conn:
            if request_id is not None:
                seen = conn.execute(
                    Q["approval_by_request"], {"tenant_id": tenant_id, "request_id": request_id}
                ).fetchone()
                if seen is not None:
                    return approval_row(seen), False
            current = conn.execute(
                Q["get_approval"], {"tenant_id": tenant_id, "id": approval_id}
            ).fetchone()
            if current is None:
                raise ApprovalStateError(f"no approval {approval_id} in tenant {tenant_id}")
            ids = {"tenant_id": tenant_id, "run_id": current["run_id"]}
            run = conn.execute(Q["get_run"], ids).fetchone()
            if RunStatus(run["status"]).terminal:
                raise RunClosedError(f"run {current['run_id']} is already {run['status']}")
            decided = conn.execute(
                Q["decide_approval"],
                {
                    "tenant_id": tenant_id,
                    "id": approval_id,
                    "status": "approved" if approve else "rejected",
                    "by": by,
                    "role": role,
                    "comment": comment,
                    "request_id": request_id,
                    "now": at,
                },
            ).fetchone()
            if decided is None:
                raise ApprovalStateError(
                    f"approval {approval_id} of run {current['run_id']} was already "
                    f"{current['status']} by {current['decided_by']}"
                )
            next_step = decided["on_approve"] if approve else decided["on_reject"]
            woke = conn.execute(
                Q["wake_run"],
                {**ids, "next_step": next_step, "expected_status": "WAITING_APPROVAL", "now": at},
            ).fetchone()
            if woke is None:
                raise ApprovalStateError(
                    f"run {current['run_id']} is {run['status']}, not waiting for an approval"
                )
            info = {
                "approval": approval_id,
                "decision": decided["status"],
                "by": by,
                "role": role,
                "comment": comment,
            }
            event(conn, ids, "approval_decided", decided["step"], None, info, at)
            change = {"from": "WAITING_APPROVAL", "to": "RUNNING"}
            event(conn, ids, "status", next_step, None, change, at)
        return approval_row(decided), True

    def deliver_signal(
        self,
        tenant_id: str,
        run_id: str,
        *,
        signal_id: str,
        name: str,
        payload: JSON,
        now: datetime,
    ) -> tuple[Signal, str]:
        """See :meth:`Store.deliver_signal`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        key = {**ids, "signal_id": signal_id}
        with self._write() as conn:
            run = conn.execute(Q["get_run"], ids).fetchone()
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            inserted = conn.execute(
                Q["insert_signal"],
                {**key, "name": name, "payload": to_json(payload), "now": at},
            ).rowcount
            signal = conn.execute(Q["get_signal"], key).fetchone()
            if not inserted:
                return signal_row(signal), "duplicate"
            closed = RunStatus(run["status"]).terminal
            if not closed:
                event(
                    conn,
                    ids,
                    "signal_received",
                    None,
                    None,
                    {"signal_id": signal_id, "name": name},
                    at,
                )
                waiting = from_json(run["waiting"]) or {}
                if (
                    run["status"] == "WAITING_EXTERNAL"
                    and waiting.get("kind") == "signal"
                    and waiting.get("name") == name
                ):
                    wake(conn, ids, signal, waiting["next"], None, at)
                    signal = conn.execute(Q["get_signal"], key).fetchone()
                    return signal_row(signal), "woke"
                return signal_row(signal), "queued"
        self.record_event(
            tenant_id, run_id, "late_signal", {"signal_id": signal_id, "name": name}, now
        )
        raise RunClosedError(f"run {run_id} is already {run['status']}; the signal was ignored")

    def signals(self, tenant_id: str, run_id: str) -> list[Signal]:
        """See :meth:`Store.signals`."""
        rows = self._read("list_signals", {"tenant_id": tenant_id, "run_id": run_id})
        return [signal_row(r) for r in rows]

    def reopen(
        self,
        tenant_id: str,
        run_id: str,
        *,
        expected_status: RunStatus,
        expected_version: int,
        next_step: str,
        state: dict[str, bytes],
        budget: JSON,
        now: datetime,
        data: JSON,
    ) -> Run:
        """See :meth:`Store.reopen`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        with self._write() as conn:
            row = conn.execute(
                Q["reopen_run"],
                {
                    **ids,
                    "next_step": next_step,
                    "budget": to_json(budget),
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "now": at,
                },
            ).fetchone()
            if row is None:
                raise guard_failure(conn, ids, None, expected_version)
            write_fields(conn, ids, state)
            conn.execute(Q["reset_planned_effects"], {**ids, "now": at})
            event(conn, ids, "resumed", next_step, None, data, at)
            change = {"from": str(expected_status), "to": "RUNNING"}
            event(conn, ids, "status", next_step, None, change, at)
        return run_row(row)

    def record_event(
        self, tenant_id: str, run_id: str, type: str, data: JSON, now: datetime
    ) -> None:
        """See :meth:`Store.record_event`."""
        with self._write() as conn:
            event(conn, {"tenant_id": tenant_id, "run_id": run_id}, type, None, None, data, ts(now))

    def recall_request(self, tenant_id: str, request_id: str) -> tuple[str, JSON] | None:
        """See :meth:`Store.recall_request`."""
        rows = self._read("recall_request", {"tenant_id": tenant_id, "request_id": request_id})
        return (rows[0]["operation"], from_json(rows[0]["result"])) if rows else None

    def remember_request(
        self, tenant_id: str, request_id: str, operation: str, result: JSON, now: datetime
    ) -> None:
        """See :meth:`Store.remember_request`."""
        with self._write() as conn:
            conn.execute(
                Q["remember_request"],
                {
                    "tenant_id": tenant_id,
                    "request_id": request_id,
                    "operation": operation,
                    "result": to_json(result),
                    "now": ts(now),
                },
            )

    def delete_run_messages(self, tenant_id: str, run_id: str) -> int:
        """See :meth:`Store.delete_run_messages`."""
        with self._write() as conn:
            count = conn.execute(
                Q["delete_run_messages"], {"tenant_id": tenant_id, "run_id": run_id}
            ).rowcount
        return int(count)
