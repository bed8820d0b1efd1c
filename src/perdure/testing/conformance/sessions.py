"""Dashboard sessions, on every backend: stored hashed, found by id, touched, ended once, and
ended with their key."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import KeyNotFoundError
from perdure.core.keys import matches, new_key
from perdure.core.sessions import new_session, parse_session_token
from perdure.store.base import Store
from perdure.testing.conformance.support import needs


@pytest.fixture(autouse=True)
def needs_access_wing(store: Store) -> None:
    """Every test here needs the access wing: skipped on a store without."""
    needs(store, "access")


def _key(store: Store, clock: FakeClock, tenant: str = "t1", name: str = "ops") -> str:
    made = new_key(tenant, name, frozenset({"approver"}), clock.now())
    store.access.create_key(made.key, made.secret_hash, clock.now())
    return made.key.key_id


def test_a_session_is_stored_hashed_found_by_id_touched_and_ended_once(
    store: Store, clock: FakeClock
) -> None:
    key_id = _key(store, clock)
    session, hashed, token = new_session("t1", key_id, clock.now(), idle=timedelta(minutes=5))
    store.access.create_session(session, hashed, clock.now())
    session_id, secret = parse_session_token(token)
    found = store.access.find_session(session_id)
    assert found is not None
    assert found[0] == session and found[1] != secret and matches(secret, found[1])
    assert found[0].over(clock.now()) is None
    clock.advance(60)
    store.access.touch_session(session_id, clock.now())
    touched = store.access.find_session(session_id)
    assert touched is not None and touched[0].seen_at == clock.now()
    store.access.touch_session(session_id, clock.now() - timedelta(seconds=30))  # never backwards
    again = store.access.find_session(session_id)
    assert again is not None and again[0].seen_at == clock.now()
    assert (
        store.access.end_session("t2", session_id, "logout", clock.now()) is None
    )  # another tenant
    first = store.access.end_session("t1", session_id, "logout", clock.now())
    clock.advance(5)
    repeat = store.access.end_session("t1", session_id, "idle", clock.now())
    assert first is not None and first.ended_why == "logout" and first.ended_at is not None
    assert repeat == first  # the first end and its reason stay
    store.access.touch_session(session_id, clock.now())  # an ended session is not used again
    ended = store.access.find_session(session_id)
    assert ended is not None and ended[0].seen_at == touched[0].seen_at
    assert ended[0].over(clock.now()) == "logout"
    assert store.access.find_session("0" * 16) is None
    assert store.access.end_session("t1", "0" * 16, "logout", clock.now()) is None


def test_a_session_expires_and_idles_out_by_its_own_times(store: Store, clock: FakeClock) -> None:
    key_id = _key(store, clock)
    lifetime, idle = timedelta(hours=1), timedelta(minutes=10)
    session, hashed, _ = new_session("t1", key_id, clock.now(), lifetime=lifetime, idle=idle)
    store.access.create_session(session, hashed, clock.now())
    stored = store.access.find_session(session.session_id)
    assert stored is not None and stored[0].idle_seconds == 600
    assert stored[0].expires_at == clock.now() + lifetime
    assert stored[0].over(clock.now() + idle - timedelta(seconds=1)) is None
    assert stored[0].over(clock.now() + idle) == "idle"
    assert stored[0].over(clock.now() + lifetime) == "expired"


def test_revoking_a_key_ends_its_open_sessions_and_no_other(store: Store, clock: FakeClock) -> None:
    ops, other = _key(store, clock), _key(store, clock, name="other")
    mine = [new_session("t1", ops, clock.now()) for _ in range(2)]
    theirs = new_session("t1", other, clock.now())
    for session, hashed, _ in [*mine, theirs]:
        store.access.create_session(session, hashed, clock.now())
    store.access.end_session("t1", mine[0][0].session_id, "logout", clock.now())
    assert {s.session_id for s in store.access.list_sessions("t1", key_id=ops)} == {
        mine[1][0].session_id
    }
    clock.advance(1)
    store.access.revoke_key("t1", ops, clock.now())
    ended = {s.session_id: s for s in store.access.list_sessions("t1", key_id=ops, ended=True)}
    assert ended[mine[0][0].session_id].ended_why == "logout"  # kept its first reason
    assert ended[mine[1][0].session_id].ended_why == "revoked"
    assert ended[mine[1][0].session_id].ended_at == clock.now()
    assert [s.session_id for s in store.access.list_sessions("t1")] == [theirs[0].session_id]
    assert store.access.list_sessions("t2", ended=True) == []


def test_a_session_needs_a_live_key_of_its_tenant(store: Store, clock: FakeClock) -> None:
    key_id = _key(store, clock)
    for tenant, kid in (("t2", key_id), ("t1", "0" * 16)):
        session, hashed, _ = new_session(tenant, kid, clock.now())
        with pytest.raises(KeyNotFoundError):
            store.access.create_session(session, hashed, clock.now())
        assert store.access.find_session(session.session_id) is None
    store.access.revoke_key("t1", key_id, clock.now())
    session, hashed, _ = new_session("t1", key_id, clock.now())
    with pytest.raises(KeyNotFoundError):
        store.access.create_session(session, hashed, clock.now())
    assert store.access.list_sessions("t1", ended=True) == []
