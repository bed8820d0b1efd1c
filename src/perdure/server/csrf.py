"""CSRF tokens of the dashboard's forms, signed with ``itsdangerous``.

A form's token is the purpose (``session`` or ``login``) signed with a secret only the
person's browser holds in an HTTP-only cookie: the session token for the forms of a logged-in
person, the login form's nonce for the login form. Another page can read neither the cookie
nor a page that carries the token, so it cannot make a valid token; the server keeps nothing
to check one (a form posted to another server instance checks the same)."""

from __future__ import annotations

from itsdangerous import BadSignature, URLSafeSerializer

from perdure.core.errors import ForgedRequestError


def _serializer(secret: str, purpose: str) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt=f"perdure.csrf.{purpose}")


def csrf_token(secret: str, purpose: str) -> str:
    """The token the forms signed with ``secret`` carry for ``purpose``."""
    return str(_serializer(secret, purpose).dumps(purpose))


def check_csrf(secret: str | None, purpose: str, token: str | None) -> None:
    """Refuse (:class:`ForgedRequestError`) a form whose token is missing or was not signed
    with ``secret`` for ``purpose``."""
    if not secret or not token:
        raise ForgedRequestError("the form carries no CSRF token, or there is no cookie")
    try:
        found = _serializer(secret, purpose).loads(token)
    except BadSignature:
        raise ForgedRequestError("the form's CSRF token does not belong to this browser") from None
    if found != purpose:
        raise ForgedRequestError("the form's CSRF token is for something else")
