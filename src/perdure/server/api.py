"""The JSON API under ``/v1``: the Runtime's verbs, scoped to the tenant of the key that
authenticated and checked against its roles (see :mod:`perdure.server.auth`). Only a bearer
key authenticates here, and a request body is read only when it is declared
``application/json`` (``unsupported_media_type``, 415, otherwise)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from perdure.core.budget import Budget
from perdure.core.errors import (
    DefinitionError,
    InvalidInputError,
    NotAuthorizedError,
    PerdureError,
    UnsupportedMediaTypeError,
)
from perdure.core.ids import checked_id
from perdure.core.model import JSON, Principal
from perdure.core.shapes import approval_json, effect_json, event_json, iso, run_json
from perdure.core.stream_tokens import EVENTS, message_scope, run_scope
from perdure.runtime.runtime import Runtime
from perdure.server import deltas, sse
from perdure.server.auth import ADMIN, bearer, principal_of, require, stream_principal_of
from perdure.server.bodies import (
    ApprovalsQuery,
    CancelRun,
    Decision,
    EventsQuery,
    FailRun,
    ResumeRun,
    RunsQuery,
    SendSignal,
    StartRun,
    StreamQuery,
    decoded,
    queried,
)
from perdure.server.guard import Credential, Recheck, guarded
from perdure.server.hub import Hub
from perdure.server.listing import cursor_of, run_filter

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
MAX_BODY = 1_000_000
"""The largest request body accepted, in bytes."""


def json_response(body: Any, status: int = 200) -> Response:
    """A JSON response (orjson: datetimes as ISO 8601)."""
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking Runtime call off the event loop."""
    return await run_in_threadpool(fn, *args, **kwargs)


def media_type(request: Request) -> str | None:
    """The media type the request declares for its body (no parameters), if any."""
    declared = request.headers.get("content-type")
    return declared.split(";", 1)[0].strip().lower() if declared is not None else None


async def require_media_type(request: Request, accepted: str) -> None:
    """Refuse (:class:`UnsupportedMediaTypeError`) a body, or a declared type, other than
    ``accepted``; a request with no body and no type passes."""
    declared = media_type(request)
    if declared == accepted or (declared is None and not await request.body()):
        return
    raise UnsupportedMediaTypeError(
        f"a body of type {declared or 'unknown'!r} was refused: this endpoint takes {accepted}",
        fix=f"send the body as {accepted} with a matching Content-Type header",
    )


async def body_of(request: Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is ``{}``); bad JSON is ``invalid_input``."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidInputError(f"the request body is over {MAX_BODY} bytes", fix="send less")
    if not raw.strip():
        return {}
    try:
        found = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidInputError(f"the body is not valid JSON ({exc})") from None
    if not isinstance(found, dict):
        raise InvalidInputError("the body must be a JSON object")
    return found


async def parsed(request: Request, model: type[M]) -> M:
    """The request's body as ``model`` (an empty body is ``{}``), or ``invalid_input``: bad
    JSON, not an object, or a field missing, unknown or of the wrong type."""
    await body_of(request)
    return decoded(model, await request.body())


Handler = Callable[[Request, Principal, Runtime], Awaitable[Response]]


def endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint that authenticates the bearer key first, refuses a body that is not JSON,
    and hands the handler the principal and runtime."""

    async def wrapped(request: Request) -> Response:
        principal = await principal_of(request)
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            await require_media_type(request, "application/json")
        return await handler(request, principal, request.app.state.runtime)

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


def stream_endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint of a stream: authenticated by a bearer key, or by a stream token in
    ``?token=`` (read-only, one stream: the handler checks its scope with
    :func:`require_scope`)."""

    async def wrapped(request: Request) -> Response:
        principal, scope = await stream_principal_of(request)
        request.state.stream_scope = scope
        return await handler(request, principal, request.app.state.runtime)

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


def require_scope(request: Request, scope: str) -> None:
    """Refuse a stream token that opens another stream than ``scope``."""
    held: str | None = request.state.stream_scope
    if held is not None and held != scope:
        raise NotAuthorizedError(
            f"this stream token opens {held!r}, not {scope!r}",
            fix="mint a token for this stream with POST /v1/stream-tokens",
        )


def run_id_of(request: Request) -> str:
    """The run id of the path."""
    return str(request.path_params["run_id"])


# -- runs -----------------------------------------------------------------------------------------


@endpoint
async def start_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """Start a run; a repeated idempotency key returns the first run."""
    body = await parsed(request, StartRun)
    run = await call(
        rt.start,
        body.workflow,
        body.input,
        tenant=who,
        thread=body.thread,
        idempotency_key=request.headers.get("idempotency-key", body.idempotency_key),
        durability=body.durability,
        release=None if body.release is None else body.release.model_dump(exclude_none=True),
        policy=body.policy,
        trace_context=trace_of(request),
    )
    return json_response(run_json(run), 201)


def trace_of(request: Request) -> dict[str, str] | None:
    """The W3C trace context headers of a request, if it carries them."""
    found = {k: v for k in ("traceparent", "tracestate") if (v := request.headers.get(k))}
    return found or None


@endpoint
async def list_runs(request: Request, who: Principal, rt: Runtime) -> Response:
    """The tenant's runs, newest first, a page at a time, with counts by status: filtered by
    ``status``, ``workflow``, ``thread``, ``since``, ``until`` and ``q`` (see
    :mod:`perdure.server.listing`); ``next_cursor`` continues the listing (``null``: the
    last page). A malformed parameter or cursor is a one-line 400."""
    query = queried(request, RunsQuery)
    found = await call(
        rt.run_page,
        tenant=who,
        where=run_filter(request),
        cursor=cursor_of(request),
        limit=query.limit,
    )
    counts: dict[str, int] = {}
    for c in await call(rt.activity.run_counts, tenant=who):
        counts[str(c.status)] = counts.get(str(c.status), 0) + c.count
    body = {"runs": [run_json(r) for r in found.runs], "counts": counts}
    return json_response({**body, "next_cursor": found.next_cursor})


async def run_detail(rt: Runtime, who: Principal, run_id: str) -> dict[str, JSON]:
    """Everything about one run: the run, its steps, messages, effects, waits and events."""
    view = await call(rt.status, run_id, tenant=who, events=200)
    approvals = await call(rt.approvals, tenant=who, run_id=run_id, pending=False)
    try:
        state: JSON = await call(rt.state, run_id, tenant=who)
        unreadable = None
    except PerdureError as exc:  # tampered or unreadable: say so, show the rest
        state, unreadable = None, exc.code
    return {
        **run_json(view.run),
        "state": state,
        "state_error": unreadable,
        "completed_steps": view.completed_steps,
        "steps": [
            {
                "seq": s.seq,
                "name": s.name,
                "outcome": str(s.outcome),
                "fence": s.fence,
                "next_step": s.next_step,
                "started_at": iso(s.started_at),
                "finished_at": iso(s.finished_at),
            }
            for s in view.steps
        ],
        "messages": [m.to_json() for m in view.messages],
        "effects": [effect_json(e) for e in view.effects],
        "approvals": [approval_json(a) for a in approvals],
        "events": [event_json(e) for e in view.events],
    }


@endpoint
async def get_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """One run with its state, next step, steps, messages, budget, effects and waits."""
    return json_response(await run_detail(rt, who, run_id_of(request)))


@endpoint
async def cancel_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """Cancel a run at its next step boundary."""
    body = await parsed(request, CancelRun)
    run = await call(
        rt.cancel,
        run_id_of(request),
        tenant=who,
        reason=body.reason or f"cancelled by {who.subject}",
        request_id=body.request_id,
    )
    return json_response(run_json(run))


@endpoint
async def resume_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """Hand a run that needs a person back to the workers (admin)."""
    require(who, ADMIN, "resuming a run that needs a person")
    body = await parsed(request, ResumeRun)
    more = body.add_budget
    budget = None
    if more is not None:
        try:
            budget = Budget(steps=more.steps, cost=more.cost, tokens=more.tokens)
        except DefinitionError as exc:
            raise InvalidInputError(f"field 'add_budget': {exc.message}", fix=exc.fix) from None
    run = await call(
        rt.versions.repair,
        run_id_of(request),
        tenant=who,
        at=body.at,
        patch=body.patch,
        add_budget=budget,
        by=who.subject,
    )
    return json_response(run_json(run))


@endpoint
async def fail_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """End a run that needs a person as FAILED (admin)."""
    require(who, ADMIN, "failing a run")
    body = await parsed(request, FailRun)
    run = await call(
        rt.versions.fail, run_id_of(request), tenant=who, reason=body.reason, by=who.subject
    )
    return json_response(run_json(run))


@endpoint
async def signal_run(request: Request, who: Principal, rt: Runtime) -> Response:
    """Deliver a signal to a run."""
    body = await parsed(request, SendSignal)
    signal, outcome = await call(
        rt.signal,
        run_id_of(request),
        body.name,
        body.payload,
        tenant=who,
        signal_id=body.signal_id,
    )
    return json_response({"signal_id": signal.signal_id, "name": signal.name, "outcome": outcome})


@endpoint
async def decide(request: Request, who: Principal, rt: Runtime) -> Response:
    """Approve or reject a run's pending request as the authenticated principal."""
    body = await parsed(request, Decision)
    verb = rt.approve if request.url.path.endswith("/approve") else rt.reject
    approval = await call(
        verb, run_id_of(request), who, comment=body.comment, request_id=body.request_id
    )
    return json_response(approval_json(approval))


@endpoint
async def list_approvals(request: Request, who: Principal, rt: Runtime) -> Response:
    """Approval requests of the tenant (pending ones unless ``pending=false``)."""
    query = queried(request, ApprovalsQuery)
    found = await call(rt.approvals, tenant=who, run_id=query.run_id, pending=query.pending)
    return json_response({"approvals": [approval_json(a) for a in found]})


# -- streams --------------------------------------------------------------------------------------


STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def credential_of(request: Request) -> Credential:
    """The credential a stream was opened with (the endpoint checked it): its bearer key,
    else its stream token."""
    key = bearer(request)
    if key is not None:
        return ("key", key)
    return ("stream", request.query_params.get("token") or "")


def position_of(request: Request) -> int:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else after ``?after=``,
    else from the beginning."""
    return sse.resume_position(
        request.headers.get("last-event-id"), request.query_params.get("after")
    )


def event_stream(request: Request, source: sse.Source, credential: Credential) -> Response:
    """A text/event-stream response that follows ``source`` from the client's position, and
    closes once ``credential`` no longer holds (see :mod:`perdure.server.guard`)."""
    after = position_of(request)
    hub: Hub = request.app.state.hub
    heartbeat: float = request.app.state.heartbeat
    recheck: Recheck = request.app.state.recheck
    body = sse.stream(source, hub, after, heartbeat=heartbeat)
    return StreamingResponse(
        guarded(body, recheck, credential), media_type="text/event-stream", headers=STREAM_HEADERS
    )


@stream_endpoint
async def run_events(request: Request, who: Principal, rt: Runtime) -> Response:
    """The run's events, live (SSE), resumable with Last-Event-ID; ends when the run ends."""
    queried(request, StreamQuery)
    position_of(request)
    run_id = checked_id(run_id_of(request), "run id")
    require_scope(request, run_scope(run_id))
    run = await call(rt.get, run_id, tenant=who)
    source = sse.RunEvents(rt, who.tenant_id, run.run_id)
    return event_stream(request, source, credential_of(request))


@stream_endpoint
async def message_deltas(request: Request, who: Principal, rt: Runtime) -> Response:
    """A message's token deltas, live (SSE), resumable with Last-Event-ID; ends when the
    message is finished."""
    queried(request, StreamQuery)
    after = position_of(request)
    message_id = checked_id(request.path_params["message_id"], "message id")
    require_scope(request, message_scope(message_id))
    heartbeat: float = request.app.state.heartbeat
    recheck: Recheck = request.app.state.recheck
    body = deltas.message_stream(rt, who.tenant_id, message_id, after, heartbeat=heartbeat)
    return StreamingResponse(
        guarded(body, recheck, credential_of(request)),
        media_type="text/event-stream",
        headers=STREAM_HEADERS,
    )


@stream_endpoint
async def tenant_events(request: Request, who: Principal, rt: Runtime) -> Response:
    """Every run's events of the tenant, live (SSE), filtered by ``type`` and ``workflow``."""
    query = queried(request, EventsQuery)
    position_of(request)
    require_scope(request, EVENTS)
    source = sse.TenantEvents(rt, who.tenant_id, tuple(query.type), query.workflow)
    return event_stream(request, source, credential_of(request))
