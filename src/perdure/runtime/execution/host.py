"""The execution's side of the step seam (:class:`~perdure.runtime.step.host.StepHost`): what
a step's context reads from the execution that runs it: the clock, the thread, the
run's approvals and signals, its budget (with what the running step charged), its release and
whether a cancel arrived. One :class:`ExecutionHost` serves every step of one execution.

The approvals and signals are read once per execution, when a step first asks; the thread
too, and again after each durable (``sync``) boundary, which may have let in messages that
waited in the thread's inbox. In an
``async def`` step that first read (and ``cancel_requested``, read each time) runs on the event
loop: one short indexed query, taken only by the steps that ask."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from perdure.core.artifacts import ArtifactError, ArtifactRef, Data
from perdure.core.budget import Budget, BudgetState
from perdure.core.children import ChildRecord
from perdure.core.clock import Clock
from perdure.core.effect_calls import Compensate, Execute, Reconcile
from perdure.core.effects import EffectRecord, NewEffect
from perdure.core.errors import StreamClosedError
from perdure.core.history import SavepointMark
from perdure.core.memory import (
    MemoryItem,
    MemoryVector,
    MemoryWrite,
    Namespace,
    matches,
    namespace_text,
    under,
)
from perdure.core.memory_index import best_score
from perdure.core.model import JSON, Approval, Message, Release, RunStatus, Signal
from perdure.core.reducers import Reducer
from perdure.core.retry import RetryPolicy
from perdure.core.signals import Escalate
from perdure.core.streams import DEFAULT_MAX_DELAY
from perdure.core.workflow import Workflow
from perdure.runtime.aio import Bridge
from perdure.runtime.artifacts import Artifacts, Writer
from perdure.runtime.execution.claim import Claim
from perdure.runtime.execution.effect_runner import EffectRunner
from perdure.runtime.execution.spawner import Spawner
from perdure.runtime.execution.stream_sink import DurableStream
from perdure.store.base import Store

T = TypeVar("T")


class ExecutionHost:
    """The :class:`~perdure.runtime.step.host.StepHost` of one execution (see the module
    docstring). ``replacements`` maps ``model``/``tools`` to what a retired release id was
    replaced with; ``budget`` is the run's budget after the last boundary."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        claim: Claim,
        effects: EffectRunner,
        bridge: Bridge,
        artifacts: Artifacts,
        spawner: Spawner,
    ) -> None:
        self.store = store
        self.spawner = spawner
        self.artifacts = artifacts
        self.step = ""
        self.step_seq = 0
        self.uploads: list[int] = []
        """Ids of the references the running step uploaded (committed with its boundary)."""
        self.savepoints: list[SavepointMark] = []
        self.bridge = bridge
        self.clock = clock
        self.claim = claim
        self.effects = effects
        self.replacements: dict[str, str] = {}
        self.budget: BudgetState | None = claim.run.budget
        self._charge = (0.0, 0)
        self._thread_messages: list[Message] | None = None
        self._unnumbered = 0
        """How many of the last thread messages are the steps' own, not yet read back."""
        self._stale = False
        """A boundary committed since the thread was read: read what joined it since."""
        self._approvals: list[Approval] | None = None
        self._signals: list[Signal] | None = None
        self.streams: list[DurableStream] = []
        self.memory_writes: dict[tuple[Namespace, str], MemoryWrite] = {}
        """The running step's memory writes, the last of each item (committed with its
        boundary)."""
        self._unflushed: dict[tuple[Namespace, str], MemoryItem | None] = {}
        """Items as this execution's submitted steps left them while their boundaries may not
        be durable yet (``async``/``exit`` durability); None: deleted."""
        self._unflushed_vectors: dict[tuple[Namespace, str], tuple[MemoryVector, ...]] = {}
        """The vectors of those items (a semantic search scores them from here)."""

    # -- read by the context ----------------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def thread_messages(self) -> list[Message]:
        run = self.claim.run
        if self._thread_messages is None:
            found = self.store.messages(run.tenant_id, run.thread_id)
            self._thread_messages = [self._resolved(m) for m in found]
            self._unnumbered = 0
        elif self._stale:
            # only what joined since: the steps' own messages (now numbered) and the waiting
            # input delivered at their boundaries, never the whole thread again
            known = self._thread_messages
            if self._unnumbered:
                del known[-self._unnumbered :]
            last = next((m.seq for m in reversed(known) if m.seq is not None), 0)
            found = self.store.messages(run.tenant_id, run.thread_id, after=last)
            known.extend(self._resolved(m) for m in found)
            self._unnumbered = 0
        self._stale = False
        return self._thread_messages

    def _resolved(self, m: Message) -> Message:
        try:
            return self.artifacts.resolve_message(self.claim.tenant_id, m)
        except ArtifactError as exc:
            raise Escalate("needs_attention", exc.code, exc.evidence, exc.message) from exc

    def writer(self) -> Writer:
        """Who writes artifacts now: this run, the running step, this fence."""
        run = self.claim.run
        return Writer(run.tenant_id, run.run_id, self.step or None, self.step_seq, run.fence)

    def put_artifact(
        self, data: Data, media_type: str, parents: tuple[ArtifactRef, ...]
    ) -> ArtifactRef:
        ref, ref_id = self.artifacts.put(self.writer(), data, media_type, parents)
        self.uploads.append(ref_id)
        return ref

    def get_artifact(self, ref: ArtifactRef) -> bytes:
        try:
            return self.artifacts.get(self.claim.tenant_id, ref, f"step {self.step}")
        except ArtifactError as exc:
            raise Escalate("needs_attention", exc.code, exc.evidence, exc.message) from exc

    def mark_savepoint(self, mark: SavepointMark) -> None:
        self.savepoints = [s for s in self.savepoints if s.label != mark.label]
        self.savepoints.append(mark)

    def approvals(self) -> list[Approval]:
        if self._approvals is None:
            run = self.claim.run
            self._approvals = self.store.approvals(run.tenant_id, run_id=run.run_id)
        return self._approvals

    def signals(self) -> list[Signal]:
        if self._signals is None:
            self._signals = self.store.signals(self.claim.tenant_id, self.claim.run_id)
        return self._signals

    def charge(self, cost: float, tokens: int) -> None:
        spent_cost, spent_tokens = self._charge
        self._charge = (spent_cost + cost, spent_tokens + tokens)

    def budget_left(self) -> dict[str, float | int | None] | None:
        if self.budget is None:
            return None
        cost, tokens = self._charge
        return self.budget.charged(cost=cost, tokens=tokens).remaining()

    def release(self) -> Release:
        run = self.claim.run
        model = self.replacements.get("model", run.release.model)
        tools = self.replacements.get("tools", run.release.tools)
        return replace(run.release, model=model, tools=tools)

    def model_id(self, name: str) -> str:
        """The model id to call for a client called ``name``: its replacement when the run's
        release manifest names it and the workflow retired it."""
        if self.claim.run.release.model == name:
            return self.replacements.get("model", name)
        return name

    def check_spend(self) -> None:
        """Before a model call: raise :class:`Escalate` when a limit is reached, counting what
        the running step charged so far."""
        if self.budget is None:
            return
        cost, tokens = self._charge
        spent = self.budget.charged(cost=cost, tokens=tokens)
        limit = spent.exhausted()
        if limit is not None:
            found: dict[str, JSON] = {
                "limit": limit,
                "limits": spent.limits.to_json(),
                "used": spent.used.to_json(),
                "before": "model call",
            }
            raise Escalate(spent.on_exhausted, "budget_exhausted", found)

    def reducers(self) -> Mapping[str, Reducer]:
        return self.effects.workflow.reducers

    # -- effects, children and the event loop, for the step -------------------------------------

    def new_effect(
        self,
        name: str,
        target: str,
        operation: str,
        request: JSON,
        compensate: Compensate | None,
    ) -> NewEffect:
        runner = self.effects
        return runner.new_effect(name, target, operation, request, runner.compensator(compensate))

    def drive_effect(
        self,
        new: NewEffect,
        execute: Execute,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
        before_call: Callable[[], None] | None = None,
        deadline: float | None = None,
    ) -> Generator[Any, None, JSON]:
        return self.effects.drive_steps(new, execute, reconcile, retry, before_call, deadline)

    def recorded_effect(self, key: str) -> EffectRecord | None:
        return self.store.get_effect(self.claim.tenant_id, key)

    @contextmanager
    def branch_calls(self, threads: int) -> Iterator[None]:
        with self.effects.offloading(threads):
            yield

    def on_loop(self) -> bool:
        return self.bridge.on_loop()

    def in_async_step(self) -> bool:
        return self.bridge.active

    def off_loop(self, fn: Callable[[], T]) -> Coroutine[Any, Any, T]:
        return self.bridge.call(fn)

    def awaited(self, value: T | Awaitable[T]) -> T:
        return self.effects.outcomes.awaited(value)

    def spawn(
        self,
        workflow: Workflow[Any],
        input: Any,
        key: str,
        budget: Budget | None,
        share: float | None,
    ) -> ChildRecord:
        # a child acts on its own: what led to it is durable first, as before a side effect
        committer = self.effects.committer
        committer.before_effect(self.effects.step, model=False)
        committer.side_effect_made()
        return self.spawner.spawn(self.claim.run, self.budget, workflow, input, key, budget, share)

    def children(self) -> list[ChildRecord]:
        return self.store.child_runs(self.claim.tenant_id, self.claim.run_id)

    def cancel_requested(self) -> bool:
        run = self.store.get_run(self.claim.tenant_id, self.claim.run_id)
        return run.status is RunStatus.CANCEL_REQUESTED

    def open_stream(
        self,
        message_id: str,
        batch: int,
        reopen: bool = False,
        max_delay: float | None = DEFAULT_MAX_DELAY,
    ) -> DurableStream:
        claim, bridge = self.claim, self.bridge
        sink = DurableStream(
            self.store, self.clock, claim, bridge, message_id, batch, reopen, max_delay
        )
        self.streams.append(sink)
        return sink

    def flush_streams(self) -> None:
        """Write every open stream's buffer (before an effect, at the boundary); raise the
        first failed write: a lost lease stops the execution, a write the stream refuses
        (``StreamClosedError``, a superseded or finished sink) hands the run to a person."""
        try:
            for sink in self.streams:
                sink.flush()
                sink.raise_failure()
        except StreamClosedError as exc:
            evidence: dict[str, JSON] = {"message_id": sink.message_id, "error": exc.message}
            raise Escalate("needs_attention", exc.code, evidence, exc.message) from exc

    # -- long-term memory -------------------------------------------------------------------------

    def memory_get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        now = self.clock.now()
        touched, found = self._mine(namespace, key, now)
        if touched:
            return found
        return self.store.memory.get(self.claim.tenant_id, namespace, key, now)

    def memory_search(
        self,
        prefix: Namespace,
        filter: dict[str, JSON] | None,
        limit: int,
        query: tuple[float, ...] | None = None,
    ) -> list[MemoryItem]:
        now = self.clock.now()
        keys = [k for k in (*self._unflushed, *self.memory_writes) if under(k[0], prefix)]
        stored = self.store.memory.search(
            self.claim.tenant_id, prefix, now, filter=filter, limit=limit + len(keys), query=query
        )
        items = {(i.namespace, i.key): i for i in stored}
        for ns, key in keys:
            _, mine = self._mine(ns, key, now)
            if mine is not None and matches(mine.value, filter):
                if query is not None:
                    vectors = [v.vector for v in self._vectors_of((ns, key))]
                    mine = replace(mine, score=best_score(query, vectors))
                items[(ns, key)] = mine
            else:
                items.pop((ns, key), None)
        ordered = sorted(items.values(), key=lambda i: (namespace_text(i.namespace), i.key))
        if query is not None:
            ordered.sort(key=lambda i: (i.score is None, -(i.score or 0.0)))
        return ordered[:limit]

    def _vectors_of(self, key: tuple[Namespace, str]) -> tuple[MemoryVector, ...]:
        """The vectors this execution's own last write of an item gave it."""
        write = self.memory_writes.get(key)
        if write is not None:
            return write.vectors
        return self._unflushed_vectors.get(key, ())

    def memory_write(self, write: MemoryWrite) -> None:
        key = (write.namespace, write.key)
        self.memory_writes.pop(key, None)  # the last write of an item goes last
        self.memory_writes[key] = write

    def _mine(
        self, namespace: Namespace, key: str, now: datetime
    ) -> tuple[bool, MemoryItem | None]:
        """Whether this execution's own writes touched the item, and the item as they leave it
        (None: deleted or expired)."""
        k = (namespace, key)
        write = self.memory_writes.get(k)
        if write is None:
            if k not in self._unflushed:
                return False, None
            item = self._unflushed[k]
        else:
            item = self._written(write, now)
        if item is None or (item.expires_at is not None and item.expires_at <= now):
            return True, None
        return True, item

    def _written(self, write: MemoryWrite, now: datetime) -> MemoryItem | None:
        """The item a write of the running step makes (its version one above what it
        replaces)."""
        if write.deleted:
            return None
        k = (write.namespace, write.key)
        before = (
            self._unflushed[k]
            if k in self._unflushed
            else self.store.memory.get(self.claim.tenant_id, write.namespace, write.key, now)
        )
        return MemoryItem(
            namespace=write.namespace,
            key=write.key,
            value=write.value,
            version=before.version + 1 if before is not None else 1,
            created_at=before.created_at if before is not None else now,
            updated_at=now,
            expires_at=write.expires_at,
            run_id=self.claim.run_id,
        )

    def step_memory(self) -> tuple[MemoryWrite, ...]:
        """The running step's memory writes, for its boundary."""
        return tuple(self.memory_writes.values())

    def memory_submitted(self, durable: bool) -> None:
        """The step's boundary went to the committer: when it is ``durable`` (committed
        already) the store has its writes, and those of earlier steps; otherwise later steps
        of this execution read them from here until the execution ends."""
        if durable:
            self._unflushed.clear()
            self._unflushed_vectors.clear()
        else:
            now = self.clock.now()
            for k, write in self.memory_writes.items():
                self._unflushed[k] = self._written(write, now)
                self._unflushed_vectors[k] = write.vectors
        self.memory_writes = {}

    # -- kept by the execution --------------------------------------------------------------------

    def begin_step(self, step: str = "", step_seq: int = 0) -> None:
        """A step starts: nothing charged, uploaded, marked or streamed yet."""
        self._charge = (0.0, 0)
        self.step, self.step_seq = step, step_seq
        self.uploads = []
        self.savepoints = []
        self.streams = []
        self.memory_writes = {}

    def step_done(self, messages: list[Message]) -> None:
        """A step ended: the thread as this execution sees it gains the step's messages."""
        if self._thread_messages is not None:
            self._thread_messages.extend(messages)
            self._unnumbered += len(messages)

    def reread_thread(self) -> None:
        """A boundary is durable: the next step that asks reads the thread again (messages
        from outside the run may have joined it at that boundary): those after the last it
        has, not the whole thread."""
        self._stale = True

    def check_budget(self) -> None:
        """Before a step: raise :class:`Escalate` when a limit was reached or the run makes no
        progress."""
        budget = self.budget
        if budget is None:
            return
        limit = budget.exhausted()
        if limit is not None:
            found: dict[str, JSON] = {
                "limit": limit,
                "limits": budget.limits.to_json(),
                "used": budget.used.to_json(),
            }
            raise Escalate(budget.on_exhausted, "budget_exhausted", found)
        if budget.repeating() and budget.guard is not None:
            repeats: dict[str, JSON] = {"repeats": budget.guard.count, "key": budget.guard.key}
            raise Escalate(budget.on_exhausted, "no_progress", repeats)

    def spend(self, step: str, encoded: dict[str, bytes]) -> BudgetState | None:
        """Charge the step to the budget and update the no-progress guard."""
        if self.budget is None:
            return None
        cost, tokens = self._charge
        spent = self.budget.charged(steps=1, cost=cost, tokens=tokens)
        digest = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(encoded.items())))
        self.budget = spent.guarded(f"{step}:{digest.hexdigest()[:16]}")
        return self.budget
