"""Child runs as a parent sees them: the record of each child, which statuses count as settled,
and the deterministic ids of a child (so a re-executed step finds the child it started instead
of starting a second one). Pure: no I/O."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from perdure.core.errors import InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.model import JSON, RunStatus
from perdure.core.records import RunError

SETTLED = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.NEEDS_ATTENTION,
        RunStatus.QUARANTINED,
    }
)
"""Statuses that end a parent's wait for a child: the child ended, or it needs a person."""

_NAMESPACE = uuid.UUID("6f1d3c52-8f0e-4c7e-9a47-2b1f0c9d5e31")
MAX_KEY_LENGTH = 120


def child_key(key: str) -> str:
    """``key`` when it is usable as a child key (an id of at most 120 characters)."""
    checked_id(key, "child key")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidInputError(
            f"child key must be at most {MAX_KEY_LENGTH} characters, not {len(key)}",
            fix="pass a shorter key",
        )
    return key


def child_run_id(tenant_id: str, parent_run_id: str, key: str) -> str:
    """The run id of the child ``key`` of ``parent_run_id``: the same every time it is asked,
    so a step that runs again after a crash names the same child."""
    return str(uuid.uuid5(_NAMESPACE, f"{tenant_id}\x1f{parent_run_id}\x1f{key}"))


def child_idempotency_key(parent_run_id: str, key: str) -> str:
    """The idempotency key a child is created under (one child per parent and key)."""
    return f"child:{parent_run_id}:{key}"


@dataclass(frozen=True, slots=True)
class ChildRecord:
    """One child of a run as its parent reads it (``ctx.children``): its ``key``, ``run_id``,
    ``workflow``, ``status``, ``result`` (when it SUCCEEDED) and ``error`` (when it FAILED, was
    CANCELLED or needs a person)."""

    key: str
    run_id: str
    workflow: str
    status: RunStatus
    result: JSON = None
    error: RunError | None = None

    @property
    def settled(self) -> bool:
        """True when the child ended or needs a person (a parent's wait for it is over)."""
        return self.status in SETTLED

    @property
    def succeeded(self) -> bool:
        """True when the child SUCCEEDED (its ``result`` is final)."""
        return self.status is RunStatus.SUCCEEDED

    def to_json(self) -> dict[str, JSON]:
        """The record as JSON (for ``perdure show`` and the API)."""
        return {
            "key": self.key,
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": str(self.status),
            "result": self.result,
            "error": None if self.error is None else self.error.to_json(),
        }


def by_key(records: list[ChildRecord]) -> dict[str, ChildRecord]:
    """The records keyed by child key, in key order."""
    return {r.key: r for r in sorted(records, key=lambda r: r.key)}
