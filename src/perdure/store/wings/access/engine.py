"""API keys and dashboard sessions: :class:`AccessWing`, the ``access`` wing of the store;
contracts in :class:`~perdure.store.wings.access.contract.AccessStore`."""

from __future__ import annotations

from datetime import datetime

import orjson

from perdure.core.errors import KeyNameTakenError, KeyNotFoundError, StoreError
from perdure.core.keys import ApiKey
from perdure.core.sessions import Session
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch, need
from perdure.store.rows import Row, When


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


def _session(row: Row, when: When) -> Session:
    created, seen, expires = (when(row[c]) for c in ("created_at", "seen_at", "expires_at"))
    if created is None or seen is None or expires is None:
        raise StoreError(f"session {row['session_id']} has no creation, use or expiry time")
    return Session(
        session_id=row["session_id"],
        tenant_id=row["tenant_id"],
        key_id=row["key_id"],
        created_at=created,
        seen_at=seen,
        expires_at=expires,
        idle_seconds=int(row["idle_seconds"]),
        ended_at=when(row["ended_at"]),
        ended_why=row["ended_why"],
    )


class AccessWing(EngineBase):
    """API keys and dashboard sessions: the ``access`` wing."""

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

    def create_session(self, session: Session, secret_hash: str, now: datetime) -> None:
        """See :meth:`AccessStore.create_session`."""
        d = self.driver
        with d.write() as tx:
            key = tx.one("get_key", {"key_id": session.key_id})
            if key is None or key["tenant_id"] != session.tenant_id or key["revoked_at"]:
                raise KeyNotFoundError(
                    f"no live API key {session.key_id} in tenant {session.tenant_id}"
                )
            tx.run(
                "insert_session",
                {
                    "session_id": session.session_id,
                    "tenant_id": session.tenant_id,
                    "key_id": session.key_id,
                    "secret_hash": secret_hash,
                    "created_at": d.stamp(now),
                    "expires_at": d.stamp(session.expires_at),
                    "idle_seconds": session.idle_seconds,
                },
            )

    def find_session(self, session_id: str) -> tuple[Session, str] | None:
        """See :meth:`AccessStore.find_session`."""
        found = fetch(self.driver, "get_session", {"session_id": session_id})
        return (_session(found[0], self.driver.when), found[0]["secret_hash"]) if found else None

    def touch_session(self, session_id: str, now: datetime) -> None:
        """See :meth:`AccessStore.touch_session`."""
        with self.driver.write() as tx:
            tx.run("touch_session", {"session_id": session_id, "now": self.driver.stamp(now)})

    def end_session(
        self, tenant_id: str, session_id: str, why: str, now: datetime
    ) -> Session | None:
        """See :meth:`AccessStore.end_session`."""
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "why": why,
            "now": self.driver.stamp(now),
        }
        with self.driver.write() as tx:
            if tx.run("end_session", params) == 0:
                return None
            row = tx.one("get_session", params)
        return None if row is None else _session(row, self.driver.when)

    def list_sessions(
        self, tenant_id: str, *, key_id: str | None = None, ended: bool = False
    ) -> list[Session]:
        """See :meth:`AccessStore.list_sessions`."""
        params = {"tenant_id": tenant_id, "key_id": key_id, "ended": ended}
        return [_session(r, self.driver.when) for r in fetch(self.driver, "list_sessions", params)]
