"""The API against its own OpenAPI document, with schemathesis: every operation is called with
generated requests (valid ones, and invalid ones that must be refused with 4xx) through a real
uvicorn server on each backend, with a key holding every role, and every response is checked
against the document (status code, content type, body schema, headers) and for server errors.
The document's links are walked from a started run to each view they name (read it, its
events, a signal, a cancel), every response checked the same way. Generation is derandomized
(the same requests every time) and bounded."""

from __future__ import annotations

from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.server.conftest import Served

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
]
EXAMPLES = 25
"""Generated requests per operation (the whole test stays around a minute per backend)."""


def read_first_frames(client: httpx.Client, kwargs: dict[str, Any]) -> httpx.Response:
    """A stream's status, headers and first frames (its opening ``retry:`` frame and the next
    one), as a response whose body ends there: a stream of a run that is still going never
    ends by itself. A refusal is read whole."""
    request = client.build_request(
        kwargs["method"],
        kwargs["url"],
        headers=kwargs.get("headers"),
        params=kwargs.get("params"),
    )
    response = client.send(request, stream=True)
    try:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            seen = b""
            for chunk in response.iter_raw():
                seen += chunk
                if seen.count(b"\n\n") >= 2:
                    break
            content = seen
        else:
            content = response.read()
    finally:
        response.close()
    read = httpx.Response(
        response.status_code, headers=response.headers, content=content, request=request
    )
    read.elapsed = response.elapsed
    return read


def call(case: schemathesis.Case, served: Served, client: httpx.Client) -> httpx.Response:
    """Send ``case`` with the admin key (unless the case itself is about authentication)."""
    headers = {"Authorization": f"Bearer {served.tokens['admin']}"}
    kwargs = case.as_transport_kwargs(base_url=served.url, headers=headers)
    assert set(kwargs) <= {"method", "url", "headers", "params", "json", "data", "cookies"}, kwargs
    if case.operation.path.endswith(("/events", "/stream")):
        return read_first_frames(client, kwargs)
    return client.request(
        kwargs["method"],
        kwargs["url"],
        headers=kwargs.get("headers"),
        params=kwargs.get("params"),
        content=kwargs.get("data", kwargs.get("content")),
        json=kwargs.get("json"),
    )


def fuzz(operation: Any, served: Served, client: httpx.Client, failures: list[str]) -> None:
    """Call ``operation`` with generated requests, valid and invalid ones, recording the first
    failure of its checks (hypothesis shrinks it first)."""

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def exercise(data: st.DataObject) -> None:
        mode = data.draw(st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE]))
        case = data.draw(operation.as_strategy(generation_mode=mode))
        response = call(case, served, client)
        case.validate_response(response, checks=CHECKS)

    try:
        exercise()
    except Exception as exc:  # a failed check: kept, the next operation goes on
        failures.append(f"{operation.label}: {str(exc)[:3000]}")


def test_every_operation_answers_as_its_document_says(served: Served) -> None:
    with served.client() as c:
        document = c.get("/openapi.json").json()
        started = c.post("/v1/runs", json={"workflow": "job", "input": {"ticks": 0, "amount": 7}})
    assert started.status_code == 201
    served.runtime.run_until_idle()  # one run waits for approval: decisions have a target
    schema = schemathesis.openapi.from_dict(document)
    # the key is the test's to send; queries may carry parameters the document does not name
    schema.config.generation.update(with_security_parameters=False, allow_extra_parameters=False)
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == sum(len(methods) for methods in document["paths"].values())
    with httpx.Client(timeout=30) as client:
        for operation in operations:
            fuzz(operation, served, client, failures)
    assert not failures, "\n\n".join(failures)


def test_the_documents_links_lead_from_a_started_run_to_its_views(served: Served) -> None:
    with served.client() as c:
        document = c.get("/openapi.json").json()
    assert (
        "plain" in document["components"]["schemas"]["StartRun"]["properties"]["workflow"]["enum"]
    )
    schema = schemathesis.openapi.from_dict(document)
    by_id = {
        op["operationId"]: (path, method.upper())
        for path, item in document["paths"].items()
        for method, op in item.items()
    }
    client = httpx.Client(timeout=30)
    followed: list[str] = []

    def checked(path: str, method: str, **parts: Any) -> httpx.Response:
        case = schema[path][method].Case(**parts)
        sent = call(case, served, client)
        case.validate_response(schemathesis.Response.from_httpx(sent, verify=True), checks=CHECKS)
        followed.append(f"{method} {path}")
        return sent

    try:  # the links are walked in order, each from the response it belongs to (no generation:
        # a stateful fuzzer's choices would depend on the server's growing state)
        started = checked("/v1/runs", "POST", body={"workflow": "plain"})
        links = document["paths"]["/v1/runs"]["post"]["responses"]["201"]["links"]
        body = started.json()
        for link in links.values():
            path, method = by_id[link["operationId"]]
            values = {
                name: body[expression.removeprefix("$response.body#/")]
                for name, expression in link["parameters"].items()
            }
            extra: dict[str, Any] = {"body": {}} if method == "POST" else {}
            checked(path, method, path_parameters=values, **extra)
    finally:
        client.close()
    assert "GET /v1/runs/{run_id}/events" in followed and "GET /v1/runs/{run_id}" in followed
