"""The contract of the ``retention`` wing (deleting finished runs, erasing threads and runs),
reached as ``store.retention``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.history import (
    Removed,
)


class RetentionStore(Protocol):
    """Deleting finished runs and erasing conversations."""

    def expired_runs(
        self,
        before: datetime,
        now: datetime,
        *,
        workflow: str | None = None,
        exclude: Sequence[str] = (),
        limit: int = 100,
    ) -> list[tuple[str, str]]:
        """Finished runs (SUCCEEDED, FAILED, CANCELLED) last changed at or before ``before``,
        of ``workflow`` (any when None) but none of ``exclude``, with no savepoint live at
        ``now``; oldest first, as ``(tenant_id, run_id)``, any tenant."""
        ...

    def delete_runs(self, runs: Sequence[tuple[str, str]], now: datetime) -> Removed:
        """Delete finished runs with every row they own, in one transaction: steps, state and
        its history, events, effects, approvals, signals, savepoints, fork lineage, artifact
        references, remembered requests that name them, and their thread messages — kept
        (detached from the run) when another run of the thread is not finished. A run that is
        not finished, or unknown, is skipped."""
        ...

    def prune_finished(self, part: str, before: datetime, now: datetime, *, limit: int) -> int:
        """Delete one part (``events``, or ``history``: the state history, kept while a
        savepoint of the run is live) of up to ``limit`` finished runs last changed at or before
        ``before``, keeping the runs themselves; return the rows deleted (0: nothing left)."""
        ...

    def erase_thread(self, tenant_id: str, thread_id: str, *, by: str, now: datetime) -> Removed:
        """Erase a conversation: every run of the thread (whatever its status) with all it
        owns, and every message of the thread, in one transaction; record an ``erasures`` row
        (ids and counts only). Raises :class:`~perdure.core.errors.RunBusyError`, erasing
        nothing, while a worker holds a live lease on one of its runs."""
        ...

    def erase_run(self, tenant_id: str, run_id: str, *, by: str, now: datetime) -> Removed:
        """Erase one run like :meth:`erase_thread` erases each run (its own messages are
        deleted); record an ``erasures`` row. :class:`~perdure.core.errors.RunNotFoundError`
        for an unknown run, :class:`~perdure.core.errors.RunBusyError` while it is leased."""
        ...
