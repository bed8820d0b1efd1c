"""The OpenAPI 3.1 document of the API, written from :data:`perdure.server.routes.ENDPOINTS`
and the typed models of :mod:`perdure.server.bodies` and :mod:`perdure.server.replies`: every
operation's parameters, request body, status codes and response schemas."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import BaseModel, PydanticUserError, TypeAdapter
from pydantic.json_schema import models_json_schema

from perdure.core.ids import MAX_ID_LENGTH
from perdure.core.workflow import Workflow
from perdure.server.bodies import TEXT
from perdure.server.replies import ErrorReply
from perdure.server.routes import ENDPOINTS, Endpoint

REF = "#/components/schemas/{model}"
PATH_PARAMS = {
    "run_id": "A run's id",
    "message_id": "A streamed message's id (announced by its run's events)",
    "key": "An effect's key",
    "key_id": "An API key's id",
}
REASONS = {
    200: "OK",
    201: "Created",
    400: "invalid_input: a bad body, query or id",
    401: "not_authenticated: no key, or an unknown, malformed or revoked one",
    403: "not_authorized: the key lacks the role",
    404: "The run, effect, key, message or workflow does not exist in the key's tenant",
    409: "The run's state does not allow it (run_closed, approval_not_pending, ...)",
    415: "unsupported_media_type: the body is not application/json",
    429: "too_many_attempts: too many failed keys; wait Retry-After seconds",
    503: "store_unavailable: the database cannot be reached",
}
SSE_EXAMPLE = (
    ': open\n\nretry: 1000\nid: 7\ndata: {"seq": 7, "type": "status"}\n\nevent: end\ndata: {}\n\n'
)
SSE_EVENT = {
    "type": "object",
    "description": "One event of the stream: a frame of `id:` (resume after it with "
    "Last-Event-ID), `event:` (absent: message; `end`: the stream is over; `closed`: its "
    "credential no longer holds) and one `data:` line of JSON",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "enum": ["message", "end", "closed"]},
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "retry": {"type": "integer", "minimum": 0},
    },
}


def _models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = [ErrorReply]
    for e in ENDPOINTS:
        found += [m for m in (e.body, e.reply) if m is not None]
    return list(dict.fromkeys(found))


def _schemas() -> tuple[dict[tuple[Any, str], dict[str, Any]], dict[str, Any]]:
    models = _models()
    keyed, top = models_json_schema(
        [(m, "validation") for m in models], ref_template=REF, title="perdure"
    )
    found: dict[tuple[Any, str], dict[str, Any]] = {(m, mode): v for (m, mode), v in keyed.items()}
    return found, dict(top.get("$defs", {}))


def _statuses(e: Endpoint) -> list[int]:
    method = e.method
    codes = {401, 429, 503}
    if e.query is not None or e.body is not None or "{" in e.path:
        codes.add(400)
    if method in ("POST", "DELETE"):
        codes |= {400, 415}
    if e.role is not None:
        codes.add(403)
    if re.search(r"\{(run_id|key|key_id|message_id)", e.path):
        codes.add(404)
    codes |= set(e.errors)
    return sorted(codes)


def _parameters(e: Endpoint, schemas: dict[str, Any]) -> list[dict[str, Any]]:
    path = e.path.replace("{key:path}", "{key}")
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "description": about,
            "schema": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_ID_LENGTH,
                "pattern": TEXT,
            },
        }
        for name, about in PATH_PARAMS.items()
        if "{" + name + "}" in path
    ]
    if e.query is not None:
        schema = e.query.model_json_schema(ref_template=REF)
        schemas.update(schema.get("$defs", {}))
        required = set(schema.get("required", ()))
        for name, declared in schema.get("properties", {}).items():
            prop = dict(declared)
            about = prop.pop("description", None)
            prop.pop("title", None)
            param: dict[str, Any] = {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": prop,
            }
            if about:
                param["description"] = about
            if prop.get("type") == "array":
                param["style"], param["explode"] = "form", True
            params.append(param)
    if e.stream:
        params.append(
            {
                "name": "Last-Event-ID",
                "in": "header",
                "required": False,
                "description": "A reconnect's last event id (wins over ?after=; empty: absent)",
                "schema": {"type": "string", "pattern": "^[0-9]{0,18}$"},
            }
        )
    if e.idempotent:
        params.append(
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "description": "A repeat with the same key returns the first run",
                "schema": {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH},
            }
        )
    return params


def operation_id(method: str, path: str) -> str:
    """The ``operationId`` of an operation: ``get_v1_runs_run_id``."""
    path = path.replace("{key:path}", "{key}")
    return f"{method.lower()}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}"


def _links(e: Endpoint) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for target in e.links:
        method, path = target.split(" ", 1)
        names = re.findall(r"\{(\w+)\}", path)
        found[operation_id(method, path)] = {
            "operationId": operation_id(method, path),
            "parameters": {name: f"$response.body#/{name}" for name in names},
        }
    return found


def _operation(
    e: Endpoint, keyed: dict[tuple[Any, str], dict[str, Any]], schemas: dict[str, Any]
) -> dict[str, Any]:
    method = e.method
    path = e.path.replace("{key:path}", "{key}")
    error = {"application/json": {"schema": {"$ref": REF.format(model="ErrorReply")}}}
    responses: dict[str, Any] = {}
    if e.stream:
        responses[str(e.status)] = {
            "description": "A text/event-stream (see docs/server.md, Streams)",
            "content": {"text/event-stream": {"schema": SSE_EVENT, "example": SSE_EXAMPLE}},
        }
    elif e.reply is not None:
        responses[str(e.status)] = {
            "description": REASONS[e.status],
            "content": {"application/json": {"schema": keyed[(e.reply, "validation")]}},
        }
        if e.links:
            responses[str(e.status)]["links"] = _links(e)
    for code in _statuses(e):
        responses[str(code)] = {"description": REASONS[code], "content": error}
    op: dict[str, Any] = {
        "summary": e.summary,
        "operationId": operation_id(method, path),
        "tags": [e.tag],
        "security": [{"bearer": []}, {"streamToken": []}] if e.stream else [{"bearer": []}],
        "parameters": _parameters(e, schemas),
        "responses": responses,
    }
    if e.role is not None:
        op["description"] = f"Needs role: {e.role}."
        op["x-perdure-role"] = e.role
    if e.body is not None and method == "POST":
        op["requestBody"] = {
            "required": e.body_required,
            "content": {"application/json": {"schema": keyed[(e.body, "validation")]}},
        }
    return op


INPUT = "#/components/schemas/Input.{model}"
"""Where the schemas of the workflows' state types (and the types they use) go."""


def input_schema(wf: Workflow[Any]) -> str:
    """The JSON schema (as JSON text) of the input ``wf`` starts from: an object of its state
    type's fields, no other (a ``dict`` state: any object)."""
    state = wf.codec.state_type
    if state is dict:
        return orjson.dumps({"type": "object"}).decode()
    try:
        schema = TypeAdapter(state).json_schema(ref_template=INPUT)
    except PydanticUserError:  # a type pydantic cannot describe: say only that it is an object
        schema = {"type": "object"}
    schema.pop("title", None)
    if schema.get("type") == "object":
        schema.setdefault("additionalProperties", False)
    return orjson.dumps(schema).decode()


def workflow_inputs(workflows: Mapping[str, Workflow[Any]]) -> tuple[tuple[str, str], ...]:
    """Each workflow's name and :func:`input_schema`, by name: what :func:`document` takes."""
    return tuple((name, input_schema(workflows[name])) for name in sorted(workflows))


def _start_choices(
    workflows: tuple[tuple[str, str], ...], schemas: dict[str, Any]
) -> list[dict[str, Any]]:
    """``StartRun``'s choices: one per workflow, its name with the input its state takes."""
    choices = []
    for name, text in workflows:
        schema = orjson.loads(text)
        for defined, body in schema.pop("$defs", {}).items():
            schemas[f"Input.{defined}"] = body
        schemas[f"Workflow.{name}"] = schema
        ref = {"$ref": REF.format(model=f"Workflow.{name}")}
        choices.append(
            {
                "properties": {
                    "workflow": {"const": name},
                    "input": {"anyOf": [ref, {"type": "null"}]},
                }
            }
        )
    return choices


@functools.lru_cache(maxsize=8)
def document(version: str, workflows: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API (see the module docstring). ``workflows``, the
    names a server can start with the schema of the input each takes
    (:func:`workflow_inputs`), become the choices of ``StartRun``. Cached: treat the answer as
    read-only."""
    keyed, schemas = _schemas()
    if workflows:
        schemas["StartRun"]["properties"]["workflow"]["enum"] = [name for name, _ in workflows]
        schemas["StartRun"]["oneOf"] = _start_choices(workflows, schemas)
    paths: dict[str, dict[str, Any]] = {}
    for e in ENDPOINTS:
        path = e.path.replace("{key:path}", "{key}")
        paths.setdefault(path, {})[e.method.lower()] = _operation(e, keyed, schemas)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "perdure",
            "version": version,
            "description": "Durable runs of AI agents over HTTP. Every request under /v1 "
            "carries an API key (`Authorization: Bearer pdk_...`, made with `perdure keys "
            "create`); a stream may carry a short-lived stream token as ?token= instead. "
            "Every error is {error: {code, message, fix}}.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "pdk_<id>_<secret>"},
                "streamToken": {"type": "apiKey", "in": "query", "name": "token"},
            },
            "schemas": schemas,
        },
    }
