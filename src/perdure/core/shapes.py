"""Records as JSON objects: the shapes ``perdure ... --json`` prints and the HTTP API returns.
Times are ISO 8601 UTC to the second."""

from __future__ import annotations

from datetime import datetime

from perdure.core.effects import EffectRecord
from perdure.core.model import JSON, Approval, Event, Run


def iso(value: datetime | None) -> str | None:
    """A time as ISO 8601 to the second (None stays None)."""
    return None if value is None else value.isoformat(timespec="seconds")


def approval_json(a: Approval) -> dict[str, JSON]:
    """An approval request (and its decision) as a JSON object."""
    return {
        "id": a.id,
        "run_id": a.run_id,
        "step": a.step,
        "role": a.role,
        "request": a.request,
        "status": a.status,
        "on_approve": a.on_approve,
        "on_reject": a.on_reject,
        "decided_by": a.decided_by,
        "comment": a.comment,
        "requested_at": iso(a.requested_at),
        "decided_at": iso(a.decided_at),
    }


def effect_json(e: EffectRecord) -> dict[str, JSON]:
    """An effect record as a JSON object."""
    return {
        "key": e.key,
        "run_id": e.run_id,
        "step": e.step,
        "name": e.name,
        "target": e.target,
        "operation": e.operation,
        "status": str(e.status),
        "attempts": e.attempts,
        "receipt": e.receipt,
        "result": e.result,
        "last_error": e.last_error,
        "request": e.request,
        "request_hash": e.request_hash,
        "resolution": e.resolution,
        "updated_at": iso(e.updated_at),
    }


def run_json(run: Run) -> dict[str, JSON]:
    """A run as a JSON object."""
    return {
        "run_id": run.run_id,
        "tenant_id": run.tenant_id,
        "thread_id": run.thread_id,
        "workflow": run.workflow,
        "status": str(run.status),
        "next_step": run.next_step,
        "state_version": run.state_version,
        "fence": run.fence,
        "owner": run.owner,
        "lease_until": iso(run.lease_until),
        "release": run.release.to_json(),
        "idempotency_key": run.idempotency_key,
        "steps_done": run.steps_done,
        "result": run.result,
        "error": None if run.error is None else run.error.to_json(),
        "waiting": None if run.waiting is None else run.waiting.to_json(),
        "budget": None if run.budget is None else run.budget.to_json(),
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
    }


def event_json(event: Event) -> dict[str, JSON]:
    """An event as a JSON object."""
    return {
        "seq": event.seq,
        "type": str(event.type),
        "step": event.step,
        "fence": event.fence,
        "data": event.data,
        "at": iso(event.at),
    }
