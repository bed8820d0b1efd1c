"""The Runtime's part for what is done from outside the workers: API keys and who a key
speaks for, the event feeds that live views follow, the counts operators watch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from perdure.core.audit import AUDITED_TYPES, Decision, decision_of
from perdure.core.errors import NotAuthenticatedError
from perdure.core.ids import checked_id
from perdure.core.keys import ApiKey, NewKey, checked_roles, matches, new_key, parse_token
from perdure.core.model import JSON, Event, Principal
from perdure.core.observed import (
    EffectCount,
    PeriodCount,
    Queue,
    RunCount,
    SpendCount,
    StepLatency,
    latencies,
)
from perdure.core.seal import open_state
from perdure.core.serde import loads
from perdure.core.sessions import IDLE, LIFETIME, Session, new_session, parse_session_token
from perdure.core.stream_tokens import StreamToken
from perdure.core.stream_tokens import mint as mint_stream_token
from perdure.core.stream_tokens import parse as parse_stream_token
from perdure.core.throttle import ThrottlePolicy
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of


class Operator:
    """Keys, feeds and counts; the
    :class:`~perdure.runtime.runtime.Runtime` exposes its methods."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts

    # -- keys -----------------------------------------------------------------------------------

    def create_key(
        self, name: str, *, tenant: Tenant = DEFAULT_TENANT, roles: Sequence[str] = ()
    ) -> NewKey:
        """Make an API key for ``tenant`` named ``name`` (a person or a service) holding
        ``roles``. The returned ``token`` is the only time the secret is seen: only its hash is
        stored. A second live key of the same name in the tenant is refused."""
        checked_id(name, "key name")
        made = new_key(tenant_of(tenant), name, checked_roles(tuple(roles)), self.parts.clock.now())
        self.parts.store.access.create_key(made.key, made.secret_hash, self.parts.clock.now())
        return made

    def keys(self, *, tenant: Tenant = DEFAULT_TENANT, revoked: bool = False) -> list[ApiKey]:
        """The tenant's live keys (and revoked ones with ``revoked``), oldest first."""
        return self.parts.store.access.list_keys(tenant_of(tenant), revoked=revoked)

    def revoke_key(self, key_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> ApiKey:
        """Revoke a key at once (idempotent); :class:`KeyNotFoundError` for another
        tenant's key."""
        return self.parts.store.access.revoke_key(tenant_of(tenant), key_id, self.parts.clock.now())

    def authenticate(self, token: str) -> Principal:
        """The principal a presented key speaks for (its tenant, name and roles), or
        :class:`NotAuthenticatedError` for a malformed, unknown or revoked key."""
        key_id, secret = parse_token(token)
        found = self.parts.store.access.find_key(key_id)
        if found is None or not matches(secret, found[1]):
            raise NotAuthenticatedError("the API key is unknown")
        key = found[0]
        if key.revoked_at is not None:
            raise NotAuthenticatedError(f"the API key {key_id} was revoked")
        return key.principal

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

    # -- sessions -------------------------------------------------------------------------------

    def open_session(
        self, token: str, *, lifetime: timedelta = LIFETIME, idle: timedelta = IDLE
    ) -> tuple[str, Principal]:
        """Log in with an API key: a new session of the key's principal, which lasts
        ``lifetime`` from now and ends after ``idle`` without a request. Returns the session's
        token (what a cookie carries instead of the key; only its hash is stored) and the
        principal, whose ``via`` names the session. A malformed, unknown or revoked key is
        :class:`NotAuthenticatedError`, and nothing is written."""
        principal = self.authenticate(token)
        key_id, _ = parse_token(token)
        now = self.parts.clock.now()
        session, hashed, session_token = new_session(
            principal.tenant_id, key_id, now, lifetime=lifetime, idle=idle
        )
        self.parts.store.access.create_session(session, hashed, now)
        return session_token, replace(principal, via=session.via)

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

    def sessions(
        self, *, tenant: Tenant = DEFAULT_TENANT, key_id: str | None = None, ended: bool = False
    ) -> list[Session]:
        """The tenant's sessions not ended (and ended ones with ``ended``), of one key or all,
        oldest first (never their secrets)."""
        return self.parts.store.access.list_sessions(tenant_of(tenant), key_id=key_id, ended=ended)

    def state(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> dict[str, JSON]:
        """The run's current state fields as JSON (opened with the keyring when state is
        sealed; :class:`IntegrityError` when a field was tampered with). Read-only; needs no
        workflow loaded."""
        tenant_id = tenant_of(tenant)
        run = self.parts.store.get_run(tenant_id, run_id)  # another tenant's run: not found
        stored = self.parts.store.load_state(tenant_id, run_id)
        fields, _ = open_state(
            self.parts.keyring, tenant_id, run_id, stored, seal=run.state_seal, steps=run.steps_done
        )
        return {name: loads(value) for name, value in sorted(fields.items())}

    # -- feeds ----------------------------------------------------------------------------------

    def events(
        self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT, after: int = 0, limit: int = 1000
    ) -> list[Event]:
        """The run's events with ``seq > after``, oldest first (what a live view resumes from:
        ``seq`` is the stream position)."""
        return self.parts.store.events(tenant_of(tenant), run_id, after=after, limit=limit)

    def feed(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        after: int = 0,
        types: Sequence[str] = (),
        workflow: str | None = None,
        limit: int = 1000,
    ) -> list[Event]:
        """Events of every run of a tenant with ``seq > after``, oldest first, filtered by
        event type (any of) and workflow."""
        return self.parts.store.activity.tenant_events(
            tenant_of(tenant), after=after, types=types, workflow=workflow, limit=limit
        )

    def audit(
        self, *, tenant: Tenant = DEFAULT_TENANT, after: int = 0, limit: int = 100
    ) -> list[Decision]:
        """The tenant's audit trail: decisions on its runs (approve, reject, resolve, resume,
        fail, cancel) with who made them and the credential they came through, oldest first,
        from event ``after`` on, at most ``limit`` (see :mod:`perdure.core.audit`)."""
        tenant_id, cursor = tenant_of(tenant), after
        found: list[Decision] = []
        while len(found) < limit:
            page = self.parts.store.activity.tenant_events(
                tenant_id, after=cursor, types=AUDITED_TYPES, limit=1000
            )
            found += [d for e in page if (d := decision_of(e)) is not None]
            if len(page) < 1000:
                break
            cursor = page[-1].seq
        return found[:limit]

    # -- counts ---------------------------------------------------------------------------------

    def run_counts(self, *, tenant: Tenant | None = None) -> list[RunCount]:
        """Runs by tenant, workflow and status (one tenant, or every tenant with None)."""
        return self.parts.store.activity.run_counts(None if tenant is None else tenant_of(tenant))

    def runs_by_period(
        self, *, tenant: Tenant = DEFAULT_TENANT, since: datetime, daily: bool = False
    ) -> list[PeriodCount]:
        """How many of the tenant's runs created since ``since`` are in each status now, by
        the UTC hour (or day, ``daily``) they were created in, oldest first."""
        return self.parts.store.activity.runs_by_period(tenant_of(tenant), since, daily=daily)

    def step_latencies(
        self, *, tenant: Tenant = DEFAULT_TENANT, since: datetime, limit: int = 10_000
    ) -> list[StepLatency]:
        """Percentiles of how long each step of each workflow took (start to committed
        boundary) in the tenant's runs created since ``since``, from the newest ``limit``
        committed steps."""
        found = self.parts.store.activity.step_timings(tenant_of(tenant), since, limit=limit)
        return latencies(found)

    def effect_counts(self, *, tenant: Tenant | None = None) -> list[EffectCount]:
        """Effects by tenant and status (one tenant, or every tenant with None)."""
        return self.parts.store.activity.effect_counts(
            None if tenant is None else tenant_of(tenant)
        )

    def moved_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str, str]]:
        """``(seq, tenant_id, run_id)`` of every event after ``after`` across tenants: how a
        stream hub learns which runs moved when the store cannot notify. Never show it to a
        caller: it is not scoped by tenant."""
        return self.parts.store.activity.events_since(after, limit=limit)

    def last_event_seq(self) -> int:
        """The highest event sequence number of the store (0 when there are none)."""
        return self.parts.store.activity.last_event_seq()

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """Block up to ``timeout`` seconds for committed events and return the
        ``(tenant_id, run_id)`` pairs that moved; None at once when the store cannot notify
        (SQLite: poll :meth:`moved_since` instead)."""
        return self.parts.store.activity.wait_for_events(timeout)

    def spend_counts(self, *, tenant: Tenant | None = None) -> list[SpendCount]:
        """Model tokens and cost recorded in the runs' budgets, by tenant and workflow."""
        return self.parts.store.activity.spend_counts(None if tenant is None else tenant_of(tenant))

    def queue(self) -> Queue:
        """Runs of every tenant claimable now, and since when the oldest has been."""
        return self.parts.store.activity.queue(self.parts.clock.now())
