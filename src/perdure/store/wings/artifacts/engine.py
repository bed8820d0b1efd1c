"""Artifact references: recorded before the upload, committed with a boundary, collected when
orphaned: :class:`ArtifactsWing`, the ``artifacts`` wing of the store; contracts in
:class:`~perdure.store.wings.artifacts.contract.ArtifactStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import RunNotFoundError, StoreError
from perdure.core.history import ArtifactRecord, ArtifactStatus, Removed
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch, still_used, unreferenced
from perdure.store.rows import Row, When, from_json, to_json


class ArtifactsWing(EngineBase):
    """Artifact references. The ``artifacts`` wing of the store."""

    def record(
        self,
        tenant_id: str,
        run_id: str,
        *,
        step: str | None,
        step_seq: int | None,
        fence: int,
        ref: ArtifactRef,
        parents: Sequence[str],
        now: datetime,
    ) -> int:
        """See :meth:`ArtifactStore.record`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with self.driver.write() as tx:
            if tx.one("get_run", ids) is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            row = tx.one(
                "insert_artifact",
                {
                    **ids,
                    "step": step,
                    "step_seq": step_seq,
                    "fence": fence,
                    "digest": ref.digest,
                    "size": ref.size,
                    "media_type": ref.media_type,
                    "parents": to_json(list(parents)) if parents else None,
                    "status": "uploaded",
                    "now": self.driver.stamp(now),
                },
            )
        if row is None:
            raise StoreError("insert_artifact returned no id")
        return int(row["id"])

    def find(
        self, tenant_id: str, *, run_id: str | None = None, digest: str | None = None
    ) -> list[ArtifactRecord]:
        """See :meth:`ArtifactStore.find`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "digest": digest}
        found = fetch(self.driver, "list_artifacts", params)
        return [artifact_from_row(r, self.driver.when) for r in found]

    def orphan_uploads(self, *, limit: int) -> list[ArtifactRecord]:
        """See :meth:`ArtifactStore.orphan_uploads`."""
        found = fetch(self.driver, "orphan_uploads", {"limit": limit})
        return [artifact_from_row(r, self.driver.when) for r in found]

    def drop(self, ids: Sequence[int]) -> Removed:
        """See :meth:`ArtifactStore.drop`."""
        pairs: set[tuple[str, str]] = set()
        with self.driver.write() as tx:
            for artifact_id in ids:
                row = tx.one("delete_artifact", {"id": artifact_id})
                if row is not None:
                    pairs.add((row["tenant_id"], row["digest"]))
            freed = unreferenced(tx, pairs)
        return Removed({"artifacts": len(ids)}, freed)

    def referenced(self, tenant_id: str, digests: Sequence[str]) -> set[str]:
        """See :meth:`ArtifactStore.referenced`."""
        with self.driver.read() as tx:
            return {d for d in digests if still_used(tx, tenant_id, d)}


def artifact_from_row(row: Row, when: When) -> ArtifactRecord:
    """An :class:`~perdure.core.history.ArtifactRecord` from a row of ``artifacts``."""
    created = when(row["created_at"])
    if created is None:
        raise StoreError("an artifact row has no created_at")
    return ArtifactRecord(
        id=int(row["id"]),
        tenant_id=row["tenant_id"],
        run_id=row["run_id"],
        step=row["step"],
        step_seq=row["step_seq"],
        fence=int(row["fence"]),
        ref=ArtifactRef(row["digest"], int(row["size"]), row["media_type"]),
        parents=tuple(from_json(row["parents"]) or ()),
        status=ArtifactStatus(row["status"]),
        created_at=created,
        committed_at=when(row["committed_at"]),
    )
