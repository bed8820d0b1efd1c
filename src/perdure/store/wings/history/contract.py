"""The contract of the ``history`` wing (state history, savepoints and fork lineage), reached as
``store.history``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from perdure.core.history import (
    FieldChange,
    Lineage,
    Savepoint,
)
from perdure.core.model import Message


class HistoryStore(Protocol):
    """Every state version of a run, its savepoints and where a fork came from."""

    def state_changes(self, tenant_id: str, run_id: str) -> list[FieldChange]:
        """What each point of the run's history wrote, ordered by step then version (sizes,
        not values). Empty for an unknown run."""
        ...

    def state_at(self, tenant_id: str, run_id: str, step_seq: int) -> dict[str, bytes]:
        """The run's state fields at ``step_seq`` (as stored: sealed, offloaded values as
        pointers), rebuilt from the history: for each field its latest value written at or
        before that step, without the removed ones. One indexed query whatever the length of
        the history."""
        ...

    def add_savepoint(
        self,
        tenant_id: str,
        run_id: str,
        label: str,
        step_seq: int,
        *,
        by: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> Savepoint:
        """Mark ``step_seq`` (0 to the run's committed steps) as savepoint ``label``.

        Idempotent: a label that exists is returned as it is (a repeat with another step raises
        :class:`~perdure.core.errors.InvalidInputError`). Raises
        :class:`~perdure.core.errors.RunNotFoundError` for an unknown run and
        :class:`~perdure.core.errors.InvalidInputError` for a step the run has not reached.
        Appends a ``savepoint`` event."""
        ...

    def savepoints(self, tenant_id: str, run_id: str) -> list[Savepoint]:
        """The run's savepoints, by step."""
        ...

    def lineage(self, tenant_id: str, run_id: str) -> Lineage | None:
        """Where a forked run came from, or None for a run that was not forked."""
        ...

    def messages_until(
        self, tenant_id: str, thread_id: str, run_id: str, step_seq: int
    ) -> list[Message]:
        """The thread's messages as the run saw them after step ``step_seq``: everything up
        to the last message the run appended by then (or, when it appended none, up to its
        first message), in order. What a fork's new thread starts with."""
        ...
