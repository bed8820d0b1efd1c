"""Failed-key throttling through a real server, on each backend: a valid key is always
accepted, whoever fails beside it; failing checks still earn a growing wait (429 with
Retry-After, by the runtime's clock) per address and per key id; and two servers on one
database count the failures once."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from perdure import FakeClock, Runtime
from perdure.server import create_app
from tests.server.conftest import WORKFLOWS, Served, start_server, stop_server
from tests.server.test_security import browser, csrf_of, same_origin

BAD = "pdk_0123456789abcdef_" + "x" * 43


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def test_an_attacker_at_the_users_address_cannot_lock_the_user_out(served: Served) -> None:
    user = served.tokens["reader"]
    key_id = user.split("_")[1]
    with served.client(None) as c:
        for n in range(30):  # bad keys, and guesses at the user's own key id, from one address
            guess = BAD if n % 2 else f"pdk_{key_id}_" + "y" * 43
            assert c.get("/v1/runs", headers=bearer(guess)).status_code in (401, 429)
            r = c.get("/v1/runs", headers=bearer(user))
            assert r.status_code == 200, r.text
        assert c.get("/v1/me", headers=bearer(user)).json()["name"] == "reader"
    with browser(served) as c:  # the login form too
        token = csrf_of(c.get("/login"))
        for _ in range(10):
            c.post("/login", data={"key": BAD, "csrf": token}, headers=same_origin(served))
        r = c.post("/login", data={"key": user, "csrf": token}, headers=same_origin(served))
        assert r.status_code == 303


def test_guessing_keys_earns_a_growing_wait_by_address_and_by_key_id(
    served: Served, clock: FakeClock
) -> None:
    with served.client(None) as c:
        for _ in range(5):  # five are free
            assert c.get("/v1/runs", headers=bearer(BAD)).status_code == 401
        r = c.get("/v1/runs", headers=bearer(BAD))
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_attempts"
        assert r.headers["retry-after"] == "1"
        r = c.get("/v1/runs", headers=bearer("pdk_nonsense"))  # a malformed key: the address
        assert r.status_code == 429 and r.headers["retry-after"] == "2"  # it doubled
        clock.advance(2)
        assert c.get("/v1/runs", headers=bearer(BAD)).status_code == 429  # still remembered
        # Guesses at one key id from many addresses: that key id earns the wait.
        key_id = served.tokens["admin"].split("_")[1]
        guess = f"pdk_{key_id}_" + "y" * 43
        answers = [
            c.get("/v1/runs", headers=bearer(guess, **{"X-Forwarded-For": f"10.0.0.{n}"}))
            for n in range(6)
        ]
        assert [a.status_code for a in answers] == [401] * 5 + [429]
        fresh = {"X-Forwarded-For": "10.0.1.1"}
        assert c.get("/v1/runs", headers=bearer(served.tokens["admin"], **fresh)).status_code == 200


@pytest.fixture
def second_server(served: Served, clock: FakeClock) -> Iterator[str]:
    """Another server process's app on the same database: its own runtime, its own app."""
    rt = Runtime(served.runtime.store.url, clock=clock, workflows=WORKFLOWS, owner="server-2")
    running = start_server(create_app(rt, heartbeat=0.5, poll=0.02, recheck=0.1))
    yield f"http://127.0.0.1:{running.port}"
    stop_server(running)
    rt.close()


def test_two_servers_on_one_database_count_failed_keys_once(
    served: Served, second_server: str
) -> None:
    with httpx.Client(base_url=served.url) as a, httpx.Client(base_url=second_server) as b:
        statuses = [
            (a if n % 2 else b).get("/v1/runs", headers=bearer(BAD)).status_code for n in range(6)
        ]
        assert statuses == [401] * 5 + [429]  # the limit is reached once across both
        assert a.get("/v1/runs", headers=bearer(BAD)).status_code == 429
        assert b.get("/v1/runs", headers=bearer(served.tokens["reader"])).status_code == 200
