"""The Runtime's part for long-term memory from outside a run: list, show and erase a
tenant's items by namespace (:mod:`perdure.core.memory`). Steps read and write memory through
``ctx.memory``; nothing here writes an item, and erasing is the right to delete: every item of
a namespace and the namespaces below it goes, in one transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perdure.core.errors import InvalidInputError, MemoryNotFoundError
from perdure.core.ids import checked_id
from perdure.core.memory import (
    MemoryItem,
    checked_key,
    checked_namespace,
    namespace_text,
)
from perdure.core.values import JSON
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of

MAX_LIST = 10_000
"""The most items one :meth:`MemoryAdmin.memory` returns."""


class MemoryAdmin:
    """List, show and erase a tenant's memory (see the module docstring)."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts

    def memory(
        self,
        prefix: Sequence[str] | str = (),
        *,
        tenant: Tenant = DEFAULT_TENANT,
        filter: Mapping[str, JSON] | None = None,
        limit: int = 100,
    ) -> list[MemoryItem]:
        """The tenant's live items of namespace ``prefix`` (a tuple, or ``"user/u1"``) and
        below (``()``: all), ordered by namespace then key, whose value holds every field of
        ``filter``; at most ``limit`` (1 to :data:`MAX_LIST`)."""
        ns = checked_namespace(prefix, prefix=True)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
            raise InvalidInputError(
                f"limit must be 1 to {MAX_LIST}, not {limit!r}", fix="pass a smaller limit"
            )
        now = self.parts.clock.now()
        return self.parts.store.memory.search(
            tenant_of(tenant), ns, now, filter=filter, limit=limit
        )

    def memory_item(
        self, namespace: Sequence[str] | str, key: str, *, tenant: Tenant = DEFAULT_TENANT
    ) -> MemoryItem:
        """The tenant's live item, or :class:`~perdure.core.errors.MemoryNotFoundError`."""
        ns, k = checked_namespace(namespace), checked_key(key)
        item = self.parts.store.memory.get(tenant_of(tenant), ns, k, self.parts.clock.now())
        if item is None:
            raise MemoryNotFoundError(f"no memory item {k!r} in namespace {namespace_text(ns)!r}")
        return item

    def erase_memory(
        self,
        prefix: Sequence[str] | str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        by: str | None = None,
    ) -> int:
        """Delete every item of namespace ``prefix`` and below, expired or not, in one
        transaction; return how many (0 when there were none). A record that it happened (who
        asked, ``by``, default this runtime's owner, and the count; never the namespace) is
        kept, as for an erased thread. The prefix may not be empty: to erase a whole tenant,
        erase each of its top-level namespaces."""
        ns = checked_namespace(prefix)
        who = checked_id(by, "--as") if by is not None else self.parts.owner
        now = self.parts.clock.now()
        return self.parts.store.memory.erase(tenant_of(tenant), ns, by=who, now=now)
