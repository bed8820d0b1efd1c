"""The Runtime: the Python API for starting, advancing, inspecting and cancelling runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from perdure.core.budget import Budget
from perdure.core.clock import Clock
from perdure.core.errors import (
    InvalidInputError,
)
from perdure.core.model import Durability, Message, Run, RunStatus
from perdure.core.seal import Keyring
from perdure.core.serde import Limits
from perdure.core.threads import ThreadPolicy
from perdure.core.workflow import Workflow
from perdure.runtime.admin.activity import Activity
from perdure.runtime.admin.archive import Archive
from perdure.runtime.admin.control import StartOptions, cancel_run, new_run, not_claimable
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.admin.inspector import Inspector
from perdure.runtime.admin.keys import Keys
from perdure.runtime.admin.memory import MemoryAdmin
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, acting, tenant_of
from perdure.runtime.admin.resolution import EffectAdmin
from perdure.runtime.admin.retention import Retainer
from perdure.runtime.admin.threads import Threads
from perdure.runtime.admin.timeline import Timeline
from perdure.runtime.admin.verbs import verb, warn_renamed
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
from perdure.runtime.renamed import KEPT, RENAMED
from perdure.runtime.settings import setting
from perdure.runtime.telemetry import current_trace
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
    return verb(call)


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

    The Runtime itself holds the kernel: starting runs, reading them (:meth:`get`,
    :meth:`status`, :meth:`runs`, :meth:`run_page`, :meth:`children`, :meth:`state`), the
    decisions a run waits for (:meth:`approvals`, :meth:`approve`, :meth:`reject`,
    :meth:`signal`), :meth:`cancel`, :meth:`resume`, advancing (:meth:`run_until_idle`,
    :meth:`claim_next`, :meth:`advance_claimed`) and :meth:`close`. Everything else is a part,
    named by its noun: :attr:`memory`, :attr:`keys`, :attr:`history`, :attr:`effects`,
    :attr:`threads`, :attr:`retention`, :attr:`archive`, :attr:`activity`, :attr:`versions`
    (``rt.memory.erase(...)``, ``rt.keys.create(...)``, ``rt.history.fork(...)``). ``store``,
    ``clock``, ``parts`` (what every part shares) and ``services`` (what every execution
    shares: heartbeat, shutdown, event loop, artifacts, telemetry) are the wiring.
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
        self._lease_seconds = lease_seconds
        self.register(*workflows)
        heartbeat = Heartbeat(store, parts.clock, parts.owner, lease_seconds)
        artifact_service = Artifacts(
            store, parts.clock, location=artifacts, offload_bytes=offload_bytes
        )
        parts.artifacts = artifact_service
        self.services = Services(
            store,
            parts.clock,
            heartbeat,
            threading.Event(),
            parts.keyring,
            parts.limits,
            EventLoop(),
            artifact_service,
            effect_group(group_commit, store.plan_effects, parallel=store.parallel_writes),
            effect_group(group_commit, store.move_effects, parallel=store.parallel_writes),
            group=grouper(store, group_commit),
            append_from=int(setting("append_from", append_from, 2, 2**40, "bytes")),
        )
        if self.services.group is not None:
            self.services.group.on_group = self.services.telemetry.grouped
        self._fleet = Fleet(store, parts.clock, parts.owner)
        self._inspector = Inspector(parts, artifact_service)
        self._waits = Waits(parts)
        self.memory = MemoryAdmin(parts)
        """Long-term memory from outside a run: ``search``, ``get``, ``erase``."""
        self.keys = Keys(parts)
        """API keys: ``create``, ``list``, ``revoke``, ``authenticate``."""
        self.history = Timeline(parts, artifact_service)
        """A run's past: ``entries``, ``state_at``, ``savepoint(s)``, ``lineage``, ``fork``,
        ``artifact``."""
        self.effects = EffectAdmin(parts)
        """Effects a person lists and resolves: ``list``, ``resolve``."""
        self.threads = Threads(parts, self.services.shutdown)
        """Threads: ``get``, ``set_policy``, ``post`` (a message), ``stream`` (a message's
        durable stream)."""
        self.retention = Retainer(parts, artifact_service)
        """What is kept and for how long: ``gc``, ``delete_thread``, ``delete_run``."""
        self.archive: Archive = self.retention.cold
        """Runs ``gc(archive=True)`` archived: ``list``, ``restore``."""
        self.activity = Activity(parts, self._fleet.workers)
        """What is happening across runs: feeds, audit, counts, queue, stuck runs, workers."""
        self.versions = Versions(parts)
        """Runs against code versions: ``check``, ``recover_readable``, ``fail``, ``repair``."""
        if migrate:
            store.migrate(parts.clock.now())

    # -- the kernel's reads and decisions, bound once from their parts (same docstrings) -------
    get = _verb(Inspector.get, "_inspector")
    status = _verb(Inspector.status, "_inspector")
    runs = _verb(Inspector.runs, "_inspector")
    run_page = _verb(Inspector.run_page, "_inspector")
    children = _verb(Inspector.children, "_inspector")
    state = _verb(Inspector.state, "_inspector")
    approvals = _verb(Waits.approvals, "_waits")
    approve = _verb(Waits.approve, "_waits")
    reject = _verb(Waits.reject, "_waits")
    signal = _verb(Waits.signal, "_waits")

    if not TYPE_CHECKING:  # the deprecated names: resolved on use, typed as gone

        def __getattr__(self, name: str) -> Any:
            new = RENAMED.get(name)
            if new is None or name.startswith("_"):
                raise AttributeError(f"'Runtime' object has no attribute {name!r}")
            warn_renamed(f"Runtime.{name}", f"Runtime.{new}")
            path = KEPT.get(name, new)
            first, _, rest = path.partition(".")
            found = Credentials(self.parts) if first == "credentials" else getattr(self, first)
            for step in rest.split(".") if rest else ():
                found = getattr(found, step)
            return found

    @verb
    def register(self, *workflows: Workflow[Any]) -> None:
        """Make workflows runnable by this runtime (by name; ``rt.parts.workflows`` holds
        them)."""
        for wf in workflows:
            self.parts.workflows[wf.name] = wf

    @verb
    def workflow(self, name: str) -> Workflow[Any]:
        """A registered workflow by name, or :class:`WorkflowNotFoundError`."""
        wf: Workflow[Any] = self.parts.workflow(name)
        return wf

    # -- starting -------------------------------------------------------------------------------

    @verb
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
        ``policy`` (default: the thread's own, see ``rt.threads.set_policy``, else
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

    @verb
    def run_until_idle(self, *, tenant: str | None = None, max_runs: int | None = None) -> int:
        """Claim and advance runnable runs inline until none is left; return how many ran.

        Each claimed run advances until it ends, waits, is quarantined or is lost. Runs leased
        by a live owner elsewhere are left alone. Runs a newer release quarantined as
        ``schema_too_new`` that this code reads are requeued first (once per registered
        workflow version: see ``rt.versions.recover_readable``).
        """
        self.versions.recover_new()
        count = 0
        while max_runs is None or count < max_runs:
            if self.services.shutdown.is_set() or self._advance_one(tenant=tenant) is None:
                break
            count += 1
        return count

    def _advance_one(self, *, tenant: str | None = None) -> Stopped | None:
        """Claim one runnable run and advance it; None when nothing is claimable."""
        run = self.claim_next(tenant=tenant)
        return None if run is None else self.advance_claimed(run)

    @verb
    def claim_next(self, *, tenant: str | None = None) -> Run | None:
        """Claim one runnable run of the registered workflows (the lease is this runtime's),
        or None. Hand it to :meth:`advance_claimed`, in this thread or another."""
        if not self.parts.workflows:
            return None
        return self.store.claim(
            self.parts.owner,
            self._lease_end(),
            self.clock.now(),
            list(self.parts.workflows),
            tenant_id=tenant,
            dead_owners=self._fleet.dead_owners(),
        )

    @verb
    def advance_claimed(self, run: Run) -> Stopped:
        """Advance a run this runtime claimed until it stops; never raises for a run-level
        problem (see :class:`~perdure.runtime.execution.services.Stopped`)."""
        return self._execute(run)

    @verb
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
            self.parts.owner,
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
        return self.clock.now() + timedelta(seconds=self._lease_seconds)

    # -- stopping -------------------------------------------------------------------------------

    @verb
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

    def close(self) -> None:
        """Stop the heartbeat thread and the event loop, and close the store."""
        self.services.heartbeat.stop()
        self.services.loop.close()
        self.store.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
