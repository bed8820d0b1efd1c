"""The audit trail: every decision a person made on a run (approve, reject, resolve, resume,
fail, cancel), who made it and the credential it came through, read back from the run's
events.

No table of its own: each decision writes its event in the transaction that makes it, with
``by`` (the principal's name) and ``via`` (``key:<key_id>``, ``session:<session_id>``, or
nothing from the command line on the database), so the trail can neither miss a decision nor
hold one that did not happen. :func:`decision_of` reads one event. Pure, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from perdure.core.model import Event

AUDITED_TYPES = ("approval_decided", "effect", "resumed", "status")
"""The event types a decision can be: what the trail reads from the tenant feed."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of the audit trail: the event it is (``seq``, ``at``, ``run_id``), the
    ``verb`` (``approve``, ``reject``, ``resolve``, ``resume``, ``fail`` or ``cancel``), who
    made it (``by``; None when nobody was named), the credential it came through (``via``) and
    what was decided (``detail``: the comment, reason or effect)."""

    seq: int
    at: datetime
    run_id: str
    verb: str
    by: str | None
    via: str | None
    detail: str


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def decision_of(event: Event) -> Decision | None:
    """The decision an event records, or None for an event that is no decision."""
    data = event.data if isinstance(event.data, dict) else {}
    found: tuple[str, dict[str, Any], str] | None = None
    if event.type == "approval_decided":
        verb = "approve" if data.get("decision") == "approved" else "reject"
        found = verb, data, _text(data.get("comment")) or ""
    elif event.type == "effect" and isinstance(data.get("resolution"), dict):
        made: dict[str, Any] = data["resolution"]
        what = f"{data.get('key')} {made.get('decision')}: {made.get('reason') or ''}"
        found = "resolve", made, what.rstrip(": ")
    elif event.type == "resumed":
        patched = data.get("patched") or []
        more = f", patched {', '.join(str(p) for p in patched)}" if patched else ""
        found = "resume", data, f"at {data.get('at')}{more}"
    elif event.type == "status" and isinstance(data.get("data"), dict):
        asked: dict[str, Any] = data["data"]  # the status change's own data
        if data.get("to") == "CANCEL_REQUESTED":
            found = "cancel", asked, _text(asked.get("reason")) or ""
        elif data.get("to") == "FAILED" and asked.get("reason") == "failed_by_person":
            found = "fail", asked, _text(asked.get("message")) or ""
    if found is None:
        return None
    verb, who, detail = found
    return Decision(
        seq=event.seq,
        at=event.at,
        run_id=event.run_id,
        verb=verb,
        by=_text(who.get("by")),
        via=_text(who.get("via")),
        detail=detail,
    )
