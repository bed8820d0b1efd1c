"""Dashboard sessions: :class:`Sessions`, a part of :class:`~perdure.store.engine.Engine`;
contracts in :class:`~perdure.store.sessions.SessionStore`."""

from __future__ import annotations

from datetime import datetime

from perdure.core.errors import KeyNotFoundError, StoreError
from perdure.core.sessions import Session
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import fetch
from perdure.store.rows import Row, When


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


class Sessions(EngineBase):
    """Dashboard sessions. Part of :class:`~perdure.store.engine.Engine`."""

    def create_session(self, session: Session, secret_hash: str, now: datetime) -> None:
        """See :meth:`SessionStore.create_session`."""
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
        """See :meth:`SessionStore.find_session`."""
        found = fetch(self.driver, "get_session", {"session_id": session_id})
        return (_session(found[0], self.driver.when), found[0]["secret_hash"]) if found else None

    def touch_session(self, session_id: str, now: datetime) -> None:
        """See :meth:`SessionStore.touch_session`."""
        with self.driver.write() as tx:
            tx.run("touch_session", {"session_id": session_id, "now": self.driver.stamp(now)})

    def end_session(
        self, tenant_id: str, session_id: str, why: str, now: datetime
    ) -> Session | None:
        """See :meth:`SessionStore.end_session`."""
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
        """See :meth:`SessionStore.list_sessions`."""
        params = {"tenant_id": tenant_id, "key_id": key_id, "ended": ended}
        return [_session(r, self.driver.when) for r in fetch(self.driver, "list_sessions", params)]
