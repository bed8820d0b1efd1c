"""The server's defences over HTTP, on both backends: the API takes bearer keys only and JSON
bodies only; the dashboard's forms need their own origin, a form body and the session's CSRF
token; refusals carry their real status; sessions are not keys and end at logout, revocation
and idle time, closing their streams; failed keys earn a growing wait by the runtime's clock;
every response of every route carries the security headers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing, contextmanager

import httpx
import pytest
from starlette.routing import Route

from perdure import FakeClock, Runtime
from perdure.core.model import RunStatus
from perdure.runtime.admin.credentials import Credentials
from perdure.server import create_app
from perdure.server.headers import CSP
from tests.server.conftest import WORKFLOWS, Served, start_server, stop_server
from tests.server.test_api import start, waiting_job
from tests.server.test_sse import frames

HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


def csrf_of(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None, page.text[:500]
    return found.group(1)


def browser(served: Served) -> httpx.Client:
    """A client that keeps cookies, as a browser does, and follows no redirect."""
    return httpx.Client(base_url=served.url, timeout=30)


def log_in(served: Served, who: str) -> httpx.Client:
    c = browser(served)
    form = c.get("/login")
    r = c.post(
        "/login",
        data={"key": served.tokens[who], "csrf": csrf_of(form)},
        headers={"Origin": served.url, "Sec-Fetch-Site": "same-origin"},
    )
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    return c


def same_origin(served: Served) -> dict[str, str]:
    return {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}


def assert_headers(r: httpx.Response, what: str) -> None:
    for name, value in HEADERS.items():
        assert r.headers.get(name) == value, (what, r.status_code, name, dict(r.headers))


def test_the_api_takes_no_cookie_only_a_bearer_key(served: Served) -> None:
    run_id = waiting_job(served)
    with closing(log_in(served, "approver")) as c:
        assert c.get("/").status_code == 200  # the cookie works on the dashboard
        for method, path, body in [
            ("GET", "/v1/runs", None),
            ("GET", "/v1/me", None),
            ("POST", f"/v1/runs/{run_id}/approve", {"comment": "forged"}),
            ("POST", f"/v1/runs/{run_id}/cancel", {}),
        ]:
            r = c.request(method, path, json=body)
            assert r.status_code == 401, (path, r.text)
            assert r.json()["error"]["code"] == "not_authenticated"
            assert "cookie is not accepted" in r.json()["error"]["message"]
    assert served.runtime.get(run_id, tenant="t1").status is RunStatus.WAITING_APPROVAL


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_an_api_body_that_is_not_declared_json_is_415_and_changes_nothing(
    served: Served, content_type: str | None
) -> None:
    run_id = waiting_job(served)
    before = served.runtime.get(run_id, tenant="t1")
    headers = {"Content-Type": content_type} if content_type else {}
    body = b'{"workflow": "plain", "comment": "x", "name": "paid", "reason": "x"}'
    with served.client("admin") as c:
        for path in ("/v1/runs", *(f"/v1/runs/{run_id}/{v}" for v in ("approve", "reject"))):
            r = c.post(path, content=body, headers=headers)
            assert r.status_code == 415, (path, r.text)
            assert r.json()["error"]["code"] == "unsupported_media_type"
        for verb in ("cancel", "signals", "resume", "fail"):
            r = c.post(f"/v1/runs/{run_id}/{verb}", content=body, headers=headers)
            assert r.status_code == 415, (verb, r.text)
        r = c.post("/v1/keys", content=b'{"name": "sneaky"}', headers=headers)
        assert r.status_code == 415
        assert c.post(f"/v1/runs/{run_id}/cancel").status_code == 200  # no body, no type: fine
    assert served.runtime.runs(tenant="t1") == [served.runtime.get(run_id, tenant="t1")]
    assert before.status is RunStatus.WAITING_APPROVAL
    assert {k.name for k in served.runtime.keys.list(tenant="t1")} == {
        "admin",
        "approver",
        "reader",
    }


def test_a_dashboard_form_needs_its_origin_a_form_body_and_the_session_token(
    served: Served,
) -> None:
    run_id = waiting_job(served)
    other = log_in(served, "admin")
    with closing(log_in(served, "approver")) as c:
        token = csrf_of(c.get(f"/runs/{run_id}"))
        foreign = csrf_of(other.get(f"/runs/{run_id}"))
        path = f"/runs/{run_id}/approve"
        mine = same_origin(served)
        port = served.url.rsplit(":", 1)[1]
        refused = [
            ({}, {"csrf": token}, 403),  # neither Origin nor Sec-Fetch-Site
            ({"Origin": "http://127.0.0.1:1"}, {"csrf": token}, 403),  # another port
            ({"Origin": f"http://localhost:{port}"}, {"csrf": token}, 403),  # another host name
            ({"Origin": "null"}, {"csrf": token}, 403),  # a sandboxed or referrer-less page
            ({"Sec-Fetch-Site": "same-site", "Origin": served.url}, {"csrf": token}, 403),
            ({"Sec-Fetch-Site": "cross-site"}, {"csrf": token}, 403),
            (mine, {}, 403),  # no token
            (mine, {"csrf": "forged"}, 403),
            (mine, {"csrf": foreign}, 403),  # another session's token
        ]
        for headers, data, status in refused:
            r = c.post(path, data=data, headers=headers)
            assert r.status_code == status, (headers, data, r.text[:300])
            assert "forged_request" in r.text and r.headers["content-type"].startswith("text/html")
            assert_headers(r, "refusal")
        r = c.post(path, content=f"csrf={token}", headers={**mine, "Content-Type": "text/plain"})
        assert r.status_code == 415 and "unsupported_media_type" in r.text
        assert served.runtime.get(run_id, tenant="t1").status is RunStatus.WAITING_APPROVAL
        r = c.post(path, data={"csrf": token, "comment": "mine"}, headers=mine)
        assert r.status_code == 303, r.text
    other.close()
    (decided,) = served.runtime.approvals(tenant="t1", pending=False)
    assert (decided.decided_by, decided.comment) == ("approver", "mine")
    (decision,) = served.runtime.activity.audit(tenant="t1")
    assert decision.via is not None and decision.via.startswith("session:")
    assert served.runtime.get(run_id, tenant="t1").status is RunStatus.RUNNING


def test_a_refused_dashboard_action_carries_its_real_status(served: Served) -> None:
    run_id = waiting_job(served)
    with closing(log_in(served, "reader")) as c:
        token = csrf_of(c.get("/"))
        r = c.post(f"/runs/{run_id}/approve", data={"csrf": token}, headers=same_origin(served))
        assert r.status_code == 403 and "not_authorized" in r.text
        r = c.post("/runs/nope/cancel", data={"csrf": token}, headers=same_origin(served))
        assert r.status_code == 404 and "run_not_found" in r.text
    with browser(served) as c:
        r = c.post(f"/runs/{run_id}/cancel", data={}, headers=same_origin(served))
        assert r.status_code == 401 and "not_authenticated" in r.text
        r = c.get("/")
        assert r.status_code == 303 and r.headers["location"] == "/login"


def test_login_and_logout_cannot_be_forged(served: Served) -> None:
    key = served.tokens["reader"]
    with browser(served) as c:  # no nonce cookie: a form posted from elsewhere
        r = c.post("/login", data={"key": key, "csrf": "x"}, headers=same_origin(served))
        assert r.status_code == 403 and "no CSRF token" in r.text
        token = csrf_of(c.get("/login"))
        r = c.post(
            "/login", data={"key": key, "csrf": token}, headers={"Origin": "http://127.0.0.1:1"}
        )
        assert r.status_code == 403 and "perdure_session" not in r.headers.get("set-cookie", "")
        r = c.post("/login", content=f"key={key}&csrf={token}", headers=same_origin(served))
        assert r.status_code == 415  # no form type declared
    assert Credentials(served.runtime.parts).sessions(tenant="t1") == []
    with closing(log_in(served, "reader")) as c:
        r = c.post("/logout", data={}, headers=same_origin(served))
        assert r.status_code == 403
        r = c.post("/logout", data={"csrf": csrf_of(c.get("/"))}, headers={"Origin": "null"})
        assert r.status_code == 403
        assert c.get("/").status_code == 200  # still logged in
        r = c.post("/logout", data={"csrf": csrf_of(c.get("/"))}, headers=same_origin(served))
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert c.get("/").status_code == 303
    (ended,) = Credentials(served.runtime.parts).sessions(tenant="t1", ended=True)
    assert ended.ended_why == "logout"
    assert served.runtime.keys.authenticate(key).subject == "reader"  # the key itself lives on


def test_the_cookie_is_a_session_never_the_key(served: Served) -> None:
    with browser(served) as c:
        token = csrf_of(c.get("/login"))
        r = c.post(
            "/login",
            data={"key": served.tokens["approver"], "csrf": token},
            headers=same_origin(served),
        )
        cookie = next(v for v in r.headers.get_list("set-cookie") if "perdure_session=" in v)
        value = cookie.split(";")[0].split("=", 1)[1]
        assert value.startswith("pds_") and served.tokens["approver"] not in cookie
        attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= attributes
        assert "secure" not in attributes
        r = c.get("/v1/me", headers={"Authorization": f"Bearer {value}"})
        assert r.status_code == 401  # a stolen cookie is not an API key


def test_cookies_are_secure_with_the_host_prefix_when_asked(
    server_db: str, clock: FakeClock
) -> None:
    rt = Runtime(server_db, clock=clock, workflows=WORKFLOWS, owner="server")
    token = rt.keys.create("alice", tenant="t1").token
    running = start_server(create_app(rt, secure_cookies=True))
    url = f"http://127.0.0.1:{running.port}"
    try:
        with httpx.Client(base_url=url, timeout=30) as c:
            form = c.get("/login")
            nonce = form.headers["set-cookie"]
            assert nonce.startswith("__Host-perdure_login=") and "Secure" in nonce
            c.cookies.set("__Host-perdure_login", nonce.split(";")[0].split("=", 1)[1])
            r = c.post(
                "/login",
                data={"key": token, "csrf": csrf_of(form)},
                headers={"Origin": "https://" + url.split("://")[1]},  # behind a TLS proxy
            )
            assert r.status_code == 303, r.text
            cookie = next(v for v in r.headers.get_list("set-cookie") if "session" in v)
            assert cookie.startswith("__Host-perdure_session=")
            assert {"secure", "httponly", "samesite=strict", "path=/"} <= {
                a.strip().lower() for a in cookie.split(";")[1:]
            }
    finally:
        stop_server(running)
        rt.close()


def test_every_route_answers_with_the_security_headers(served: Served) -> None:
    app = create_app(served.runtime)  # the same routes as the server under test
    run_id = waiting_job(served)
    paths = {"run_id": run_id, "key:path": "t1/x/y/z", "message_id": "m-1", "key_id": "k"}
    session = log_in(served, "admin")
    clients = {
        "nobody": browser(served),
        "bearer": served.client("admin"),
        "cookie": session,
    }
    seen = 0
    for route in app.routes:
        assert isinstance(route, Route)
        path = route.path
        for name, value in paths.items():
            path = path.replace("{" + name + "}", value)
        for method in sorted(route.methods or getattr(route.endpoint, "allow", ())):
            for who, c in clients.items():
                with c.stream(method, path, headers={"Sec-Fetch-Site": "same-origin"}) as r:
                    assert_headers(r, f"{who} {method} {route.path}")
                    seen += 1
    with served.client("admin") as c:
        assert_headers(c.get("/nowhere"), "404")
        assert_headers(c.delete("/healthz"), "405")
    assert session.get("/").headers["content-type"].startswith("text/html")
    for c in clients.values():
        c.close()
    assert seen >= 3 * len(app.routes)


def test_an_unexpected_failure_is_a_json_500_with_the_headers(served: Served) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the disk caught fire")

    served.runtime.activity.run_counts = boom  # type: ignore[method-assign]
    with served.client("admin") as c:
        r = c.get("/v1/runs")
    assert r.status_code == 500 and r.json()["error"]["code"] == "perdure_error"
    assert "fire" not in r.text  # the cause stays in the log
    assert_headers(r, "500")


@contextmanager
def following(c: httpx.Client, path: str) -> Iterator[Iterator[object]]:
    with c.stream("GET", path, headers={"Sec-Fetch-Site": "same-origin"}) as r:
        assert r.status_code == 200, r.read()
        yield iter(frames(r))


def closed(events: Iterator[object]) -> dict[str, str]:
    """The data of the ``closed`` event the stream ends with (httpx's read timeout bounds it)."""
    for f in events:
        if getattr(f, "event", None) == "closed":
            data: dict[str, str] = f.data  # type: ignore[attr-defined]
            return data
    raise AssertionError("the stream ended without closing")


def test_revoking_a_key_closes_its_open_streams(served: Served) -> None:
    run_id = waiting_job(served)
    key_id = served.tokens["reader"].split("_")[1]
    with served.client("reader") as c:
        with (
            following(c, "/v1/events") as feed,
            following(c, f"/v1/runs/{run_id}/events") as run,
            following(c, "/v1/messages/m-1/stream") as deltas,
        ):
            served.runtime.keys.revoke(key_id, tenant="t1")
            for stream in (feed, run, deltas):
                assert closed(stream)["code"] == "not_authenticated"
        assert c.get("/v1/events").status_code == 401


def test_logout_and_revocation_close_the_dashboards_streams(served: Served) -> None:
    run_id = waiting_job(served)
    c = log_in(served, "approver")
    other = log_in(served, "reader")
    with following(c, "/events") as feed, following(other, f"/runs/{run_id}/events") as run:
        r = c.post("/logout", data={"csrf": csrf_of(c.get("/"))}, headers=same_origin(served))
        assert r.status_code == 303
        assert "logout" in closed(feed)["message"]
        served.runtime.keys.revoke(served.tokens["reader"].split("_")[1], tenant="t1")
        assert "revoked" in closed(run)["message"]
    r = other.get(f"/runs/{run_id}/events", headers={"Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 401
    c.close()
    other.close()


def test_a_session_that_idles_out_closes_its_stream_and_goes_to_login(
    served: Served, clock: FakeClock
) -> None:
    c = log_in(served, "approver")
    with following(c, "/events") as feed:
        clock.advance(31 * 60)
        assert "idle" in closed(feed)["message"]
    r = c.get("/")
    assert r.status_code == 303 and r.headers["location"] == "/login"
    c.close()


def test_the_dashboards_streams_refuse_other_sites(served: Served) -> None:
    run_id = start(served)
    with closing(log_in(served, "approver")) as c:
        for site in ("same-site", "cross-site"):
            for path in ("/events", f"/runs/{run_id}/events"):
                r = c.get(path, headers={"Sec-Fetch-Site": site})
                assert r.status_code == 403 and r.json()["error"]["code"] == "forged_request"
