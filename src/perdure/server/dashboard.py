"""The dashboard: server-rendered pages (Jinja2) for runs, one run's live timeline, approvals
and what needs a person (stuck runs, ambiguous effects, quarantined runs). A person logs in
with an API key, kept in an HTTP-only, same-site cookie; every page acts as that key's
principal, through the same Runtime calls as the API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from perdure.core.effects import EffectStatus
from perdure.core.errors import NotAuthenticatedError, NotAuthorizedError, PerdureError
from perdure.core.model import Principal, RunStatus
from perdure.core.shapes import iso
from perdure.runtime.runtime import Runtime
from perdure.server.api import run_detail
from perdure.server.auth import ADMIN, COOKIE, principal_of, require

env = Environment(
    loader=PackageLoader("perdure.server", "templates"), autoescape=select_autoescape()
)
env.filters["compact"] = lambda v: "" if v is None else orjson.dumps(v).decode()
env.filters["when"] = lambda v: "" if v is None else str(v).replace("T", " ")[:19]

STATUS_ORDER = [s.value for s in RunStatus]
Page = Callable[[Request, Principal, Runtime], Awaitable[Response]]


def render(request: Request, name: str, **context: Any) -> HTMLResponse:
    """A page of the dashboard."""
    base = request.scope.get("root_path", "")
    html = env.get_template(name).render(base=base, request=request, **context)
    return HTMLResponse(html)


def to(request: Request, path: str) -> RedirectResponse:
    """A redirect (after a form) to ``path`` under the app's root."""
    return RedirectResponse(request.scope.get("root_path", "") + path, status_code=303)


def page(handler: Page) -> Callable[[Request], Awaitable[Response]]:
    """A page for a logged-in person: no (or a revoked) key goes to the login page; a refused
    action or a missing run is shown as a page, never a traceback."""

    async def wrapped(request: Request) -> Response:
        try:
            who = await principal_of(request)
        except NotAuthenticatedError:
            return to(request, "/login")
        if request.method == "POST" and not same_origin(request):
            return render(
                request,
                "error.html",
                who=who,
                code="not_authorized",
                message="a form from another site was refused",
                status=403,
            )
        try:
            return await handler(request, who, request.app.state.runtime)
        except PerdureError as exc:
            response = render(
                request, "error.html", who=who, code=exc.code, message=exc.message, fix=exc.fix
            )
            response.status_code = 403 if isinstance(exc, NotAuthorizedError) else 400
            return response

    wrapped.__name__ = handler.__name__
    return wrapped


def same_origin(request: Request) -> bool:
    """True unless the browser says the form came from another origin."""
    origin = request.headers.get("origin")
    return origin is None or origin.split("://", 1)[-1] == request.headers.get("host")


async def form(request: Request) -> dict[str, str]:
    """The posted form's fields (``application/x-www-form-urlencoded``, at most 64 KiB)."""
    raw = (await request.body())[:65536].decode("utf-8", "replace")
    return dict(parse_qsl(raw, keep_blank_values=True))


async def login(request: Request) -> Response:
    """The login form (GET) and its check (POST): the key becomes the session cookie."""
    if request.method == "GET":
        return render(request, "login.html", who=None, error=None)
    token = (await form(request)).get("key", "").strip()
    runtime: Runtime = request.app.state.runtime
    try:
        await run_in_threadpool(runtime.authenticate, token)
    except NotAuthenticatedError as exc:
        response = render(request, "login.html", who=None, error=exc.message)
        response.status_code = 401
        return response
    done = to(request, "/")
    done.set_cookie(COOKIE, token, httponly=True, samesite="strict", max_age=12 * 3600)
    return done


async def logout(request: Request) -> Response:
    """Forget the session cookie."""
    response = to(request, "/login")
    response.delete_cookie(COOKIE)
    return response


@page
async def runs_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Runs of the tenant, newest first, with counts by status and a status filter."""
    status = request.query_params.get("status") or None
    found = await run_in_threadpool(
        lambda: rt.runs(tenant=who, status=[status] if status else [], limit=200)
    )
    counts: dict[str, int] = {}
    for c in await run_in_threadpool(lambda: rt.run_counts(tenant=who)):
        counts[str(c.status)] = counts.get(str(c.status), 0) + c.count
    since = await run_in_threadpool(rt.last_event_seq)  # the page goes live from here
    return render(
        request,
        "runs.html",
        who=who,
        runs=found,
        counts=counts,
        status=status,
        since=since,
        statuses=[s for s in STATUS_ORDER if s in counts],
        total=sum(counts.values()),
        iso=iso,
    )


@page
async def run_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """One run: status, steps, live timeline, messages, effects, waits, decisions."""
    run = await run_detail(rt, who, str(request.path_params["run_id"]))
    pending = [a for a in run["approvals"] if a["status"] == "pending"]
    events = run["events"]
    last = events[-1]["seq"] if events else 0
    can_decide = bool(pending) and pending[-1]["role"] in who.roles
    return render(
        request,
        "run.html",
        who=who,
        run=run,
        pending=pending[-1] if pending else None,
        can_decide=can_decide,
        last_seq=last,
        admin=ADMIN in who.roles,
    )


@page
async def decide_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """The approve and reject buttons: decided as the logged-in principal."""
    run_id = str(request.path_params["run_id"])
    comment = (await form(request)).get("comment") or None
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
    fields = await form(request)
    if request.url.path.endswith("/fail"):
        require(who, ADMIN, "failing a run")
        reason = fields.get("reason") or "failed from the dashboard"
        await run_in_threadpool(lambda: rt.fail(run_id, tenant=who, reason=reason, by=who.subject))
    else:
        require(who, ADMIN, "resuming a run that needs a person")
        at = fields.get("at") or None
        await run_in_threadpool(lambda: rt.repair(run_id, tenant=who, at=at, by=who.subject))
    return to(request, f"/runs/{run_id}")


@page
async def resolve_page(request: Request, who: Principal, rt: Runtime) -> Response:
    """Record whether an ambiguous effect happened (admin)."""
    require(who, ADMIN, "resolving an effect")
    fields = await form(request)
    key = fields.get("key", "")
    await run_in_threadpool(
        lambda: rt.resolve_effect(
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
        stuck = rt.stuck(limit=500, tenant=who)
        return {
            "stuck": stuck,
            "ambiguous": rt.effects(tenant=who, status=[EffectStatus.AMBIGUOUS]),
            "attention": rt.runs(tenant=who, status=[RunStatus.NEEDS_ATTENTION], limit=500),
            "quarantined": rt.runs(tenant=who, status=[RunStatus.QUARANTINED], limit=500),
            "approvals": rt.approvals(tenant=who),
        }

    found = await run_in_threadpool(read)
    return render(request, "attention.html", who=who, admin=ADMIN in who.roles, **found)


def routes() -> list[BaseRoute]:
    """The dashboard's routes."""
    post = ["POST"]
    return [
        Route("/", runs_page, methods=["GET"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=post),
        Route("/attention", attention_page, methods=["GET"]),
        Route("/effects/resolve", resolve_page, methods=post),
        Route("/runs/{run_id}", run_page, methods=["GET"]),
        Route("/runs/{run_id}/approve", decide_page, methods=post),
        Route("/runs/{run_id}/reject", decide_page, methods=post),
        Route("/runs/{run_id}/cancel", cancel_page, methods=post),
        Route("/runs/{run_id}/resume", repair_page, methods=post),
        Route("/runs/{run_id}/fail", repair_page, methods=post),
    ]
