"""Records of graph checkpoints: what :mod:`perdure.langgraph` stores for a LangGraph thread.

A LangGraph thread is one perdure run of the reserved workflow :data:`GRAPH_WORKFLOW`; its
run id is derived from the tenant and the thread id (:func:`graph_run_id`), so every process
names the same row without a lookup. A checkpoint is stored without its channel values: each
channel value is a :class:`GraphBlob` keyed by channel and version, shared by every checkpoint
that reads that version, so a checkpoint writes only the channels that changed. Bytes are
opaque here (the serializer's, possibly sealed); JSON columns are canonical JSON bytes.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from enum import StrEnum

from perdure.core.effects import NewEffect
from perdure.core.model import RunStatus

GRAPH_WORKFLOW = "langgraph"
"""The workflow name of every run that represents a LangGraph thread (reserved)."""

GRAPH_KEY_PREFIX = "langgraph:"
"""The idempotency key of a thread's run is this prefix and the thread id."""


def graph_run_id(tenant_id: str, thread_id: str) -> str:
    """The id of the perdure run that represents ``thread_id`` in ``tenant_id``."""
    digest = hashlib.sha256(f"{tenant_id}\0{thread_id}".encode()).digest()
    return "lg_" + base64.b32encode(digest[:15]).decode().lower()


def graph_effect_key(tenant_id: str, thread_id: str, checkpoint_ns: str, call_id: str) -> str:
    """The effect key of tool call ``call_id`` made in namespace ``checkpoint_ns`` of a thread:
    ``tenant/langgraph/<thread's run>/<node path>/tool.<call id>``. The node path is the
    namespace without its task ids (``tools``, ``outer|tools``), so the key is the same each
    time the node runs the call again: after an interrupt, after a crash, in a new process."""
    run_id = graph_run_id(tenant_id, thread_id)
    return f"{tenant_id}/{GRAPH_WORKFLOW}/{run_id}/{node_path(checkpoint_ns)}/tool.{call_id}"


def node_path(checkpoint_ns: str) -> str:
    """A LangGraph checkpoint namespace without its task ids: ``tools:1f…`` is ``tools``,
    ``outer:2a…|tools:9c…`` is ``outer|tools``, the root namespace is ``-``."""
    return "|".join(part.split(":", 1)[0] for part in checkpoint_ns.split("|")) or "-"


class PruneStrategy(StrEnum):
    """What :meth:`prune_graph_threads` keeps: the newest checkpoint of each namespace, or
    nothing."""

    KEEP_LATEST = "keep_latest"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class GraphHold:
    """Who may write a thread: the fence of a held invocation (None: not held, refused while
    another invocation holds the thread), the holder, and how many seconds each held write
    extends its lease."""

    fence: int | None = None
    owner: str | None = None
    lease_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class GraphBlob:
    """One channel value at one version (``data`` None: the channel was empty)."""

    channel: str
    version: str
    type: str
    data: bytes | None


@dataclass(frozen=True, slots=True)
class GraphWrite:
    """One pending write of a task: its index, channel and serialized value."""

    task_id: str
    idx: int
    channel: str
    type: str
    data: bytes | None
    task_path: str = ""


@dataclass(frozen=True, slots=True)
class GraphPut:
    """One checkpoint to store, with the blobs of the channels it changed.

    ``metadata`` and ``channel_versions`` are canonical JSON bytes (``channel_versions`` maps
    each channel to its version as text). ``keep_last`` (None: keep all) trims the namespace to
    its newest checkpoints in the same transaction. ``event`` is what the thread's run records.
    """

    tenant_id: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    graph_run: str | None
    checkpoint_type: str
    checkpoint: bytes
    metadata: bytes
    channel_versions: bytes
    blobs: tuple[GraphBlob, ...] = ()
    keep_last: int | None = None
    event: dict[str, str | int | None] | None = None


@dataclass(frozen=True, slots=True)
class GraphCheckpoint:
    """A stored checkpoint with the blobs its channel versions name and its pending writes."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint_type: str
    checkpoint: bytes
    metadata: bytes
    blobs: tuple[GraphBlob, ...]
    writes: tuple[GraphWrite, ...]


@dataclass(frozen=True, slots=True)
class GraphThreadState:
    """The thread's run as a reader needs it: its status (None: never written) and why it is
    quarantined."""

    status: RunStatus | None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class GraphToolCall:
    """A tool call of a LangGraph thread made as a perdure effect: the thread's run that owns
    it, the fence its records are written under (the invocation's hold, or the thread's
    current fence for an unheld invocation), the run's status, and the effect's intent."""

    tenant_id: str
    thread_id: str
    run_id: str
    fence: int
    status: RunStatus
    effect: NewEffect
