"""The store's capabilities beyond runs and commits: the effect ledger, waits (approvals,
signals, a person's decisions), upgrades of old runs, the fleet of workers and a run's
children. Threads, token streams and graph checkpoints: :mod:`perdure.store.conversations`;
API keys, tenant events and counts: :mod:`perdure.store.access`.

:class:`perdure.store.base.Store` is all of them together; the rules in that module's
docstring (tenant scoping, "now" as a parameter, one transaction per method, translated driver
errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.budget import BudgetState
from perdure.core.children import ChildRecord
from perdure.core.effects import EffectMove, EffectPlan, EffectRecord, EffectStatus, NewEffect
from perdure.core.errors import PerdureError
from perdure.core.model import (
    JSON,
    Approval,
    Run,
    RunStatus,
    Signal,
    WorkerInfo,
)


class EffectLedger(Protocol):
    """Intents and outcomes of external side effects, one row per effect key."""

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
