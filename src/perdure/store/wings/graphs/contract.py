"""The contract of the ``graphs`` wing (LangGraph threads' checkpoints, blobs and pending writes),
reached as ``store.graphs``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.graph import (
    GraphCheckpoint,
    GraphHold,
    GraphPut,
    GraphThreadState,
    GraphWrite,
    PruneStrategy,
)
from perdure.core.model import (
    JSON,
)


class GraphStore(Protocol):
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

    def thread(self, tenant_id: str, thread_id: str) -> GraphThreadState:
        """The thread's run status (None when nothing was ever written) and quarantine reason."""
        ...

    def open_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """Create the thread's run (RUNNING, unowned, with a ``created`` event) unless it
        exists, so that it can be claimed. Idempotent."""
        ...

    def put_checkpoint(self, put: GraphPut, hold: GraphHold | None, now: datetime) -> None:
        """Store a checkpoint and the blobs it carries, guarded as above. Blobs already stored
        at the same (channel, version) are kept; a checkpoint stored again with the same id is
        overwritten. Appends a ``graph_checkpoint`` event with ``put.event``, counts the
        checkpoint in the run's ``steps_done`` and, with ``put.keep_last``, trims the
        namespace to its newest checkpoints (their writes and unread blobs go too)."""
        ...

    def put_writes(
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

    def get_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> GraphCheckpoint | None:
        """The checkpoint with this id (the newest of the namespace when None) with its blobs
        and writes, or None. A quarantined thread raises
        :class:`~perdure.core.errors.GraphThreadQuarantinedError` (never None)."""
        ...

    def list_checkpoints(
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
        like :meth:`get_checkpoint`."""
        ...

    def delete_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """Delete every checkpoint, blob and write of the thread (all namespaces); the run
        stays, with a ``graph_thread_deleted`` event. A thread never written is a no-op; a
        thread a live lease holds is refused (``GraphThreadBusyError``), here and by
        :meth:`prune_threads`."""
        ...

    def delete_runs(self, tenant_id: str, graph_runs: Sequence[str], now: datetime) -> None:
        """Delete the checkpoints whose metadata ``run_id`` is one of ``graph_runs`` (every
        thread and namespace of the tenant), their writes and the blobs no longer read."""
        ...

    def copy_thread(self, tenant_id: str, source: str, target: str, now: datetime) -> None:
        """Copy every checkpoint, blob and write of ``source`` to ``target`` (created if
        needed; what it already holds under the same keys is kept). Guarded on ``target`` as
        an unheld write. A source with no checkpoint copies nothing."""
        ...

    def prune_threads(
        self, tenant_id: str, thread_ids: Sequence[str], strategy: PruneStrategy, now: datetime
    ) -> None:
        """Keep only the newest checkpoint of each namespace (``keep_latest``) or none
        (``delete``) of each thread, with their writes; drop blobs no longer read. Threads
        never written are skipped."""
