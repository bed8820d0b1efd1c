"""The store's capabilities beyond runs and commits: the effect ledger, waits (approvals,
signals, a person's decisions), upgrades of old runs, and the fleet of workers.

:class:`perdure.store.base.Store` is all of them together; the rules in that module's
docstring (tenant scoping, "now" as a parameter, one transaction per method, translated driver
errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from perdure.core.budget import BudgetState
from perdure.core.children import ChildRecord
from perdure.core.effects import EffectRecord, EffectStatus, NewEffect
from perdure.core.graph import (
    GraphCheckpoint,
    GraphHold,
    GraphPut,
    GraphThreadState,
    GraphWrite,
    PruneStrategy,
)
from perdure.core.keys import ApiKey
from perdure.core.model import (
    JSON,
    Approval,
    Event,
    Message,
    Run,
    RunStatus,
    Signal,
    WorkerInfo,
)
from perdure.core.observed import EffectCount, Queue, RunCount, SpendCount
from perdure.core.stream_state import StreamInfo, StreamOpened
from perdure.core.streams import StreamEntry
from perdure.core.threads import Delivery, ThreadInfo, ThreadPolicy

if TYPE_CHECKING:
    from perdure.store.driver import Watch


class EffectLedger(Protocol):
    """Intents and outcomes of external side effects, one row per effect key."""

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


class WaitsStore(Protocol):
    """Approvals, signals, a person's decisions, and requests remembered for repeat safety."""

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


class UpgradesStore(Protocol):
    """Old runs under new code: upgrades on claim, and runs parked as too new."""

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


class FleetStore(Protocol):
    """Workers, the watchdog, timers and wake-ups."""

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


class ThreadsStore(Protocol):
    """One writer per thread: each thread's queue of runs, its policy and its inbox.

    A thread's runs are numbered when created; only the oldest unfinished run of a thread is
    claimable (:meth:`~perdure.store.base.Store.claim` skips the others), so at most one is
    RUNNING and the rest wait PENDING, in order. :meth:`~perdure.store.base.Store.create_run`
    applies the thread's policy (``NewRun.policy``, else the thread's own, else ``enqueue``):
    ``reject`` raises :class:`~perdure.core.errors.ThreadBusyError` when the thread has an
    unfinished run (nothing written); ``interrupt`` moves every unfinished run ahead to
    CANCEL_REQUESTED in the same transaction (their workers finish the cancel at the next
    boundary); ``enqueue`` only queues. The messages of a run created behind others wait in the
    thread's inbox and join the thread when that run is claimed.
    """

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


class StreamsStore(Protocol):
    """Durable token streams: the numbered entries of each message, and their attempts.

    A stream belongs to the run that opened it. Every write is fenced: it is refused with
    :class:`~perdure.core.errors.LeaseLostError` once another worker claimed the run (or
    :class:`~perdure.core.errors.RunClosedError` once it ended), and with
    :class:`~perdure.core.errors.StreamClosedError` when its attempt is no longer the newest,
    the message is finished, or another run streams it. Sequence numbers start at 1, grow
    across attempts and are never reused.
    """

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
        (``finished=True``), unless ``reopen``: then it is superseded like a cut one."""
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


class GraphCheckpointStore(Protocol):
    """LangGraph threads' checkpoints (:mod:`perdure.langgraph`), in the tables of migration
    0007. A thread is one run of workflow ``langgraph`` (:mod:`perdure.core.graph`), created
    RUNNING and unowned by its first write; a held invocation owns it through the run's lease
    and fence (taken with :meth:`~perdure.store.base.Store.claim`, given up with
    :meth:`~perdure.store.base.Store.release`).

    Every write is one transaction that first locks the thread's run and refuses, writing
    nothing: a QUARANTINED thread (:class:`~perdure.core.errors.GraphThreadQuarantinedError`),
    a finished or cancelled one (:class:`~perdure.core.errors.RunClosedError`), a held write
    whose fence is no longer the thread's (:class:`~perdure.core.errors.LeaseLostError`), and
    an unheld write while a live lease holds the thread
    (:class:`~perdure.core.errors.GraphThreadBusyError`). A held write extends the lease.
    """

    def graph_thread(self, tenant_id: str, thread_id: str) -> GraphThreadState:
        """The thread's run status (None when nothing was ever written) and quarantine reason."""
        ...

    def open_graph_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """Create the thread's run (RUNNING, unowned, with a ``created`` event) unless it
        exists, so that it can be claimed. Idempotent."""
        ...

    def put_graph_checkpoint(self, put: GraphPut, hold: GraphHold | None, now: datetime) -> None:
        """Store a checkpoint and the blobs it carries, guarded as above. Blobs already stored
        at the same (channel, version) are kept; a checkpoint stored again with the same id is
        overwritten. Appends a ``graph_checkpoint`` event with ``put.event``, counts the
        checkpoint in the run's ``steps_done`` and, with ``put.keep_last``, trims the
        namespace to its newest checkpoints (their writes and unread blobs go too)."""
        ...

    def put_graph_writes(
        self,
        tenant_id: str,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[GraphWrite],
        hold: GraphHold | None,
        now: datetime,
        *,
        replace: bool = False,
        interrupts: JSON = None,
    ) -> None:
        """Store pending writes of a checkpoint, guarded as above. Idempotent per (task, idx):
        a write stored again is ignored, or overwritten with ``replace``. With ``interrupts``
        (a JSON summary) the run's ``next_step`` becomes ``interrupted`` and a
        ``graph_interrupt`` event is appended."""
        ...

    def get_graph_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> GraphCheckpoint | None:
        """The checkpoint with this id (the newest of the namespace when None) with its blobs
        and writes, or None. A quarantined thread raises
        :class:`~perdure.core.errors.GraphThreadQuarantinedError` (never None)."""
        ...

    def list_graph_checkpoints(
        self,
        tenant_id: str,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        metadata_filter: bytes | None = None,
        before: str | None = None,
        limit: int | None = None,
    ) -> list[GraphCheckpoint]:
        """Checkpoints newest first (by id), of one thread and namespace when given, whose
        metadata holds every key of ``metadata_filter`` (a JSON object) with the same value,
        with ids below ``before``, at most ``limit``. Naming a quarantined thread raises
        like :meth:`get_graph_checkpoint`."""
        ...

    def delete_graph_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """Delete every checkpoint, blob and write of the thread (all namespaces); the run
        stays, with a ``graph_thread_deleted`` event. A thread never written is a no-op; a
        thread a live lease holds is refused (``GraphThreadBusyError``), here and by
        :meth:`prune_graph_threads`."""
        ...

    def delete_graph_runs(self, tenant_id: str, graph_runs: Sequence[str], now: datetime) -> None:
        """Delete the checkpoints whose metadata ``run_id`` is one of ``graph_runs`` (every
        thread and namespace of the tenant), their writes and the blobs no longer read."""
        ...

    def copy_graph_thread(self, tenant_id: str, source: str, target: str, now: datetime) -> None:
        """Copy every checkpoint, blob and write of ``source`` to ``target`` (created if
        needed; what it already holds under the same keys is kept). Guarded on ``target`` as
        an unheld write. A source with no checkpoint copies nothing."""
        ...

    def prune_graph_threads(
        self, tenant_id: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: datetime
    ) -> None:
        """Keep only the newest checkpoint of each namespace (``keep_latest``) or none
        (``delete``) of each thread, with their writes; drop blobs no longer read. Threads
        never written are skipped."""


class AccessStore(Protocol):
    """API keys, the event feeds that live streams read, and the counts operators watch."""

    def create_key(self, key: ApiKey, secret_hash: str, now: datetime) -> None:
        """Store a new key. Raises :class:`~perdure.core.errors.InvalidInputError` when the
        tenant already has a live (not revoked) key of that name; writes nothing then."""
        ...

    def find_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key with this id and its stored secret hash (of any tenant: the key names its
        tenant), revoked or not; None when there is none."""
        ...

    def list_keys(self, tenant_id: str, *, revoked: bool = False) -> list[ApiKey]:
        """The tenant's live keys (and revoked ones with ``revoked``), oldest first."""
        ...

    def revoke_key(self, tenant_id: str, key_id: str, now: datetime) -> ApiKey:
        """Revoke a key (idempotent: a revoked key keeps its first revocation time).
        Raises :class:`~perdure.core.errors.KeyNotFoundError` for a key of another tenant."""
        ...

    def tenant_events(
        self,
        tenant_id: str,
        *,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """Events of every run of one tenant with ``seq > after``, oldest first, filtered by
        type (any of) and the run's workflow."""
        ...

    def events_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """``(seq, tenant_id, run_id)`` of events of every tenant with ``seq > after``, oldest
        first: what a stream hub polls to know which runs moved (not scoped by tenant; never
        shown to a caller)."""
        ...

    def last_event_seq(self) -> int:
        """The highest event sequence number (0 when there are none)."""
        ...

    def run_counts(self, tenant_id: str | None = None) -> list[RunCount]:
        """How many runs there are by tenant, workflow and status (one tenant, or all)."""
        ...

    def effect_counts(self, tenant_id: str | None = None) -> list[EffectCount]:
        """How many effects there are by tenant and status (one tenant, or all)."""
        ...

    def spend_counts(self, tenant_id: str | None = None) -> list[SpendCount]:
        """Tokens and cost the runs' budgets recorded, summed by tenant and workflow (one
        tenant, or all)."""
        ...

    def queue(self, now: datetime) -> Queue:
        """Runs of every tenant claimable at ``now`` (by any worker of any workflow), and
        since when the oldest has been claimable."""
        ...

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """Block up to ``timeout`` seconds until events are committed; return the
        ``(tenant_id, run_id)`` pairs they belong to (PostgreSQL LISTEN/NOTIFY; ``[]`` on
        timeout). A store without notifications (SQLite), or one whose listening connection
        was just lost, returns None at once and the caller polls :meth:`events_since`. Callers
        re-read the events either way."""
        ...


class ChildrenStore(Protocol):
    """Child runs: the runs a step of another run started (``ctx.spawn``)."""

    def child_runs(self, tenant_id: str, parent_run_id: str) -> list[ChildRecord]:
        """The children of ``parent_run_id`` (key, run id, workflow, status, result, error),
        by key. A child is created with :meth:`Store.create_run` naming its parent; when the
        transaction that settles a child (a commit or :meth:`Store.set_status` to SUCCEEDED,
        FAILED, CANCELLED, NEEDS_ATTENTION or QUARANTINED) leaves every child its parent
        waits for settled, that same transaction wakes the parent (RUNNING, lease free, at the
        wait's ``next``); a parent whose awaited children settled before its wait commits does
        not wait."""
        ...
