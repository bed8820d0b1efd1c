"""Where a browser says a request came from: a state change made with the dashboard's cookie
must come from the dashboard's own origin, and its live streams must not be read by another
site. ``Sec-Fetch-Site`` (every current browser sends it) and ``Origin`` are both checked; a
request that carries neither is refused, since a state change from a page of this origin
always has them."""

from __future__ import annotations

from starlette.requests import Request

from perdure.core.errors import ForgedRequestError
from perdure.server.policy import Policy


def own_origins(request: Request, policy: Policy) -> set[str]:
    """The origins a page of this server has (``https://`` too when cookies are secure: the
    app may sit behind a proxy that ends TLS)."""
    host = request.headers.get("host", "").lower()
    found = {f"{request.url.scheme}://{host}"}
    if policy.secure_cookies:
        found.add(f"https://{host}")
    return found


def require_same_origin(request: Request, policy: Policy) -> None:
    """Refuse (:class:`ForgedRequestError`) a state change that did not come from a page of
    this origin: ``Sec-Fetch-Site`` other than ``same-origin``, an ``Origin`` of another
    origin (``null`` included), or neither header."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        raise ForgedRequestError(f"a state change from a {site} page was refused")
    origin = request.headers.get("origin")
    if origin is None:
        if site is None:
            raise ForgedRequestError("a state change without an Origin header was refused")
        return
    if origin.lower() not in own_origins(request, policy):
        raise ForgedRequestError(f"a state change from origin {origin[:200]!r} was refused")


def require_not_cross_site(request: Request) -> None:
    """Refuse a read with the dashboard's cookie that a page of another origin made
    (``Sec-Fetch-Site`` ``same-site`` or ``cross-site``); the person's own page, or the
    person typing the address (``none``), is let through."""
    site = request.headers.get("sec-fetch-site")
    if site not in (None, "same-origin", "none"):
        raise ForgedRequestError(f"a stream read from a {site} page was refused")
