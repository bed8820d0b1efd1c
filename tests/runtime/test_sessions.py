"""Dashboard sessions through the Runtime, on each backend: logging in with a key makes a
session that speaks for the key's principal; it ends at logout, when its key is revoked, after
its idle time and at its expiry, always by the injected clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure import FakeClock, Runtime
from perdure.core.errors import NotAuthenticatedError
from perdure.runtime.admin.credentials import Credentials


def test_a_session_speaks_for_the_key_until_logout(runtime: Runtime) -> None:
    key = runtime.keys.create("alice", tenant="t1", roles=["approver"])
    token, principal = Credentials(runtime.parts).open_session(key.token)
    assert token.startswith("pds_") and key.token not in token
    assert (principal.tenant_id, principal.subject, principal.roles) == (
        "t1",
        "alice",
        frozenset({"approver"}),
    )
    session_id = token.split("_")[1]
    assert principal.via == f"session:{session_id}"
    assert runtime.keys.authenticate(key.token).via == f"key:{key.key.key_id}"
    assert Credentials(runtime.parts).session_principal(token) == principal
    with pytest.raises(NotAuthenticatedError):
        runtime.keys.authenticate(token)  # a session token is not a key
    with pytest.raises(NotAuthenticatedError):
        Credentials(runtime.parts).session_principal(key.token)  # and a key is not a session
    with pytest.raises(NotAuthenticatedError):
        Credentials(runtime.parts).session_principal(token[:-4] + "AAAA")  # a wrong secret
    ended = Credentials(runtime.parts).end_session(token)
    assert ended is not None and ended.ended_why == "logout"
    with pytest.raises(NotAuthenticatedError, match="logout"):
        Credentials(runtime.parts).session_principal(token)
    assert Credentials(runtime.parts).end_session(token) == ended  # idempotent
    assert Credentials(runtime.parts).end_session("pds_nonsense") is None
    assert runtime.keys.authenticate(key.token).subject == "alice"  # logging out keeps the key


def test_revoking_the_key_ends_its_sessions(runtime: Runtime) -> None:
    key = runtime.keys.create("alice", tenant="t1")
    tokens = [Credentials(runtime.parts).open_session(key.token)[0] for _ in range(2)]
    runtime.keys.revoke(key.key.key_id, tenant="t1")
    for token in tokens:
        with pytest.raises(NotAuthenticatedError, match="revoked"):
            Credentials(runtime.parts).session_principal(token)
    assert Credentials(runtime.parts).sessions(tenant="t1") == []
    assert {s.ended_why for s in Credentials(runtime.parts).sessions(tenant="t1", ended=True)} == {
        "revoked"
    }
    with pytest.raises(NotAuthenticatedError, match="revoked"):
        Credentials(runtime.parts).open_session(key.token)


def test_a_session_idles_out_and_expires_by_the_clock(runtime: Runtime, clock: FakeClock) -> None:
    key = runtime.keys.create("alice", tenant="t1")
    idle = timedelta(minutes=10)
    token, _ = Credentials(runtime.parts).open_session(
        key.token, lifetime=timedelta(hours=1), idle=idle
    )
    for _ in range(6):  # used every 9 minutes, it stays live until its lifetime is over
        clock.advance(9 * 60)
        assert Credentials(runtime.parts).session_principal(token).subject == "alice"
    clock.advance(9 * 60)  # 63 minutes after login
    with pytest.raises(NotAuthenticatedError, match="expired"):
        Credentials(runtime.parts).session_principal(token)
    other, _ = Credentials(runtime.parts).open_session(key.token, idle=idle)
    clock.advance(5 * 60)
    Credentials(runtime.parts).session_principal(other, touch=False)  # a stream's check is not use
    clock.advance(5 * 60)
    with pytest.raises(NotAuthenticatedError, match="idle"):
        Credentials(runtime.parts).session_principal(other)
    assert {s.ended_why for s in Credentials(runtime.parts).sessions(tenant="t1", ended=True)} == {
        "expired",
        "idle",
    }
