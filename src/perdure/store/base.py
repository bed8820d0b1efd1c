"""The store protocol: every persistent operation perdure performs, with its contract.

It is implemented once, by :class:`perdure.store.engine.Engine`, on the driver of each database
(:mod:`perdure.store.driver`); the conformance suite holds both to these contracts.

Rules shared by every method:

* Every per-run operation is scoped by ``tenant_id``; a run of another tenant behaves exactly as
  a run that does not exist (:class:`~perdure.core.errors.RunNotFoundError`).
* "now" is always a parameter; a store never reads the clock itself.
* Each method is one short transaction: it either happens whole or not at all.
* Every write to a run row increases ``state_version`` (except lease renewal and release, which
  touch only the lease); every claim increases ``fence``.
* Every status change appends a ``status`` event ``{"from": a, "to": b}`` in the same transaction.
* Driver errors are translated into :class:`~perdure.core.errors.PerdureError` subclasses at
  the store boundary, in one place per driver; callers never see a driver exception. On a
  database that was never migrated, every method that reads or writes runs raises
  :class:`~perdure.core.errors.StoreError` with the fix ``perdure migrate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from perdure.core.budget import BudgetState
from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.model import (
    JSON,
    Approval,
    Event,
    Message,
    Release,
    Run,
    RunStatus,
    Signal,
    StepRecord,
    WorkerInfo,
)
from perdure.core.records import ApprovalRequest, RunError, StepOutcome, Waiting


@dataclass(frozen=True, slots=True)
class NewRun:
    """Everything needed to create a run. ``state`` maps field name to canonical JSON bytes."""

    run_id: str
    tenant_id: str
    thread_id: str
    workflow: str
    start_step: str
    release: Release
    state: dict[str, bytes]
    idempotency_key: str | None = None
    messages: tuple[Message, ...] = ()
    budget: BudgetState | None = None


@dataclass(frozen=True, slots=True)
class Boundary:
    """One step boundary to commit: what the step decided and what it changed.

    ``status`` is the run's status after the boundary (RUNNING to continue, or a status the
    transition table allows from RUNNING). ``state`` holds only the fields that changed.
    For a wait, ``waiting`` says what for, ``wake_at`` when a timer fires or a signal wait
    times out, and ``approval`` the request a person must decide. ``budget``
    is the run's budget after the step (None: unchanged). ``workflow_version`` and
    ``state_schema`` are the writer's (None: unchanged).
    """

    step: str
    outcome: StepOutcome
    next_step: str | None
    status: RunStatus
    started_at: datetime
    finished_at: datetime
    state: dict[str, bytes] = field(default_factory=dict)
    messages: tuple[Message, ...] = ()
    result: JSON = None
    error: RunError | None = None
    waiting: Waiting | None = None
    wake_at: datetime | None = None
    approval: ApprovalRequest | None = None
    budget: BudgetState | None = None
    workflow_version: int | None = None
    state_schema: int | None = None


class Store(Protocol):
    """Persistent home of runs, steps, state, events and thread messages."""

    url: str
    notifies: bool
    """True when :meth:`wait_for_work` really waits for notifications."""

    def migrate(self, now: datetime) -> list[str]:
        """Apply pending schema migrations, in order, and return the names applied.

        Idempotent. Raises :class:`~perdure.core.errors.SchemaTooNewError` when the database holds a
        migration newer than this code knows, and
        :class:`~perdure.core.errors.MigrationChecksumError` when an applied migration's checksum
        differs from the shipped file.
        """
        ...

    def schema_version(self) -> int:
        """The highest applied migration version (0 for an empty database)."""
        ...

    def create_run(self, new: NewRun, now: datetime) -> tuple[Run, bool]:
        """Create a PENDING run with its initial state and thread messages, atomically.

        Idempotent on ``(tenant_id, idempotency_key)``: when a run with that key exists, nothing
        is written and ``(existing_run, False)`` is returned. Otherwise ``(run, True)``.
        """
        ...

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        """The run, or :class:`~perdure.core.errors.RunNotFoundError` (also for other tenants)."""
        ...

    def list_runs(
        self,
        tenant_id: str,
        *,
        statuses: Sequence[RunStatus] = (),
        workflow: str | None = None,
        thread_id: str | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Runs of one tenant, newest first, filtered by statuses (any of), workflow, thread."""
        ...

    def load_state(self, tenant_id: str, run_id: str) -> dict[str, bytes]:
        """The run's current state fields (field name -> canonical JSON). Read-only."""
        ...

    def claim(
        self,
        owner: str,
        lease_until: datetime,
        now: datetime,
        workflows: Sequence[str],
        *,
        tenant_id: str | None = None,
        run_id: str | None = None,
        dead_owner: str | None = None,
    ) -> Run | None:
        """Atomically take the lease on one runnable run and return it with its new fence.

        Runnable: status PENDING, RUNNING or CANCEL_REQUESTED, or WAITING_EXTERNAL with a due
        ``wake_at`` (a timer or a signal timeout); workflow in ``workflows``; no live lease
        (``lease_until`` is null or before ``now``); no retry wait pending (``wake_at`` null or
        due). The claim sets ``owner`` and ``lease_until``, increments ``fence`` and
        ``state_version``, moves PENDING and WAITING_EXTERNAL to RUNNING (keeping ``waiting`` so
        the claimer knows a wait timed out) and appends a ``claimed`` event. Without
        ``run_id`` the oldest runnable run of any tenant is taken (this is the worker's scan,
        the one query not scoped by tenant); with ``run_id`` (and ``tenant_id``) only that run.
        ``dead_owner`` names an owner the caller has proven dead (a process of this host that no
        longer exists): its live-looking lease counts as expired. Returns None when nothing is
        claimable; two concurrent claimers never
        both get the same run.
        """
        ...

    def heartbeat(
        self, tenant_id: str, run_id: str, owner: str, fence: int, lease_until: datetime
    ) -> None:
        """Extend the lease. Raises :class:`~perdure.core.errors.LeaseLostError` when the caller no
        longer holds it (fence moved on, owner changed, or the run ended)."""
        ...

    def release(self, tenant_id: str, run_id: str, owner: str, fence: int, now: datetime) -> bool:
        """Give the lease up so any worker can claim the run at once. Returns False (and changes
        nothing) when the caller no longer held it."""
        ...

    def commit(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        expected_version: int,
        boundaries: Sequence[Boundary],
        now: datetime,
    ) -> int:
        """Commit one or more step boundaries in one transaction; return the new state_version.

        Guarded by ``fence``, ``expected_version`` and status RUNNING. On success it writes the
        step records, changed state fields, thread messages, a ``step_completed`` event per
        boundary, and the run row (next step, status, result/error, waiting, wake_at, budget,
        version + 1); when the last boundary leaves RUNNING the lease is released in the same
        transaction. A boundary that waits for approval adds a pending approval. A boundary that
        waits for a signal already in the run's inbox does not wait: the signal is consumed and
        the run is left RUNNING (lease released) at the wait's next step. When the guard
        fails nothing is written and it raises :class:`~perdure.core.errors.LeaseLostError` (fence
        moved on), :class:`~perdure.core.errors.RunClosedError` (run ended) or
        :class:`~perdure.core.errors.StaleStateError` (version or status moved on, e.g. a cancel).
        A commit refused by the fence or a finished run is recorded as a ``late_commit`` event.
        """
        ...

    def set_status(
        self,
        tenant_id: str,
        run_id: str,
        *,
        expected_status: RunStatus,
        expected_version: int,
        status: RunStatus,
        fence: int | None,
        now: datetime,
        data: JSON = None,
        release_lease: bool = False,
    ) -> Run:
        """Change only the status (after the caller checked the transition table).

        Guarded by ``expected_status``, ``expected_version`` and, when given, ``fence``. ``data``
        is stored in the status event and, for FAILED/QUARANTINED/NEEDS_ATTENTION/CANCELLED, on
        the run's ``error``. The lease is released when ``release_lease`` is set or the new
        status is not RUNNING or CANCEL_REQUESTED (no other status holds a lease); a pending
        retry wait (``wake_at``) is cleared. Raises like :meth:`commit` when the guard fails.
        """
        ...

    def defer(
        self,
        tenant_id: str,
        run_id: str,
        *,
        fence: int,
        expected_version: int,
        wake_at: datetime,
        step_attempts: int,
        now: datetime,
        data: JSON = None,
    ) -> Run:
        """Put a RUNNING run to sleep until ``wake_at`` before it retries its next step.

        Guarded like :meth:`commit`. Records ``step_attempts`` (failed attempts of the next
        step so far) and, on the first failure, ``retry_since``; releases the lease; appends a
        ``retry_scheduled`` event carrying ``data`` (the error). No worker claims the run before
        ``wake_at``; the next boundary commit clears the attempt count.
        """
        ...

    def plan_effect(
        self, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
    ) -> EffectRecord:
        """Record the intent of an effect (status ``planned``) before its first call.

        Idempotent on ``new.key``: if the effect exists, nothing is written and the existing
        record is returned (the caller compares request hashes). Guarded by ``fence`` and a
        non-terminal run: raises :class:`~perdure.core.errors.LeaseLostError` or
        :class:`~perdure.core.errors.RunClosedError` otherwise. Appends an ``effect`` event.
        """
        ...

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        """The effect with this key in this tenant, or None."""
        ...

    def update_effect(
        self,
        tenant_id: str,
        key: str,
        *,
        expected_status: EffectStatus,
        status: EffectStatus,
        fence: int | None,
        now: datetime,
        attempts_delta: int = 0,
        result: JSON = None,
        receipt: str | None = None,
        error: JSON = None,
        resolution: JSON = None,
    ) -> EffectRecord:
        """Move an effect from ``expected_status`` to ``status`` (the caller checked
        ``perdure.core.effects.EFFECT_ALLOWED``), adding ``attempts_delta`` to its attempts and
        storing the given result, receipt, last error and resolution (None keeps the old value).

        Guarded by ``expected_status`` and, when ``fence`` is given, by the run's fence and a
        non-terminal run. A person's decision passes ``fence=None``. Raises
        :class:`~perdure.core.errors.EffectNotFoundError`,
        :class:`~perdure.core.errors.EffectStateError` (status moved on),
        ``LeaseLostError`` or ``RunClosedError``.
        Appends an ``effect`` event to the run.
        """
        ...

    def list_effects(
        self,
        tenant_id: str,
        *,
        run_id: str | None = None,
        statuses: Sequence[EffectStatus] = (),
        limit: int = 1000,
    ) -> list[EffectRecord]:
        """Effects of a tenant (optionally of one run, of any of ``statuses``) in the order
        they were planned."""
        ...

    def approvals(
        self, tenant_id: str, *, run_id: str | None = None, pending: bool = False
    ) -> list[Approval]:
        """Approval requests of a tenant (or of one run; only pending ones with ``pending``),
        oldest first."""
        ...

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
        """Record a decision on a pending approval and move its WAITING_APPROVAL run back to
        RUNNING (lease free) at ``on_approve`` or ``on_reject``, atomically.

        Idempotent on ``request_id``: a repeat returns ``(the decided approval, False)``; a first
        decision returns ``(approval, True)``. The caller checked the principal's role. Raises
        :class:`~perdure.core.errors.ApprovalStateError` when the approval is no longer pending and
        :class:`~perdure.core.errors.RunClosedError` when the run has ended (the late decision is
        recorded as a ``late_approval`` event).
        """
        ...

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
        """Put a signal in the run's inbox; wake the run if it waits for ``name``.

        Returns the signal and what happened: ``woke`` (the run was waiting for it and is
        RUNNING again at the wait's next step, the signal consumed), ``queued`` (kept in the
        inbox for a later wait) or ``duplicate`` (this ``signal_id`` was delivered before;
        nothing changed). A signal to a finished run is recorded as a ``late_signal`` event and
        raises :class:`~perdure.core.errors.RunClosedError`.
        """
        ...

    def signals(self, tenant_id: str, run_id: str) -> list[Signal]:
        """The run's inbox, oldest first (consumed signals included)."""
        ...

    def reopen(
        self,
        tenant_id: str,
        run_id: str,
        *,
        expected_status: RunStatus,
        expected_version: int,
        next_step: str,
        state: dict[str, bytes],
        budget: BudgetState | None,
        now: datetime,
        data: JSON,
    ) -> Run:
        """A person continues a NEEDS_ATTENTION or QUARANTINED run: status RUNNING (lease
        free) at ``next_step``, with the state fields in ``state`` rewritten, the budget
        replaced when given, and the attempts of its planned effects reset, atomically; appends
        a ``resumed`` event with ``data`` (who, the patched fields). Guarded like
        :meth:`set_status`."""
        ...

    def record_event(
        self, tenant_id: str, run_id: str, type: str, data: JSON, now: datetime
    ) -> None:
        """Append an event without touching the run (e.g. a late message that was ignored)."""
        ...

    def recall_request(self, tenant_id: str, request_id: str) -> tuple[str, JSON] | None:
        """The ``(operation, result)`` remembered for a client request id, or None."""
        ...

    def remember_request(
        self, tenant_id: str, request_id: str, operation: str, result: JSON, now: datetime
    ) -> None:
        """Remember a client request's result; the first one stays (later ones are ignored)."""
        ...

    def delete_run_messages(self, tenant_id: str, run_id: str) -> int:
        """Delete the thread messages a run added (cancel clean-up policy); return how many."""
        ...

    def upgrade_run(
        self,
        tenant_id: str,
        run_id: str,
        *,
        fence: int,
        expected_version: int,
        fields: dict[str, bytes],
        drop: Sequence[str],
        next_step: str | None,
        workflow_version: int,
        state_schema: int,
        now: datetime,
        data: JSON,
    ) -> Run:
        """Rewrite a claimed run for the running code: the migrated state ``fields`` (all of
        them), the fields in ``drop`` deleted, the (renamed) ``next_step`` and the versions it is
        now written with, atomically; appends an ``upgraded`` event with ``data``. Guarded like
        :meth:`commit`."""
        ...

    def scan_runs(
        self, statuses: Sequence[RunStatus], *, workflow: str | None = None, limit: int = 1000
    ) -> list[Run]:
        """Runs of every tenant in any of ``statuses`` (an operator's read, e.g. the pre-deploy
        check), oldest first."""
        ...

    def requeue_too_new(
        self, workflow: str, *, workflow_version: int, state_schema: int, now: datetime
    ) -> list[tuple[str, str]]:
        """Move runs of ``workflow`` quarantined as ``schema_too_new`` that this code can read
        (versions at most the given ones) back to RUNNING; return their ``(tenant, run)`` ids.
        This is how runs written by a newer release run again once it is back."""
        ...

    def worker_beat(
        self, owner: str, *, host: str, pid: int, concurrency: int, runs_held: int, now: datetime
    ) -> None:
        """Record that worker ``owner`` is alive (creating its row on the first beat)."""
        ...

    def worker_stopped(self, owner: str, now: datetime) -> None:
        """Record that worker ``owner`` drained and left."""
        ...

    def workers(self, since: datetime) -> list[WorkerInfo]:
        """Workers still running, and those that stopped after ``since``, oldest first."""
        ...

    def stuck_runs(self, before: datetime, *, limit: int = 100) -> list[Run]:
        """RUNNING runs of every tenant with no progress since ``before`` (the watchdog's view;
        their leases expire and any worker reclaims them)."""
        ...

    def next_wake(self, now: datetime) -> datetime | None:
        """The earliest future ``wake_at`` of a retry wait or a timer, or None."""
        ...

    def wait_for_work(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until a run may have become claimable; True when
        told so (PostgreSQL LISTEN/NOTIFY), False on timeout. A store without notifications
        (SQLite) returns False at once and the caller sleeps itself. Callers re-read the store
        either way: a notification carries only a run id."""
        ...

    def steps(self, tenant_id: str, run_id: str) -> list[StepRecord]:
        """The run's committed steps, in order."""
        ...

    def events(
        self,
        tenant_id: str,
        run_id: str,
        *,
        after: int = 0,
        limit: int = 1000,
        latest: bool = False,
    ) -> list[Event]:
        """The run's events with ``seq > after``, oldest first, at most ``limit``; with
        ``latest`` the newest ``limit`` events instead (still oldest first)."""
        ...

    def messages(self, tenant_id: str, thread_id: str) -> list[Message]:
        """The thread's messages in order."""
        ...

    def close(self) -> None:
        """Close every connection this store opened."""
        ...
