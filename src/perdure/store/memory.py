"""The store's memory capability: long-term items under a namespace, scoped by tenant, written
only with a step's boundary (:attr:`perdure.store.base.Boundary.memory`, inside
:meth:`~perdure.store.base.Store.commit`'s transaction) and read by any run of the tenant.
The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one transaction
per method, translated driver errors) hold here too. Namespaces and keys reach the store
checked (:mod:`perdure.core.memory`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from perdure.core.memory import MemoryItem, Namespace
from perdure.core.values import JSON


class MemoryStore(Protocol):
    """Long-term memory of a tenant: read here, written by boundaries, erased on request."""

    def get_memory(
        self, tenant_id: str, namespace: Namespace, key: str, now: datetime
    ) -> MemoryItem | None:
        """The item, or None when there is none, it expired (``expires_at`` at or before
        ``now``) or it belongs to another tenant. Reads committed items only."""
        ...

    def search_memory(
        self,
        tenant_id: str,
        prefix: Namespace,
        now: datetime,
        *,
        filter: Mapping[str, JSON] | None = None,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """The live items of namespace ``prefix`` and of every namespace below it (all of the
        tenant's for ``()``), ordered by namespace then key (bytewise on both databases),
        keeping those whose value is an object holding every field of ``filter`` with an equal
        value (:func:`perdure.core.memory.matches`), at most ``limit`` of them. One read;
        the filter is applied as the rows are read, so its cost is the prefix's size."""
        ...

    def erase_memory(self, tenant_id: str, prefix: Namespace, *, by: str, now: datetime) -> int:
        """Delete every item of namespace ``prefix`` and below (``()``: every item of the
        tenant), expired or not, and record an ``erasures`` row (who asked, ``{"memory": n}``;
        never the namespace or a value), in one transaction; return how many items went.
        Idempotent but for the record: a second call deletes nothing. Items a step commits
        afterwards are written again."""
        ...

    def expire_memory(self, now: datetime, *, limit: int) -> int:
        """Delete up to ``limit`` items of any tenant whose ``expires_at`` is at or before
        ``now``; return how many (0 when none is left). Each call is one transaction."""
        ...
