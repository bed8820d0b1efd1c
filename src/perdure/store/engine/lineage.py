"""What the commit and ``create_run`` write of a run's past inside their transactions: savepoint
marks, fork records, inherited artifact references. The ``history`` wing reads them."""

from __future__ import annotations

from typing import Any

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import InvalidInputError
from perdure.core.history import Lineage
from perdure.store.base import Boundary
from perdure.store.driver import Tx
from perdure.store.engine.tx import event
from perdure.store.rows import Params, Stamp, to_json


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
