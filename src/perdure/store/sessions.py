"""The store's capability for dashboard sessions (:mod:`perdure.core.sessions`).

:class:`perdure.store.base.Store` includes it; the rules in that module's docstring (tenant
scoping, "now" as a parameter, one transaction per method, translated driver errors) hold for
every method here. Whether a session is still live (expiry, idle time) is decided by the
caller from the record (:meth:`~perdure.core.sessions.Session.over`), never by the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from perdure.core.sessions import Session


class SessionStore(Protocol):
    """Dashboard sessions: made at login, looked up on every request, ended at logout, at
    expiry and when their key is revoked (:meth:`AccessStore.revoke_key`)."""

    def create_session(self, session: Session, secret_hash: str, now: datetime) -> None:
        """Store a new session of ``session.key_id`` (its ``created_at`` and ``seen_at`` are
        ``now``). Raises :class:`~perdure.core.errors.KeyNotFoundError` when the key does not
        exist, is of another tenant, or is revoked; writes nothing then."""
        ...

    def find_session(self, session_id: str) -> tuple[Session, str] | None:
        """The session with this id and its stored secret hash (of any tenant: the session
        names its tenant), ended or not; None when there is none."""
        ...

    def touch_session(self, session_id: str, now: datetime) -> None:
        """Record a request at ``now`` (``seen_at``), unless the session ended or was seen
        later; a missing session is no error (nothing is written)."""
        ...

    def end_session(
        self, tenant_id: str, session_id: str, why: str, now: datetime
    ) -> Session | None:
        """End a session (idempotent: an ended session keeps its first end and reason) and
        return it; None for a session that does not exist or is of another tenant."""
        ...

    def list_sessions(
        self, tenant_id: str, *, key_id: str | None = None, ended: bool = False
    ) -> list[Session]:
        """The tenant's sessions not ended (and ended ones with ``ended``), of one key or all,
        oldest first. A session past its expiry is listed until it is ended (the runtime ends
        it when it is next presented)."""
        ...
