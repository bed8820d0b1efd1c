"""The store's capabilities over a thread's data: its queue of runs, policy and inbox, the
durable token streams of its messages, and the checkpoints of a graph run on it.

:class:`perdure.store.base.Store` includes them; the rules in that module's docstring (tenant
scoping, "now" as a parameter, one transaction per method, translated driver errors) hold for
every method here.
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
    Message,
)
from perdure.core.stream_state import StreamInfo, StreamOpened
from perdure.core.streams import StreamEntry
from perdure.core.threads import Delivery, ThreadInfo, ThreadPolicy
from perdure.store.watch import Watch


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
        (``finished=True``), unless ``reopen``: then it is superseded like a cut one. Each
        new attempt appends a ``message_stream`` event (``message_id``, ``attempt``) to the
        run in the same transaction, so the run's event stream announces the reply as soon as
        its stream opens."""
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
