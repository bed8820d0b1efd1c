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

from perdure.core.artifacts import ArtifactRef
from perdure.core.budget import BudgetState
from perdure.core.errors import PerdureError
from perdure.core.history import Lineage, SavepointMark
from perdure.core.listing import RunCursor
from perdure.core.logs import StoredFields
from perdure.core.memory import MemoryWrite
from perdure.core.model import (
    JSON,
    Event,
    Message,
    Release,
    Run,
    RunStatus,
    StepRecord,
)
from perdure.core.records import ApprovalRequest, RunError, StepOutcome, Waiting
from perdure.core.threads import ThreadPolicy
from perdure.store.access import AccessStore
from perdure.store.capabilities import (
    ChildrenStore,
    EffectLedger,
    FleetStore,
    UpgradesStore,
    WaitsStore,
)
from perdure.store.conversations import GraphCheckpointStore, StreamsStore, ThreadsStore
from perdure.store.lifecycle import ArchiveStore, ArtifactLedger, HistoryStore, RetentionStore
from perdure.store.memory import MemoryStore
from perdure.store.sessions import SessionStore


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
    policy: ThreadPolicy | None = None
    """What to do when the thread is busy (None: the thread's own policy, else enqueue)."""
    state_seal: str | None = None
    """The run row's sealed record of its state (see :class:`perdure.core.seal.StateSeal`)."""
    trace: dict[str, str] | None = None
    """A W3C trace context (``traceparent``, ``tracestate``) kept in the ``created`` event, so
    whichever worker runs the run continues the caller's trace."""
    lineage: Lineage | None = None
    """For a fork: where it came from (recorded in ``forks``)."""
    artifacts: tuple[ArtifactRef, ...] = ()
    """Artifacts the initial state or messages point to (a fork's inheritance), recorded as
    committed references of the new run."""
    parent_run_id: str | None = None
    """The run whose step started this one (``ctx.spawn``), in the same tenant."""
    child_key: str | None = None
    """The key the parent gave this child (unique among the parent's children)."""


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
    state_seal: str | None = None
    """The run row's new sealed state record (None: unchanged)."""
    artifacts: tuple[int, ...] = ()
    """Ids of ``uploaded`` artifact rows this boundary commits (see :meth:`record_artifact`)."""
    savepoints: tuple[SavepointMark, ...] = ()
    """Savepoints the step marked; they point at this boundary's step."""
    logs: frozenset[str] = frozenset()
    """Fields of ``state`` written whole as the base of a field log (see
    :mod:`perdure.core.logs`); their earlier tails go."""
    appends: dict[str, bytes] = field(default_factory=dict)
    """Fields kept as logs that this step only appended to, each with its tail."""
    memory: tuple[MemoryWrite, ...] = ()
    """The step's writes to its tenant's memory (see :mod:`perdure.store.memory`), in order;
    committed in the boundary's transaction, so a boundary that does not commit writes none."""


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """One run's part of a group commit (:meth:`Store.commit_many`): the arguments
    :meth:`Store.commit` takes for that run."""

    tenant_id: str
    run_id: str
    fence: int
    expected_version: int
    boundaries: Sequence[Boundary]


class Store(
    EffectLedger,
    WaitsStore,
    UpgradesStore,
    FleetStore,
    ThreadsStore,
    StreamsStore,
    GraphCheckpointStore,
    AccessStore,
    SessionStore,
    HistoryStore,
    ArtifactLedger,
    RetentionStore,
    ArchiveStore,
    ChildrenStore,
    MemoryStore,
    Protocol,
):
    """Persistent home of runs, steps, state, events and thread messages: the run methods here,
    the other capabilities in :mod:`perdure.store.capabilities`."""

    url: str
    notifies: bool
    """True when :meth:`wait_for_work` really waits for notifications."""
    parallel_writes: bool
    """True when write transactions on different connections run side by side (PostgreSQL);
    False when they take turns (SQLite's one writer), so writing several at once from one
    process only splits what one transaction could carry."""

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

        The run takes the next place in its thread's queue and follows the thread's policy when
        the thread has unfinished runs (see :class:`~perdure.store.conversations.ThreadsStore`):
        behind them its messages wait in the thread's inbox until it is claimed; ``reject``
        raises :class:`~perdure.core.errors.ThreadBusyError` and writes nothing.
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
        since: datetime | None = None,
        until: datetime | None = None,
        search: str | None = None,
        after: RunCursor | None = None,
    ) -> list[Run]:
        """Runs of one tenant, newest first by ``(created_at, run_id)``, filtered by statuses
        (any of), workflow, thread, creation time (``since`` included, ``until`` excluded) and
        ``search`` (text found in the run id, thread id or idempotency key), at most ``limit``.
        ``after`` is a keyset cursor: only runs strictly after it in that order, so a listing
        read page by page never repeats or skips a run, whatever was started meanwhile.
        Read-only."""
        ...

    def load_state(self, tenant_id: str, run_id: str) -> StoredFields:
        """The run's current state fields (field name -> canonical JSON), each field kept as a
        log joined from its base and tails; ``logs`` names those (with their tail counts).
        Read-only."""
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
        dead_owners: Sequence[str] = (),
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
        longer exists), ``dead_owners`` more of them (workers whose heartbeat stopped): their
        live-looking leases count as expired. Returns None when nothing is
        claimable; two concurrent claimers never
        both get the same run.

        One writer per thread: a run is claimable only while no unfinished run of its thread is
        ahead of it in the thread's queue. The claim also lets in the messages the run was
        started with (and any from outside) that waited in the thread's inbox.
        """
        ...

    def heartbeat(
        self, tenant_id: str, run_id: str, owner: str, fence: int, lease_until: datetime
    ) -> None:
        """Extend the lease. Raises :class:`~perdure.core.errors.LeaseLostError` when the caller no
        longer holds it (fence moved on, owner changed, or the run ended)."""
        ...

    def renew_leases(
        self, owner: str, leases: Sequence[tuple[str, str, int]], lease_until: datetime
    ) -> list[tuple[str, str, int]]:
        """Extend many leases of ``owner`` at once, each given as ``(tenant_id, run_id, fence)``,
        in one transaction (one commit however many runs a process holds); return those no
        longer held (fence moved on, owner changed, or the run ended), which are left as they
        are."""
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

    def commit_many(
        self, requests: Sequence[CommitRequest], now: datetime
    ) -> list[int | PerdureError]:
        """Commit several runs' boundaries in one transaction (a group commit): one durable
        write for all of them. Each request is guarded by its own fence, expected version and
        status RUNNING, exactly as :meth:`commit` guards it, and gets its own answer, in the
        order given: the new state_version, or the error :meth:`commit` would have raised for
        it. A refused request writes nothing and does not hold back the others (its
        ``late_commit`` event is recorded with them). Raises
        :class:`~perdure.core.errors.StoreUnavailableError` when the database could not be
        reached and the outcome of the whole group is unknown; nothing else escapes.
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

    def messages(self, tenant_id: str, thread_id: str, *, after: int = 0) -> list[Message]:
        """The thread's messages in order; with ``after``, only those numbered after it (what
        joined the thread since a reader last looked)."""
        ...

    def close(self) -> None:
        """Close every connection this store opened."""
        ...
