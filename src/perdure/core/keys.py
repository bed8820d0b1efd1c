"""API keys: the record a key is stored as, how a key is written, and how its secret is hashed.

A key is shown to a person once, as ``pdk_<key_id>_<secret>``. ``key_id`` is public (it names
the key in ``perdure keys list`` and in logs); only a SHA-256 hash of ``secret`` is stored.
The secret is 32 random bytes, so a fast hash is enough: nobody can guess it, and a leaked
hash does not give the key back. Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from perdure.core.errors import InvalidInputError, NotAuthenticatedError
from perdure.core.model import Principal

PREFIX = "pdk"
_TOKEN = re.compile(r"^pdk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_ROLE = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A stored API key: who it speaks for (``tenant_id``, ``name``, ``roles``), when it was
    made, last used and revoked. The secret itself is never stored, only its hash."""

    key_id: str
    tenant_id: str
    name: str
    roles: frozenset[str]
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def principal(self) -> Principal:
        """The principal a request authenticated with this key acts as (subject: its name;
        via: ``key:<key_id>``)."""
        return Principal(self.tenant_id, self.name, self.roles, via=f"key:{self.key_id}")


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key about to be stored, and the token shown once to whoever made it."""

    key: ApiKey
    secret_hash: str
    token: str


def secret_hash(secret: str) -> str:
    """The stored form of a key's secret (hex SHA-256)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def checked_roles(roles: list[str] | tuple[str, ...] | frozenset[str]) -> frozenset[str]:
    """Roles as given, or :class:`InvalidInputError` for one that is not a short lower-case
    word."""
    for role in roles:
        if not isinstance(role, str) or not _ROLE.match(role):
            raise InvalidInputError(
                f"role {role!r} is not a role name",
                fix="use short lower-case names such as admin, approver, finance",
            )
    return frozenset(roles)


def new_key(tenant_id: str, name: str, roles: frozenset[str], now: datetime) -> NewKey:
    """A fresh key for ``tenant_id`` named ``name`` with ``roles``."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(key_id, tenant_id, name, checked_roles(roles), now)
    return NewKey(key, secret_hash(secret), f"{PREFIX}_{key_id}_{secret}")


def parse_token(token: str) -> tuple[str, str]:
    """``(key_id, secret)`` of a presented key, or :class:`NotAuthenticatedError`."""
    found = _TOKEN.match(token.strip()) if isinstance(token, str) else None
    if found is None:
        raise NotAuthenticatedError("the API key is malformed")
    return found.group(1), found.group(2)


def matches(secret: str, stored_hash: str) -> bool:
    """True when ``secret`` hashes to ``stored_hash`` (compared in constant time)."""
    return hmac.compare_digest(secret_hash(secret), stored_hash)
