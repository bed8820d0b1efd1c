"""Logging in to the dashboard and out of it.

``GET /login`` shows the form with a CSRF token signed with a nonce kept in an HTTP-only
cookie; ``POST /login`` checks the origin, the body's type and the token before it looks at
the key, counts a failed key per address and key id (:mod:`perdure.server.auth`), and on
success makes a server-side session (:meth:`~.Credentials.open_session`, the server's access):
the cookie carries the session's token, never the key. ``POST /logout`` (same checks, the
token signed with the session) ends the session, which also closes its open streams.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from perdure.core.errors import NotAuthenticatedError, PerdureError
from perdure.runtime.admin.credentials import Credentials
from perdure.server.auth import attempt_subjects, refusal
from perdure.server.cookies import Cookies
from perdure.server.csrf import check_csrf, csrf_token
from perdure.server.errors import error_headers, status_of
from perdure.server.forms import failure, form_of, render, to
from perdure.server.origin import require_same_origin
from perdure.server.policy import Policy


def login_form(request: Request, error: PerdureError | None = None) -> Response:
    """The login page (with the refusal ``error`` and its status, if any)."""
    cookies: Cookies = request.app.state.cookies
    nonce = cookies.nonce_for(request)
    response = render(
        request,
        "login.html",
        who=None,
        csrf=csrf_token(nonce, "login"),
        error=None if error is None else error.message,
    )
    if error is not None:
        response.status_code = status_of(error)
        response.headers.update(error_headers(error))
    cookies.set_nonce(request, response, nonce)
    return response


async def login(request: Request) -> Response:
    """The login form (GET) and its check (POST): a key in, a session cookie out."""
    if request.method != "POST":
        return login_form(request)
    cookies: Cookies = request.app.state.cookies
    policy: Policy = request.app.state.policy
    credentials: Credentials = request.app.state.credentials
    try:
        require_same_origin(request, policy)
        fields = await form_of(request)
        check_csrf(cookies.nonce(request), "login", fields.get("csrf"))
        token = fields.get("key", "").strip()
    except PerdureError as exc:
        return login_form(request, exc)
    try:
        session_token, _ = await run_in_threadpool(
            lambda: credentials.open_session(
                token, lifetime=policy.session_lifetime, idle=policy.session_idle
            )
        )
    except NotAuthenticatedError as exc:
        return login_form(request, await refusal(request, attempt_subjects(request, token), exc))
    earlier = cookies.session(request)
    if earlier is not None:  # logging in again ends the session this browser had
        await run_in_threadpool(credentials.end_session, earlier)
    done = to(request, "/")
    cookies.set_session(request, done, session_token)
    cookies.clear_nonce(request, done)
    return done


async def logout(request: Request) -> Response:
    """End the browser's session (and its open streams) and forget the cookie."""
    cookies: Cookies = request.app.state.cookies
    policy: Policy = request.app.state.policy
    credentials: Credentials = request.app.state.credentials
    token = cookies.session(request)
    try:
        require_same_origin(request, policy)
        fields = await form_of(request)
        if token is None:  # nothing to end
            return to(request, "/login")
        check_csrf(token, "session", fields.get("csrf"))
    except PerdureError as exc:
        return failure(request, None, exc)
    await run_in_threadpool(credentials.end_session, token)
    done = to(request, "/login")
    cookies.clear_session(request, done)
    return done
