"""API keys, event feeds and operator counts: :class:`Access`, a part of
:class:`~perdure.store.engine.Engine`; contracts in :class:`~perdure.store.access.AccessStore`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import orjson

from perdure.core.effects import EffectStatus
from perdure.core.errors import KeyNameTakenError, KeyNotFoundError, StoreError
from perdure.core.keys import ApiKey
from perdure.core.model import Event, RunStatus
from perdure.core.observed import (
    EffectCount,
    PeriodCount,
    Queue,
    RunCount,
    SpendCount,
    StepTiming,
)
from perdure.store.driver import LockTimeoutError
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch, need
from perdure.store.rows import Params, Row, When, event_from_row, step_timing_from_row


def _key(row: Row, when: When) -> ApiKey:
    roles = row["roles"]
    found = orjson.loads(roles) if isinstance(roles, str | bytes) else roles
    created = when(row["created_at"])
    if created is None:
        raise StoreError(f"API key {row['key_id']} has no creation time")
    return ApiKey(
        key_id=row["key_id"],
        tenant_id=row["tenant_id"],
        name=row["name"],
        roles=frozenset(str(r) for r in found or ()),
        created_at=created,
        revoked_at=when(row["revoked_at"]),
    )


FEED_TRIES = 5
"""How often :meth:`Access.last_event_seq` tries before it lets a lock timeout through."""


class Access(EngineBase):
    """API keys, event feeds and operator counts. Part of :class:`~perdure.store.engine.Engine`."""

    def create_key(self, key: ApiKey, secret_hash: str, now: datetime) -> None:
        """See :meth:`AccessStore.create_key`."""
        params = {"tenant_id": key.tenant_id, "name": key.name}
        with self.driver.write() as tx:
            if tx.one("live_key_by_name", params) is not None:
                raise KeyNameTakenError(
                    f"tenant {key.tenant_id} already has a live key named {key.name!r}"
                )
            tx.run(
                "insert_key",
                {
                    **params,
                    "key_id": key.key_id,
                    "roles": orjson.dumps(sorted(key.roles)).decode(),
                    "secret_hash": secret_hash,
                    "now": self.driver.stamp(now),
                },
            )

    def find_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """See :meth:`AccessStore.find_key`."""
        found = fetch(self.driver, "get_key", {"key_id": key_id})
        return (_key(found[0], self.driver.when), found[0]["secret_hash"]) if found else None

    def list_keys(self, tenant_id: str, *, revoked: bool = False) -> list[ApiKey]:
        """See :meth:`AccessStore.list_keys`."""
        found = fetch(self.driver, "list_keys", {"tenant_id": tenant_id, "revoked": revoked})
        return [_key(r, self.driver.when) for r in found]

    def revoke_key(self, tenant_id: str, key_id: str, now: datetime) -> ApiKey:
        """See :meth:`AccessStore.revoke_key`."""
        params = {"tenant_id": tenant_id, "key_id": key_id, "now": self.driver.stamp(now)}
        with self.driver.write() as tx:
            if tx.run("revoke_key", params) == 0:
                raise KeyNotFoundError(f"no API key {key_id} in tenant {tenant_id}")
            tx.run("end_key_sessions", params)
            row = need(tx, "get_key", params)
        return _key(row, self.driver.when)

    def tenant_events(
        self,
        tenant_id: str,
        *,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """See :meth:`AccessStore.tenant_events`."""
        params = {
            "tenant_id": tenant_id,
            "after": after,
            "any_type": not types,
            "types": self.driver.array(list(types)),
            "workflow": workflow,
            "limit": limit,
        }
        found = self._feed("tenant_events", params)
        return [event_from_row(r, self.driver.when) for r in found]

    def events_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """See :meth:`AccessStore.events_since`."""
        found = self._feed("events_since", {"after": after, "limit": limit})
        return [(r["seq"], r["tenant_id"], r["run_id"]) for r in found]

    def last_event_seq(self) -> int:
        """See :meth:`AccessStore.last_event_seq`: the newest event number below which no
        event can still appear."""
        for _ in range(FEED_TRIES - 1):
            found = self._feed("last_event_seq", {})
            if found:
                return int(found[0]["seq"])
        with self.driver.feed() as tx:  # the last try raises when writers keep it waiting
            return int(tx.all("last_event_seq", {})[0]["seq"])

    def _feed(self, query: str, params: Params) -> list[Row]:
        """A read of the event feed (see :meth:`Driver.feed`); no rows when writers kept it
        waiting too long: their events come with the next read."""
        try:
            with self.driver.feed() as tx:
                return tx.all(query, params)
        except LockTimeoutError:
            return []

    def run_counts(self, tenant_id: str | None = None) -> list[RunCount]:
        """See :meth:`AccessStore.run_counts`."""
        found = fetch(self.driver, "run_counts", {"tenant_id": tenant_id})
        return [
            RunCount(r["tenant_id"], r["workflow"], RunStatus(r["status"]), int(r["n"]))
            for r in found
        ]

    def runs_by_period(self, tenant_id: str, since: datetime, *, daily: bool) -> list[PeriodCount]:
        """See :meth:`AccessStore.runs_by_period`."""
        params = {
            "tenant_id": tenant_id,
            "since": self.driver.stamp(since.astimezone(UTC)),
            "width": 10 if daily else 13,
        }
        found = fetch(self.driver, "runs_by_period", params)
        return [PeriodCount(r["period"], RunStatus(r["status"]), int(r["n"])) for r in found]

    def step_timings(self, tenant_id: str, since: datetime, *, limit: int) -> list[StepTiming]:
        """See :meth:`AccessStore.step_timings`."""
        d = self.driver
        params = {"tenant_id": tenant_id, "since": d.stamp(since.astimezone(UTC)), "limit": limit}
        return [step_timing_from_row(r, d.when) for r in fetch(d, "step_timings", params)]

    def effect_counts(self, tenant_id: str | None = None) -> list[EffectCount]:
        """See :meth:`AccessStore.effect_counts`."""
        found = fetch(self.driver, "effect_counts", {"tenant_id": tenant_id})
        return [EffectCount(r["tenant_id"], EffectStatus(r["status"]), int(r["n"])) for r in found]

    def spend_counts(self, tenant_id: str | None = None) -> list[SpendCount]:
        """See :meth:`AccessStore.spend_counts`."""
        found = fetch(self.driver, "spend_counts", {"tenant_id": tenant_id})
        return [
            SpendCount(r["tenant_id"], r["workflow"], int(r["tokens"]), float(r["cost"]))
            for r in found
        ]

    def queue(self, now: datetime) -> Queue:
        """See :meth:`AccessStore.queue`."""
        row = fetch(self.driver, "runnable_summary", {"now": self.driver.stamp(now)})[0]
        return Queue(int(row["n"]), self.driver.when(row["oldest"]))

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """See :meth:`AccessStore.wait_for_events`: the driver listens, or returns None."""
        return self.driver.wait_for_events(timeout)
