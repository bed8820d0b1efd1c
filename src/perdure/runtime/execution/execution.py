"""Running one claimed run: the step loop between a claim and the next stop.

An execution holds the lease of one run. It decodes the checkpoint, then repeatedly runs the next
step, turns its outcome into a :class:`~perdure.store.base.Boundary` and hands it to the
:class:`~perdure.runtime.execution.committer.Committer`. It stops when the run ends, when it
must wait (a durable retry delay), when it needs a person (NEEDS_ATTENTION), when a graceful
shutdown is requested (after the current step's boundary is durable), or when it loses the run
(the fence moved on, a cancel arrived): then it stops touching the run at once. How it stops is
its :class:`~perdure.runtime.execution.stopping.Stops`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import (
    LeaseLostError,
    PerdureError,
    RunClosedError,
    StaleStateError,
    StoreError,
)
from perdure.core.fields import bind_lazy
from perdure.core.model import Run, RunStatus
from perdure.core.reading import Attention, Readable, inspect
from perdure.core.records import EventType, SignalWait, StopReason
from perdure.core.seal import StateSeal, seal_state
from perdure.core.serde import OversizeError, loads
from perdure.core.signals import Cancelled, Escalate, RetryLater
from perdure.core.versions import Quarantine
from perdure.core.workflow import (
    Fail,
    Workflow,
)
from perdure.runtime.crashpoints import crashpoint
from perdure.runtime.execution.boundaries import next_step_of, to_boundary
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.committer import Committer
from perdure.runtime.execution.compensation import Compensation
from perdure.runtime.execution.effect_runner import EffectRunner
from perdure.runtime.execution.host import ExecutionHost
from perdure.runtime.execution.services import Services, Stopped
from perdure.runtime.execution.spawner import Spawner, checked_wait
from perdure.runtime.execution.state_writes import StateWrite, StateWriter
from perdure.runtime.execution.stepcall import StepCaller
from perdure.runtime.execution.stopping import Stops
from perdure.runtime.leases import Lease
from perdure.runtime.step.context import Context
from perdure.store.base import Boundary
from perdure.store.objects.base import ObjectStoreError


class Execution:
    """Advances one claimed run until it stops; see the module docstring."""

    def __init__(self, services: Services, run: Run, workflow: Workflow[Any]) -> None:
        self.store = store = services.store
        self.clock = clock = services.clock
        self.heartbeat = services.heartbeat
        self.shutdown = services.shutdown
        self.keyring = services.keyring
        self.limits = services.limits
        self.claim = Claim(run)
        self.workflow = workflow
        self.telemetry = telemetry = services.telemetry
        self.committer = Committer(
            store,
            self.claim,
            clock.now,
            on_commit=lambda n, seconds: telemetry.committed(self.claim.run, n, seconds),
            group=services.group,
            strategy=workflow.strategy,
        )
        self.bridge = services.loop.bridge()
        self.effects = EffectRunner(
            store,
            clock,
            self.claim,
            workflow,
            self.committer,
            services.loop,
            services.effect_plans,
            services.effect_moves,
            telemetry,
        )
        self.compensation = compensation = Compensation(self.effects)
        self.stops = Stops(
            store, clock, services.heartbeat, self.claim, self.committer, compensation, workflow
        )
        """How this execution stops (each stop under its fence)."""
        self.artifacts = services.artifacts
        spawner = Spawner(store, clock, services.keyring, services.limits)
        self.host = ExecutionHost(
            store, clock, self.claim, self.effects, self.bridge, services.artifacts, spawner
        )
        self.writes = StateWriter(
            services.artifacts,
            services.limits,
            append_from=None if services.keyring is not None else services.append_from,
            lazy=workflow.codec.lazy,
        )
        """Decides what each boundary writes of the state (whole fields, log tails)."""
        self.caller = StepCaller(workflow, clock, self.claim, self.host, self.bridge)
        self.seq = run.steps_done
        self.compacted: frozenset[str] = frozenset()
        """The logs the last step's boundary compacts (for the crash points around it)."""
        self.step_attempts = run.step_attempts
        self.interrupted = run.interrupted_attempts
        """Runs of the step in progress a crash cut short (takeovers); 0 after it commits."""
        self.record: StateSeal | None = None

    @property
    def run(self) -> Run:
        """The claimed run as this execution last knows it."""
        return self.claim.run

    def execute(self) -> Stopped:
        """Run steps until the run stops; never raises for a run-level problem. Reported to
        the runtime's telemetry (a span around it, the claim, a lost lease, the stop)."""
        run = self.run
        takeover = run.previous_owner is not None and run.previous_owner != run.owner
        with self.telemetry.run(run, self._trace(), takeover):
            stopped = self._execute()
        if stopped.reason is StopReason.LOST:
            self.telemetry.lease_lost(run)
        self.telemetry.stopped(run, str(stopped.reason))
        return stopped

    def _trace(self) -> dict[str, str] | None:
        """The trace context the run was started with (kept in its ``created`` event)."""
        if not self.telemetry.tracing:
            return None
        first = self.store.events(self.run.tenant_id, self.run.run_id, limit=1)
        data = first[0].data if first else None
        trace = data.get("trace") if isinstance(data, dict) else None
        if not isinstance(trace, dict):
            return None
        return {str(k): str(v) for k, v in trace.items()}

    def _execute(self) -> Stopped:
        run = self.run
        lease = self.heartbeat.hold(run.tenant_id, run.run_id, run.fence, run.lease_until)
        self.effects.holds = lambda: self.heartbeat.holds(lease)
        try:
            if run.status is RunStatus.CANCEL_REQUESTED:
                if not self.stops.in_doubt():
                    return self.stops.finish_cancel(self.seq)
                self.effects.settling = True  # its step runs once more, to reconcile them
            return self._loop(lease)
        except (LeaseLostError, RunClosedError):
            self.committer.discard()
            return Stopped(StopReason.LOST, run.run_id)
        except StaleStateError:
            self.committer.discard()
            return self.stops.after_stale()
        except ObjectStoreError as exc:
            # The artifact store failed, the database did not: wait and try again, a bounded
            # number of times, then hand the run to a person (never a silent retry loop).
            try:
                self.committer.flush()
                return self.stops.object_store_failed(exc, self.step_attempts, self.seq)
            except StoreError:
                self.committer.discard()
                return Stopped(StopReason.STORE_ERROR, run.run_id)
        except StoreError:
            # The database failed under us: keep nothing in memory, let the lease expire and let
            # whichever worker claims the run next continue from its last durable boundary.
            self.committer.discard()
            return Stopped(StopReason.STORE_ERROR, run.run_id)
        finally:
            self.heartbeat.drop(lease)

    def _open(self) -> tuple[Any, dict[str, bytes]] | Stopped:
        """Read the claimed run's checkpoint (and rewrite it for this code when it was written
        by an older one): its state and fields, or how the execution stops when it cannot."""
        wf = self.workflow
        tenant = self.run.tenant_id
        stored = self.store.load_state(tenant, self.run.run_id)
        found = inspect(
            self.run,
            stored,
            wf,
            keyring=self.keyring,
            limits=self.limits,
            resolve=lambda f: self.artifacts.resolve_fields(tenant, f, wf.codec.lazy),
        )
        if self.effects.settling and (
            not isinstance(found, Readable)
            or found.upgrade.changes
            or wf.steps.get(self.run.next_step or "") is None
        ):
            return self.stops.finish_cancel(self.seq)  # no step to settle with: a person looks
        if isinstance(found, Attention):
            esc = Escalate("needs_attention", found.reason, found.evidence, found.message)
            return self.stops.needs_attention(esc, self.run.next_step or "", self.seq)
        if isinstance(found, Quarantine):
            return self.stops.quarantine(found.reason, found.message, found.evidence)
        self.record = found.record
        self.writes.loaded(found.stored or {}, stored.logs, stored.tail_bytes)
        if found.upgrade.changes:
            self._upgrade(found)
        self.host.replacements = found.upgrade.replacements
        return found.state, dict(found.fields)

    def _loop(self, lease: Lease) -> Stopped:
        opened = self._open()
        if isinstance(opened, Stopped):
            return opened
        state, fields = opened
        run, wf = self.run, self.workflow
        if self.effects.settling:
            return self._settle(str(run.next_step), state)
        step_name = run.next_step
        waiting = run.waiting
        if isinstance(waiting, SignalWait):
            # claimed because the wait for a signal timed out
            step_name = waiting.on_timeout
            if step_name is None:
                evidence = {"signal": waiting.name, "timeout": waiting.timeout}
                esc = Escalate("fail", "signal_timeout", evidence)
                return self.stops.escalate(esc, "wait", self.seq)
        ended: RunStatus | None = None  # the status the last boundary left the run in
        while step_name is not None:
            if step_name not in wf.steps:
                self.committer.flush()
                return self.stops.quarantine(
                    "unknown_step", f"step {step_name!r} is not declared by {wf.name}"
                )
            if lease.lost.is_set():
                raise LeaseLostError(f"run {run.run_id}: lease lost")
            if self.shutdown.is_set():
                self.committer.flush()
                return self.stops.release()
            current = step_name
            try:
                attempt = self.step_attempts + self.interrupted + 1  # across crashes too
                with self.telemetry.step(run, current, attempt) as report:
                    self.host.check_budget()
                    boundary, state, step_name, changed = self._step(current, state, fields)
                    report.outcome = str(boundary.outcome)
                    report.failure = boundary.error.message if boundary.error else None
            except RetryLater as wait:
                self.telemetry.retried(run, current)
                return self.stops.defer(wait, self.step_attempts)
            except Escalate as esc:
                return self.stops.escalate(esc, current, self.seq)
            except Cancelled:
                self.committer.flush()
                return self.stops.after_stale()
            fields.update(changed)
            crashpoint("before_commit", boundary.step)
            for name in self.compacted:
                crashpoint("before_compact", name)
            durable = self.committer.submit(boundary)
            self.host.memory_submitted(durable=durable)
            if durable:
                self.host.reread_thread()  # the boundary may have let waiting messages in
            self.seq += 1
            self.step_attempts = self.interrupted = 0
            ended = boundary.status
            if boundary.status is not RunStatus.RUNNING:
                self.committer.flush()
            crashpoint("after_commit", boundary.step)
            for name in self.compacted:
                crashpoint("after_compact", name)
            self.compacted = frozenset()
            if boundary.status in (RunStatus.WAITING_APPROVAL, RunStatus.WAITING_EXTERNAL):
                return Stopped(StopReason.WAITING, run.run_id)
        return Stopped(StopReason.ENDED, run.run_id, ended)

    def _settle(self, name: str, state: Any) -> Stopped:
        """A cancel found effects in doubt (a call cut by a crash): run the step they belong to
        once more, so its own code reconciles them (``reconcile=``), then finish the cancel.
        Recorded outcomes are replayed; no call is made (the first effect without an outcome
        ends the pass); nothing of the step is committed. What is still in doubt afterwards
        goes to a person (see :meth:`Stops.finish_cancel`)."""
        wf = self.workflow
        self.effects.begin_step(name, self.seq + 1)
        self.host.begin_step(name, self.seq + 1)
        ctx = Context(self.run, name, self.host)
        if wf.codec.lazy:
            missed, read_cache = self._cache_missed(name), self._cache_reader(name)
            bind_lazy(state, wf.codec.lazy, self._read_lazy, missed, read_cache)
        try:
            with contextlib.suppress(Cancelled, Escalate, RetryLater):
                self.caller.call(wf.steps[name], ctx, state, self.step_attempts)
        finally:
            self.effects.settling = False  # the compensations that follow make their calls
        return self.stops.finish_cancel(self.seq)

    def _read_lazy(self, ref: ArtifactRef) -> Any:
        return loads(self.host.get_artifact(ref))

    def _cache_reader(self, step: str) -> Callable[[ArtifactRef], Any]:
        """Reads a cache field's artifact; a missing or corrupted one raises its error, which
        the field answers with a rebuild (a plain lazy field's goes to a person instead)."""
        tenant, where = self.run.tenant_id, f"step {step}"
        return lambda ref: loads(self.artifacts.get(tenant, ref, where))

    def _cache_missed(self, step: str) -> Callable[[str, str], None]:
        """What records that a cache field was rebuilt while ``step`` ran: a ``cache_rebuilt``
        event of the run, written at once (a miss is news, never an error of the run)."""
        run = self.run

        def missed(field: str, reason: str) -> None:
            data = {"field": field, "reason": reason, "step": step, "step_seq": self.seq + 1}
            self.store.record_event(
                run.tenant_id, run.run_id, str(EventType.CACHE_REBUILT), data, self.clock.now()
            )

        return missed

    def _upgrade(self, found: Readable) -> None:
        """Rewrite the claimed run for this code (migrated state, renamed step)."""
        run, wf, up = self.run, self.workflow, found.upgrade
        writer = self.host.writer()
        stored, uploads = self.artifacts.offload_fields(writer, found.fields, wf.codec.lazy)
        self.writes.loaded(stored, {})  # the upgrade wrote every field whole
        sealed = seal_state(
            self.keyring,
            run.tenant_id,
            run.run_id,
            stored,
            previous=self.record,
            steps=self.seq,
            drop=found.drop,
        )
        upgraded = self.store.upgrade_run(
            run.tenant_id,
            run.run_id,
            fence=run.fence,
            expected_version=self.claim.version,
            fields=sealed.fields,
            state_seal=sealed.seal,
            drop=found.drop,
            next_step=up.next_step,
            workflow_version=wf.version,
            state_schema=wf.state_schema,
            artifacts=uploads,
            now=self.clock.now(),
            data={
                "from_version": run.workflow_version,
                "to_version": wf.version,
                "from_schema": up.from_schema,
                "to_schema": up.to_schema,
                "renamed_step": {up.renamed_from: up.next_step} if up.renamed_from else None,
                "dropped_fields": list(found.drop),
            },
        )
        self.record = sealed.record
        self.claim.adopt(upgraded)

    def _step(
        self, name: str, state: Any, fields: dict[str, bytes]
    ) -> tuple[Boundary, Any, str | None, dict[str, bytes]]:
        """Run one step and describe its boundary; returns (boundary, new state, next step,
        the fields it changed). Values over the offload threshold are uploaded now, before
        the boundary is handed to the committer, and stored as pointers."""
        run, wf = self.run, self.workflow
        self.effects.begin_step(name, self.seq + 1)
        self.host.begin_step(name, self.seq + 1)
        ctx = Context(run, name, self.host)
        if wf.codec.lazy:
            missed, read_cache = self._cache_missed(name), self._cache_reader(name)
            bind_lazy(state, wf.codec.lazy, self._read_lazy, missed, read_cache)
        started = self.clock.now()
        outcome = self.caller.call(wf.steps[name], ctx, state, self.step_attempts)
        outcome = checked_wait(self.store, run, outcome)
        self.host.flush_streams()  # what the step streamed is stored before its boundary
        writer = self.host.writer()
        write = StateWrite()
        try:
            encoded = wf.codec.to_fields(outcome.state if outcome.state is not None else state)
            reseal = self.keyring is not None and self.record is None  # sealed before records
            write = self.writes.write(writer, encoded, fields, every=reseal)
            self.compacted = write.compacted
        except StoreError:
            raise  # the artifact store failed: not the state's fault; a later claim retries
        except OversizeError as exc:  # a person decides: nothing authorised is thrown away
            evidence = self.limits.to_json()
            raise Escalate("needs_attention", "state_too_large", evidence, exc.message) from None
        except PerdureError as exc:
            outcome, encoded = Fail("state_not_storable", exc.message), fields
        stored = write.stored
        if outcome.state is not None:
            state = outcome.state
        unresolved = self.compensation.all() if isinstance(outcome, Fail) else []
        sealed = seal_state(
            self.keyring,
            run.tenant_id,
            run.run_id,
            stored,
            previous=self.record,
            steps=self.seq + 1,
        )
        self.host.step_done(ctx.new_messages)
        messages, message_refs = self.artifacts.offload_messages(writer, ctx.new_messages)
        finished = self.clock.now()  # read once: the step's end and its boundary's "now"
        common: dict[str, Any] = {
            "step": name,
            "started_at": started,
            "finished_at": finished,
            "state": sealed.fields,
            "state_seal": sealed.seal,
            "messages": messages,
            "budget": self.host.spend(name, encoded),
            "workflow_version": wf.version,
            "state_schema": wf.state_schema,
            "artifacts": (*self.host.uploads, *write.offloaded, *message_refs),
            "savepoints": tuple(self.host.savepoints),
            "logs": write.logs,
            "appends": write.appends,
            "memory": self.host.step_memory(),
        }
        boundary = to_boundary(outcome, common, finished)
        if unresolved and boundary.error is not None:
            error = replace(boundary.error, unresolved_compensations=tuple(unresolved))
            boundary = replace(boundary, error=error)
        self.record = sealed.record
        return boundary, state, next_step_of(outcome), write.changed
