"""The server's access part: dashboard sessions and stream tokens, the credentials the HTTP
server hands out in exchange for an API key. Not a part of the public
:class:`~perdure.runtime.runtime.Runtime`: the server holds one (``Credentials(runtime.parts)``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from perdure.core.errors import NotAuthenticatedError
from perdure.core.keys import matches, parse_token
from perdure.core.model import Principal
from perdure.core.sessions import IDLE, LIFETIME, Session, new_session, parse_session_token
from perdure.core.stream_tokens import StreamToken
from perdure.core.stream_tokens import mint as mint_stream_token
from perdure.core.stream_tokens import parse as parse_stream_token
from perdure.core.throttle import ThrottlePolicy
from perdure.runtime.admin.keys import Keys
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.admin.verbs import verb


class Credentials:
    """Sessions (log in with a key, the principal of a session, log out, list) and stream
    tokens (mint one for a key, open one): what the server's access checks use."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts
        self.keys = Keys(parts)

    @verb
    def stream_token(
        self, principal: Principal, scope: str, *, lifetime: timedelta = timedelta(minutes=5)
    ) -> StreamToken:
        """A stream token (see :mod:`perdure.core.stream_tokens`) that opens ``scope`` for
        ``lifetime`` as the key ``principal`` authenticated with (read-only). A principal
        that did not come through an API key (a dashboard session, the command line) is
        :class:`NotAuthenticatedError`."""
        via = principal.via or ""
        found = self.parts.store.access.find_key(via[4:]) if via.startswith("key:") else None
        if found is None or found[0].revoked_at is not None:
            raise NotAuthenticatedError(
                "a stream token is minted with a live API key only",
                fix="send the request with Authorization: Bearer and an API key",
            )
        key, hashed = found
        return mint_stream_token(key.key_id, hashed, scope, self.parts.clock.now() + lifetime)

    @verb
    def stream_access(self, token: str, *, expired_ok: bool = False) -> tuple[Principal, str]:
        """The read-only principal and the scope a stream token opens, or
        :class:`NotAuthenticatedError` for a malformed, forged or expired token or a revoked
        key (``expired_ok``: an open stream asks whether its key still holds, not whether
        its token could still open one)."""
        presented = parse_stream_token(token)
        found = self.parts.store.access.find_key(presented.key_id)
        if found is None or not presented.valid_for(found[1]):
            raise NotAuthenticatedError("the stream token is unknown")
        key = found[0]
        if key.revoked_at is not None:
            raise NotAuthenticatedError(f"the API key {key.key_id} was revoked")
        if not expired_ok and presented.expired(self.parts.clock.now()):
            raise NotAuthenticatedError(
                "the stream token has expired",
                fix="mint a new one with POST /v1/stream-tokens and reconnect with ?after=",
            )
        reader = Principal(key.tenant_id, key.name, frozenset(), via=f"stream:{key.key_id}")
        return reader, presented.scope

    @verb
    def open_session(
        self, token: str, *, lifetime: timedelta = LIFETIME, idle: timedelta = IDLE
    ) -> tuple[str, Principal]:
        """Log in with an API key: a new session of the key's principal, which lasts
        ``lifetime`` from now and ends after ``idle`` without a request. Returns the session's
        token (what a cookie carries instead of the key; only its hash is stored) and the
        principal, whose ``via`` names the session. A malformed, unknown or revoked key is
        :class:`NotAuthenticatedError`, and nothing is written."""
        principal = self.keys.authenticate(token)
        key_id, _ = parse_token(token)
        now = self.parts.clock.now()
        session, hashed, session_token = new_session(
            principal.tenant_id, key_id, now, lifetime=lifetime, idle=idle
        )
        self.parts.store.access.create_session(session, hashed, now)
        return session_token, replace(principal, via=session.via)

    @verb
    def session_principal(self, token: str, *, touch: bool = True) -> Principal:
        """The principal a presented session token speaks for (``via``: the session), or
        :class:`NotAuthenticatedError` when it is malformed, unknown, ended (logout, its key
        revoked), expired or idle too long; a session found over is ended here. With
        ``touch`` the request counts as use (the idle time starts again); a live stream that
        only checks its session passes ``touch=False``."""
        session_id, secret = parse_session_token(token)
        found = self.parts.store.access.find_session(session_id)
        if found is None or not matches(secret, found[1]):
            raise NotAuthenticatedError("the session is unknown", fix="log in again")
        session, now = found[0], self.parts.clock.now()
        why = session.over(now)
        stored = self.parts.store.access.find_key(session.key_id)
        key = stored[0] if stored is not None else None
        if key is None or key.revoked_at is not None:
            why = why or "revoked"
        if why is not None or key is None:
            why = why or "revoked"
            if session.ended_at is None:
                self.parts.store.access.end_session(session.tenant_id, session_id, why, now)
            raise NotAuthenticatedError(f"the session ended ({why})", fix="log in again")
        if touch and session.stale(now):
            self.parts.store.access.touch_session(session_id, now)
        return replace(key.principal, via=session.via)

    @verb
    def end_session(self, token: str) -> Session | None:
        """Log out: end the session of a presented token (idempotent) and return it; None for
        a malformed or unknown token (nothing to end)."""
        try:
            session_id, secret = parse_session_token(token)
        except NotAuthenticatedError:
            return None
        found = self.parts.store.access.find_session(session_id)
        if found is None or not matches(secret, found[1]):
            return None
        tenant_id = found[0].tenant_id
        return self.parts.store.access.end_session(
            tenant_id, session_id, "logout", self.parts.clock.now()
        )

    @verb
    def sessions(
        self, *, tenant: Tenant = DEFAULT_TENANT, key_id: str | None = None, ended: bool = False
    ) -> list[Session]:
        """The tenant's sessions not ended (and ended ones with ``ended``), of one key or all,
        oldest first (never their secrets)."""
        return self.parts.store.access.list_sessions(tenant_of(tenant), key_id=key_id, ended=ended)

    def failed_check(
        self, subjects: Sequence[str], *, policy: ThrottlePolicy | None = None
    ) -> float:
        """Count one failed credential check against each of ``subjects`` (``addr:<address>``,
        ``key:<key id>``) by the runtime's clock, in the store, so every process on the
        database counts once; the seconds the longest-waiting of them must now wait (0: none:
        refuse the check as usual). Valid credentials are never counted nor made to wait."""
        now = self.parts.clock.now()
        rule = policy or ThrottlePolicy()
        return rule.wait(self.parts.store.throttle.failed(subjects, now, rule), now)
