"""``/docs``: the API's reference as a page of this server, rendered from the OpenAPI
document (no script, no CDN: the Content-Security-Policy stays strict). ``/openapi.json`` is
the document itself, for code generators and fuzzers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from perdure.server.forms import render


@dataclass(frozen=True, slots=True)
class Field:
    """A parameter or body field as the page lists it."""

    name: str
    where: str
    kind: str
    required: bool
    about: str


@dataclass(frozen=True, slots=True)
class Operation:
    """An operation as the page lists it."""

    anchor: str
    method: str
    path: str
    summary: str
    role: str | None
    fields: list[Field]
    responses: list[tuple[str, str, str]]
    example: str | None


def kind_of(schema: dict[str, Any] | bool) -> str:
    """A schema in a few words: ``string``, ``list of RunStatus``, ``integer 1..10000``."""
    if isinstance(schema, bool) or not schema:
        return "any JSON"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        parts = [kind_of(s) for s in schema["anyOf"]]
        return " or ".join(p for p in parts if p != "null") + (
            " (or null)" if "null" in parts else ""
        )
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = str(schema.get("type", "any JSON"))
    if kind == "array":
        return "list of " + kind_of(schema.get("items", {}))
    if kind == "object" and "additionalProperties" in schema:
        return "object of " + kind_of(schema["additionalProperties"])
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None or high is not None:
        kind += f" {'' if low is None else low}..{'' if high is None else high}"
    return kind


def _body_fields(schema: dict[str, Any], schemas: dict[str, Any]) -> list[Field]:
    if "$ref" in schema:
        schema = schemas[str(schema["$ref"]).rsplit("/", 1)[-1]]
    required = set(schema.get("required", ()))
    return [
        Field(name, "body", kind_of(prop), name in required, str(prop.get("description", "")))
        for name, prop in schema.get("properties", {}).items()
    ]


def operations(document: dict[str, Any]) -> list[Operation]:
    """The document's operations, in its order, as the page lists them."""
    schemas = document["components"]["schemas"]
    found = []
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            fields = [
                Field(
                    p["name"],
                    p["in"],
                    kind_of(p["schema"]),
                    bool(p.get("required")),
                    str(p.get("description", "")),
                )
                for p in op.get("parameters", ())
            ]
            example = None
            body = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None:
                fields += _body_fields(body["schema"], schemas)
                ref = str(body["schema"].get("$ref", "")).rsplit("/", 1)[-1]
                examples = schemas.get(ref, {}).get("examples")
                if examples:
                    example = orjson.dumps(examples[0], option=orjson.OPT_INDENT_2).decode()
            responses = []
            for code, answer in op["responses"].items():
                content = answer.get("content", {})
                media = next(iter(content), "")
                schema = content.get(media, {}).get("schema", {})
                responses.append((code, str(answer["description"]), kind_of(schema)))
            found.append(
                Operation(
                    op["operationId"],
                    method.upper(),
                    path,
                    op["summary"],
                    op.get("x-perdure-role"),
                    fields,
                    responses,
                    example,
                )
            )
    return found


def page(
    document: Callable[[], dict[str, Any]],
) -> Callable[[Request], Awaitable[Response]]:
    """The handler of ``GET /docs``, listing the document ``document()`` returns."""

    async def docs(request: Request) -> Response:
        found = document()
        return render(request, "api.html", who=None, doc=found, operations=operations(found))

    return docs
