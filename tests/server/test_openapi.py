"""The OpenAPI document and its page: valid OpenAPI 3.1, every route of the app in it with its
parameters, status codes and schemas, and /docs listing every operation under the strict
Content-Security-Policy."""

from __future__ import annotations

import re

from openapi_spec_validator import validate
from starlette.routing import Route

from perdure.server import create_app
from tests.server.conftest import Served


def test_the_document_is_valid_openapi_and_lists_every_route(served: Served) -> None:
    with served.client(None) as c:
        document = c.get("/openapi.json").json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    app = create_app(served.runtime)
    declared = {(path, method) for path, methods in document["paths"].items() for method in methods}
    served_routes = {
        (r.path.replace("{key:path}", "{key}"), m.lower())
        for r in app.routes
        if isinstance(r, Route) and r.path.startswith("/v1/")
        for m in getattr(r.endpoint, "allow", ())
    }
    assert declared == served_routes
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            names = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert names == set(re.findall(r"\{(\w+)\}", path)), (method, path)
            assert {"401", "429"} <= set(op["responses"]), (method, path)
            if method in ("post", "delete"):
                assert {"400", "415"} <= set(op["responses"]), (method, path)
            ok = [code for code in op["responses"] if code.startswith("2")]
            assert len(ok) == 1 and op["responses"][ok[0]]["content"], (method, path)


def test_a_start_answers_201_with_a_typed_run_and_requires_its_workflow(served: Served) -> None:
    with served.client(None) as c:
        op = c.get("/openapi.json").json()["paths"]["/v1/runs"]["post"]
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
    assert op["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RunReply"
    }
    assert op["requestBody"]["required"] is True
    start = schemas["StartRun"]
    assert start["required"] == ["workflow"] and start["additionalProperties"] is False
    assert start["properties"]["workflow"]["type"] == "string"
    assert start["examples"] == [{"workflow": "refund", "input": {"amount": 40}}]
    assert "run_id" in schemas["RunReply"]["required"]


def test_a_bad_body_is_one_invalid_input_line_naming_the_field(served: Served) -> None:
    cases = [
        ({"workflow": 5}, "field 'workflow': input should be a valid string"),
        ({}, "field 'workflow' is required"),
        ({"workflow": "job", "durability": "never"}, "field 'durability'"),
        ({"workflow": "job", "colour": "red"}, "field 'colour' is not one this endpoint takes"),
    ]
    with served.client() as c:
        for body, said in cases:
            r = c.post("/v1/runs", json=body)
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert error["code"] == "invalid_input" and said in error["message"], error
            assert "\n" not in error["message"] and error["fix"]
        nested = c.post("/v1/runs/x/resume", json={"add_budget": {"steps": -1}})
        assert nested.status_code == 400
        assert "field 'add_budget.steps'" in nested.json()["error"]["message"]
        query = c.get("/v1/runs", params={"limit": "lots"})
        assert query.status_code == 400 and "query field 'limit'" in query.text


def test_the_docs_page_lists_every_operation_without_inline_script(served: Served) -> None:
    with served.client(None) as c:
        document = c.get("/openapi.json").json()
        page = c.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<script>" not in page.text and " style=" not in page.text
    for path, methods in document["paths"].items():
        for method in methods:
            assert f"<code>{method.upper()} {path}</code>" in page.text
    assert "StartRun" not in page.text  # body fields are listed, not a model's name
    assert "<code>workflow</code>" in page.text


def test_the_documented_id_limit_is_the_one_the_server_keeps(served: Served) -> None:
    # found by schemathesis: the document said 200 characters where the store takes 255
    with served.client() as c:
        long = c.post(
            "/v1/runs", json={"workflow": "plain"}, headers={"Idempotency-Key": "k" * 256}
        )
        fits = c.post(
            "/v1/runs", json={"workflow": "plain"}, headers={"Idempotency-Key": "k" * 255}
        )
    assert long.status_code == 400 and long.json()["error"]["code"] == "invalid_input"
    assert fits.status_code == 201
