"""The Runtime: the Python API for starting, advancing, inspecting and cancelling runs."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from perdure.core import transitions
from perdure.core.budget import Budget
from perdure.core.clock import Clock
from perdure.core.effects import EffectRecord
from perdure.core.errors import (
    InvalidInputError,
    RunBusyError,
    RunClosedError,
    StaleStateError,
)
from perdure.core.ids import new_id
from perdure.core.model import (
    Durability,
    Event,
    Message,
    Release,
    Run,
    RunStatus,
    StepRecord,
    WorkerInfo,
)
from perdure.core.seal import Keyring, seal_fields
from perdure.core.serde import Limits
from perdure.core.workflow import Workflow
from perdure.runtime.base import DEFAULT_TENANT, Tenant, tenant_of
from perdure.runtime.clock import default_clock
from perdure.runtime.effects import RuntimeEffects
from perdure.runtime.execution import Execution, Services, Stopped
from perdure.runtime.leases import Heartbeat, is_dead_local_owner, process_owner
from perdure.runtime.versions import RuntimeVersions
from perdure.runtime.waits import RuntimeWaits
from perdure.store.base import NewRun, Store
from perdure.store.url import open_store

WAIT_HINTS = {
    RunStatus.WAITING_APPROVAL: "it continues once a person decides: see `perdure approvals`",
    RunStatus.WAITING_EXTERNAL: "it continues when its signal arrives (`perdure signal RUN NAME`) "
    "or its timer fires",
}


@dataclass(frozen=True, slots=True)
class RunView:
    """What ``status`` tells about a run: the run, its committed steps, its latest events, its
    thread's messages and its effects."""

    run: Run
    steps: list[StepRecord]
    events: list[Event]
    messages: list[Message]
    effects: list[EffectRecord]

    @property
    def completed_steps(self) -> list[str]:
        """Names of the committed steps, in order."""
        return [s.name for s in self.steps]


class Runtime(RuntimeEffects, RuntimeWaits, RuntimeVersions):
    """Starts and advances runs of registered workflows against one store.

    ``db`` is a database URL (default: ``PERDURE_DB`` or ``sqlite:///.perdure/perdure.db``) or
    an open :class:`~perdure.store.base.Store`. The schema is migrated on open unless
    ``migrate=False``. ``owner`` names this process in leases (default ``host:pid``);
    ``lease_seconds`` is how long a claim lasts without a heartbeat. ``clock`` is the only
    source of time (inject a :class:`~perdure.core.clock.FakeClock` in tests).
    """

    def __init__(
        self,
        db: str | Store | None = None,
        *,
        workflows: Iterable[Workflow[Any]] = (),
        clock: Clock | None = None,
        owner: str | None = None,
        lease_seconds: float = 30.0,
        migrate: bool = True,
        keyring: Keyring | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.store: Store = db if db is not None and not isinstance(db, str) else open_store(db)
        self.clock: Clock = clock or default_clock()
        self.owner = owner or process_owner()
        self.lease_seconds = lease_seconds
        self.workflows: dict[str, Workflow[Any]] = {}
        self.register(*workflows)
        self.heartbeat = Heartbeat(self.store, self.clock, self.owner, lease_seconds)
        self.shutdown = threading.Event()
        self.keyring = keyring if keyring is not None else Keyring.from_env()
        self.limits = limits or Limits()
        self.services = Services(
            self.store, self.clock, self.heartbeat, self.shutdown, self.keyring, self.limits
        )
        if migrate:
            self.store.migrate(self.clock.now())

    def register(self, *workflows: Workflow[Any]) -> None:
        """Make workflows runnable by this runtime (by name)."""
        for wf in workflows:
            self.workflows[wf.name] = wf

    # -- starting -------------------------------------------------------------------------------

    def start(
        self,
        workflow: Workflow[Any] | str,
        input: Any = None,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        thread: str | None = None,
        idempotency_key: str | None = None,
        durability: Durability | str = Durability.SYNC,
        release: dict[str, str] | None = None,
        messages: Sequence[Message] = (),
        budget: Budget | None = None,
    ) -> Run:
        """Create a PENDING run and return it; it runs when a worker (or
        :meth:`run_until_idle`) claims it.

        ``input`` is the initial state (an instance of the workflow's state type or a dict of
        its fields). ``thread`` groups runs of one conversation (default: a new thread named
        after the run). A repeated ``idempotency_key`` in the same tenant returns the first run
        and writes nothing. ``release`` takes the user's release ids (``code``, ``prompt``,
        ``model``, ``tools``), recorded with the workflow version, state schema and
        ``durability`` as the run's release manifest. ``messages`` are appended to the thread in
        the same transaction that creates the run. ``budget`` overrides the workflow's default
        :class:`~perdure.core.budget.Budget`.
        """
        tenant = tenant_of(tenant)
        wf = workflow if isinstance(workflow, Workflow) else self.workflow(workflow)
        self.register(wf)
        try:
            mode = Durability(durability)
        except ValueError:
            raise InvalidInputError(
                f"durability {durability!r} is unknown", fix="use sync, async or exit"
            ) from None
        extra = dict(release or {})
        unknown = sorted(set(extra) - {"code", "prompt", "model", "tools"})
        if unknown:
            raise InvalidInputError(
                f"release ids {unknown} are unknown", fix="use code, prompt, model and tools"
            )
        state = wf.codec.coerce({} if input is None else input)
        state_fields = wf.codec.to_fields(state)
        now = self.clock.now()
        run_id = new_id(now)
        manifest = Release(wf.version, wf.state_schema, mode, **extra)
        new = NewRun(
            run_id=run_id,
            tenant_id=tenant,
            thread_id=thread or run_id,
            workflow=wf.name,
            start_step=wf.start,
            release=manifest,
            state=seal_fields(self.keyring, tenant, run_id, self._checked(state_fields)),
            idempotency_key=idempotency_key,
            messages=tuple(messages),
            budget=limits.to_json() if (limits := budget or wf.budget) is not None else None,
        )
        run, _created = self.store.create_run(new, now)
        return run

    # -- advancing ------------------------------------------------------------------------------

    def run_until_idle(self, *, tenant: str | None = None, max_runs: int | None = None) -> int:
        """Claim and advance runnable runs inline until none is left; return how many ran.

        Each claimed run advances until it ends, waits, is quarantined or is lost. Runs leased
        by a live owner elsewhere are left alone.
        """
        self.recover_readable()
        count = 0
        while max_runs is None or count < max_runs:
            if self.shutdown.is_set() or self.advance_one(tenant=tenant) is None:
                break
            count += 1
        return count

    def advance_one(self, *, tenant: str | None = None) -> Stopped | None:
        """Claim one runnable run and advance it; None when nothing is claimable."""
        if not self.workflows:
            return None
        run = self.store.claim(
            self.owner, self._lease_end(), self.clock.now(), list(self.workflows), tenant_id=tenant
        )
        return None if run is None else self._execute(run)

    def resume(
        self,
        run_id: str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        at: str | None = None,
        patch: dict[str, Any] | None = None,
        add_budget: Budget | None = None,
        by: str | None = None,
        request_id: str | None = None,
    ) -> Run:
        """Claim this run and advance it inline until it stops; return the run afterwards.

        A finished run is returned unchanged. A run leased by a process of this host that no
        longer exists (it crashed) is taken over at once; a run leased by a live owner raises
        :class:`RunBusyError`. The run's workflow must be registered.

        A run in NEEDS_ATTENTION or QUARANTINED is continued by a person (``by``) from its
        checkpoint, never from the beginning: at ``at`` (a declared step; default: where it
        stopped), with ``patch`` (state fields to overwrite, validated against the state type
        and recorded in a ``resumed`` event) and ``add_budget`` (limits to add). The attempts of
        its planned effects start again from zero. A repeated ``request_id`` does not reopen or
        patch again: it only continues the run.
        """
        tenant = tenant_of(tenant)
        run = self.store.get_run(tenant, run_id)
        if run.status.terminal:
            return run
        wf = self.workflow(run.workflow)
        if request_id is not None and self.store.recall_request(tenant, request_id):
            pass
        elif run.status in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED):
            run = self._reopen(run, wf, at, patch, add_budget, by)
            if request_id is not None:
                result = {"run_id": run_id, "at": run.next_step}
                self.store.remember_request(tenant, request_id, "resume", result, self.clock.now())
        elif at is not None or patch is not None or add_budget is not None:
            raise InvalidInputError(
                f"run {run_id} is {run.status}; --at, --patch-state and budget changes are for "
                "runs that need a person (NEEDS_ATTENTION or QUARANTINED)",
                fix="resume it without them",
            )
        claimed = self.store.claim(
            self.owner,
            self._lease_end(),
            self.clock.now(),
            [run.workflow],
            tenant_id=tenant,
            run_id=run_id,
            dead_owner=run.owner if is_dead_local_owner(run.owner) else None,
        )
        if claimed is None:
            current = self.store.get_run(tenant, run_id)
            if current.status.terminal:
                return current
            if current.wake_at is not None and current.wake_at > self.clock.now():
                raise RunBusyError(
                    f"run {run_id} waits to retry {current.next_step} until "
                    f"{current.wake_at:%Y-%m-%d %H:%M:%S} UTC",
                    fix="let a worker pick it up then, or cancel it",
                )
            if current.status in WAIT_HINTS:
                raise RunBusyError(
                    f"run {run_id} is {current.status}", fix=WAIT_HINTS[current.status]
                )
            raise RunBusyError(
                f"run {run_id} is {current.status} and leased by {current.owner} "
                f"until {current.lease_until:%Y-%m-%d %H:%M:%S} UTC"
                if current.owner and current.lease_until
                else f"run {run_id} is {current.status}, which does not run now"
            )
        self._execute(claimed)
        return self.store.get_run(tenant, run_id)

    def _execute(self, run: Run) -> Stopped:
        wf = self.workflow(run.workflow)
        return Execution(self.services, run, wf).execute()

    def _lease_end(self) -> Any:
        return self.clock.now() + timedelta(seconds=self.lease_seconds)

    # -- inspecting -----------------------------------------------------------------------------

    def get(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> Run:
        """The run, or :class:`~perdure.core.errors.RunNotFoundError`."""
        tenant = tenant_of(tenant)
        return self.store.get_run(tenant, run_id)

    def status(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT, events: int = 20) -> RunView:
        """The run with its committed steps, last ``events`` events, thread messages and
        effects."""
        tenant = tenant_of(tenant)
        run = self.store.get_run(tenant, run_id)
        recent = self.store.events(tenant, run_id, limit=events, latest=True) if events else []
        return RunView(
            run=run,
            steps=self.store.steps(tenant, run_id),
            events=recent,
            messages=self.store.messages(tenant, run.thread_id),
            effects=self.store.list_effects(tenant, run_id=run_id),
        )

    def list(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        status: Sequence[RunStatus | str] = (),
        workflow: str | None = None,
        thread: str | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Runs of a tenant, newest first, filtered by status, workflow and thread."""
        tenant = tenant_of(tenant)
        try:
            statuses = [RunStatus(str(s).upper()) for s in status]
        except ValueError as exc:
            raise InvalidInputError(
                str(exc), fix=f"use one of {', '.join(s.value for s in RunStatus)}"
            ) from None
        return self.store.list_runs(
            tenant, statuses=statuses, workflow=workflow, thread_id=thread, limit=limit
        )

    # -- stopping -------------------------------------------------------------------------------

    def cancel(
        self,
        run_id: str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        reason: str = "",
        request_id: str | None = None,
    ) -> Run:
        """Ask a run to stop at its next step boundary; return the run afterwards.

        The run moves to CANCEL_REQUESTED. If no live worker holds it and it has nothing to
        compensate, it is finished here and ends CANCELLED; otherwise a worker (or
        :meth:`resume`) finishes it: at the next boundary the running step is not committed,
        confirmed effects with a compensator are compensated newest first, and the run ends
        CANCELLED. A finished run is returned unchanged. Cancelling is idempotent (a repeat
        changes nothing); ``request_id`` is recorded with the request.
        """
        tenant = tenant_of(tenant)
        for _ in range(10):
            run = self.store.get_run(tenant, run_id)
            if run.status.terminal:
                return run
            try:
                if run.status is not RunStatus.CANCEL_REQUESTED:
                    transitions.check(run.status, RunStatus.CANCEL_REQUESTED)
                    run = self.store.set_status(
                        tenant,
                        run_id,
                        expected_status=run.status,
                        expected_version=run.state_version,
                        status=RunStatus.CANCEL_REQUESTED,
                        fence=None,
                        now=self.clock.now(),
                        data={"reason": reason or "cancel requested", "request_id": request_id},
                    )
                leased = run.lease_until is not None and run.lease_until > self.clock.now()
                if leased or self._has_compensations(run):
                    return run
                return self.store.set_status(
                    tenant,
                    run_id,
                    expected_status=RunStatus.CANCEL_REQUESTED,
                    expected_version=run.state_version,
                    status=RunStatus.CANCELLED,
                    fence=None,
                    now=self.clock.now(),
                    data={"reason": reason or "cancelled", "step": run.next_step},
                    release_lease=True,
                )
            except (StaleStateError, RunClosedError):
                continue
        raise StaleStateError(f"run {run_id} kept changing while it was being cancelled")

    # -- the fleet ------------------------------------------------------------------------------

    def workers(self) -> builtins.list[WorkerInfo]:
        """Live workers of this database, and those that left in the last hour."""
        return self.store.workers(self.clock.now() - timedelta(hours=1))

    def stuck(self, *, threshold_seconds: float = 300.0, limit: int = 100) -> builtins.list[Run]:
        """The watchdog's view: RUNNING runs of every tenant with no progress (no commit, no
        claim) for ``threshold_seconds``. Once their lease expires any worker reclaims them."""
        before = self.clock.now() - timedelta(seconds=threshold_seconds)
        return self.store.stuck_runs(before, limit=limit)

    def close(self) -> None:
        """Stop the heartbeat thread and close the store."""
        self.heartbeat.stop()
        self.store.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
