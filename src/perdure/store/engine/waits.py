"""Waits and what people do: approvals, the signal inbox, resumes by a person, late events,
remembered client requests, message clean-up. :class:`WaitsEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; contracts in :class:`~perdure.store.base.Store`.

A decision or a signal first reads the run with ``lock_run`` (``FOR UPDATE`` on PostgreSQL; on
SQLite the write lock is already held), so it takes turns with a commit that makes the run
wait: a signal is never left in the inbox of a run waiting for it, and two decisions on one
approval are decided once."""

from __future__ import annotations

from datetime import datetime

from perdure.core.errors import ApprovalStateError, RunClosedError, RunNotFoundError
from perdure.core.model import JSON, Approval, Run, RunStatus, Signal
from perdure.core.records import SignalWait, waiting_from_json
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import (
    event,
    fetch,
    guard_failure,
    need,
    wake,
    write_event,
    write_fields,
)
from perdure.store.rows import approval_from_row, from_json, run_from_row, signal_from_row, to_json


class WaitsEngine(EngineBase):
    """Approvals, signals, resumes by a person, late events, requests. Part of
    :class:`~perdure.store.engine.engine.Engine`."""

    def approvals(
        self, tenant_id: str, *, run_id: str | None = None, pending: bool = False
    ) -> list[Approval]:
        """See :meth:`Store.approvals`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "pending": pending}
        found = fetch(self.driver, "list_approvals", params)
        return [approval_from_row(r, self.driver.when) for r in found]

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
        via: str | None = None,
    ) -> tuple[Approval, bool]:
        """See :meth:`Store.decide_approval`."""
        d = self.driver
        at = d.stamp(now)
        by_request = {"tenant_id": tenant_id, "request_id": request_id}
        with d.write() as tx:
            if request_id is not None and (seen := tx.one("approval_by_request", by_request)):
                return approval_from_row(seen, d.when), False
            current = tx.one("get_approval", {"tenant_id": tenant_id, "id": approval_id})
            if current is None:
                raise ApprovalStateError(f"no approval {approval_id} in tenant {tenant_id}")
            ids = {"tenant_id": tenant_id, "run_id": current["run_id"]}
            run = need(tx, "lock_run", ids)
            # Under the run's lock: a repeat of this request decided a moment ago is visible.
            if request_id is not None and (seen := tx.one("approval_by_request", by_request)):
                return approval_from_row(seen, d.when), False
            if RunStatus(run["status"]).terminal:
                raise RunClosedError(f"run {current['run_id']} is already {run['status']}")
            decided = tx.one(
                "decide_approval",
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
            )
            if decided is None:
                latest = need(tx, "get_approval", {"tenant_id": tenant_id, "id": approval_id})
                raise ApprovalStateError(
                    f"approval {approval_id} of run {current['run_id']} was already "
                    f"{latest['status']} by {latest['decided_by']}"
                )
            next_step = decided["on_approve"] if approve else decided["on_reject"]
            params = {**ids, "next_step": next_step, "expected_status": "WAITING_APPROVAL"}
            if tx.one("wake_run", {**params, "now": at}) is None:
                raise ApprovalStateError(
                    f"run {current['run_id']} is {run['status']}, not waiting for an approval"
                )
            info: dict[str, JSON] = {
                "approval": approval_id,
                "decision": decided["status"],
                "by": by,
                "role": role,
                "comment": comment,
            }
            if via is not None:
                info["via"] = via
            event(tx, ids, "approval_decided", decided["step"], None, info, at)
            event(
                tx,
                ids,
                "status",
                next_step,
                None,
                {"from": "WAITING_APPROVAL", "to": "RUNNING"},
                at,
            )
        return approval_from_row(decided, d.when), True

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
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        key = {**ids, "signal_id": signal_id}
        with d.write() as tx:
            run = tx.one("lock_run", ids)
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            params = {**key, "name": name, "payload": to_json(payload), "now": at}
            inserted = tx.run("insert_signal", params)
            signal = need(tx, "get_signal", key)
            if not inserted:
                return signal_from_row(signal, d.when), "duplicate"
            if not RunStatus(run["status"]).terminal:
                info = {"signal_id": signal_id, "name": name}
                event(tx, ids, "signal_received", None, None, info, at)
                waiting = waiting_from_json(from_json(run["waiting"]))
                if (
                    run["status"] == "WAITING_EXTERNAL"
                    and isinstance(waiting, SignalWait)
                    and waiting.name == name
                ):
                    wake(tx, ids, signal, waiting.next, None, at)
                    return signal_from_row(need(tx, "get_signal", key), d.when), "woke"
                return signal_from_row(signal, d.when), "queued"
        self.record_event(
            tenant_id, run_id, "late_signal", {"signal_id": signal_id, "name": name}, now
        )
        raise RunClosedError(f"run {run_id} is already {run['status']}; the signal was ignored")

    def signals(self, tenant_id: str, run_id: str) -> list[Signal]:
        """See :meth:`Store.signals`."""
        found = fetch(self.driver, "list_signals", {"tenant_id": tenant_id, "run_id": run_id})
        return [signal_from_row(r, self.driver.when) for r in found]

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
        state_seal: str | None = None,
    ) -> Run:
        """See :meth:`Store.reopen`."""
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            row = tx.one(
                "reopen_run",
                {
                    **ids,
                    "next_step": next_step,
                    "budget": to_json(budget),
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "state_seal": state_seal,
                    "now": at,
                },
            )
            if row is None:
                raise guard_failure(tx, ids, None, expected_version)
            write_fields(
                tx, ids, state, step_seq=int(row["steps_done"]), version=int(row["state_version"])
            )
            tx.run("reset_planned_effects", {**ids, "now": at})
            event(tx, ids, "resumed", next_step, None, data, at)
            change = {"from": str(expected_status), "to": "RUNNING"}
            event(tx, ids, "status", next_step, None, change, at)
        return run_from_row(row, d.when)

    def record_event(
        self, tenant_id: str, run_id: str, type: str, data: JSON, now: datetime
    ) -> None:
        """See :meth:`Store.record_event`: :func:`~perdure.store.engine.tx.write_event`."""
        write_event(self.driver, {"tenant_id": tenant_id, "run_id": run_id}, type, data, now)

    def recall_request(self, tenant_id: str, request_id: str) -> tuple[str, JSON] | None:
        """See :meth:`Store.recall_request`."""
        params = {"tenant_id": tenant_id, "request_id": request_id}
        found = fetch(self.driver, "recall_request", params)
        return (found[0]["operation"], from_json(found[0]["result"])) if found else None

    def remember_request(
        self, tenant_id: str, request_id: str, operation: str, result: JSON, now: datetime
    ) -> None:
        """See :meth:`Store.remember_request`."""
        params = {
            "tenant_id": tenant_id,
            "request_id": request_id,
            "operation": operation,
            "result": to_json(result),
            "now": self.driver.stamp(now),
        }
        with self.driver.write() as tx:
            tx.run("remember_request", params)

    def delete_run_messages(self, tenant_id: str, run_id: str) -> int:
        """See :meth:`Store.delete_run_messages`."""
        with self.driver.write() as tx:
            return tx.run("delete_run_messages", {"tenant_id": tenant_id, "run_id": run_id})
