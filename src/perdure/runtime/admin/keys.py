"""The Runtime's part for API keys (``rt.keys``): make, list and revoke a tenant's keys, and
learn who a presented key speaks for."""

from __future__ import annotations

from collections.abc import Sequence

from perdure.core.errors import NotAuthenticatedError
from perdure.core.ids import checked_id
from perdure.core.keys import ApiKey, NewKey, checked_roles, matches, new_key, parse_token
from perdure.core.model import Principal
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.admin.verbs import renamed, verb


class Keys:
    """A tenant's API keys: ``rt.keys.create(name, roles=...)``, ``rt.keys.list()``,
    ``rt.keys.revoke(key_id)``, ``rt.keys.authenticate(token)``."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts

    @verb
    def create(
        self, name: str, *, tenant: Tenant = DEFAULT_TENANT, roles: Sequence[str] = ()
    ) -> NewKey:
        """Make an API key for ``tenant`` named ``name`` (a person or a service) holding
        ``roles``. The returned ``token`` is the only time the secret is seen: only its hash is
        stored. A second live key of the same name in the tenant is refused."""
        checked_id(name, "key name")
        made = new_key(tenant_of(tenant), name, checked_roles(tuple(roles)), self.parts.clock.now())
        self.parts.store.access.create_key(made.key, made.secret_hash, self.parts.clock.now())
        return made

    @verb
    def revoke(self, key_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> ApiKey:
        """Revoke a key at once (idempotent); :class:`KeyNotFoundError` for another
        tenant's key."""
        return self.parts.store.access.revoke_key(tenant_of(tenant), key_id, self.parts.clock.now())

    @verb
    def authenticate(self, token: str) -> Principal:
        """The principal a presented key speaks for (its tenant, name and roles), or
        :class:`NotAuthenticatedError` for a malformed, unknown or revoked key."""
        key_id, secret = parse_token(token)
        found = self.parts.store.access.find_key(key_id)
        if found is None or not matches(secret, found[1]):
            raise NotAuthenticatedError("the API key is unknown")
        key = found[0]
        if key.revoked_at is not None:
            raise NotAuthenticatedError(f"the API key {key_id} was revoked")
        return key.principal

    # ``list`` comes last: below it, ``list[...]`` in an annotation would name this method.
    @verb
    def list(self, *, tenant: Tenant = DEFAULT_TENANT, revoked: bool = False) -> list[ApiKey]:
        """The tenant's live keys (and revoked ones with ``revoked``), oldest first."""
        return self.parts.store.access.list_keys(tenant_of(tenant), revoked=revoked)

    __call__ = renamed(list, "Runtime.keys(...)", "Runtime.keys.list(...)")
