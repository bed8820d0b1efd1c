"""The API's routes, each with what the OpenAPI document says of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from perdure.server import admin, api


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One route of the API: path, methods, handler, and its OpenAPI description."""

    path: str
    methods: tuple[str, ...]
    handler: Callable[[Request], Awaitable[Response]]
    summary: str
    role: str | None = None
    body: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    stream: bool = False


ADMIN = "admin"
APPROVAL = "the role the approval request names"


def _decision(verb: str) -> Endpoint:
    """``POST /v1/runs/{run_id}/approve`` or ``/reject``: one handler decides by the path."""
    return Endpoint(
        f"/v1/runs/{{run_id}}/{verb}",
        ("POST",),
        api.decide,
        f"{verb.capitalize()} the run's pending request (recorded as the key's name)",
        role=APPROVAL,
        body=("comment", "request_id"),
    )


ENDPOINTS = (
    Endpoint(
        "/v1/runs",
        ("POST",),
        api.start_run,
        "Start a run (Idempotency-Key header or idempotency_key field: a repeat returns the "
        "first run)",
        body=("workflow", "input", "thread", "idempotency_key", "durability", "release", "policy"),
    ),
    Endpoint(
        "/v1/runs",
        ("GET",),
        api.list_runs,
        "List the tenant's runs, newest first, with counts by status",
        query=("status", "workflow", "thread", "limit"),
    ),
    Endpoint(
        "/v1/runs/{run_id}",
        ("GET",),
        api.get_run,
        "A run: state, next step, steps, messages, budget, effects, approvals, events",
    ),
    Endpoint(
        "/v1/runs/{run_id}/cancel",
        ("POST",),
        api.cancel_run,
        "Cancel a run",
        body=("reason", "request_id"),
    ),
    Endpoint(
        "/v1/runs/{run_id}/resume",
        ("POST",),
        api.resume_run,
        "Hand a run that needs a person back to the workers",
        role=ADMIN,
        body=("at", "patch", "add_budget"),
    ),
    Endpoint(
        "/v1/runs/{run_id}/fail",
        ("POST",),
        api.fail_run,
        "End a run that needs a person as FAILED",
        role=ADMIN,
        body=("reason",),
    ),
    Endpoint(
        "/v1/runs/{run_id}/signals",
        ("POST",),
        api.signal_run,
        "Deliver a signal",
        body=("name", "payload", "signal_id"),
    ),
    *(_decision(verb) for verb in ("approve", "reject")),
    Endpoint(
        "/v1/runs/{run_id}/events",
        ("GET",),
        api.run_events,
        "The run's events as server-sent events (id = sequence number; resume with "
        "Last-Event-ID or ?after=); ends when the run ends",
        query=("after",),
        stream=True,
    ),
    Endpoint(
        "/v1/events",
        ("GET",),
        api.tenant_events,
        "Every run's events of the tenant as server-sent events",
        query=("after", "type", "workflow"),
        stream=True,
    ),
    Endpoint(
        "/v1/messages/{message_id}/stream",
        ("GET",),
        api.message_deltas,
        "A message's token deltas as server-sent events (id = sequence number; resume with "
        "Last-Event-ID or ?after=); ends when the message is finished",
        query=("after",),
        stream=True,
    ),
    Endpoint(
        "/v1/approvals",
        ("GET",),
        api.list_approvals,
        "Approval requests (pending unless pending=false)",
        query=("run_id", "pending"),
    ),
    Endpoint(
        "/v1/effects",
        ("GET",),
        admin.list_effects,
        "Effects, by run and status",
        query=("run_id", "status", "limit"),
    ),
    Endpoint(
        "/v1/effects/{key:path}/resolve",
        ("POST",),
        admin.resolve_effect,
        "Record whether an ambiguous effect happened",
        role=ADMIN,
        body=("applied", "reason", "receipt", "result", "request_id"),
    ),
    Endpoint(
        "/v1/stuck",
        ("GET",),
        admin.stuck_runs,
        "RUNNING runs with no progress for threshold seconds",
        query=("threshold",),
    ),
    Endpoint("/v1/quarantined", ("GET",), admin.quarantined_runs, "QUARANTINED runs"),
    Endpoint("/v1/workers", ("GET",), admin.list_workers, "Workers of the fleet", role=ADMIN),
    Endpoint("/v1/me", ("GET",), admin.me, "Who the key speaks for"),
    Endpoint(
        "/v1/keys",
        ("GET", "POST"),
        admin.keys,
        "List the tenant's API keys, or make one (its token is shown once)",
        role=ADMIN,
        body=("name", "roles"),
    ),
    Endpoint(
        "/v1/keys/{key_id}",
        ("DELETE",),
        admin.revoke_key,
        "Revoke an API key",
        role=ADMIN,
    ),
)


def openapi(version: str) -> dict[str, object]:
    """The OpenAPI 3.1 document of :data:`ENDPOINTS`."""
    paths: dict[str, dict[str, object]] = {}
    error = {"$ref": "#/components/schemas/Error"}
    for e in ENDPOINTS:
        path = e.path.replace("{key:path}", "{key}")
        params = [
            {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
            for n in ("run_id", "key", "key_id")
            if "{" + n + "}" in path
        ] + [{"name": n, "in": "query", "schema": {"type": "string"}} for n in e.query]
        for method in e.methods:
            op: dict[str, object] = {
                "summary": e.summary,
                "operationId": f"{method.lower()}_{path.strip('/').replace('/', '_')}",
                "security": [{"apiKey": []}],
                "parameters": params,
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"text/event-stream" if e.stream else "application/json": {}},
                    },
                    "default": {
                        "description": "An error with a stable code",
                        "content": {"application/json": {"schema": error}},
                    },
                },
            }
            if e.role:
                op["x-perdure-role"] = e.role
            if e.body and method == "POST":
                props: dict[str, object] = {n: {} for n in e.body}
                op["requestBody"] = {
                    "content": {
                        "application/json": {"schema": {"type": "object", "properties": props}}
                    }
                }
            paths.setdefault(path, {})[method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "perdure", "version": version},
        "paths": paths,
        "components": {
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                                "fix": {"type": "string"},
                            },
                        }
                    },
                }
            },
        },
    }
