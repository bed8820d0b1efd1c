"""State history, savepoints, fork lineage: the reads that rebuild a run's past, and what the
commit and ``create_run`` write for them. :class:`History`, a part of
:class:`~perdure.store.engine.Engine`; contracts in
:class:`~perdure.store.lifecycle.HistoryStore`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import InvalidInputError, RunNotFoundError, StoreError
from perdure.core.history import FieldChange, Lineage, Savepoint
from perdure.core.logs import joined
from perdure.core.model import Message
from perdure.store.base import Boundary
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, fetch, need
from perdure.store.rows import Params, Row, Stamp, When, from_json, message_from_values, to_json


class History(EngineBase):
    """State history, savepoints, fork lineage. Part of :class:`~perdure.store.engine.Engine`."""

    def state_changes(self, tenant_id: str, run_id: str) -> list[FieldChange]:
        """See :meth:`HistoryStore.state_changes`."""
        found = fetch(self.driver, "state_changes", {"tenant_id": tenant_id, "run_id": run_id})
        return [
            FieldChange(
                int(r["step_seq"]),
                int(r["version"]),
                r["field"],
                None if r["size"] is None else int(r["size"]),
                bool(r["offloaded"]),
                bool(r["appended"]),
            )
            for r in found
        ]

    def state_at(self, tenant_id: str, run_id: str, step_seq: int) -> dict[str, bytes]:
        """See :meth:`HistoryStore.state_at`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "step_seq": step_seq}
        found = fetch(self.driver, "state_at", params)
        parts: dict[str, list[bytes]] = {}
        for r in found:  # per field: its last whole value, then the tails appended after it
            name, value = r["field"], r["value"]
            if not r["appended"]:
                parts[name] = [] if value is None else [value.encode()]
            elif parts.get(name):  # a tail without its base (history pruned) is not a value
                parts[name].append(value.encode())
        return {name: joined(p[0], p[1:]) if len(p) > 1 else p[0] for name, p in parts.items() if p}

    def add_savepoint(
        self,
        tenant_id: str,
        run_id: str,
        label: str,
        step_seq: int,
        *,
        by: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> Savepoint:
        """See :meth:`HistoryStore.add_savepoint`."""
        d = self.driver
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            run = tx.one("get_run", ids)
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            if not 0 <= step_seq <= int(run["steps_done"]):
                raise InvalidInputError(
                    f"run {run_id} has committed {run['steps_done']} steps; there is no step "
                    f"{step_seq} to mark",
                    fix="pick a step shown by `perdure history RUN`",
                )
            mark(tx, ids, label, step_seq, by, d.stamp(expires_at), d.stamp(now))
            row = need(tx, "get_savepoint", {**ids, "label": label})
        return savepoint_from_row(row, d.when)

    def savepoints(self, tenant_id: str, run_id: str) -> list[Savepoint]:
        """See :meth:`HistoryStore.savepoints`."""
        found = fetch(self.driver, "list_savepoints", {"tenant_id": tenant_id, "run_id": run_id})
        return [savepoint_from_row(r, self.driver.when) for r in found]

    def lineage(self, tenant_id: str, run_id: str) -> Lineage | None:
        """See :meth:`HistoryStore.lineage`."""
        found = fetch(self.driver, "get_fork", {"tenant_id": tenant_id, "run_id": run_id})
        if not found:
            return None
        r = found[0]
        return Lineage(
            r["run_id"],
            r["source_run_id"],
            int(r["step_seq"]),
            r["savepoint"],
            tuple(from_json(r["patched"]) or ()),
            r["created_by"],
            _at(self.driver.when, r["created_at"]),
        )

    def messages_until(
        self, tenant_id: str, thread_id: str, run_id: str, step_seq: int
    ) -> list[Message]:
        """See :meth:`HistoryStore.messages_until`."""
        d = self.driver
        params = {"tenant_id": tenant_id, "thread_id": thread_id, "run_id": run_id}
        with d.read() as tx:
            bounds = tx.one("run_message_bounds", {**params, "step_seq": step_seq})
            rows = tx.values("list_messages", {**params, "after": 0})
        cut = None
        if bounds is not None and bounds["kept"] is not None:
            cut = int(bounds["kept"])
        elif bounds is not None and bounds["first"] is not None:
            cut = int(bounds["first"]) - 1
        messages = [message_from_values(r, d.when) for r in rows]
        return [m for m in messages if cut is None or (m.seq or 0) <= cut]


def mark(tx: Tx, ids: Params, label: str, step_seq: int, by: str, expires: Any, at: Any) -> None:
    """Insert savepoint ``label`` (a repeat at the same step changes nothing)."""
    found = tx.one("get_savepoint", {**ids, "label": label})
    if found is not None:
        if int(found["step_seq"]) != step_seq:
            raise InvalidInputError(
                f"run {ids['run_id']} already has savepoint {label!r} at step {found['step_seq']}",
                fix="use another label",
            )
        return
    tx.run(
        "insert_savepoint",
        {**ids, "label": label, "step_seq": step_seq, "by": by, "expires_at": expires, "now": at},
    )
    event(tx, ids, "savepoint", None, None, {"label": label, "step_seq": step_seq, "by": by}, at)


def commit_marks(
    tx: Tx, ids: Params, b: Boundary, seq: int, fence: int, at: Any, stamp: Stamp
) -> None:
    """Inside a commit: mark the boundary's uploaded artifacts committed and its savepoints."""
    for artifact_id in b.artifacts:
        params = {**ids, "id": artifact_id, "fence": fence, "step_seq": seq, "now": at}
        tx.run("commit_artifact", params)
    for sp in b.savepoints:
        mark(tx, ids, sp.label, seq, f"step:{b.step}", stamp(sp.expires_at), at)


def record_fork(tx: Tx, ids: Params, lineage: Lineage, at: Any) -> None:
    """Inside ``create_run``: where the new run was forked from."""
    tx.run(
        "insert_fork",
        {
            **ids,
            "source_run_id": lineage.source_run_id,
            "step_seq": lineage.step_seq,
            "savepoint": lineage.savepoint,
            "patched": to_json(list(lineage.patched)),
            "by": lineage.created_by,
            "now": at,
        },
    )


def record_inherited(tx: Tx, ids: Params, ref: ArtifactRef, at: Any) -> None:
    """Inside ``create_run``: a committed reference to an artifact the new run starts with."""
    tx.run(
        "insert_artifact",
        {
            **ids,
            "step": None,
            "step_seq": 0,
            "fence": 0,
            "digest": ref.digest,
            "size": ref.size,
            "media_type": ref.media_type,
            "parents": None,
            "status": "committed",
            "now": at,
        },
    )


def savepoint_from_row(row: Row, when: When) -> Savepoint:
    """A :class:`~perdure.core.history.Savepoint` from a row of ``savepoints``."""
    return Savepoint(
        row["run_id"],
        row["label"],
        int(row["step_seq"]),
        row["created_by"],
        _at(when, row["created_at"]),
        when(row["expires_at"]),
    )


def _at(when: When, value: Any) -> datetime:
    found = when(value)
    if found is None:
        raise StoreError("a NOT NULL time column came back empty")
    return found
