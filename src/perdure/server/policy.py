"""What a server's security settings are: the :class:`Policy` of one app."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from perdure.core.sessions import IDLE, LIFETIME


@dataclass(frozen=True, slots=True)
class Policy:
    """The security settings of one app (see ``docs/server.md``, Security).

    ``secure_cookies``: the dashboard's cookies carry ``Secure`` (and the ``__Host-`` name
    prefix) even when the request reached the app over plain HTTP (behind a proxy that ends
    TLS); over HTTPS they do anyway, and ``https://`` is then accepted as the page's origin.
    ``session_lifetime`` and ``session_idle``: how long a dashboard session lasts from login
    and without a request. ``recheck``: how often, in seconds, an open stream checks that its
    key or session still holds (a revoked key or ended session closes it within that)."""

    secure_cookies: bool = False
    session_lifetime: timedelta = LIFETIME
    session_idle: timedelta = IDLE
    recheck: float = 2.0
