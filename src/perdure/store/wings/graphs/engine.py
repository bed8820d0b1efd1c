"""Graph checkpoints (LangGraph threads): put, put writes, read, list, delete, copy, prune.
:class:`GraphsWing`, the ``graphs`` wing of the store; contracts in
:class:`~perdure.store.wings.graphs.contract.GraphStore`.

Every write first makes sure the thread's run exists (one idempotent insert), then reads that
row locked for the transaction (``lock_run``) and checks who may write: a quarantined or
finished thread refuses every write, a held write must carry the thread's current fence, an
unheld write is refused while a live lease holds the thread. Only then does it write.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from perdure.core.errors import (
    GraphThreadBusyError,
    GraphThreadQuarantinedError,
    LeaseLostError,
    RunClosedError,
)
from perdure.core.graph import (
    GRAPH_KEY_PREFIX,
    GRAPH_WORKFLOW,
    GraphBlob,
    GraphCheckpoint,
    GraphHold,
    GraphPut,
    GraphThreadState,
    GraphWrite,
    PruneStrategy,
    graph_run_id,
)
from perdure.core.model import JSON, Durability, Release, RunStatus
from perdure.store.driver import Driver, Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, need
from perdure.store.rows import Params, Row, from_json, to_json

RELEASE = to_json(Release(0, 0, Durability.SYNC, code=GRAPH_WORKFLOW).to_json())
NEXT_RUN = "graph"
NEXT_INTERRUPTED = "interrupted"


def _ids(tenant_id: str, thread_id: str) -> Params:
    return {
        "tenant_id": tenant_id,
        "thread_id": thread_id,
        "run_id": graph_run_id(tenant_id, thread_id),
    }


def _create(tx: Tx, ids: Params, at: Any) -> None:
    """Insert the thread's run (RUNNING, unowned) unless it exists."""
    created = tx.one(
        "insert_graph_thread",
        {
            **ids,
            "workflow": GRAPH_WORKFLOW,
            "next_step": NEXT_RUN,
            "release": RELEASE,
            "idempotency_key": GRAPH_KEY_PREFIX + ids["thread_id"],
            "now": at,
        },
    )
    if created is not None:
        event(tx, ids, "created", None, None, {"workflow": GRAPH_WORKFLOW}, at)


class GraphsWing(EngineBase):
    """LangGraph threads' checkpoints, blobs and writes: the ``graphs`` wing of the store."""

    def open_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """See :meth:`GraphStore.open_thread`."""
        with self.driver.write() as tx:
            _create(tx, _ids(tenant_id, thread_id), self.driver.stamp(now))

    def put_checkpoint(self, put: GraphPut, hold: GraphHold | None, now: datetime) -> None:
        """See :meth:`GraphStore.put_checkpoint`."""
        d = self.driver
        at = d.stamp(now)
        ids = _ids(put.tenant_id, put.thread_id)
        place = {**ids, "checkpoint_ns": put.checkpoint_ns}
        with d.write() as tx:
            extend = _thread(tx, d, ids, hold, at, now)
            with tx.batch():
                if extend is not None:
                    tx.run("heartbeat", extend)
                for b in put.blobs:
                    tx.run(
                        "insert_graph_blob",
                        {
                            **place,
                            "channel": b.channel,
                            "version": b.version,
                            "type": b.type,
                            "blob": b.data,
                        },
                    )
                tx.run(
                    "upsert_graph_checkpoint",
                    {
                        **place,
                        "checkpoint_id": put.checkpoint_id,
                        "parent_id": put.parent_id,
                        "graph_run_id": put.graph_run,
                        "checkpoint_type": put.checkpoint_type,
                        "checkpoint": put.checkpoint,
                        "metadata": put.metadata.decode(),
                        "channel_versions": put.channel_versions.decode(),
                        "now": at,
                    },
                )
                tx.run(
                    "graph_thread_advanced", {**ids, "next_step": NEXT_RUN, "steps": 1, "now": at}
                )
                fence = None if hold is None else hold.fence
                data: JSON = dict(put.event or {})
                event(tx, ids, "graph_checkpoint", put.checkpoint_ns or None, fence, data, at)
            if put.keep_last is not None:
                _trim(tx, ids, put.checkpoint_ns, put.keep_last)

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
        """See :meth:`GraphStore.put_writes`."""
        d = self.driver
        at = d.stamp(now)
        ids = _ids(tenant_id, thread_id)
        place = {**ids, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
        with d.write() as tx:
            extend = _thread(tx, d, ids, hold, at, now)
            with tx.batch():
                if extend is not None:
                    tx.run("heartbeat", extend)
                for w in writes:
                    tx.run(
                        "upsert_graph_write" if replace else "insert_graph_write",
                        {
                            **place,
                            "task_id": w.task_id,
                            "idx": w.idx,
                            "channel": w.channel,
                            "type": w.type,
                            "blob": w.data,
                            "task_path": w.task_path,
                        },
                    )
            if interrupts is not None:
                tx.run(
                    "graph_thread_advanced",
                    {**ids, "next_step": NEXT_INTERRUPTED, "steps": 0, "now": at},
                )
                info: JSON = {"checkpoint_id": checkpoint_id, "interrupts": interrupts}
                fence = None if hold is None else hold.fence
                event(tx, ids, "graph_interrupt", checkpoint_ns or None, fence, info, at)

    def thread(self, tenant_id: str, thread_id: str) -> GraphThreadState:
        """See :meth:`GraphStore.thread`."""
        with self.driver.read() as tx:
            row = tx.one("get_run", _ids(tenant_id, thread_id))
        if row is None:
            return GraphThreadState(None)
        error = from_json(row["error"]) if row["error"] else None
        reason = error.get("reason") if isinstance(error, dict) else None
        return GraphThreadState(RunStatus(row["status"]), str(reason) if reason else None)

    def get_checkpoint(
        self, tenant_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
    ) -> GraphCheckpoint | None:
        """See :meth:`GraphStore.get_checkpoint`."""
        where = {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
        with self.driver.read() as tx:
            _readable(tx, tenant_id, thread_id)
            row = tx.one(
                "get_graph_checkpoint" if checkpoint_id else "latest_graph_checkpoint", where
            )
            return None if row is None else _checkpoint(tx, row)

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
        """See :meth:`GraphStore.list_checkpoints`."""
        params = {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "filter": None if metadata_filter is None else metadata_filter.decode(),
            "before": before,
            "limit": limit,
        }
        with self.driver.read() as tx:
            if thread_id is not None:
                _readable(tx, tenant_id, thread_id)
            return [_checkpoint(tx, r) for r in tx.all("list_graph_checkpoints", params)]

    def delete_thread(self, tenant_id: str, thread_id: str, now: datetime) -> None:
        """See :meth:`GraphStore.delete_thread`."""
        d = self.driver
        ids = _ids(tenant_id, thread_id)
        with d.write() as tx:
            row = tx.one("lock_run", ids)
            if row is None:
                return
            _not_held(d, row, thread_id, now)
            tx.run("trim_graph_checkpoints", {**ids, "checkpoint_ns": None, "keep": 0})
            tx.run("collect_graph_writes", ids)
            tx.run("collect_graph_blobs", ids)
            event(tx, ids, "graph_thread_deleted", None, None, None, d.stamp(now))

    def delete_runs(self, tenant_id: str, graph_runs: Sequence[str], now: datetime) -> None:
        """See :meth:`GraphStore.delete_runs`."""
        if not graph_runs:
            return
        d = self.driver
        params = {"tenant_id": tenant_id, "graph_runs": d.array(graph_runs)}
        with d.write() as tx:
            threads = [r["thread_id"] for r in tx.all("graph_threads_of_runs", params)]
            tx.run("delete_graph_runs", params)
            for thread in threads:
                ids = _ids(tenant_id, thread)
                tx.run("collect_graph_writes", ids)
                tx.run("collect_graph_blobs", ids)
                info: JSON = {"graph_runs": list(graph_runs)}
                event(tx, ids, "graph_runs_deleted", None, None, info, d.stamp(now))

    def copy_thread(self, tenant_id: str, source: str, target: str, now: datetime) -> None:
        """See :meth:`GraphStore.copy_thread`."""
        d = self.driver
        at = d.stamp(now)
        src = _ids(tenant_id, source)
        dst = _ids(tenant_id, target)
        with d.write() as tx:
            if not tx.all("graph_thread_has_checkpoints", src):
                return
            _thread(tx, d, dst, None, at, now)
            copy = {
                "tenant_id": tenant_id,
                "source": source,
                "target": target,
                "target_run_id": dst["run_id"],
            }
            tx.run("copy_graph_checkpoints", copy)
            tx.run("copy_graph_blobs", copy)
            tx.run("copy_graph_writes", copy)
            event(tx, dst, "graph_thread_copied", None, None, {"from": source}, at)

    def prune_threads(
        self,
        tenant_id: str,
        thread_ids: Sequence[str],
        strategy: PruneStrategy,
        now: datetime,
    ) -> None:
        """See :meth:`GraphStore.prune_threads`."""
        d = self.driver
        keep = 1 if strategy is PruneStrategy.KEEP_LATEST else 0
        with d.write() as tx:
            for thread in thread_ids:
                ids = _ids(tenant_id, thread)
                row = tx.one("lock_run", ids)
                if row is None:
                    continue
                _not_held(d, row, thread, now)
                _trim(tx, ids, None, keep)
                event(
                    tx, ids, "graph_pruned", None, None, {"strategy": str(strategy)}, d.stamp(now)
                )


def _thread(
    tx: Tx, d: Driver, ids: Params, hold: GraphHold | None, at: Any, now: datetime
) -> Params | None:
    """Create the thread's run if needed, lock it, and check that this writer may write.
    Returns the ``heartbeat`` parameters that extend a held lease, for the caller to send with
    its writes (one round trip)."""
    row = tx.one("lock_run", ids)
    if row is None:
        _create(tx, ids, at)
        row = need(tx, "lock_run", ids)
    status = RunStatus(row["status"])
    thread = ids["thread_id"]
    if status is RunStatus.QUARANTINED:
        reason = (from_json(row["error"]) or {}).get("reason") if row["error"] else None
        raise GraphThreadQuarantinedError(f"thread {thread} is quarantined ({reason})")
    if status.terminal or status is RunStatus.CANCEL_REQUESTED:
        raise RunClosedError(f"thread {thread} is {status} and takes no more checkpoints")
    fence = hold.fence if hold is not None else None
    if fence is not None:
        if row["fence"] != fence:
            raise LeaseLostError(
                f"thread {thread}: this invocation's hold (fence {fence}) was taken over by "
                f"fence {row['fence']}; nothing was written"
            )
        if hold is not None and hold.owner is not None:
            until = d.stamp(now + timedelta(seconds=hold.lease_seconds))
            return {**ids, "owner": hold.owner, "fence": fence, "lease_until": until}
        return None
    _not_held(d, row, thread, now)
    return None


def _not_held(d: Driver, row: Row, thread: str, now: datetime) -> None:
    """Refuse a write that holds nothing while a live lease holds the thread."""
    lease = d.when(row["lease_until"])
    if row["owner"] is not None and lease is not None and lease >= now:
        raise GraphThreadBusyError(
            f"thread {thread} is held by another invocation ({row['owner']}, fence "
            f"{row['fence']}) until {lease.isoformat()}"
        )


def _trim(tx: Tx, ids: Params, ns: str | None, keep: int) -> None:
    """Keep the newest ``keep`` checkpoints of each namespace (of ``ns`` only, when given), then
    drop the writes and blobs no remaining checkpoint reads."""
    if tx.run("trim_graph_checkpoints", {**ids, "checkpoint_ns": ns, "keep": keep}) > 0:
        tx.run("collect_graph_writes", ids)
        tx.run("collect_graph_blobs", ids)


def _checkpoint(tx: Tx, row: Row) -> GraphCheckpoint:
    where = {
        "tenant_id": row["tenant_id"],
        "thread_id": row["thread_id"],
        "checkpoint_ns": row["checkpoint_ns"],
        "checkpoint_id": row["checkpoint_id"],
    }
    blobs = tuple(
        GraphBlob(b["channel"], b["version"], b["type"], _bytes(b["blob"]))
        for b in tx.all("graph_blobs_of", where)
    )
    writes = tuple(
        GraphWrite(
            w["task_id"], int(w["idx"]), w["channel"], w["type"], _bytes(w["blob"]), w["task_path"]
        )
        for w in tx.all("graph_writes_of", where)
    )
    meta = row["metadata"]
    return GraphCheckpoint(
        thread_id=row["thread_id"],
        checkpoint_ns=row["checkpoint_ns"],
        checkpoint_id=row["checkpoint_id"],
        parent_id=row["parent_id"],
        checkpoint_type=row["checkpoint_type"],
        checkpoint=bytes(row["checkpoint"]),
        metadata=meta.encode() if isinstance(meta, str) else bytes(meta),
        blobs=blobs,
        writes=writes,
    )


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _readable(tx: Tx, tenant_id: str, thread_id: str) -> None:
    """Refuse to read a quarantined thread: it is never read as empty or as it stands."""
    row = tx.one("get_run", _ids(tenant_id, thread_id))
    if row is not None and row["status"] == RunStatus.QUARANTINED:
        error = from_json(row["error"]) if row["error"] else None
        reason = error.get("reason") if isinstance(error, dict) else None
        raise GraphThreadQuarantinedError(
            f"thread {thread_id} is quarantined ({reason}); it is not read as empty"
        )
