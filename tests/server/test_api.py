"""Every endpoint of the JSON API through a real uvicorn server: authentication, tenant
isolation and roles on every verb, idempotent starts, the run view, errors as JSON codes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure import FakeClock
from perdure.core.model import RunStatus
from tests.server.conftest import Served


def start(served: Served, workflow: str = "job", who: str = "admin", **body: object) -> str:
    with served.client(who) as c:
        r = c.post("/v1/runs", json={"workflow": workflow, **body})
    assert r.status_code == 201, r.text
    run_id: str = r.json()["run_id"]
    return run_id


def waiting_job(served: Served) -> str:
    """A job run advanced inline to its approval wait."""
    run_id = start(served, input={"ticks": 0, "amount": 7})
    served.runtime.run_until_idle()
    assert served.runtime.get(run_id, tenant="t1").status is RunStatus.WAITING_APPROVAL
    return run_id


def test_a_request_without_a_valid_key_is_refused_with_a_code(served: Served) -> None:
    bad = ["", "Bearer nonsense", "Bearer pdk_0123456789abcdef_" + "x" * 43, "Basic abc"]
    for header in bad:
        with served.client(None) as c:
            r = c.get("/v1/runs", headers={"Authorization": header} if header else {})
        assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"
        assert r.headers["www-authenticate"] == "Bearer"
    key_id = served.tokens["reader"].split("_")[1]
    served.runtime.keys.revoke(key_id, tenant="t1")
    with served.client("reader") as c:
        r = c.get("/v1/runs")
    assert r.status_code == 401 and "revoked" in r.json()["error"]["message"]


def test_a_start_over_http_is_idempotent_by_header_or_field(served: Served) -> None:
    with served.client() as c:
        first = c.post("/v1/runs", json={"workflow": "plain"}, headers={"Idempotency-Key": "k1"})
        again = c.post("/v1/runs", json={"workflow": "plain"}, headers={"Idempotency-Key": "k1"})
        by_field = c.post("/v1/runs", json={"workflow": "plain", "idempotency_key": "k1"})
        listed = c.get("/v1/runs").json()
    assert first.status_code == 201 and first.json()["status"] == "PENDING"
    assert first.json()["run_id"] == again.json()["run_id"] == by_field.json()["run_id"]
    assert len(listed["runs"]) == 1 and listed["counts"] == {"PENDING": 1}
    with served.client("other") as c:  # the same key in another tenant is another run
        theirs = c.post("/v1/runs", json={"workflow": "plain", "idempotency_key": "k1"})
    assert theirs.json()["run_id"] != first.json()["run_id"]
    assert theirs.json()["tenant_id"] == "t2"
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with served.client() as c:
        traced = c.post("/v1/runs", json={"workflow": "plain"}, headers={"traceparent": parent})
        created = c.get(f"/v1/runs/{traced.json()['run_id']}").json()["events"][0]
    assert created["type"] == "created" and created["data"]["trace"] == {"traceparent": parent}


def test_another_tenants_run_is_not_found_on_every_verb(served: Served) -> None:
    run_id = waiting_job(served)
    calls = [
        ("GET", f"/v1/runs/{run_id}", None),
        ("GET", f"/v1/runs/{run_id}/events", None),
        ("POST", f"/v1/runs/{run_id}/cancel", {}),
        ("POST", f"/v1/runs/{run_id}/resume", {}),
        ("POST", f"/v1/runs/{run_id}/fail", {"reason": "x"}),
        ("POST", f"/v1/runs/{run_id}/signals", {"name": "paid"}),
        ("POST", f"/v1/runs/{run_id}/approve", {}),
        ("POST", f"/v1/runs/{run_id}/reject", {}),
    ]
    with served.client("other") as c:
        for method, path, body in calls:
            r = c.request(method, path, json=body)
            assert r.status_code == 404, (path, r.text)
            assert r.json()["error"]["code"] == "run_not_found"
        assert c.get("/v1/runs").json()["runs"] == []
        assert c.get("/v1/approvals").json()["approvals"] == []
        assert c.get("/v1/effects", params={"run_id": run_id}).json()["effects"] == []
    assert served.runtime.get(run_id, tenant="t1").status is RunStatus.WAITING_APPROVAL
    charged = start(served, "charge")
    served.runtime.run_until_idle()
    (effect,) = served.runtime.effects.list(tenant="t1", run_id=charged)
    with served.client("other") as c:
        r = c.post(f"/v1/effects/{effect.key}/resolve", json={"applied": True, "reason": "x"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "effect_not_found"
        assert c.get("/v1/quarantined").json()["runs"] == []
        assert c.get("/v1/stuck", params={"threshold": 0}).json()["runs"] == []


def test_roles_are_checked_on_decisions_and_administrative_verbs(served: Served) -> None:
    run_id = waiting_job(served)
    admin_only = [
        ("POST", f"/v1/runs/{run_id}/resume", {}),
        ("POST", f"/v1/runs/{run_id}/fail", {"reason": "x"}),
        ("POST", "/v1/effects/t1/x/y/z/resolve", {"applied": True, "reason": "r"}),
        ("GET", "/v1/workers", None),
        ("GET", "/v1/keys", None),
        ("POST", "/v1/keys", {"name": "new"}),
        ("DELETE", "/v1/keys/0123456789abcdef", None),
        ("GET", "/metrics", None),
    ]
    for who in ("reader", "approver"):
        with served.client(who) as c:
            for method, path, body in admin_only:
                r = c.request(method, path, json=body)
                assert r.status_code == 403, (who, path, r.text)
                assert r.json()["error"]["code"] == "not_authorized"
    with served.client("reader") as c:
        r = c.post(f"/v1/runs/{run_id}/approve", json={})
        assert r.status_code == 403 and "approver" in r.json()["error"]["message"]
        assert c.get(f"/v1/runs/{run_id}").status_code == 200  # reading needs no role


def test_an_approval_is_recorded_as_the_principal_that_authenticated(served: Served) -> None:
    run_id = waiting_job(served)
    with served.client("approver") as c:
        pending = c.get("/v1/approvals").json()["approvals"]
        assert [(a["run_id"], a["role"], a["request"]) for a in pending] == [
            (run_id, "approver", {"amount": 7})
        ]
        posing = c.post(f"/v1/runs/{run_id}/approve", json={"comment": "ok", "as": "mallory"})
        assert posing.status_code == 400 and posing.json()["error"]["code"] == "invalid_input"
        assert "'as' is not one this endpoint takes" in posing.json()["error"]["message"]
        r = c.post(f"/v1/runs/{run_id}/approve", json={"comment": "ok"})
        assert r.status_code == 200 and r.json()["decided_by"] == "approver"
        again = c.post(f"/v1/runs/{run_id}/reject", json={})
        assert again.status_code == 409 and again.json()["error"]["code"] == "approval_not_pending"
    served.runtime.run_until_idle()
    with served.client("reader") as c:
        run = c.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "SUCCEEDED" and run["result"] == {"ticks": 0, "approved": True}
    assert run["approvals"][0]["decided_by"] == "approver"
    assert run["completed_steps"] == ["begin", "ask", "finish"]
    assert [s["outcome"] for s in run["steps"]] == ["next", "wait_approval", "done"]
    assert run["events"][0]["type"] == "created"


def test_the_run_view_holds_state_waits_budget_and_effects(served: Served) -> None:
    run_id = start(served, "charge")
    served.runtime.run_until_idle()
    with served.client("reader") as c:
        run = c.get(f"/v1/runs/{run_id}").json()
        effects = c.get("/v1/effects", params={"status": "ambiguous"}).json()["effects"]
    assert run["status"] == "NEEDS_ATTENTION" and run["next_step"] == "pay"
    assert run["state"] == {"amount": 5} and run["state_error"] is None
    assert run["error"]["reason"] == "ambiguous_effect"
    assert [e["status"] for e in run["effects"]] == ["ambiguous"]
    assert [e["key"] for e in effects] == [run["effects"][0]["key"]]
    key = effects[0]["key"]
    with served.client("admin") as c:
        r = c.post(
            f"/v1/effects/{key}/resolve",
            json={"applied": True, "reason": "seen at the bank", "receipt": "rc1"},
        )
        assert r.status_code == 200 and r.json()["status"] == "confirmed"
        assert r.json()["resolution"]["by"] == "admin"
        twice = c.post(f"/v1/effects/{key}/resolve", json={"applied": True, "reason": "x"})
        assert twice.status_code == 409
    served.runtime.run_until_idle()
    assert served.runtime.get(run_id, tenant="t1").status is RunStatus.SUCCEEDED


def test_cancel_signal_resume_and_fail_act_through_the_runtime(served: Served) -> None:
    order = start(served, "order")
    served.runtime.run_until_idle()
    with served.client("reader") as c:
        sent = c.post(f"/v1/runs/{order}/signals", json={"name": "paid", "signal_id": "s1"})
        dup = c.post(f"/v1/runs/{order}/signals", json={"name": "paid", "signal_id": "s1"})
    assert (sent.json()["outcome"], dup.json()["outcome"]) == ("woke", "duplicate")
    plain = start(served, "plain")
    with served.client("reader") as c:
        r = c.post(f"/v1/runs/{plain}/cancel", json={"reason": "not needed"})
    assert r.json()["status"] == "CANCELLED"
    stuck, other = start(served, "charge"), start(served, "charge")
    served.runtime.run_until_idle()
    with served.client("admin") as c:
        wrong = c.post(f"/v1/runs/{order}/resume", json={"patch": [1]})
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_input"
        reopened = c.post(f"/v1/runs/{other}/resume", json={"at": "pay"})
        assert reopened.json()["status"] == "RUNNING" and reopened.json()["owner"] is None
        failed = c.post(f"/v1/runs/{stuck}/fail", json={"reason": "given up"})
    assert failed.status_code == 200 and failed.json()["status"] == "FAILED"
    assert failed.json()["error"]["by"] == "admin"


def test_operator_views_list_the_tenants_stuck_quarantined_runs_and_workers(
    served: Served,
) -> None:
    with served.client("admin") as c:
        assert c.get("/v1/quarantined").json() == {"runs": []}
        assert c.get("/v1/stuck", params={"threshold": 0}).json()["runs"] == []
        assert c.get("/v1/workers").json() == {"workers": []}
        me = c.get("/v1/me").json()
    assert me == {"tenant": "t1", "name": "admin", "roles": ["admin", "approver"]}
    run_id = start(served, "plain")
    assert served.runtime.claim_next() is not None  # claimed; its worker makes no progress
    served.runtime.clock.advance(600)  # type: ignore[attr-defined]
    with served.client("reader") as c:
        stuck = c.get("/v1/stuck", params={"threshold": 300}).json()["runs"]
    with served.client("other") as c:
        theirs = c.get("/v1/stuck", params={"threshold": 300}).json()["runs"]
    assert [r["run_id"] for r in stuck] == [run_id] and theirs == []


def test_keys_are_managed_over_http_and_shown_once(served: Served) -> None:
    with served.client("admin") as c:
        made = c.post("/v1/keys", json={"name": "ci", "roles": ["approver"]})
        assert made.status_code == 201 and made.json()["token"].startswith("pdk_")
        listed = c.get("/v1/keys").json()["keys"]
        assert "token" not in listed[0] and {k["name"] for k in listed} >= {"ci", "admin"}
        bad_role = c.post("/v1/keys", json={"name": "x", "roles": ["Not A Role"]})
        assert bad_role.status_code == 400
        revoked = c.delete(f"/v1/keys/{made.json()['key_id']}")
        assert revoked.json()["revoked_at"] is not None
    with served.client("other") as c:
        assert c.delete(f"/v1/keys/{made.json()['key_id']}").status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b'{"workflow": 5}',
        b'{"workflow": "nope"}',
        b"\xff\xfe",
        b"x" * 1_100_000,
    ],
)
def test_hostile_bodies_give_a_json_error_never_a_traceback(served: Served, body: bytes) -> None:
    with served.client() as c:
        r = c.post("/v1/runs", content=body, headers={"Content-Type": "application/json"})
    assert 400 <= r.status_code < 500, r.text
    assert set(r.json()["error"]) == {"code", "message", "fix"}


def test_hostile_ids_and_numbers_are_refused_cleanly(served: Served) -> None:
    with served.client() as c:
        for path in ("/v1/runs/%00", "/v1/runs/%ff%fe", "/v1/runs/" + "a" * 5000):
            r = c.get(path)
            assert r.status_code in (400, 404), (path, r.text)
        assert c.get("/v1/runs", params={"limit": -1}).status_code == 400
        assert c.get("/v1/runs", params={"status": "NOPE"}).status_code == 400
        r = c.get("/v1/events", headers={"Last-Event-ID": "-5"})
        assert r.status_code == 400


def test_the_openapi_document_names_every_endpoint(served: Served) -> None:
    with served.client(None) as c:
        doc = c.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert {"/v1/runs", "/v1/runs/{run_id}/events", "/v1/effects/{key}/resolve"} <= set(
        doc["paths"]
    )
    assert doc["paths"]["/v1/runs/{run_id}/resume"]["post"]["x-perdure-role"] == "admin"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("resume", {"add_budget": {"steps": "many"}}),
        ("resume", {"add_budget": {"cost": float("nan")}}),
        ("cancel", {"reason": "stop\u0000now"}),
        ("signals", {"name": "paid\u0000", "signal_id": "s1"}),
        ("signals", {"name": "paid", "signal_id": "\ud800"}),
        ("approve", {"comment": "ok\u0000"}),
        ("fail", {"reason": "x\u0000"}),
    ],
    ids=[
        "budget-type",
        "budget-nan",
        "cancel-nul",
        "signal-nul",
        "signal-id-surrogate",
        "comment-nul",
        "fail-nul",
    ],
)
def test_hostile_values_are_400_on_every_database_and_change_nothing(
    served: Served, path: str, body: dict[str, object]
) -> None:
    run_id = waiting_job(served)
    before = served.runtime.get(run_id, tenant="t1")
    with served.client("admin") as c:
        r = c.post(
            f"/v1/runs/{run_id}/{path}",
            content=_json(body),
            headers={"content-type": "application/json"},
        )
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_input"
    after = served.runtime.get(run_id, tenant="t1")
    assert (after.status, after.state_version) == (before.status, before.state_version)


def _json(body: dict[str, object]) -> bytes:
    import json

    return json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")


def test_runs_are_listed_a_page_at_a_time_by_cursor_with_filters(
    served: Served, clock: FakeClock
) -> None:
    started = []
    for n in range(5):
        body = {"input": {"ticks": 0}} if n % 2 == 0 else {}
        started.append(start(served, "job" if n % 2 == 0 else "plain", thread=f"chat-{n}", **body))
        clock.advance(1)
    pages, cursor = [], None
    with served.client() as c:
        while True:
            query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = c.get("/v1/runs", params=query).json()
            pages.append([r["run_id"] for r in page["runs"]])
            start(served, "plain")  # a run started between pages shifts none of them
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == [started[4:2:-1], started[2:0:-1], started[:1]]
        plain = c.get("/v1/runs", params={"workflow": "plain", "limit": 100}).json()["runs"]
        assert {r["run_id"] for r in plain} >= {started[1], started[3]}
        assert all(r["workflow"] == "plain" for r in plain)
        one = c.get("/v1/runs", params={"thread": "chat-2"}).json()
        assert [r["run_id"] for r in one["runs"]] == [started[2]]
        found = c.get("/v1/runs", params={"q": started[3][-12:]}).json()
        assert [r["run_id"] for r in found["runs"]] == [started[3]]
        first = served.runtime.get(started[0], tenant="t1").created_at
        window = {"since": first.isoformat(), "until": (first + timedelta(seconds=2)).isoformat()}
        timed = c.get("/v1/runs", params={**window, "status": "pending"}).json()
        assert [r["run_id"] for r in timed["runs"]] == started[1::-1]


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "\x00"}, "cursor"),
        ({"since": "yesterday"}, "since"),
        ({"status": "DONE"}, "status"),
        ({"q": "x" * 300}, "q"),
        ({"limit": "-1"}, "limit"),
    ],
)
def test_a_bad_listing_parameter_is_a_one_line_400(
    served: Served, query: dict[str, str], names: str
) -> None:
    with served.client() as c:
        r = c.get("/v1/runs", params=query)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_input" and names in error["message"]
    assert "\n" not in error["message"]
