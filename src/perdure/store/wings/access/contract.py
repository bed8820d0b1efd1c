"""The contract of the ``access`` wing (API keys and dashboard sessions), reached as
``store.access``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from perdure.core.keys import ApiKey
from perdure.core.sessions import Session


class AccessStore(Protocol):
    """API keys, the event feeds that live streams read, and the counts operators watch."""

    def create_key(self, key: ApiKey, secret_hash: str, now: datetime) -> None:
        """Store a new key. Raises :class:`~perdure.core.errors.KeyNameTakenError` when the
        tenant already has a live (not revoked) key of that name; writes nothing then."""
        ...

    def find_key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key with this id and its stored secret hash (of any tenant: the key names its
        tenant), revoked or not; None when there is none."""
        ...

    def list_keys(self, tenant_id: str, *, revoked: bool = False) -> list[ApiKey]:
        """The tenant's live keys (and revoked ones with ``revoked``), oldest first."""
        ...

    def revoke_key(self, tenant_id: str, key_id: str, now: datetime) -> ApiKey:
        """Revoke a key (idempotent: a revoked key keeps its first revocation time) and, in the
        same transaction, end its open sessions (``ended_why``: ``revoked``). Raises
        :class:`~perdure.core.errors.KeyNotFoundError` for a key of another tenant."""
        ...

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
