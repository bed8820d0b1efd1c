"""What the OpenAPI document promises and the server does agree, on the cases schemathesis
found apart: the methods a path has (``OPTIONS`` and 405 answer ``Allow``), the values a
field takes (a value the server refuses is one the document refuses), and a verb refused by
the run's state is a conflict (409), not a bad request."""

from __future__ import annotations

import re
from typing import Any

import pytest

from perdure.core.model import RunStatus
from perdure.server.bodies import MOMENT, TEXT
from tests.server.conftest import Served
from tests.server.test_api import start


def documented(served: Served) -> dict[str, Any]:
    with served.client() as c:
        doc: dict[str, Any] = c.get("/openapi.json").json()
    return doc


def concrete(path: str) -> str:
    return re.sub(r"\{\w+\}", "x", path)


def test_options_and_405_name_exactly_the_documented_methods_of_each_path(
    served: Served,
) -> None:
    doc = documented(served)
    with served.client(None) as c:
        for path, item in doc["paths"].items():
            methods = ", ".join(sorted(m.upper() for m in item))
            options = c.options(concrete(path))
            assert (options.status_code, options.headers.get("allow")) == (204, methods), path
            refused = c.request("PATCH", concrete(path))
            assert refused.status_code == 405 and refused.headers["allow"] == methods, path
            error = refused.json()["error"]
            assert error["code"] == "method_not_allowed" and methods in error["fix"]
    assert doc["paths"]["/v1/keys"].keys() == {"get", "post"}
    assert doc["paths"]["/v1/runs"].keys() == {"get", "post"}


def test_a_path_no_operation_has_is_a_json_404(served: Served) -> None:
    with served.client() as c:
        r = c.post("/v1/effects/a%0Ab/resolve", json={"applied": True, "reason": "seen"})
        unknown = c.get("/v1/nothing/here")
    for answer in (r, unknown):
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "path_not_found"


def field(doc: dict[str, Any], model: str, name: str) -> dict[str, Any]:
    """A body field's schema, without its ``null`` choice."""
    schema: dict[str, Any] = doc["components"]["schemas"][model]["properties"][name]
    for choice in schema.get("anyOf", []):
        if choice.get("type") != "null":
            return {**schema, **choice}
    return schema


def test_the_document_refuses_the_empty_and_nul_texts_the_server_refuses(
    served: Served,
) -> None:
    doc = documented(served)
    resolve = doc["components"]["schemas"]["ResolveEffect"]
    assert "reason" in resolve["required"] and field(doc, "ResolveEffect", "reason")["minLength"]
    for model, name in [
        ("StartRun", "idempotency_key"),
        ("StartRun", "thread"),
        ("CancelRun", "request_id"),
        ("Decision", "request_id"),
        ("ResolveEffect", "request_id"),
        ("SendSignal", "signal_id"),
    ]:
        assert field(doc, model, name)["minLength"] == 1, (model, name)
        assert field(doc, model, name)["pattern"] == TEXT, (model, name)
    header = next(
        p for p in doc["paths"]["/v1/runs"]["post"]["parameters"] if p["name"] == "Idempotency-Key"
    )
    assert header["schema"]["minLength"] == 1
    roles = field(doc, "NewKey", "roles")["items"]
    assert roles["pattern"].startswith("^[a-z]")
    job = doc["components"]["schemas"]["Workflow.job"]
    assert job["additionalProperties"] is False and job["properties"]["ticks"]["type"] == "integer"
    since = next(p for p in doc["paths"]["/v1/runs"]["get"]["parameters"] if p["name"] == "since")
    assert since["schema"]["anyOf"][0]["pattern"] == MOMENT

    run_id = start(served, "charge")
    served.runtime.run_until_idle()
    (effect,) = served.runtime.effects.list(tenant="t1", run_id=run_id)
    with served.client() as c:
        empty = [
            c.post(f"/v1/effects/{effect.key}/resolve", json={"applied": True, "reason": ""}),
            c.post(f"/v1/effects/{effect.key}/resolve", json={"applied": True}),
            c.post("/v1/runs", json={"workflow": "plain", "idempotency_key": ""}),
            c.post("/v1/runs", json={"workflow": "plain"}, headers={"Idempotency-Key": ""}),
            c.post("/v1/runs", json={"workflow": "plain", "input": [1]}),
            c.post("/v1/runs", json={"workflow": "plain", "thread": "a\x00b"}),
            c.post("/v1/keys", json={"name": "k", "roles": ["Admin"]}),
            c.get("/v1/runs", params={"since": "2026-02-30"}),
        ]
        edge = c.get("/v1/runs", params={"since": "9999-12-31T23:00-05:00"})
        whole = c.post("/v1/stream-tokens", json={"seconds": 60.0})
    for r in empty:
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input", r.text
    assert edge.status_code == 200 and edge.json()["runs"] == []
    assert whole.status_code == 201


@pytest.mark.parametrize("verb", ["resume", "fail"])
def test_resuming_or_failing_a_run_that_needs_no_person_is_a_409_conflict(
    served: Served, verb: str
) -> None:
    pending = start(served, "plain")
    assert served.runtime.get(pending, tenant="t1").status is RunStatus.PENDING
    done = start(served, "plain")
    served.runtime.run_until_idle()
    with served.client() as c:
        for run_id in (pending, done):
            r = c.post(
                f"/v1/runs/{run_id}/{verb}", json={"reason": "why"} if verb == "fail" else {}
            )
            assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "run_state_conflict"


def test_a_second_live_key_of_the_same_name_is_a_409_conflict(served: Served) -> None:
    with served.client() as c:
        first = c.post("/v1/keys", json={"name": "ci"})
        again = c.post("/v1/keys", json={"name": "ci"})
    assert first.status_code == 201
    assert again.status_code == 409 and again.json()["error"]["code"] == "key_name_taken"
