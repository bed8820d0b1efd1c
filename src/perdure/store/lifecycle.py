"""The store's capabilities over a run's whole life: its state history, savepoints and forks,
the artifact references it holds, and deleting what retention or an erasure request says must
go. The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold here too.

History is written by the methods that write state: :meth:`~perdure.store.base.Store.create_run`
(step 0), :meth:`~perdure.store.base.Store.commit` (each boundary's changed fields, at its step),
``reopen`` and ``upgrade_run`` (at the run's current step). Nothing here rewrites a history row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.artifacts import ArtifactRef
from perdure.core.history import (
    ArchivedRow,
    ArtifactRecord,
    FieldChange,
    Lineage,
    Removed,
    Savepoint,
)
from perdure.core.model import Message, Run


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


class ArtifactLedger(Protocol):
    """References runs hold to artifacts: written before the upload, committed with the
    boundary that records them."""

    def record_artifact(
        self,
        tenant_id: str,
        run_id: str,
        *,
        step: str | None,
        step_seq: int | None,
        fence: int,
        ref: ArtifactRef,
        parents: Sequence[str],
        now: datetime,
    ) -> int:
        """Record an ``uploaded`` reference (before the bytes are uploaded) and return its id.

        The boundary that lists the id (``Boundary.artifacts``) marks it ``committed`` in the
        commit's transaction, under the same fence. Raises
        :class:`~perdure.core.errors.RunNotFoundError` for an unknown run."""
        ...

    def artifacts(
        self, tenant_id: str, *, run_id: str | None = None, digest: str | None = None
    ) -> list[ArtifactRecord]:
        """References of a tenant, oldest first, filtered by run and digest."""
        ...

    def orphan_uploads(self, *, limit: int) -> list[ArtifactRecord]:
        """``uploaded`` references no commit will ever claim: their run ended, or was claimed
        again under a newer fence (the uploader lost it). Any tenant."""
        ...

    def drop_artifacts(self, ids: Sequence[int]) -> Removed:
        """Delete these references; ``freed`` lists the ``(tenant_id, digest)`` pairs that no
        reference (and no message) points to any more."""
        ...

    def referenced(self, tenant_id: str, digests: Sequence[str]) -> set[str]:
        """Those of ``digests`` some reference or message of the tenant still points to."""
        ...


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


class ArchiveStore(Protocol):
    """Every row a run owns, out (to archive it) and back in (to restore it)."""

    def export_run(self, tenant_id: str, run_id: str) -> list[ArchivedRow]:
        """Every row of the run: the run first, then its steps, state, history, events,
        effects, approvals, signals, savepoints, lineage, artifact references and its own
        messages, each table in its order. Read-only;
        :class:`~perdure.core.errors.RunNotFoundError` for an unknown run."""
        ...

    def import_run(self, tenant_id: str, rows: Sequence[ArchivedRow], now: datetime) -> Run:
        """Write an exported run back, in one transaction, and append a ``restored`` event.
        Generated ids (event sequence numbers, message positions in the thread) are new; the
        order is kept. Refused (:class:`~perdure.core.errors.InvalidInputError`, nothing
        written) when the run exists or a row belongs to another run or tenant."""
        ...
