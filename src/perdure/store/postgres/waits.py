"""The PostgreSQL store's waits: approvals, the signal inbox, person-led resumes, late events and
remembered client requests (see :class:`perdure.store.base.Store` for contracts).

A decision or a signal first locks the run's row (``FOR UPDATE``), so it takes turns with a
commit that makes the run wait: a signal is never left in the inbox of a run waiting for it,
and two decisions on one approval are decided once.
"""

from __future__ import annotations

from datetime import datetime

from psycopg.rows import DictRow

from perdure.core.errors import ApprovalStateError, RunClosedError, RunNotFoundError
from perdure.core.model import JSON, Approval, Run, RunStatus, Signal
from perdure.store.postgres.conn import (
    Conn,
    Params,
    PostgresConnections,
    Q,
    event,
    guard_failure,
    maybe,
    one,
    when,
    write_fields,
)
from perdure.store.rows import (
    approval_from_row,
    from_json,
    run_from_row,
    signal_from_row,
    to_json,
)


def wake(
    conn: Conn, ids: Params, signal: DictRow, next_step: str, fence: int | None, at: datetime
) -> int | None:
    """Consume ``signal`` and move a WAITING_EXTERNAL run to RUNNING at ``next_step``."""
    params = {**ids, "next_step": next_step, "expected_status": "WAITING_EXTERNAL", "now": at}
    row = maybe(conn, "wake_run", params)
    if row is None:
        return None
    conn.execute(Q["consume_signal"], {"id": signal["id"], "now": at})
    info = {"signal_id": signal["signal_id"], "name": signal["name"]}
    event(conn, ids, "signal_consumed", next_step, fence, info, at)
    event(conn, ids, "status", next_step, fence, {"from": "WAITING_EXTERNAL", "to": "RUNNING"}, at)
    return int(row["state_version"])


class PostgresWaits(PostgresConnections):
    """Approvals, signals, resumes by a person, late events, client requests."""

    def approvals(
        self, tenant_id: str, *, run_id: str | None = None, pending: bool = False
    ) -> list[Approval]:
        """See :meth:`Store.approvals`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "pending": pending}
        return [approval_from_row(r, when) for r in self._read("list_approvals", params)]

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
        by_request = {"tenant_id": tenant_id, "request_id": request_id}
        with self._write() as conn:
            if request_id is not None and (seen := maybe(conn, "approval_by_request", by_request)):
                return approval_from_row(seen, when), False
            current = maybe(conn, "get_approval", {"tenant_id": tenant_id, "id": approval_id})
            if current is None:
                raise ApprovalStateError(f"no approval {approval_id} in tenant {tenant_id}")
            ids = {"tenant_id": tenant_id, "run_id": current["run_id"]}
            run = one(conn, "lock_run", ids)
            # Under the run's lock: a repeat of this request decided a moment ago is visible.
            if request_id is not None and (seen := maybe(conn, "approval_by_request", by_request)):
                return approval_from_row(seen, when), False
            if RunStatus(run["status"]).terminal:
                raise RunClosedError(f"run {current['run_id']} is already {run['status']}")
            decided = maybe(
                conn,
                "decide_approval",
                {
                    "tenant_id": tenant_id,
                    "id": approval_id,
                    "status": "approved" if approve else "rejected",
                    "by": by,
                    "role": role,
                    "comment": comment,
                    "request_id": request_id,
                    "now": now,
                },
            )
            if decided is None:
                latest = one(conn, "get_approval", {"tenant_id": tenant_id, "id": approval_id})
                raise ApprovalStateError(
                    f"approval {approval_id} of run {current['run_id']} was already "
                    f"{latest['status']} by {latest['decided_by']}"
                )
            next_step = decided["on_approve"] if approve else decided["on_reject"]
            params = {**ids, "next_step": next_step, "expected_status": "WAITING_APPROVAL"}
            if maybe(conn, "wake_run", {**params, "now": now}) is None:
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
            event(conn, ids, "approval_decided", decided["step"], None, info, now)
            change = {"from": "WAITING_APPROVAL", "to": "RUNNING"}
            event(conn, ids, "status", next_step, None, change, now)
        return approval_from_row(decided, when), True

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
        key = {**ids, "signal_id": signal_id}
        with self._write() as conn:
            run = maybe(conn, "lock_run", ids)
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            inserted = conn.execute(
                Q["insert_signal"], {**key, "name": name, "payload": to_json(payload), "now": now}
            ).rowcount
            signal = one(conn, "get_signal", key)
            if not inserted:
                return signal_from_row(signal, when), "duplicate"
            closed = RunStatus(run["status"]).terminal
            if not closed:
                info = {"signal_id": signal_id, "name": name}
                event(conn, ids, "signal_received", None, None, info, now)
                waiting = from_json(run["waiting"]) or {}
                if (
                    run["status"] == "WAITING_EXTERNAL"
                    and waiting.get("kind") == "signal"
                    and waiting.get("name") == name
                ):
                    wake(conn, ids, signal, waiting["next"], None, now)
                    return signal_from_row(one(conn, "get_signal", key), when), "woke"
                return signal_from_row(signal, when), "queued"
        self.record_event(
            tenant_id, run_id, "late_signal", {"signal_id": signal_id, "name": name}, now
        )
        raise RunClosedError(f"run {run_id} is already {run['status']}; the signal was ignored")

    def signals(self, tenant_id: str, run_id: str) -> list[Signal]:
        """See :meth:`Store.signals`."""
        found = self._read("list_signals", {"tenant_id": tenant_id, "run_id": run_id})
        return [signal_from_row(r, when) for r in found]

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
        with self._write() as conn:
            row = maybe(
                conn,
                "reopen_run",
                {
                    **ids,
                    "next_step": next_step,
                    "budget": to_json(budget),
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "now": now,
                },
            )
            if row is None:
                raise guard_failure(conn, ids, None, expected_version)
            write_fields(conn, ids, state)
            conn.execute(Q["reset_planned_effects"], {**ids, "now": now})
            event(conn, ids, "resumed", next_step, None, data, now)
            change = {"from": str(expected_status), "to": "RUNNING"}
            event(conn, ids, "status", next_step, None, change, now)
        return run_from_row(row, when)

    def record_event(
        self, tenant_id: str, run_id: str, type: str, data: JSON, now: datetime
    ) -> None:
        """See :meth:`Store.record_event`."""
        with self._write() as conn:
            event(conn, {"tenant_id": tenant_id, "run_id": run_id}, type, None, None, data, now)

    def recall_request(self, tenant_id: str, request_id: str) -> tuple[str, JSON] | None:
        """See :meth:`Store.recall_request`."""
        found = self._read("recall_request", {"tenant_id": tenant_id, "request_id": request_id})
        return (found[0]["operation"], from_json(found[0]["result"])) if found else None

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
                    "now": now,
                },
            )

    def delete_run_messages(self, tenant_id: str, run_id: str) -> int:
        """See :meth:`Store.delete_run_messages`."""
        with self._write() as conn:
            params = {"tenant_id": tenant_id, "run_id": run_id}
            return conn.execute(Q["delete_run_messages"], params).rowcount
