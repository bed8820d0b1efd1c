"""Deleting finished runs (retention) and erasing conversations, in batches of short
transactions. :class:`RetentionWing`, the ``retention`` wing of the store; contracts in
:class:`~perdure.store.wings.retention.contract.RetentionStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from perdure.core.errors import InvalidInputError, RunBusyError, RunNotFoundError
from perdure.core.history import Removed
from perdure.core.model import TERMINAL
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import unreferenced
from perdure.store.rows import Params, Row, from_json, to_json

OWNED = (
    "stream_entries",
    "streams",
    "thread_inbox",
    "graph_writes",
    "graph_blobs",
    "graph_checkpoints",
    "history",
    "state_tails",
    "state_fields",
    "steps",
    "events",
    "effects",
    "approvals",
    "signals",
    "savepoints",
    "forks",
    "requests",
)
"""What a run owns besides its messages and artifact references: ``delete_run_<name>``."""


class RetentionWing(EngineBase):
    """Deleting finished runs, erasing threads and runs: the ``retention`` wing of the store."""

    def expired_runs(
        self,
        before: datetime,
        now: datetime,
        *,
        workflow: str | None = None,
        exclude: Sequence[str] = (),
        limit: int = 100,
    ) -> list[tuple[str, str]]:
        """See :meth:`RetentionStore.expired_runs`."""
        d = self.driver
        params = {
            "before": d.stamp(before),
            "now": d.stamp(now),
            "workflow": workflow,
            "exclude": d.array(list(exclude)),
            "limit": limit,
        }
        with d.read() as tx:
            return [(r["tenant_id"], r["run_id"]) for r in tx.all("expired_runs", params)]

    def delete_runs(self, runs: Sequence[tuple[str, str]], now: datetime) -> Removed:
        """See :meth:`RetentionStore.delete_runs`. Set-based: one statement per table for the
        whole batch (the remembered requests are matched run by run, sent together)."""
        d = self.driver
        wanted = set(runs)
        rows: dict[str, int] = {}
        pairs: set[tuple[str, str]] = set()
        with d.write() as tx:
            found = tx.all("doomed_runs", {"run_ids": d.array([r for _, r in runs])})
            doomed = [r for r in found if (r["tenant_id"], r["run_id"]) in wanted]
            if not doomed:
                return Removed({})
            every = {"run_ids": d.array([r["run_id"] for r in doomed])}
            kept = {"run_ids": d.array([r["run_id"] for r in doomed if r["live"]])}
            dropped = {"run_ids": d.array([r["run_id"] for r in doomed if not r["live"]])}
            pairs.update(
                (r["tenant_id"], r["digest"]) for r in tx.all("runs_artifact_digests", every)
            )
            for r in tx.all("runs_message_artifacts", dropped):
                data = from_json(r["content_artifact"])
                if isinstance(data, dict) and isinstance(data.get("digest"), str):
                    pairs.add((r["tenant_id"], data["digest"]))
            for name in OWNED:
                if name != "requests":
                    _count(rows, name, tx.run(f"delete_runs_{name}", every))
            _count(rows, "artifacts", tx.run("delete_runs_artifacts", every))
            tx.run("detach_runs_messages", kept)
            _count(rows, "messages", tx.run("delete_runs_messages", dropped))
            with tx.batch():
                for r in doomed:
                    ids = {"tenant_id": r["tenant_id"], "run_id": r["run_id"]}
                    tx.run("delete_run_requests", {**ids, "pattern": f'%"{r["run_id"]}"%'})
            _count(rows, "runs", tx.run("delete_runs", every))
            freed = unreferenced(tx, pairs)
        return Removed(rows, freed)

    def prune_finished(self, part: str, before: datetime, now: datetime, *, limit: int) -> int:
        """See :meth:`RetentionStore.prune_finished`."""
        if part not in ("events", "history"):
            raise InvalidInputError(f"cannot prune {part!r}", fix="prune events or history")
        d = self.driver
        params = {"before": d.stamp(before), "now": d.stamp(now), "limit": limit}
        with d.write() as tx:
            return tx.run(f"prune_{part}", params)

    def erase_thread(self, tenant_id: str, thread_id: str, *, by: str, now: datetime) -> Removed:
        """See :meth:`RetentionStore.erase_thread`."""
        d = self.driver
        at = d.stamp(now)
        rows: dict[str, int] = {}
        pairs: set[tuple[str, str]] = set()
        thread = {"tenant_id": tenant_id, "thread_id": thread_id}
        with d.write() as tx:
            found = tx.all("erased_thread_runs", thread)
            _refuse_leased(found, now, d.when)
            for r in found:
                _delete_run(tx, {**thread, "run_id": r["run_id"]}, rows, pairs, keep_messages=True)
            _count(
                rows,
                "messages",
                _digests_of_messages(tx, "thread_message_artifacts", thread, pairs),
            )
            tx.run("delete_thread_messages", thread)
            tx.run("delete_thread_inbox", thread)
            tx.run("delete_thread_policy", thread)
            _erasure(tx, tenant_id, thread_id, None, rows, by, at)
            freed = unreferenced(tx, pairs)
        return Removed(rows, freed)

    def erase_run(self, tenant_id: str, run_id: str, *, by: str, now: datetime) -> Removed:
        """See :meth:`RetentionStore.erase_run`."""
        d = self.driver
        rows: dict[str, int] = {}
        pairs: set[tuple[str, str]] = set()
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            run = tx.one("lock_run", ids)
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            _refuse_leased([run], now, d.when)
            _delete_run(tx, ids, rows, pairs, keep_messages=False)
            _erasure(tx, tenant_id, run["thread_id"], run_id, rows, by, d.stamp(now))
            freed = unreferenced(tx, pairs)
        return Removed(rows, freed)


def _refuse_leased(runs: Sequence[Row], now: datetime, when: Any) -> None:
    for r in runs:
        until = when(r["lease_until"])
        if r["status"] not in {str(s) for s in TERMINAL} and until is not None and until > now:
            raise RunBusyError(
                f"run {r['run_id']} is {r['status']} and leased by {r['owner']} until "
                f"{until:%Y-%m-%d %H:%M:%S} UTC; nothing was erased",
                fix="cancel the run (`perdure cancel RUN`), then erase again once it stopped",
            )


def _delete_run(
    tx: Tx,
    ids: Params,
    rows: dict[str, int],
    pairs: set[tuple[str, str]],
    *,
    keep_messages: bool,
) -> None:
    """Delete one run and what it owns (inside the caller's transaction)."""
    for r in tx.all("run_artifact_digests", ids):
        pairs.add((ids["tenant_id"], r["digest"]))
    _count(rows, "artifacts", tx.run("delete_run_artifacts", ids))
    for name in OWNED:
        params = {**ids, "pattern": f'%"{ids["run_id"]}"%'} if name == "requests" else ids
        _count(rows, name, tx.run(f"delete_run_{name}", params))
    if keep_messages:
        tx.run("detach_run_messages", ids)
    else:
        found = _digests_of_messages(tx, "run_message_artifacts", ids, pairs)
        tx.run("delete_run_messages", ids)
        _count(rows, "messages", found)
    _count(rows, "runs", tx.run("delete_run", ids))


def _digests_of_messages(tx: Tx, query: str, params: Params, pairs: set[tuple[str, str]]) -> int:
    """Note the artifacts of the messages about to be deleted; return how many there are."""
    found = tx.all(query, params)
    for r in found:
        if r["content_artifact"] is not None:
            data = from_json(r["content_artifact"])
            if isinstance(data, dict) and isinstance(data.get("digest"), str):
                pairs.add((params["tenant_id"], data["digest"]))
    return len(found)


def _count(rows: dict[str, int], name: str, n: int) -> None:
    if n:
        rows[name] = rows.get(name, 0) + n


def _erasure(
    tx: Tx,
    tenant_id: str,
    thread_id: str | None,
    run_id: str | None,
    rows: dict[str, int],
    by: str,
    at: Any,
) -> None:
    tx.run(
        "insert_erasure",
        {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "run_id": run_id,
            "counts": to_json(rows),
            "by": by,
            "now": at,
        },
    )
