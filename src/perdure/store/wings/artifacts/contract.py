"""The contract of the ``artifacts`` wing (the artifact ledger), reached as ``store.artifacts``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.artifacts import ArtifactRef
from perdure.core.history import (
    ArtifactRecord,
    Removed,
)


class ArtifactStore(Protocol):
    """References runs hold to artifacts: written before the upload, committed with the
    boundary that records them."""

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
        """Record an ``uploaded`` reference (before the bytes are uploaded) and return its id.

        The boundary that lists the id (``Boundary.artifacts``) marks it ``committed`` in the
        commit's transaction, under the same fence. Raises
        :class:`~perdure.core.errors.RunNotFoundError` for an unknown run."""
        ...

    def find(
        self, tenant_id: str, *, run_id: str | None = None, digest: str | None = None
    ) -> list[ArtifactRecord]:
        """References of a tenant, oldest first, filtered by run and digest."""
        ...

    def orphan_uploads(self, *, limit: int) -> list[ArtifactRecord]:
        """``uploaded`` references no commit will ever claim: their run ended, or was claimed
        again under a newer fence (the uploader lost it). Any tenant."""
        ...

    def drop(self, ids: Sequence[int]) -> Removed:
        """Delete these references; ``freed`` lists the ``(tenant_id, digest)`` pairs that no
        reference (and no message) points to any more."""
        ...

    def referenced(self, tenant_id: str, digests: Sequence[str]) -> set[str]:
        """Those of ``digests`` some reference or message of the tenant still points to."""
        ...
