"""Reads that both stores make the same way: the same named queries, the same row mapping;
only the time conversion (``_when``) and the connection (``_read``) differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from perdure.core.effects import EffectRecord
from perdure.core.model import Event, Message, StepRecord
from perdure.store.rows import (
    Row,
    When,
    effect_from_row,
    event_from_row,
    message_from_row,
    step_from_row,
)


class _Reader(Protocol):
    _when: When

    def _read(self, name: str, params: dict[str, Any]) -> Sequence[Row]: ...


class StoreReads:
    """Mixed into each store; see :class:`perdure.store.base.Store` for the contracts."""

    def load_state(self: _Reader, tenant_id: str, run_id: str) -> dict[str, bytes]:
        """See :meth:`Store.load_state`."""
        found = self._read("load_state", {"tenant_id": tenant_id, "run_id": run_id})
        return {r["field"]: r["value"].encode() for r in found}

    def get_effect(self: _Reader, tenant_id: str, key: str) -> EffectRecord | None:
        """See :meth:`Store.get_effect`."""
        found = self._read("get_effect", {"tenant_id": tenant_id, "key": key})
        return effect_from_row(found[0], self._when) if found else None

    def steps(self: _Reader, tenant_id: str, run_id: str) -> list[StepRecord]:
        """See :meth:`Store.steps`."""
        found = self._read("list_steps", {"tenant_id": tenant_id, "run_id": run_id})
        return [step_from_row(r, self._when) for r in found]

    def events(
        self: _Reader,
        tenant_id: str,
        run_id: str,
        *,
        after: int = 0,
        limit: int = 1000,
        latest: bool = False,
    ) -> list[Event]:
        """See :meth:`Store.events`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "after": after, "limit": limit}
        query = "latest_events" if latest else "list_events"
        return [event_from_row(r, self._when) for r in self._read(query, params)]

    def messages(self: _Reader, tenant_id: str, thread_id: str) -> list[Message]:
        """See :meth:`Store.messages`."""
        found = self._read("list_messages", {"tenant_id": tenant_id, "thread_id": thread_id})
        return [message_from_row(r, self._when) for r in found]
