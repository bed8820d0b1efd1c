"""Dashboard sessions: what logging in with an API key makes, and when a session is over.

A person logs in to the dashboard with an API key once; the server then holds a *session*
and the browser's cookie carries only its token, ``pds_<session_id>_<secret>``, never the key.
``session_id`` is public (it names the session in the audit trail); only a SHA-256 hash of
``secret`` (32 random bytes) is stored. A session is over at ``expires_at`` (its lifetime from
login), after ``idle_seconds`` without a request, at logout, or when its key is revoked. Pure
functions, no I/O.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from perdure.core.errors import ConfigError, NotAuthenticatedError
from perdure.core.keys import secret_hash

PREFIX = "pds"
_TOKEN = re.compile(r"^pds_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")

LIFETIME = timedelta(hours=12)
"""How long a session lasts from login, however busy (the default)."""

IDLE = timedelta(minutes=30)
"""How long a session lasts without a request (the default)."""


@dataclass(frozen=True, slots=True)
class Session:
    """A stored dashboard session: whose (``tenant_id``, the ``key_id`` that logged in), when
    it began, was last used (``seen_at``) and expires, how long it may idle, and when and why
    it ended (``ended_why``: ``logout``, ``revoked``, ``expired`` or ``idle``). The secret is
    never stored, only its hash."""

    session_id: str
    tenant_id: str
    key_id: str
    created_at: datetime
    seen_at: datetime
    expires_at: datetime
    idle_seconds: int
    ended_at: datetime | None = None
    ended_why: str | None = None

    def over(self, now: datetime) -> str | None:
        """Why the session is over at ``now`` (``logout``, ``revoked``, ``expired``,
        ``idle``, ...), or None while it is live."""
        if self.ended_at is not None:
            return self.ended_why or "ended"
        if now >= self.expires_at:
            return "expired"
        if now - self.seen_at >= timedelta(seconds=self.idle_seconds):
            return "idle"
        return None

    def stale(self, now: datetime) -> bool:
        """True when ``seen_at`` is old enough to be worth writing again (a tenth of the idle
        time, at most a minute): a busy session is not written on every request."""
        step = min(timedelta(seconds=self.idle_seconds) / 10, timedelta(minutes=1))
        return now - self.seen_at >= step

    @property
    def via(self) -> str:
        """How a principal that came through this session is named in the audit trail."""
        return f"session:{self.session_id}"


def new_session(
    tenant_id: str,
    key_id: str,
    now: datetime,
    *,
    lifetime: timedelta = LIFETIME,
    idle: timedelta = IDLE,
) -> tuple[Session, str, str]:
    """A fresh session of ``key_id``: the record, the hash of its secret (what is stored) and
    its token (what the cookie carries, shown nowhere else)."""
    if lifetime <= timedelta(0) or idle < timedelta(seconds=1):
        raise ConfigError(
            "a session needs a positive lifetime and an idle time of 1 s or more",
            fix="pass a longer session lifetime or idle time",
        )
    session_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    session = Session(
        session_id=session_id,
        tenant_id=tenant_id,
        key_id=key_id,
        created_at=now,
        seen_at=now,
        expires_at=now + lifetime,
        idle_seconds=int(idle.total_seconds()),
    )
    return session, secret_hash(secret), f"{PREFIX}_{session_id}_{secret}"


def parse_session_token(token: str) -> tuple[str, str]:
    """``(session_id, secret)`` of a presented session token, or
    :class:`NotAuthenticatedError`."""
    found = _TOKEN.match(token.strip()) if isinstance(token, str) else None
    if found is None:
        raise NotAuthenticatedError("the session token is malformed", fix="log in again")
    return found.group(1), found.group(2)
