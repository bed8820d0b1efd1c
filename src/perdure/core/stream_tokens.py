"""Stream tokens: short-lived, read-only credentials that open one server-sent stream.

A browser's ``EventSource`` cannot send an ``Authorization`` header, and an API key must
never travel in a URL (it ends up in proxy logs and browser history). So a client that holds
a key asks for a stream token, and the stream's URL carries that instead
(``?token=pst_...``). A token is ``pst_<key_id>_<expires>_<scope>_<mac>``: the key it was
minted with, when it stops opening streams (Unix seconds), what it opens (``run:<run_id>``,
``message:<message_id>`` or ``events``, base64url) and an HMAC-SHA256 of those, keyed by the
stored hash of the key's secret, which only the database holds. Nothing is stored per token;
revoking the key ends its tokens and the streams they opened. Pure functions, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from perdure.core.errors import NotAuthenticatedError

PREFIX = "pst"
_TOKEN = re.compile(
    r"^pst_([0-9a-f]{16})_([0-9]{1,12})_([A-Za-z0-9_-]{1,400})_([A-Za-z0-9_-]{43})$"
)
EVENTS = "events"
"""The scope of the tenant's feed of every run's events."""


@dataclass(frozen=True, slots=True)
class StreamToken:
    """A minted token: the text to put in the URL, what it opens, until when."""

    token: str
    scope: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class PresentedToken:
    """A token as presented, split into its parts (not yet checked)."""

    key_id: str
    expires: int
    scope: str
    mac: str

    def valid_for(self, secret_hash: str) -> bool:
        """True when the token was minted with the key whose stored hash is
        ``secret_hash`` (compared in constant time)."""
        expected = _mac(secret_hash, self.key_id, self.expires, self.scope)
        return hmac.compare_digest(self.mac, expected)

    def expired(self, now: datetime) -> bool:
        """True once the token no longer opens streams."""
        return now.timestamp() >= self.expires


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _mac(secret_hash: str, key_id: str, expires: int, scope: str) -> str:
    message = f"{PREFIX}.{key_id}.{expires}.{scope}".encode()
    return _b64(hmac.new(secret_hash.encode(), message, hashlib.sha256).digest())


def run_scope(run_id: str) -> str:
    """The scope of one run's event stream."""
    return f"run:{run_id}"


def message_scope(message_id: str) -> str:
    """The scope of one message's token stream."""
    return f"message:{message_id}"


def mint(key_id: str, secret_hash: str, scope: str, expires_at: datetime) -> StreamToken:
    """A token of key ``key_id`` (stored hash ``secret_hash``) that opens ``scope`` until
    ``expires_at`` (to the second)."""
    expires = int(expires_at.timestamp())
    packed = _b64(scope.encode())
    token = f"{PREFIX}_{key_id}_{expires}_{packed}_{_mac(secret_hash, key_id, expires, scope)}"
    return StreamToken(token, scope, datetime.fromtimestamp(expires, UTC))


def parse(token: str) -> PresentedToken:
    """The parts of a presented token, or :class:`NotAuthenticatedError` for a malformed one."""
    found = _TOKEN.match(token) if isinstance(token, str) else None
    if found is None:
        raise NotAuthenticatedError(
            "the stream token is malformed", fix="mint one with POST /v1/stream-tokens"
        )
    packed = found.group(3)
    try:
        scope = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise NotAuthenticatedError("the stream token is malformed") from None
    return PresentedToken(found.group(1), int(found.group(2)), scope, found.group(4))
