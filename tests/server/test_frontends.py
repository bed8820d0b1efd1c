"""What a web app on another origin meets: CORS for the origins the server lists (preflights
answered, no credentials), and stream tokens that let an EventSource, which cannot send an
Authorization header, follow a run without putting the API key in a URL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from perdure import FakeClock
from perdure.core.errors import ConfigError
from perdure.server import create_app
from tests.server.conftest import Served, start_server, stop_server

APP = "https://app.example.com"


@pytest.fixture
def cors(served: Served) -> Iterator[str]:
    """A second server on the same runtime that lets :data:`APP` call it."""
    running = start_server(create_app(served.runtime, cors_origins=(APP,), recheck=0.1))
    yield f"http://127.0.0.1:{running.port}"
    stop_server(running)


def test_a_listed_origin_gets_its_preflight_answered_and_no_credentials(
    served: Served, cors: str
) -> None:
    preflight = {
        "Origin": APP,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    with httpx.Client(base_url=cors) as c:
        r = c.options("/v1/runs", headers=preflight)
        assert r.status_code == 204
        assert r.headers["access-control-allow-origin"] == APP
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "Authorization" in r.headers["access-control-allow-headers"]
        assert "access-control-allow-credentials" not in r.headers
        token = served.tokens["admin"]
        listed = c.get("/v1/runs", headers={"Origin": APP, "Authorization": f"Bearer {token}"})
        assert listed.status_code == 200 and listed.headers["access-control-allow-origin"] == APP
        assert "Origin" in listed.headers["vary"]
        refused = c.get("/v1/runs", headers={"Origin": APP})  # errors are readable too
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == APP


def test_another_origin_and_the_dashboard_get_no_cors(served: Served, cors: str) -> None:
    evil = {"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}
    with httpx.Client(base_url=cors) as c:
        r = c.options("/v1/runs", headers=evil)
        assert r.status_code == 403 and r.json()["error"]["code"] == "forged_request"
        assert "--cors-origin" in r.json()["error"]["fix"]
        token = served.tokens["admin"]
        read = c.get(
            "/v1/me", headers={"Origin": evil["Origin"], "Authorization": f"Bearer {token}"}
        )
        assert "access-control-allow-origin" not in read.headers
        page = c.get("/login", headers={"Origin": APP})
        assert "access-control-allow-origin" not in page.headers
    with httpx.Client(base_url=served.url) as c:  # a server that lists no origin
        r = c.options("/v1/runs", headers={**evil, "Origin": APP})
        assert r.status_code == 403


def test_an_origin_that_is_not_one_is_refused_at_start(served: Served) -> None:
    for bad in ("app.example.com", "https://app.example.com/", "ftp://x", "*"):
        with pytest.raises(ConfigError):
            create_app(served.runtime, cors_origins=(bad,))


def mint(served: Served, who: str = "reader", **body: object) -> httpx.Response:
    with served.client(who) as c:
        return c.post("/v1/stream-tokens", json=body)


def test_a_stream_token_opens_its_run_stream_only(served: Served) -> None:
    run_id = served.runtime.start("plain", tenant="t1").run_id
    other = served.runtime.start("plain", tenant="t1").run_id
    served.runtime.run_until_idle()
    made = mint(served, run_id=run_id)
    assert made.status_code == 201 and made.json()["scope"] == f"run:{run_id}"
    token = made.json()["token"]
    assert token.startswith("pst_") and served.tokens["reader"].split("_")[2] not in token
    with httpx.Client(base_url=served.url) as c:
        r = c.get(f"/v1/runs/{run_id}/events", params={"token": token})
        assert r.status_code == 200 and b"event: end" in r.content
        wrong = c.get(f"/v1/runs/{other}/events", params={"token": token})
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "not_authorized"
        feed = c.get("/v1/events", params={"token": token})
        assert feed.status_code == 403
        api = c.get("/v1/runs", params={"token": token})  # streams only: never the API
        assert api.status_code == 401
        forged = c.get(f"/v1/runs/{run_id}/events", params={"token": token[:-2] + "AA"})
        assert forged.status_code == 401
        key = c.get(f"/v1/runs/{run_id}/events", params={"token": served.tokens["reader"]})
        assert key.status_code == 401 and "URL" in key.json()["error"]["message"]
    with served.client("other") as c:  # another tenant's run cannot be named
        assert c.post("/v1/stream-tokens", json={"run_id": run_id}).status_code == 404


def test_a_stream_token_expires_for_new_streams(served: Served, clock: FakeClock) -> None:
    run_id = served.runtime.start("plain", tenant="t1").run_id
    served.runtime.run_until_idle()
    token = mint(served, run_id=run_id, seconds=60).json()["token"]
    clock.advance(61)
    with httpx.Client(base_url=served.url) as c:
        r = c.get(f"/v1/runs/{run_id}/events", params={"token": token})
    assert r.status_code == 401 and "expired" in r.json()["error"]["message"]
    assert "POST /v1/stream-tokens" in r.json()["error"]["fix"]


def test_revoking_the_key_closes_a_stream_opened_with_its_token(served: Served) -> None:
    run_id = served.runtime.start("plain", tenant="t1").run_id  # PENDING: its stream stays open
    token = mint(served, run_id=run_id).json()["token"]
    with (
        httpx.Client(base_url=served.url, timeout=30) as c,
        c.stream("GET", f"/v1/runs/{run_id}/events", params={"token": token}) as r,
    ):
        lines = r.iter_lines()
        assert next(line for line in lines if line.startswith("data:"))
        served.runtime.keys.revoke(served.tokens["reader"].split("_")[1], tenant="t1")
        closing = [line for line in lines if line.startswith("event:")]
    assert closing == ["event: closed"]


def test_a_token_for_the_feed_or_a_message(served: Served) -> None:
    feed = mint(served).json()
    assert feed["scope"] == "events"
    message = mint(served, message_id="m1").json()
    assert message["scope"] == "message:m1"
    both = mint(served, run_id="r", message_id="m")
    assert both.status_code == 400 and "not both" in both.json()["error"]["message"]
    with (
        httpx.Client(base_url=served.url) as c,
        c.stream("GET", "/v1/events", params={"token": feed["token"]}) as r,
    ):
        assert r.status_code == 200
