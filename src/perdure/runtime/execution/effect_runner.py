"""Running one effect inside a step: intent before the call, outcome after, and the gate on
every re-execution. What a failed or unknown outcome leads to (reconcile, retries, a person)
is the runner's :class:`~perdure.runtime.execution.effect_outcomes.EffectOutcomes`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, cast

from perdure.core.chat import MODEL_TARGET
from perdure.core.clock import Clock
from perdure.core.effect_calls import Compensate, Execute, Offloaded, Reconcile
from perdure.core.effects import (
    EffectConflictError,
    EffectMove,
    EffectPlan,
    EffectRecord,
    EffectResult,
    NewEffect,
    UnknownOutcomeError,
    effect_key,
    request_hash,
    storable,
)
from perdure.core.errors import DefinitionError, InvalidInputError, PerdureError
from perdure.core.model import JSON
from perdure.core.recovery import Action, Checkpoint, EffectEvidence, decide
from perdure.core.retry import RetryPolicy
from perdure.core.signals import Cancelled
from perdure.core.workflow import Workflow
from perdure.runtime.aio import EventLoop
from perdure.runtime.crashpoints import crashpoint, fault
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.committer import Committer
from perdure.runtime.execution.effect_outcomes import EffectOutcomes, S
from perdure.runtime.execution.group_commit import Group
from perdure.runtime.execution.outages import ride_out
from perdure.runtime.telemetry import Telemetry
from perdure.store.base import Store


class EffectRunner:
    """Drives the effects of one execution of one run (one fence)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        claim: Claim,
        workflow: Workflow[Any],
        committer: Committer,
        loop: EventLoop,
        plans: Group[EffectPlan, EffectRecord],
        moves: Group[EffectMove, EffectRecord],
        telemetry: Telemetry | None = None,
    ) -> None:
        self.telemetry = telemetry or Telemetry()
        self.store = store
        self.plans = plans
        """Where intents are recorded, with other executions' when they coincide."""
        self.outcomes = EffectOutcomes(store, clock, claim, loop, moves)
        """What each call's outcome does to its record."""
        self.clock = clock
        self.loop = loop
        self.claim = claim
        self.workflow = workflow
        self.committer = committer
        self.step = ""
        self.step_seq = 0
        self._first_seq: int | None = None
        """The first step occurrence this execution ran: the only one an earlier execution
        may have recorded effects of (see :meth:`_recorded`)."""
        self._names: set[str] = set()
        self._new: set[str] = set()
        """Keys of the effects the running step occurrence declared (:meth:`new_effect`)."""
        self.settling = False
        """True while a cancelled run's step runs once more only to settle its effects: a
        recorded outcome is replayed, an effect in doubt reconciled, and no call is made."""
        self.offload: Callable[[Execute, Callable[[], Any]], Future[Any]] | None = None
        """Set while a step's parallel branches run (see :meth:`offloading`)."""
        self.holds: Callable[[], bool] = lambda: True
        """Whether this execution's lease is still surely its own (the execution sets it:
        :meth:`~perdure.runtime.leases.Heartbeat.holds`); asked just before every
        call."""

    def begin_step(self, step: str, seq: int) -> None:
        """Effects from now on belong to occurrence ``seq`` of ``step``."""
        self.step, self.step_seq, self._names, self._new = step, seq, set(), set()
        if self._first_seq is None:
            self._first_seq = seq

    def new_effect(
        self, name: str, target: str, operation: str, request: JSON, compensator: str | None
    ) -> NewEffect:
        """The intent of effect ``name`` of the running step occurrence (its key is stable
        across re-executions); a name used twice in one occurrence is refused."""
        if name in self._names:
            raise DefinitionError(f"effect {name!r} is used twice in one step occurrence")
        self._names.add(name)
        run = self.claim.run
        key = effect_key(run.tenant_id, run.workflow, run.run_id, self.step_seq, self.step, name)
        self._new.add(key)
        return NewEffect(
            key=key,
            step=self.step,
            step_seq=self.step_seq,
            name=name,
            target=target,
            operation=operation,
            request_hash=request_hash(request),
            request=request,
            compensator=compensator,
        )

    def drive(
        self,
        new: NewEffect,
        execute: Execute,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
        before_call: Callable[[], None] | None = None,
        deadline: float | None = None,
    ) -> JSON:
        """Take an effect from whatever its record says to a recorded outcome."""
        steps = self.drive_steps(new, execute, reconcile, retry, before_call, deadline)
        while True:
            try:
                next(steps)
            except StopIteration as end:
                return cast(JSON, end.value)

    def drive_steps(
        self,
        new: NewEffect,
        execute: Execute,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
        before_call: Callable[[], None] | None = None,
        deadline: float | None = None,
    ) -> Generator[Any, None, JSON]:
        """:meth:`drive` as a generator: when ``execute`` returns a generator (a streamed model
        call), its items are passed on to the caller as they come, and its return value is the
        effect's outcome. ``before_call`` runs just before a call is made (not on a replay): it
        may raise a signal (an exhausted budget) that leaves the record as it was."""
        model = new.target == MODEL_TARGET
        # the boundaries that led here are durable before a side effect (and, by strategy,
        # before a model call)
        self.committer.before_effect(self.step, model=model)
        if not model:
            self.committer.side_effect_made()
        record = self._recorded(new, model)
        if record is not None and record.request_hash != new.request_hash:
            raise EffectConflictError(
                f"effect {new.key} was recorded with a different request "
                f"({record.request_hash[:12]} != {new.request_hash[:12]})"
            )
        max_attempts = retry.max_attempts if retry is not None else 1
        reconciled = False
        while True:
            evidence = EffectEvidence(
                new.key,
                None if record is None else str(record.status),
                0 if record is None else record.attempts,
                max_attempts,
                reconcile is not None and not reconciled,
            )
            action = decide(self._checkpoint(), evidence)
            if action is Action.ADVANCE and record is not None:
                return record.replayed()
            if action is Action.RECONCILE and record is not None and reconcile is not None:
                until = self.outcomes.in_flight(record)
                record = self.outcomes.reconcile(
                    record, reconcile, recovering=True, in_flight_until=until
                )
                reconciled = True
                continue
            if action is Action.EXECUTE:
                if self.settling:
                    raise Cancelled(f"effect {new.key} is not sent: its run is being cancelled")
                if before_call is not None:
                    before_call()
                return (yield from self._execute(new, record, execute, reconcile, retry, deadline))
            raise self.outcomes.stopped(new.key, record, retry)

    # -- steps of the protocol -----------------------------------------------------------------

    def _execute(
        self,
        new: NewEffect,
        record: EffectRecord | None,
        execute: Execute,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
        deadline: float | None,
    ) -> Generator[Any, None, JSON]:
        where = (new.name, new.step, new.step_seq)
        crashpoint("before_intent", *where)
        folded = False
        if record is None:
            # with a reconciler, the intent is recorded as the first attempt under way: one
            # write before the call instead of two (a stop after it is reconciled, as one
            # during the call is); without one, "planned" keeps telling that nothing was sent
            folded = reconcile is not None
            run = self.claim.run
            now = self.clock.now()
            plan = EffectPlan(
                run.tenant_id,
                run.run_id,
                run.fence,
                new,
                executing=folded,
                deadline=_until(now, deadline) if folded else None,
            )
            record = ride_out(  # maybe with other runs' intents; through an outage
                lambda: f"the intent of effect {new.key}",
                lambda: self.plans.submit(plan, now),
                lambda: self.outcomes.landed(plan),
            )
            status = S.EXECUTING if folded else S.PLANNED
            if record.status is not status or record.attempts != int(folded):  # never, by _recorded
                raise PerdureError(
                    f"effect {new.key} was found recorded ({record.status}) in a step "
                    "occurrence no execution ran before; nothing was called"
                )
        crashpoint("after_intent", *where)
        if not folded:
            until = _until(self.clock.now(), deadline)
            record = self.outcomes.move(record, S.EXECUTING, attempts_delta=1, deadline=until)
        if not self.holds() or _passed(record.deadline, self.clock.now()):
            # paused or cut off since the intent: another worker may have taken the run over
            # and be reconciling this attempt, so it is not made (the fence cannot stop a call)
            raise self.outcomes.not_sent(record)
        try:
            run = self.claim.run
            with self.telemetry.effect(
                run, new.step, new.key, new.name, new.target, new.operation
            ) as report:
                if fault("timeout", *where, qualified=True):
                    raise TimeoutError("fault drill: the call timed out before it was sent")
                out = yield from self._call(execute, new, deadline)
                out = (yield from out) if isinstance(out, Generator) else self.outcomes.awaited(out)
                if fault("unknown", *where):
                    raise UnknownOutcomeError("unknown_status", "fault drill: the reply was lost")
                report.result = out
        except Exception as exc:
            crashpoint("after_call", *where)
            return self.outcomes.failed(record, exc, reconcile, retry)
        crashpoint("after_call", *where)
        result, receipt = (
            (out.result, out.receipt) if isinstance(out, EffectResult) else (out, None)
        )
        kept = storable(result)
        self.outcomes.move(record, S.CONFIRMED, result=kept, receipt=receipt)
        crashpoint("after_outcome", *where)
        if kept is not result:
            raise InvalidInputError(
                f"effect {new.key} returned a value that is not JSON; it was recorded as text",
                fix="return JSON-compatible data (or EffectResult) from execute",
            )
        return result

    def _call(
        self, execute: Execute, new: NewEffect, deadline: float | None
    ) -> Generator[Any, None, Any]:
        """Call ``execute``; while :meth:`offloading` the call is handed to :attr:`offload` (a
        thread, or a task on the loop) and an :class:`Offloaded` is yielded until it is done,
        so the store work of every branch stays in this thread while the calls overlap."""

        def call() -> Any:
            if deadline is None:
                return execute(new.request, new.key)
            return execute(new.request, new.key, timeout=deadline)

        if self.offload is None:
            return call()
        future = self.offload(execute, call)
        yield Offloaded(new.key, future)
        return future.result()

    # -- helpers -------------------------------------------------------------------------------

    def _recorded(self, new: NewEffect, model: bool) -> EffectRecord | None:
        """The effect's record, read from the store only where one can exist: in the first
        step occurrence this execution runs. A later occurrence (a higher ``step_seq``) was
        never reached by any execution before this one when an effect is recorded only after
        every earlier boundary is durable (:meth:`drive_steps` flushes first: always before a
        side effect, and before a model call under the strategies that say so), so an earlier
        execution that recorded one at occurrence ``n`` had committed ``n - 1`` boundaries,
        and this execution, which claimed the run after it, began at ``n`` at the latest; and
        no occurrence runs twice in one execution. Its effects are new, and the read that
        tells a replay from a first call is skipped (one round trip less per recorded call on
        PostgreSQL). This holds for the effects the occurrence declares, not for compensations
        (they belong to the occurrence of the effect they undo, and may be retried). Should a
        record be there all the same, the intent finds it (:meth:`_execute` refuses to call
        on it)."""
        first = self._first_seq
        flushed = not model or self.committer.flushes_before(self.step, model=True)
        later = first is not None and new.step_seq == self.step_seq > first
        if flushed and later and new.key in self._new:
            return None
        return self.store.get_effect(self.claim.run.tenant_id, new.key)

    def _checkpoint(self) -> Checkpoint:
        run = self.claim.run
        return Checkpoint(
            run.run_id,
            run.tenant_id,
            run.workflow,
            run.release.workflow_version,
            run.release.state_schema,
            str(run.status),
            str(run.durability),
        )

    @contextmanager
    def offloading(self, threads: int) -> Iterator[None]:
        """While open, calls run elsewhere: an ``async def`` ``execute`` as a task on the
        event loop, a plain one in a pool of ``threads`` (an awaitable it returns is awaited on
        the loop from there); :meth:`drive_steps` yields an :class:`Offloaded` while each runs."""
        pool = ThreadPoolExecutor(threads, "perdure-branch")
        loop = self.loop

        def offload(execute: Execute, call: Callable[[], Any]) -> Future[Any]:
            import inspect  # loaded by the first branch, not by every process that starts

            if inspect.iscoroutinefunction(execute):
                import asyncio  # only a process with async branches loads it

                return asyncio.run_coroutine_threadsafe(_awaited(call()), loop.loop)

            def in_thread() -> Any:
                out = call()
                return loop.run(out) if isinstance(out, Awaitable) else out

            return pool.submit(in_thread)

        self.offload = offload
        try:
            yield
        finally:
            self.offload = None
            pool.shutdown(wait=True)

    def compensator(self, compensate: Compensate | None) -> str | None:
        """The name a compensator is recorded under: it must be declared by the workflow, so
        it can run after a restart."""
        if compensate is None:
            return None
        name = getattr(compensate, "__name__", "")
        if self.workflow.compensators.get(name) is not compensate:
            raise DefinitionError(
                f"compensator {name or compensate!r} is not declared by workflow "
                f"{self.workflow.name}",
                fix="list it in Workflow(..., compensators=[...]) so it can run after a restart",
            )
        return name


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _passed(deadline: datetime | None, now: datetime) -> bool:
    """Whether an attempt's deadline (None: none) has come."""
    return deadline is not None and now >= deadline


def _until(now: datetime, deadline: float | None) -> datetime | None:
    """The deadline of an attempt started ``now`` (None: the effect has none)."""
    return None if deadline is None else now + timedelta(seconds=deadline)
