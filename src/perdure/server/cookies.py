"""The dashboard's cookies: the session (its token, never the API key) and the login form's
nonce. Both are ``HttpOnly`` and ``SameSite=Strict``; ``Secure``, with the ``__Host-`` name
prefix (``__Secure-`` when the app is mounted under a path), when the request came over HTTPS
or the policy says cookies are secure."""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import Response

from perdure.server.policy import Policy

SESSION = "perdure_session"
LOGIN = "perdure_login"


class Cookies:
    """Reads and writes the dashboard's cookies for one app's :class:`Policy`."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def secure(self, request: Request) -> bool:
        """True when the cookies of ``request``'s answer carry ``Secure``."""
        return self.policy.secure_cookies or request.url.scheme == "https"

    def name(self, request: Request, base: str) -> str:
        """A cookie's name: prefixed ``__Host-`` (``__Secure-`` under a mount path) when
        secure, so a sibling sub-domain over plain HTTP cannot plant it."""
        if not self.secure(request):
            return base
        return ("__Secure-" if request.scope.get("root_path") else "__Host-") + base

    def session(self, request: Request) -> str | None:
        """The session token the browser presents, if any."""
        return request.cookies.get(self.name(request, SESSION)) or None

    def set_session(self, request: Request, response: Response, token: str) -> None:
        """Keep ``token`` in the browser for the session's lifetime."""
        response.set_cookie(
            self.name(request, SESSION),
            token,
            max_age=int(self.policy.session_lifetime.total_seconds()),
            path=request.scope.get("root_path") or "/",
            secure=self.secure(request),
            httponly=True,
            samesite="strict",
        )

    def clear_session(self, request: Request, response: Response) -> None:
        """Make the browser forget its session token."""
        response.delete_cookie(
            self.name(request, SESSION),
            path=request.scope.get("root_path") or "/",
            secure=self.secure(request),
            httponly=True,
            samesite="strict",
        )

    def nonce(self, request: Request) -> str | None:
        """The login form's nonce the browser presents, if any."""
        return request.cookies.get(self.name(request, LOGIN)) or None

    def nonce_for(self, request: Request) -> str:
        """The login form's nonce: the browser's, or a new one (32 random bytes)."""
        return self.nonce(request) or secrets.token_urlsafe(32)

    def set_nonce(self, request: Request, response: Response, nonce: str) -> None:
        """Keep the login form's nonce for an hour on the login page's path; the form's CSRF
        token is signed with it."""
        response.set_cookie(
            self.name(request, LOGIN),
            nonce,
            max_age=3600,
            path=(request.scope.get("root_path") or "") + "/login",
            secure=self.secure(request),
            httponly=True,
            samesite="strict",
        )

    def clear_nonce(self, request: Request, response: Response) -> None:
        """Make the browser forget the login form's nonce."""
        response.delete_cookie(
            self.name(request, LOGIN),
            path=(request.scope.get("root_path") or "") + "/login",
            secure=self.secure(request),
            httponly=True,
            samesite="strict",
        )
