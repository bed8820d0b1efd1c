"""The one seam between step code and the execution that runs it.

Everything in :mod:`perdure.runtime.step` (the :class:`~perdure.runtime.step.context.Context`,
model calls, tool rounds, parallel branches, context rebuild) sees the run only through a
:class:`StepHost`: the run's thread, inbox, budget, effects, children, streams and artifacts,
asked for by method. The execution (:mod:`perdure.runtime.execution`) implements it; step code
never reaches past it to the execution's store, claim, effect runner or workflow.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from perdure.core.artifacts import ArtifactRef, Data
from perdure.core.budget import Budget
from perdure.core.children import ChildRecord
from perdure.core.effect_calls import Compensate, Execute, Reconcile
from perdure.core.effects import EffectRecord, NewEffect
from perdure.core.history import SavepointMark
from perdure.core.memory import MemoryItem, MemoryWrite, Namespace
from perdure.core.model import JSON, Approval, Message, Release, Signal
from perdure.core.reducers import Reducer
from perdure.core.retry import RetryPolicy
from perdure.core.streams import DEFAULT_MAX_DELAY, StreamSink
from perdure.core.workflow import Workflow

T = TypeVar("T")


class StepHost(Protocol):
    """What a running step may ask of the execution that runs it (one host per execution)."""

    # -- the run as the step sees it ------------------------------------------------------------

    def now(self) -> datetime:
        """The runtime clock's current time."""
        ...

    def thread_messages(self) -> list[Message]:
        """The run's thread as committed so far (what the step added itself is not in it)."""
        ...

    def approvals(self) -> list[Approval]:
        """The run's approvals, oldest first."""
        ...

    def signals(self) -> list[Signal]:
        """The signals the run received, oldest first."""
        ...

    def cancel_requested(self) -> bool:
        """True once someone asked to cancel the run (read from the store each time)."""
        ...

    def release(self) -> Release:
        """The run's release manifest, retired ids replaced as the workflow declares."""
        ...

    def model_id(self, name: str) -> str:
        """The model id to call for a client called ``name`` (its replacement when retired)."""
        ...

    def reducers(self) -> Mapping[str, Reducer]:
        """How the workflow's state fields combine updates from branches and children."""
        ...

    # -- the budget -----------------------------------------------------------------------------

    def charge(self, cost: float, tokens: int) -> None:
        """Add a charge to what the running step spent."""
        ...

    def check_spend(self) -> None:
        """Raise :class:`~perdure.core.signals.Escalate` when a limit is reached (before a
        model call)."""
        ...

    def budget_left(self) -> dict[str, float | int | None] | None:
        """What is left of each limit, or None when the run has no budget."""
        ...

    # -- effects --------------------------------------------------------------------------------

    def new_effect(
        self,
        name: str,
        target: str,
        operation: str,
        request: JSON,
        compensate: Compensate | None,
    ) -> NewEffect:
        """The intent of effect ``name`` of the running step occurrence, with its stable key; a
        name used twice in one occurrence, or an undeclared compensator, is refused."""
        ...

    def drive_effect(
        self,
        new: NewEffect,
        execute: Execute,
        reconcile: Reconcile | None,
        retry: RetryPolicy | None,
        before_call: Callable[[], None] | None = None,
        deadline: float | None = None,
    ) -> Generator[Any, None, JSON]:
        """Take the effect from whatever its record says to a recorded outcome, as a generator:
        it yields what a streamed ``execute`` yields (and, inside :meth:`branch_calls`, a
        marker while the call runs elsewhere) and returns the result."""
        ...

    def recorded_effect(self, key: str) -> EffectRecord | None:
        """The run's record of effect ``key``, or None."""
        ...

    def branch_calls(self, threads: int) -> AbstractContextManager[None]:
        """While open, effect calls run elsewhere (a pool of ``threads``, or the event loop for
        ``async def`` ones) and :meth:`drive_effect` yields while each runs."""
        ...

    # -- the event loop -------------------------------------------------------------------------

    def on_loop(self) -> bool:
        """True when called from an ``async def`` step on the event loop (a blocking call
        there would stall every run)."""
        ...

    def in_async_step(self) -> bool:
        """True while the running step is ``async def``."""
        ...

    def off_loop(self, fn: Callable[[], T]) -> Coroutine[Any, Any, T]:
        """Run ``fn`` in the run's execution thread; await its result on the loop."""
        ...

    def awaited(self, value: T | Awaitable[T]) -> T:
        """``value``, or the result of running it on the event loop when it is awaitable."""
        ...

    # -- children -------------------------------------------------------------------------------

    def spawn(
        self,
        workflow: Workflow[Any],
        input: Any,
        key: str,
        budget: Budget | None,
        share: float | None,
    ) -> ChildRecord:
        """Start (or find, by ``key``) a child run of this run."""
        ...

    def children(self) -> list[ChildRecord]:
        """This run's children, read from the store."""
        ...

    # -- streams and artifacts ------------------------------------------------------------------

    def open_stream(
        self,
        message_id: str,
        batch: int,
        reopen: bool = False,
        max_delay: float | None = DEFAULT_MAX_DELAY,
    ) -> StreamSink:
        """A new attempt of ``message_id``'s durable token stream."""
        ...

    def flush_streams(self) -> None:
        """Write every open stream's buffer (before an effect, at the boundary)."""
        ...

    def put_artifact(
        self, data: Data, media_type: str, parents: tuple[ArtifactRef, ...]
    ) -> ArtifactRef:
        """Upload ``data`` now; its reference is committed with the step's boundary."""
        ...

    def get_artifact(self, ref: ArtifactRef) -> bytes:
        """The bytes of an artifact, checked against ``ref``."""
        ...

    def mark_savepoint(self, mark: SavepointMark) -> None:
        """Mark the state this step commits as a savepoint."""
        ...

    # -- long-term memory -----------------------------------------------------------------------

    def memory_get(self, namespace: Namespace, key: str) -> MemoryItem | None:
        """The tenant's item as committed, with the writes of this execution's steps not yet
        durable applied over it (a put as the next version, a delete as absent)."""
        ...

    def memory_search(
        self,
        prefix: Namespace,
        filter: dict[str, JSON] | None,
        limit: int,
        query: tuple[float, ...] | None = None,
    ) -> list[MemoryItem]:
        """The tenant's items under ``prefix`` (see
        :meth:`perdure.store.wings.memory.contract.MemoryStore.search`), with the same writes
        applied; with a ``query`` vector, scored and ordered best first, the writes' vectors too."""
        ...

    def memory_write(self, write: MemoryWrite) -> None:
        """Keep a write of the running step, committed with its boundary (the last write of
        each item counts)."""
        ...
