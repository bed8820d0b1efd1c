"""The store's kernel contract: what a running step and a worker need, with its contract; the
rest of the store's capabilities are its wings (:mod:`perdure.store.wings`).

It is implemented once, by :class:`perdure.store.engine.engine.Engine`, on the driver of each
database (:mod:`perdure.store.driver`); the conformance suite holds both to these contracts.

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
from perdure.core.children import ChildRecord
from perdure.core.effects import EffectMove, EffectPlan, EffectRecord, EffectStatus, NewEffect
from perdure.core.errors import PerdureError
from perdure.core.history import Lineage, SavepointMark
from perdure.core.listing import RunCursor
from perdure.core.logs import StoredFields
from perdure.core.memory import MemoryWrite
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
from perdure.core.stream_state import StreamInfo, StreamOpened
from perdure.core.streams import StreamEntry
from perdure.core.threads import Delivery, ThreadInfo, ThreadPolicy
from perdure.store.watch import Watch
from perdure.store.wings.access.contract import AccessStore
from perdure.store.wings.activity.contract import ActivityStore
from perdure.store.wings.archive.contract import ArchiveStore
from perdure.store.wings.artifacts.contract import ArtifactStore
from perdure.store.wings.graphs.contract import GraphStore
from perdure.store.wings.history.contract import HistoryStore
from perdure.store.wings.memory.contract import MemoryStore
from perdure.store.wings.retention.contract import RetentionStore
from perdure.store.wings.throttle.contract import ThrottleStore


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
    """The step's writes to its tenant's memory (see :mod:`perdure.store.wings.memory`), in order;
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


class Store(Protocol):
    """The store's kernel: what a running step and a worker need. Runs, claims, leases and
    heartbeats, the step-boundary commit (which writes every boundary row: state, messages,
    savepoint marks, fork records, memory writes), the effect ledger, waits and signals, the
    fleet, threads and their inbox, token streams, children and upgrades.

    Everything else is a wing, an attribute of the store with its own contract
    (:mod:`perdure.store.wings`): ``store.graphs``, ``store.access``, ``store.activity``,
    ``store.memory``, ``store.history``, ``store.artifacts``, ``store.retention``,
    ``store.archive``, ``store.throttle``. A consumer depends on the kernel and on the wings it
    uses, nothing more."""

    @property
    def graphs(self) -> GraphStore:
        """The ``graphs`` wing: LangGraph threads' checkpoints, blobs and pending writes."""
        ...

    @property
    def access(self) -> AccessStore:
        """The ``access`` wing: API keys and dashboard sessions."""
        ...

    @property
    def activity(self) -> ActivityStore:
        """The ``activity`` wing: tenants' event feeds, operator counts and the queue."""
        ...

    @property
    def memory(self) -> MemoryStore:
        """The ``memory`` wing: long-term memory: reads, search, erasure, expiry."""
        ...

    @property
    def history(self) -> HistoryStore:
        """The ``history`` wing: state history, savepoints and fork lineage."""
        ...

    @property
    def artifacts(self) -> ArtifactStore:
        """The ``artifacts`` wing: the artifact ledger."""
        ...

    @property
    def retention(self) -> RetentionStore:
        """The ``retention`` wing: deleting finished runs, erasing threads and runs."""
        ...

    @property
    def archive(self) -> ArchiveStore:
        """The ``archive`` wing: a run's rows out to the cold tier and back."""
        ...

    @property
    def throttle(self) -> ThrottleStore:
        """The ``throttle`` wing: failed credential checks, shared by every server."""
        ...

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
        the thread has unfinished runs (see :class:`~perdure.store.base.Store`):
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

    # -- the effect ledger: intents and outcomes of side effects, one row per key
    def plan_effect(
        self, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
    ) -> EffectRecord:
        """Record the intent of an effect (status ``planned``) before its first call.

        Guarded by ``fence`` and a non-terminal run: raises
        :class:`~perdure.core.errors.LeaseLostError` or
        :class:`~perdure.core.errors.RunClosedError` otherwise, **also when the key is recorded
        already** (by the worker that took the run over: its record is never handed to a worker
        whose fence was superseded). Under the run's current fence it is idempotent on
        ``new.key``: if the effect exists, nothing is written and the existing record is
        returned (the caller compares request hashes). Appends an ``effect`` event.
        """
        ...

    def plan_effects(
        self, plans: Sequence[EffectPlan], now: datetime
    ) -> list[EffectRecord | PerdureError]:
        """Several intents, each under its own run's fence, in one transaction (a group): one
        durable write for all of them. Each is recorded and answered in the order given
        exactly as :meth:`plan_effect` would: the record (the existing one if the key was
        recorded already), or the error it would have raised. A refused intent writes nothing
        and does not hold back the others. An intent whose plan says ``executing`` is recorded
        as its first attempt under way (status ``executing``, attempts 1, the plan's
        ``deadline``) with two ``effect`` events, to ``planned`` and then to ``executing``;
        an existing record is returned unchanged, as for any intent. Raises
        :class:`~perdure.core.errors.StoreUnavailableError` when the database could not be
        reached and the outcome of the whole group is unknown; nothing else escapes.
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
        deadline: datetime | None = None,
    ) -> EffectRecord:
        """Move an effect from ``expected_status`` to ``status`` (the caller checked
        ``perdure.core.effects.EFFECT_ALLOWED``), adding ``attempts_delta`` to its attempts and
        storing the given result, receipt, last error and resolution (None keeps the old value).
        A move to ``executing`` records ``deadline``, the attempt's own (None: it has none).

        Guarded by ``expected_status`` and, when ``fence`` is given, by the run's fence and a
        non-terminal run. A person's decision passes ``fence=None``. Raises
        :class:`~perdure.core.errors.EffectNotFoundError`,
        :class:`~perdure.core.errors.EffectStateError` (status moved on),
        ``LeaseLostError`` or ``RunClosedError``.
        Appends an ``effect`` event to the run.
        """
        ...

    def move_effects(
        self, moves: Sequence[EffectMove], now: datetime
    ) -> list[EffectRecord | PerdureError]:
        """Several effects' status changes, each under its own run's fence, in one transaction
        (a group): one durable write for all of them. Each move is guarded and answered in the
        order given exactly as :meth:`update_effect` with its fence would: the updated record,
        or the error it would have raised. A refused move writes nothing and does not hold
        back the others. Appends an ``effect`` event to each moved effect's run. Raises
        :class:`~perdure.core.errors.StoreUnavailableError` when the database could not be
        reached and the outcome of the whole group is unknown; nothing else escapes.
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

    # -- waits: approvals, signals, a person's decisions, requests
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
        via: str | None = None,
    ) -> tuple[Approval, bool]:
        """Record a decision on a pending approval and move its WAITING_APPROVAL run back to
        RUNNING (lease free) at ``on_approve`` or ``on_reject``, atomically. The
        ``approval_decided`` event records ``by``, ``role`` and, when given, ``via`` (the
        credential the decision came through: the audit trail).

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
        state_seal: str | None = None,
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

    # -- upgrades of stored runs
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
        state_seal: str | None = None,
        artifacts: Sequence[int] = (),
    ) -> Run:
        """Rewrite a claimed run for the running code: the migrated state ``fields`` (all of
        them), the fields in ``drop`` deleted, the (renamed) ``next_step`` and the versions it is
        now written with, atomically; appends an ``upgraded`` event with ``data``. Guarded like
        :meth:`commit`. ``artifacts``: uploaded references the new fields point to, committed
        in the same transaction."""
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

    # -- the fleet: workers, the watchdog, timers
    def worker_beat(
        self,
        owner: str,
        *,
        host: str,
        pid: int,
        concurrency: int,
        runs_held: int,
        now: datetime,
        beat_seconds: float | None = None,
    ) -> None:
        """Record that worker ``owner`` is alive (creating its row on the first beat), and how
        often it beats."""
        ...

    def worker_stopped(self, owner: str, now: datetime) -> None:
        """Record that worker ``owner`` drained and left."""
        ...

    def workers(self, since: datetime) -> list[WorkerInfo]:
        """Workers that beat after ``since`` and did not stop, and those that stopped after
        ``since``, oldest first (a worker that died silently drops out once ``since`` passes
        its last beat)."""
        ...

    def stuck_runs(
        self, before: datetime, *, limit: int = 100, tenant_id: str | None = None
    ) -> list[Run]:
        """RUNNING runs of every tenant (or of ``tenant_id``) with no progress since ``before``
        (the watchdog's view; their leases expire and any worker reclaims them)."""
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

    # -- children
    def child_runs(self, tenant_id: str, parent_run_id: str) -> list[ChildRecord]:
        """The children of ``parent_run_id`` (key, run id, workflow, status, result, error),
        by key. A child is created with :meth:`Store.create_run` naming its parent; when the
        transaction that settles a child (a commit or :meth:`Store.set_status` to SUCCEEDED,
        FAILED, CANCELLED, NEEDS_ATTENTION or QUARANTINED) leaves every child its parent
        waits for settled, that same transaction wakes the parent (RUNNING, lease free, at the
        wait's ``next``); a parent whose awaited children settled before its wait commits does
        not wait."""
        ...

    # -- threads: one writer per thread, policies, the inbox
    def set_thread_policy(
        self, tenant_id: str, thread_id: str, policy: ThreadPolicy, now: datetime
    ) -> None:
        """Set the thread's own policy (the thread need not have runs yet)."""
        ...

    def thread(self, tenant_id: str, thread_id: str) -> ThreadInfo:
        """The thread's policy, the run that holds it, the runs queued behind, and how many
        messages wait in its inbox. A thread nobody used is idle with the default policy."""
        ...

    def post_message(
        self,
        tenant_id: str,
        thread_id: str,
        message: Message,
        policy: ThreadPolicy | None,
        now: datetime,
    ) -> Delivery:
        """Add a message to a thread from outside any run, atomically.

        An idle thread takes it at once (``appended``). On a busy thread the policy decides:
        ``enqueue`` keeps it in the inbox until the active run's next boundary commit (or its
        end, or the next claim on the thread), where it joins the thread after that boundary's
        own messages (``queued``); ``interrupt`` does the same and moves the thread's unfinished
        runs to CANCEL_REQUESTED; ``reject`` raises :class:`~perdure.core.errors.ThreadBusyError`.
        """
        ...

    # -- durable token streams
    def open_stream(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        message_id: str,
        now: datetime,
        *,
        reopen: bool = False,
    ) -> StreamOpened:
        """Start a new attempt of the message's stream, atomically. The first attempt is 1.
        When an earlier attempt is unfinished (a crash cut it), a ``superseded`` entry of the
        new attempt is written first. A finished message is left as it is
        (``finished=True``), unless ``reopen``: then it is superseded like a cut one. Each
        new attempt appends a ``message_stream`` event (``message_id``, ``attempt``) to the
        run in the same transaction, so the run's event stream announces the reply as soon as
        its stream opens."""
        ...

    def write_stream(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        message_id: str,
        attempt: int,
        texts: Sequence[str],
        finish: bool,
        now: datetime,
    ) -> int:
        """Append ``texts`` as ``delta`` entries of ``attempt`` (and a ``finished`` entry when
        ``finish``), in one transaction however many; return the last sequence number."""
        ...

    def stream_entries(
        self, tenant_id: str, message_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[StreamEntry]:
        """The message's entries with ``seq > after``, in order, at most ``limit``; empty for a
        message with no stream (or of another tenant)."""
        ...

    def stream_info(self, tenant_id: str, message_id: str) -> StreamInfo | None:
        """The head of the message's stream, or None when it has none."""
        ...

    def watch_streams(self) -> Watch:
        """Something to wait on until a stream may have grown (see :class:`Watch`)."""
