"""The API against its own OpenAPI document, with schemathesis: every operation is called with
generated requests (valid ones, and invalid ones that must be refused with 4xx) through a real
uvicorn server on each backend, with a key holding every role, and every response is checked
against the document (status code, content type, body schema, headers) and for server errors.
A stateful run follows the document's links: start a run, read it, follow its events, decide
on it. Generation is derandomized (the same requests every time) and bounded."""

from __future__ import annotations

from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
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
    schema.config.generation.update(with_security_parameters=False, allow_extra_parameters=False)
    machine = schema.as_state_machine()
    client = httpx.Client(timeout=30)
    followed: list[str] = []

    class Links(machine):  # type: ignore[valid-type,misc]
        def call(self, case: schemathesis.Case, **kwargs: Any) -> schemathesis.Response:
            followed.append(case.operation.label)
            return schemathesis.Response.from_httpx(call(case, served, client), verify=True)

        def validate_response(
            self, response: schemathesis.Response, case: schemathesis.Case, *args: Any, **kw: Any
        ) -> None:
            case.validate_response(response, checks=CHECKS)

    try:
        run_state_machine_as_test(
            Links,
            settings=settings(
                max_examples=30,
                stateful_step_count=6,
                derandomize=True,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    finally:
        client.close()
    assert "GET /v1/runs/{run_id}/events" in followed and "GET /v1/runs/{run_id}" in followed
