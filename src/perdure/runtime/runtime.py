"""The Runtime: the Python API for starting, advancing, inspecting and cancelling runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from perdure.core.artifacts import ArtifactRef
from perdure.core.budget import Budget
from perdure.core.clock import Clock
from perdure.core.errors import (
    InvalidInputError,
)
from perdure.core.model import Durability, Message, Run, RunStatus, WorkerInfo
from perdure.core.seal import Keyring
from perdure.core.serde import Limits
from perdure.core.threads import ThreadPolicy
from perdure.core.workflow import Workflow
from perdure.runtime.admin.archive import Archive
from perdure.runtime.admin.control import StartOptions, cancel_run, new_run, not_claimable
from perdure.runtime.admin.inspector import Inspector
from perdure.runtime.admin.memory import MemoryAdmin
from perdure.runtime.admin.operator import Operator
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, acting, tenant_of
from perdure.runtime.admin.resolution import EffectAdmin
from perdure.runtime.admin.retention import Retainer
from perdure.runtime.admin.stream_reader import Streams
from perdure.runtime.admin.threads import Threads
from perdure.runtime.admin.timeline import Timeline
from perdure.runtime.admin.versions import Versions
from perdure.runtime.admin.waits import Waits
from perdure.runtime.aio import EventLoop
from perdure.runtime.artifacts import Artifacts
from perdure.runtime.clock import default_clock
from perdure.runtime.execution.execution import Execution
from perdure.runtime.execution.group_commit import effect_group, grouper
from perdure.runtime.execution.services import Services, Stopped
from perdure.runtime.execution.state_writes import APPEND_FROM
from perdure.runtime.fleet import Fleet
from perdure.runtime.grouping import GroupCommit
from perdure.runtime.leases import Heartbeat, is_dead_local_owner, process_owner
from perdure.runtime.settings import setting
from perdure.runtime.telemetry import Telemetry, current_trace
from perdure.store.base import Store
from perdure.store.objects import ObjectStore
from perdure.store.url import open_store

Part = TypeVar("Part")
P = ParamSpec("P")
R = TypeVar("R")


def _verb(
    method: Callable[Concatenate[Part, P], R], attribute: str
) -> Callable[Concatenate[Runtime, P], R]:
    """A method that calls ``method`` on the part held in ``attribute`` (same
    arguments, same result, same docstring): one definition of each verb."""

    def call(self: Runtime, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, attribute), *args, **kwargs)

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class Runtime:
    """Starts and advances runs of registered workflows against one store.

    ``db`` is a database URL (default: ``PERDURE_DB`` or ``sqlite:///.perdure/perdure.db``) or
    an open :class:`~perdure.store.base.Store`. The schema is migrated on open unless
    ``migrate=False``. ``owner`` names this process in leases (default ``host:pid``);
    ``lease_seconds`` is how long a claim lasts without a heartbeat. ``clock`` is the only
    source of time (inject a :class:`~perdure.core.clock.FakeClock` in tests).
    ``artifacts`` is where artifacts live (a directory, ``s3://bucket/prefix`` or an
    :class:`~perdure.store.objects.ObjectStore`; default ``PERDURE_ARTIFACTS``, else the
    directory ``artifacts`` beside the SQLite file); state fields and message contents larger
    than ``offload_bytes`` (default ``PERDURE_OFFLOAD_BYTES``, else 256 KiB) are kept there.
    ``group_commit`` says how the commits of runs executing at once share transactions
    (:class:`~perdure.runtime.grouping.GroupCommit`; ``False``: every commit alone).
    A state field of ``append_from`` bytes or more that a step only appends to is kept as a log
    from then on: each boundary stores the items appended, not the whole list
    (:mod:`perdure.core.logs`).
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
        artifacts: str | ObjectStore | None = None,
        offload_bytes: int | None = None,
        group_commit: GroupCommit | bool = True,
        append_from: int = APPEND_FROM,
    ) -> None:
        lease_seconds = setting("lease_seconds", lease_seconds, 1, 86_400)
        store = (
            db
            if db is not None and not isinstance(db, str)
            else open_store(db, lease_seconds=lease_seconds)
        )
        self.parts = parts = RuntimeParts(
            store,
            clock or default_clock(),
            owner or process_owner(),
            keyring if keyring is not None else Keyring.from_env(),
            limits or Limits(),
        )
        self.store: Store = store
        self.clock: Clock = parts.clock
        self.owner = parts.owner
        self.lease_seconds = lease_seconds
        self.workflows = parts.workflows
        self.register(*workflows)
        self.heartbeat = Heartbeat(store, parts.clock, parts.owner, lease_seconds)
        self.shutdown = threading.Event()
        self.loop = EventLoop()
        self.artifacts = Artifacts(
            store, parts.clock, location=artifacts, offload_bytes=offload_bytes
        )
        parts.artifacts = self.artifacts
        self.services = Services(
            store,
            parts.clock,
            self.heartbeat,
            self.shutdown,
            parts.keyring,
            parts.limits,
            self.loop,
            self.artifacts,
            effect_group(group_commit, store.plan_effects, parallel=store.parallel_writes),
            effect_group(group_commit, store.move_effects, parallel=store.parallel_writes),
            group=grouper(store, group_commit),
            append_from=int(setting("append_from", append_from, 2, 2**40, "bytes")),
        )
        self.telemetry: Telemetry = self.services.telemetry
        if self.services.group is not None:
            self.services.group.on_group = self.telemetry.grouped
        self.timeline = Timeline(parts, self.artifacts)
        self.inspector = Inspector(parts, self.artifacts)
        self.retainer = Retainer(parts, self.artifacts)
        self.archive = self.retainer.cold
        self.waits = Waits(parts)
        self.effect_admin = EffectAdmin(parts)
        self.versions = Versions(parts)
        self.threads = Threads(parts)
        self.memory_admin = MemoryAdmin(parts)
        self.streams = Streams(parts, self.shutdown)
        self.fleet = Fleet(store, parts.clock, parts.owner)
        self.operator = Operator(parts)
        if migrate:
            store.migrate(parts.clock.now())

    # -- verbs of the parts (waits, effects, versions, threads, streams, keys and counts,
    # -- history, retention, the archive, reads): each bound once, with its own docstring -----
    get = _verb(Inspector.get, "inspector")
    status = _verb(Inspector.status, "inspector")
    runs = _verb(Inspector.runs, "inspector")
    run_page = _verb(Inspector.run_page, "inspector")
    children = _verb(Inspector.children, "inspector")
    stuck = _verb(Inspector.stuck, "inspector")
    approvals = _verb(Waits.approvals, "waits")
    approve = _verb(Waits.approve, "waits")
    reject = _verb(Waits.reject, "waits")
    signal = _verb(Waits.signal, "waits")
    effects = _verb(EffectAdmin.effects, "effect_admin")
    resolve_effect = _verb(EffectAdmin.resolve_effect, "effect_admin")
    check = _verb(Versions.check, "versions")
    recover_readable = _verb(Versions.recover_readable, "versions")
    fail = _verb(Versions.fail, "versions")
    repair = _verb(Versions.repair, "versions")
    thread = _verb(Threads.thread, "threads")
    set_thread_policy = _verb(Threads.set_thread_policy, "threads")
    add_message = _verb(Threads.post, "threads")
    stream = _verb(Streams.stream, "streams")
    create_key = _verb(Operator.create_key, "operator")
    keys = _verb(Operator.keys, "operator")
    revoke_key = _verb(Operator.revoke_key, "operator")
    authenticate = _verb(Operator.authenticate, "operator")
    failed_check = _verb(Operator.failed_check, "operator")
    stream_token = _verb(Operator.stream_token, "operator")
    stream_access = _verb(Operator.stream_access, "operator")
    open_session = _verb(Operator.open_session, "operator")
    session_principal = _verb(Operator.session_principal, "operator")
    end_session = _verb(Operator.end_session, "operator")
    sessions = _verb(Operator.sessions, "operator")
    state = _verb(Operator.state, "operator")
    events = _verb(Operator.events, "operator")
    feed = _verb(Operator.feed, "operator")
    audit = _verb(Operator.audit, "operator")
    run_counts = _verb(Operator.run_counts, "operator")
    runs_by_period = _verb(Operator.runs_by_period, "operator")
    step_latencies = _verb(Operator.step_latencies, "operator")
    effect_counts = _verb(Operator.effect_counts, "operator")
    spend_counts = _verb(Operator.spend_counts, "operator")
    queue = _verb(Operator.queue, "operator")
    moved_since = _verb(Operator.moved_since, "operator")
    last_event_seq = _verb(Operator.last_event_seq, "operator")
    wait_for_events = _verb(Operator.wait_for_events, "operator")
    history = _verb(Timeline.history, "timeline")
    state_at = _verb(Timeline.state_at, "timeline")
    savepoint = _verb(Timeline.savepoint, "timeline")
    savepoints = _verb(Timeline.savepoints, "timeline")
    lineage = _verb(Timeline.lineage, "timeline")
    fork = _verb(Timeline.fork, "timeline")
    gc = _verb(Retainer.gc, "retainer")
    delete_thread = _verb(Retainer.delete_thread, "retainer")
    delete_run = _verb(Retainer.delete_run, "retainer")
    restore = _verb(Archive.restore, "archive")
    archived = _verb(Archive.archived, "archive")
    memory = _verb(MemoryAdmin.memory, "memory_admin")
    memory_item = _verb(MemoryAdmin.memory_item, "memory_admin")
    erase_memory = _verb(MemoryAdmin.erase_memory, "memory_admin")

    def register(self, *workflows: Workflow[Any]) -> None:
        """Make workflows runnable by this runtime (by name)."""
        for wf in workflows:
            self.workflows[wf.name] = wf

    def workflow(self, name: str) -> Workflow[Any]:
        """A registered workflow by name, or :class:`WorkflowNotFoundError`."""
        wf: Workflow[Any] = self.parts.workflow(name)
        return wf

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
        policy: ThreadPolicy | str | None = None,
        trace_context: dict[str, str] | None = None,
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

        One writer per thread: while a run of ``thread`` is unfinished the new run follows
        ``policy`` (default: the thread's own, see :meth:`set_thread_policy`, else
        ``enqueue``): ``enqueue`` waits PENDING behind it and runs after, in order, its
        ``messages`` joining the thread when it starts; ``interrupt`` cancels the unfinished
        runs at their next boundary (compensating as :meth:`cancel` does), then runs;
        ``reject`` raises :class:`~perdure.core.errors.ThreadBusyError` and writes nothing.

        ``trace_context`` (W3C ``traceparent`` and ``tracestate``; default: the caller's current
        OpenTelemetry span, if any) is kept with the run, and the span of whichever worker runs
        it continues that trace.
        """
        wf = workflow if isinstance(workflow, Workflow) else self.parts.workflow(workflow)
        self.register(wf)
        options = StartOptions(
            thread, idempotency_key, durability, release, tuple(messages), budget, policy
        )
        tenant_id = tenant_of(tenant)
        new = new_run(self.parts, wf, input, tenant_id, options)
        trace = trace_context if trace_context is not None else current_trace()
        if trace:
            new = replace(new, trace={str(k): str(v) for k, v in trace.items()})
        run, created = self.store.create_run(new, self.clock.now())
        if created and thread is not None:
            self.threads.finish_interrupts(tenant_id, run.thread_id)
        return run

    # -- advancing ------------------------------------------------------------------------------

    def run_until_idle(self, *, tenant: str | None = None, max_runs: int | None = None) -> int:
        """Claim and advance runnable runs inline until none is left; return how many ran.

        Each claimed run advances until it ends, waits, is quarantined or is lost. Runs leased
        by a live owner elsewhere are left alone. Runs a newer release quarantined as
        ``schema_too_new`` that this code reads are requeued first (once per registered
        workflow version: see :meth:`recover_readable`).
        """
        self.versions.recover_new()
        count = 0
        while max_runs is None or count < max_runs:
            if self.shutdown.is_set() or self.advance_one(tenant=tenant) is None:
                break
            count += 1
        return count

    def advance_one(self, *, tenant: str | None = None) -> Stopped | None:
        """Claim one runnable run and advance it; None when nothing is claimable."""
        run = self.claim_next(tenant=tenant)
        return None if run is None else self.advance_claimed(run)

    def claim_next(self, *, tenant: str | None = None) -> Run | None:
        """Claim one runnable run of the registered workflows (the lease is this runtime's),
        or None. Hand it to :meth:`advance_claimed`, in this thread or another."""
        if not self.workflows:
            return None
        return self.store.claim(
            self.owner,
            self._lease_end(),
            self.clock.now(),
            list(self.workflows),
            tenant_id=tenant,
            dead_owners=self.fleet.dead_owners(),
        )

    def advance_claimed(self, run: Run) -> Stopped:
        """Advance a run this runtime claimed until it stops; never raises for a run-level
        problem (see :class:`~perdure.runtime.execution.services.Stopped`)."""
        return self._execute(run)

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
        wf = self.parts.workflow(run.workflow)
        if request_id is not None and self.store.recall_request(tenant, request_id):
            pass
        elif run.status in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED):
            run = self.parts.reopen(run, wf, at, patch, add_budget, by)
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
            holder = self.store.thread(tenant, current.thread_id).active
            raise not_claimable(current, self.clock.now(), holder)
        self._execute(claimed)
        return self.store.get_run(tenant, run_id)

    def _execute(self, run: Run) -> Stopped:
        wf = self.parts.workflow(run.workflow)
        return Execution(self.services, run, wf).execute()

    def _lease_end(self) -> Any:
        return self.clock.now() + timedelta(seconds=self.lease_seconds)

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
        changes nothing); ``request_id`` is recorded with the request. The run's unsettled
        child runs (``ctx.spawn``) are cancelled the same way, and theirs in turn. When
        ``tenant`` is a principal, its subject and the credential it came through are recorded
        with the request (the audit trail).
        """
        by, via = acting(tenant)
        tenant = tenant_of(tenant)
        run = cancel_run(self.parts, tenant, run_id, reason, request_id, by=by, via=via)
        for child in self.store.child_runs(tenant, run_id):
            if not child.settled:
                self.cancel(child.run_id, tenant=tenant, reason=reason or "parent cancelled")
        return run

    def get_artifact(self, ref: ArtifactRef, *, tenant: Tenant = DEFAULT_TENANT) -> bytes:
        """The bytes of an artifact of ``tenant``, checked against the reference (raises
        :class:`~perdure.core.artifacts.ArtifactMissingError` or
        :class:`~perdure.core.artifacts.ArtifactCorruptError`)."""
        return self.artifacts.get(tenant_of(tenant), ArtifactRef.from_json(ref), "get_artifact")

    def workers(self) -> list[WorkerInfo]:
        """Workers of this database (``live`` or ``dead``), and those that left in the last
        hour (``stopped``); see :class:`~perdure.runtime.fleet.Fleet`."""
        return self.fleet.workers()

    def close(self) -> None:
        """Stop the heartbeat thread and the event loop, and close the store."""
        self.heartbeat.stop()
        self.loop.close()
        self.store.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
