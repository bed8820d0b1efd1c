"""The dashboard: server-rendered pages (Jinja2) for runs, one run's live timeline, approvals
and what needs a person (stuck runs, ambiguous effects, quarantined runs). A person logs in
with an API key (:mod:`perdure.server.login`) and gets a server-side session; the cookie
carries the session's token, never the key. Every page acts as the session's principal,
through the same Runtime calls as the API.

Every form that changes something is refused unless it came from a page of this origin
(``Sec-Fetch-Site``, ``Origin``), is ``application/x-www-form-urlencoded`` and carries the
CSRF token signed with the session (:mod:`perdure.server.csrf`). The pages' live views follow
``/events`` and ``/runs/{id}/events`` here, authenticated by the session, never ``/v1``; they
close when the session ends. A refusal is a page with its real status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from perdure.core.effects import EffectStatus
from perdure.core.errors import NotAuthenticatedError, PerdureError, WorkflowNotFoundError
from perdure.core.model import Principal, RunStatus
from perdure.core.shapes import iso
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime
from perdure.server import assets, sse
from perdure.server.api import call, event_stream, run_detail
from perdure.server.auth import ADMIN, require
from perdure.server.cookies import Cookies
from perdure.server.csrf import check_csrf, csrf_token
from perdure.server.forms import failure, form_of, render, to
from perdure.server.graph import layout
from perdure.server.listing import cursor_of, number, run_filter
from perdure.server.login import login, logout
from perdure.server.origin import require_not_cross_site, require_same_origin
from perdure.server.overview import status_bars
from perdure.server.policy import Policy
from perdure.server.timeline import chart

STATUS_ORDER = [s.value for s in RunStatus]
PAGE = 50
"""Runs per page of the run list (``limit=`` changes it, up to 500)."""
TIMELINE_EVENTS = 1000
"""The most recent events the run page's timeline reads (retries, takeovers, waits)."""
Page = Callable[[Request, Principal, Runtime], Awaitable[Response]]


async def session_of(request: Request) -> tuple[Principal, str]:
    """The principal of the browser's session and its token, or
    :class:`NotAuthenticatedError` (no cookie, or a session that ended)."""
    cookies: Cookies = request.app.state.cookies
    token = cookies.session(request)
    if token is None:
        raise NotAuthenticatedError("not logged in", fix="log in with an API key at /login")
    credentials: Credentials = request.app.state.credentials
    who: Principal = await run_in_threadpool(credentials.session_principal, token)
    return who, token


def page(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page for a logged-in person: without a live session a GET goes to the login page
    and a POST is refused (401); a POST must pass the origin, media type and CSRF checks
    first (403, 415); a refused action or a missing run is a page with its status, never a
    traceback."""

    async def wrapped(request: Request) -> Response:
        try:
            who, token = await session_of(request)
        except NotAuthenticatedError as exc:
            if request.method != "GET":
                return failure(request, None, exc)
            away = to(request, "/login")
            cookies: Cookies = request.app.state.cookies
            if cookies.session(request) is not None:  # a cookie of a session that ended
                cookies.clear_session(request, away)
            return away
        request.state.csrf = csrf_token(token, "session")
        try:
            if request.method == "POST":
                policy: Policy = request.app.state.policy
                require_same_origin(request, policy)
                request.state.form = await form_of(request)
                check_csrf(token, "session", request.state.form.get("csrf"))
            return await handler(request, who, request.app.state.runtime)
        except PerdureError as exc:
            return failure(request, who, exc)

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


def form(request: Request) -> dict[str, str]:
    """The fields of the form :func:`page` checked."""
    fields: dict[str, str] = request.state.form
    return fields


async def run_stream(request: Request) -> Response:
    """The run page's live timeline: the run's events (SSE), as the session's principal."""
    who, token = await session_of(request)
    require_not_cross_site(request)
    rt: Runtime = request.app.state.runtime
    run = await call(rt.get, str(request.path_params["run_id"]), tenant=who)
    source = sse.RunEvents(rt, who.tenant_id, run.run_id)
    return event_stream(request, source, ("session", token))


async def runs_stream(request: Request) -> Response:
    """The runs page's live view: the tenant's events (SSE), as the session's principal."""
    who, token = await session_of(request)
    require_not_cross_site(request)
    rt: Runtime = request.app.state.runtime
    source = sse.TenantEvents(
        rt,
        who.tenant_id,
        tuple(request.query_params.getlist("type")),
        request.query_params.get("workflow"),
    )
    return event_stream(request, source, ("session", token))


@page
async def runs_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Runs of the tenant, newest first, a page at a time (a cursor), with counts by status
    and filters: status, workflow, thread, creation time and a search in ids."""
    where = run_filter(request)
    cursor = cursor_of(request)
    limit = number(request, "limit", PAGE, 1, 500)
    found = await call(rt.run_page, tenant=who, where=where, cursor=cursor, limit=limit)
    counts: dict[str, int] = {}
    workflows: set[str] = set()
    for c in await call(rt.activity.run_counts, tenant=who):
        counts[str(c.status)] = counts.get(str(c.status), 0) + c.count
        workflows.add(c.workflow)
    since = await run_in_threadpool(rt.activity.last_event_seq)  # the page goes live from here
    kept = [(k, v) for k, v in request.query_params.multi_items() if k != "cursor" and v]
    return render(
        request,
        "runs.html",
        who=who,
        runs=found.runs,
        counts=counts,
        where=where,
        status=where.statuses[0].value if len(where.statuses) == 1 else None,
        query=dict(kept),
        filtered=any(k != "limit" for k, _ in kept),
        next_query=urlencode([*kept, ("cursor", found.next_cursor)]) if found.next_cursor else None,
        first_query=urlencode(kept) if cursor else None,
        workflows=sorted(workflows),
        since=since,
        statuses=STATUS_ORDER,
        total=sum(counts.values()),
        iso=iso,
    )


@page
async def run_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """One run: status, its step timeline drawn to scale, its workflow's step graph with the
    step it is on, tokens and cost per step, messages with readable tool calls, effects,
    waits, decisions, and the recent events with formatted tracebacks."""
    run_id = str(request.path_params["run_id"])
    run = await run_detail(rt, who, run_id)
    view = await call(rt.status, run_id, tenant=who, events=TIMELINE_EVENTS)
    pending = [a for a in run["approvals"] if a["status"] == "pending"]
    events = run["events"]
    last = events[-1]["seq"] if events else 0
    can_decide = bool(pending) and pending[-1]["role"] in who.roles
    drawn = chart(view.run, view.steps, view.events, view.effects, rt.clock.now())
    finished = view.run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
    try:
        wf = rt.workflow(view.run.workflow)
    except WorkflowNotFoundError:
        wf = None
    path = [s.name for s in sorted(view.steps, key=lambda s: s.seq)]
    current = None if finished else view.run.next_step
    return render(
        request,
        "run.html",
        who=who,
        run=run,
        pending=pending[-1] if pending else None,
        can_decide=can_decide,
        last_seq=last,
        admin=ADMIN in who.roles,
        chart=drawn,
        graph=None if wf is None else layout(wf, path, current),
        steps=[lane for lane in drawn.lanes if lane.seq is not None],
    )


@page
async def overview_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Runs by status over time (by the hour for a day, or by the day for a month) and
    percentiles of how long each step took."""
    daily = request.query_params.get("period") == "day"
    now = rt.clock.now()
    since = (now - timedelta(days=30 if daily else 1)).replace(minute=0, second=0, microsecond=0)
    if daily:
        since = since.replace(hour=0)
    found = await call(rt.activity.runs_by_period, tenant=who, since=since, daily=daily)
    latency = await call(rt.activity.step_latencies, tenant=who, since=since)
    return render(
        request,
        "overview.html",
        who=who,
        daily=daily,
        since=since,
        bars=status_bars(found, since, now, daily=daily),
        latency=latency,
        longest=max((s.longest for s in latency), default=0.0),
    )


@page
async def decide_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """The approve and reject buttons: decided as the logged-in principal."""
    run_id = str(request.path_params["run_id"])
    comment = form(request).get("comment") or None
    verb = rt.approve if request.url.path.endswith("/approve") else rt.reject
    await run_in_threadpool(lambda: verb(run_id, who, comment=comment))
    return to(request, f"/runs/{run_id}")


@page
async def cancel_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """The cancel button."""
    run_id = str(request.path_params["run_id"])
    reason = f"cancelled by {who.subject} from the dashboard"
    await run_in_threadpool(lambda: rt.cancel(run_id, tenant=who, reason=reason))
    return to(request, f"/runs/{run_id}")


@page
async def repair_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Hand a run that needs a person back to the workers, or fail it (admin)."""
    run_id = str(request.path_params["run_id"])
    fields = form(request)
    if request.url.path.endswith("/fail"):
        require(who, ADMIN, "failing a run")
        reason = fields.get("reason") or "failed from the dashboard"
        await run_in_threadpool(
            lambda: rt.versions.fail(run_id, tenant=who, reason=reason, by=who.subject)
        )
    else:
        require(who, ADMIN, "resuming a run that needs a person")
        at = fields.get("at") or None
        await run_in_threadpool(
            lambda: rt.versions.repair(run_id, tenant=who, at=at, by=who.subject)
        )
    return to(request, f"/runs/{run_id}")


@page
async def resolve_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Record whether an ambiguous effect happened (admin)."""
    require(who, ADMIN, "resolving an effect")
    fields = form(request)
    key = fields.get("key", "")
    await run_in_threadpool(
        lambda: rt.effects.resolve(
            key,
            applied=fields.get("applied") == "yes",
            by=who.subject,
            reason=fields.get("reason") or "decided from the dashboard",
            tenant=who,
            receipt=fields.get("receipt") or None,
        )
    )
    return to(request, "/attention")


@page
async def attention_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """What needs a person: stuck runs, ambiguous effects, runs needing attention and
    quarantined runs, with their evidence and the actions that resolve them."""

    def read() -> dict[str, Any]:
        stuck = rt.activity.stuck(limit=500, tenant=who)
        return {
            "stuck": stuck,
            "ambiguous": rt.effects.list(tenant=who, status=[EffectStatus.AMBIGUOUS]),
            "attention": rt.runs(tenant=who, status=[RunStatus.NEEDS_ATTENTION], limit=500),
            "quarantined": rt.runs(tenant=who, status=[RunStatus.QUARANTINED], limit=500),
            "approvals": rt.approvals(tenant=who),
        }

    found = await run_in_threadpool(read)
    return render(request, "attention.html", who=who, admin=ADMIN in who.roles, **found)


def routes() -> list[BaseRoute]:
    """The dashboard's routes (its pages, forms, live streams and static files)."""
    post = ["POST"]
    return [
        Route("/", runs_page, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=post),
        Route("/attention", attention_page, methods=["GET"]),
        Route("/overview", overview_page, methods=["GET"]),
        Route("/events", runs_stream, methods=["GET"]),
        Route("/effects/resolve", resolve_page, methods=post),
        Route("/runs/{run_id}", run_page, methods=["GET"]),
        Route("/runs/{run_id}/events", run_stream, methods=["GET"]),
        Route("/runs/{run_id}/approve", decide_page, methods=post),
        Route("/runs/{run_id}/reject", decide_page, methods=post),
        Route("/runs/{run_id}/cancel", cancel_page, methods=post),
        Route("/runs/{run_id}/resume", repair_page, methods=post),
        Route("/runs/{run_id}/fail", repair_page, methods=post),
        *assets.routes(),
    ]
