"""The API's routes: each one's path, method, handler, and the typed models of what it takes
and answers (:mod:`perdure.server.bodies`, :mod:`perdure.server.replies`), from which
:mod:`perdure.server.openapi` writes the OpenAPI document."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, request_response
from starlette.types import Receive, Scope, Send

from perdure.core.errors import MethodNotAllowedError
from perdure.server import admin, api, bodies, replies, tokens


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One operation of the API: path, method, handler, what it takes and answers, and the
    error statuses it may answer beyond those every operation may (see
    :func:`perdure.server.openapi.document`)."""

    path: str
    method: str
    handler: Callable[[Request], Awaitable[Response]]
    summary: str
    tag: str
    reply: type[BaseModel] | None = None
    status: int = 200
    body: type[BaseModel] | None = None
    body_required: bool = False
    query: type[BaseModel] | None = None
    role: str | None = None
    errors: tuple[int, ...] = ()
    stream: bool = False
    idempotent: bool = False
    links: tuple[str, ...] = ()
    """Operations (``METHOD /path``) that take this one's answer as their path parameters
    (OpenAPI links: clients and fuzzers follow them, e.g. a started run to its events)."""


ADMIN = "admin"
APPROVAL = "the role the approval request names"


def _decision(verb: str) -> Endpoint:
    """``POST /v1/runs/{run_id}/approve`` or ``/reject``: one handler decides by the path."""
    return Endpoint(
        f"/v1/runs/{{run_id}}/{verb}",
        "POST",
        api.decide,
        f"{verb.capitalize()} the run's pending request (recorded as the key's name)",
        "approvals",
        replies.ApprovalReply,
        body=bodies.Decision,
        role=APPROVAL,
        errors=(409,),
    )


ENDPOINTS = (
    Endpoint(
        "/v1/runs",
        "POST",
        api.start_run,
        "Start a run (Idempotency-Key header or idempotency_key field: a repeat returns the "
        "first run)",
        "runs",
        replies.RunReply,
        status=201,
        body=bodies.StartRun,
        body_required=True,
        errors=(404, 409),
        idempotent=True,
        links=(
            "GET /v1/runs/{run_id}",
            "GET /v1/runs/{run_id}/events",
            "POST /v1/runs/{run_id}/signals",
            "POST /v1/runs/{run_id}/cancel",
        ),
    ),
    Endpoint(
        "/v1/runs",
        "GET",
        api.list_runs,
        "List the tenant's runs, newest first, with counts by status",
        "runs",
        replies.RunList,
        query=bodies.RunsQuery,
    ),
    Endpoint(
        "/v1/runs/{run_id}",
        "GET",
        api.get_run,
        "A run: state, next step, steps, messages, budget, effects, approvals, events",
        "runs",
        replies.RunDetail,
    ),
    Endpoint(
        "/v1/runs/{run_id}/cancel",
        "POST",
        api.cancel_run,
        "Cancel a run at its next step boundary",
        "runs",
        replies.RunReply,
        body=bodies.CancelRun,
        errors=(409,),
    ),
    Endpoint(
        "/v1/runs/{run_id}/resume",
        "POST",
        api.resume_run,
        "Hand a run that needs a person back to the workers",
        "runs",
        replies.RunReply,
        body=bodies.ResumeRun,
        role=ADMIN,
        errors=(409,),
    ),
    Endpoint(
        "/v1/runs/{run_id}/fail",
        "POST",
        api.fail_run,
        "End a run that needs a person as FAILED",
        "runs",
        replies.RunReply,
        body=bodies.FailRun,
        body_required=True,
        role=ADMIN,
        errors=(409,),
    ),
    Endpoint(
        "/v1/runs/{run_id}/signals",
        "POST",
        api.signal_run,
        "Deliver a signal",
        "runs",
        replies.Signalled,
        body=bodies.SendSignal,
        body_required=True,
        errors=(409,),
    ),
    *(_decision(verb) for verb in ("approve", "reject")),
    Endpoint(
        "/v1/runs/{run_id}/events",
        "GET",
        api.run_events,
        "The run's events as server-sent events (id = sequence number; resume with "
        "Last-Event-ID or ?after=); ends when the run ends",
        "streams",
        query=bodies.StreamQuery,
        stream=True,
    ),
    Endpoint(
        "/v1/events",
        "GET",
        api.tenant_events,
        "Every run's events of the tenant as server-sent events",
        "streams",
        query=bodies.EventsQuery,
        stream=True,
    ),
    Endpoint(
        "/v1/messages/{message_id}/stream",
        "GET",
        api.message_deltas,
        "A message's token deltas as server-sent events (id = sequence number; resume with "
        "Last-Event-ID or ?after=); ends when the message is finished",
        "streams",
        query=bodies.StreamQuery,
        stream=True,
    ),
    Endpoint(
        "/v1/stream-tokens",
        "POST",
        tokens.mint,
        "A short-lived, read-only token that opens one stream as ?token= (for EventSource, "
        "which cannot send headers)",
        "streams",
        replies.StreamTokenReply,
        status=201,
        body=bodies.NewStreamToken,
        errors=(404,),
    ),
    Endpoint(
        "/v1/approvals",
        "GET",
        api.list_approvals,
        "Approval requests (pending unless pending=false)",
        "approvals",
        replies.Approvals,
        query=bodies.ApprovalsQuery,
    ),
    Endpoint(
        "/v1/effects",
        "GET",
        admin.list_effects,
        "Effects, by run and status",
        "effects",
        replies.Effects,
        query=bodies.EffectsQuery,
    ),
    Endpoint(
        "/v1/effects/{key:path}/resolve",
        "POST",
        admin.resolve_effect,
        "Record whether an ambiguous effect happened",
        "effects",
        replies.EffectReply,
        body=bodies.ResolveEffect,
        body_required=True,
        role=ADMIN,
        errors=(409,),
    ),
    Endpoint(
        "/v1/stuck",
        "GET",
        admin.stuck_runs,
        "RUNNING runs with no progress for threshold seconds",
        "operations",
        replies.StuckList,
        query=bodies.StuckQuery,
    ),
    Endpoint(
        "/v1/quarantined",
        "GET",
        admin.quarantined_runs,
        "QUARANTINED runs",
        "operations",
        replies.Runs,
    ),
    Endpoint(
        "/v1/workers",
        "GET",
        admin.list_workers,
        "Workers of the fleet",
        "operations",
        replies.Workers,
        role=ADMIN,
    ),
    Endpoint("/v1/me", "GET", admin.me, "Who the key speaks for", "keys", replies.Me),
    Endpoint(
        "/v1/keys",
        "GET",
        admin.keys,
        "List the tenant's API keys",
        "keys",
        replies.Keys,
        role=ADMIN,
    ),
    Endpoint(
        "/v1/keys",
        "POST",
        admin.keys,
        "Make an API key (its token is shown once)",
        "keys",
        replies.MadeKey,
        status=201,
        body=bodies.NewKey,
        body_required=True,
        role=ADMIN,
        errors=(409,),
        links=("DELETE /v1/keys/{key_id}",),
    ),
    Endpoint(
        "/v1/keys/{key_id}",
        "DELETE",
        admin.revoke_key,
        "Revoke an API key",
        "keys",
        replies.KeyReply,
        role=ADMIN,
    ),
)


Handler = Callable[[Request], Awaitable[Response]]


def dispatcher(path: str, handlers: dict[str, Handler]) -> Handler:
    """The one handler of ``path``: each documented method goes to its operation; ``OPTIONS``
    answers 204 with ``Allow`` naming exactly the documented methods; any other method is
    ``method_not_allowed`` (405) with the same ``Allow`` (before the key is looked at: the
    path's methods are no secret, they are in the OpenAPI document)."""
    allow = tuple(sorted(handlers))

    async def dispatch(request: Request) -> Response:
        handler = handlers.get(request.method)
        if handler is not None:
            return await handler(request)
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": ", ".join(allow)})
        raise MethodNotAllowedError(
            f"{request.method[:20]} is not an operation of {path}", allow=allow
        )

    dispatch.__name__ = f"dispatch {path}"
    return dispatch


def api_routes() -> list[Route]:
    """One route per path of :data:`ENDPOINTS`, dispatching by method (see
    :func:`dispatcher`)."""
    paths: dict[str, dict[str, Handler]] = {}
    for e in ENDPOINTS:
        paths.setdefault(e.path, {})[e.method] = e.handler
    return [Route(path, Dispatch(path, handlers)) for path, handlers in paths.items()]


class Dispatch:
    """A path's :func:`dispatcher` as an ASGI app (a route given an app answers every method;
    one given a function, only ``GET``); ``allow`` is what its ``Allow`` header names."""

    def __init__(self, path: str, handlers: dict[str, Handler]) -> None:
        self.allow = tuple(sorted(handlers))
        self.app = request_response(dispatcher(path, handlers))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
