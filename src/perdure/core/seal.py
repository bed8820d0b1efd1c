"""Integrity and encryption of stored state: HMAC-SHA256 or AES-GCM, with key ids and rotation.

With a :class:`Keyring`, every stored state field is sealed with the active key and bound to its
place (tenant, run, field), so a value cannot be edited, or moved to another run, unnoticed.
Old keys still open what they sealed; the active key seals everything new. Once a keyring is
configured, an unsealed or wrongly sealed value is refused (:class:`IntegrityError`) and the run
is quarantined with ``integrity_failed`` — never accepted as plain.

Formats (ASCII text): ``rk1.h.<key id>.<mac>.<json>`` (HMAC) and ``rk1.e.<key id>.<nonce and
ciphertext>`` (AES-GCM, needs the ``cryptography`` package: ``pip install 'perdure[crypto]'``).
Configure with ``PERDURE_KEYS="k2:<base64 secret>,k1:<base64 secret>"`` (the first is active) and
``PERDURE_ENCRYPT=1``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Any

from perdure.core.errors import ConfigError, PerdureError

PREFIX = b"rk1."


class IntegrityError(PerdureError):
    """A stored value is unsealed, sealed with an unknown key, or was changed."""

    code = "integrity_failed"
    fix = "restore the value from a backup or repair the run; check the configured keys"


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _unb64(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


class Keyring:
    """Named secret keys; ``active`` seals, all of them open."""

    def __init__(self, keys: dict[str, bytes], active: str, *, encrypt: bool = False) -> None:
        if active not in keys:
            raise ConfigError(f"the active key {active!r} is not in the keyring")
        for key_id, secret in keys.items():
            if not key_id.isalnum() or len(secret) < 16:
                raise ConfigError(
                    f"key {key_id!r} is not usable: ids must be alphanumeric and secrets at "
                    f"least 16 bytes (this one has {len(secret)})",
                    fix="generate one with: python -c 'import os,base64;"
                    "print(base64.b64encode(os.urandom(32)).decode())'",
                )
            if encrypt and len(secret) not in (16, 24, 32):
                raise ConfigError(
                    f"key {key_id!r} has {len(secret)} bytes; AES-GCM needs 16, 24 or 32"
                )
        self.keys = dict(keys)
        self.active = active
        self.encrypt = encrypt
        self._aead: dict[str, Any] = {}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Keyring | None:
        """The keyring ``PERDURE_KEYS`` / ``PERDURE_ENCRYPT`` describe, or None when unset."""
        env = os.environ if environ is None else environ
        spec = env.get("PERDURE_KEYS", "").strip()
        if not spec:
            return None
        keys: dict[str, bytes] = {}
        for item in spec.split(","):
            key_id, _, secret = item.strip().partition(":")
            try:
                keys[key_id] = base64.b64decode(secret, validate=True)
            except ValueError as exc:
                raise ConfigError(
                    f"PERDURE_KEYS: the secret of key {key_id!r} is not base64",
                    fix='write PERDURE_KEYS="id:<base64 secret>,older:<base64 secret>"',
                ) from exc
        first = spec.split(",")[0].partition(":")[0].strip()
        return cls(keys, first, encrypt=env.get("PERDURE_ENCRYPT", "") in ("1", "true", "yes"))

    def seal(self, place: str, data: bytes) -> bytes:
        """Seal ``data`` (canonical JSON) for ``place`` with the active key."""
        key_id = self.active.encode()
        if self.encrypt:
            nonce = os.urandom(12)
            sealed = self._cipher(self.active).encrypt(nonce, data, place.encode())
            return PREFIX + b"e." + key_id + b"." + _b64(nonce + sealed)
        mac = hmac.new(self.keys[self.active], place.encode() + b"\0" + data, hashlib.sha256)
        return PREFIX + b"h." + key_id + b"." + _b64(mac.digest()) + b"." + data

    def open(self, place: str, stored: bytes) -> bytes:
        """The data ``seal`` wrapped, or :class:`IntegrityError`."""
        if not stored.startswith(PREFIX):
            raise IntegrityError(f"{place}: the value is not sealed")
        mode, _, rest = stored[len(PREFIX) :].partition(b".")
        key_id, _, rest = rest.partition(b".")
        key = self.keys.get(key_id.decode(errors="replace"))
        if key is None:
            raise IntegrityError(
                f"{place}: sealed with unknown key {key_id.decode(errors='replace')!r}"
            )
        if mode == b"h":
            mac, _, data = rest.partition(b".")
            expected = hmac.new(key, place.encode() + b"\0" + data, hashlib.sha256).digest()
            try:
                ok = hmac.compare_digest(_unb64(mac), expected)
            except ValueError:
                ok = False
            if not ok:
                raise IntegrityError(f"{place}: the value does not match its seal")
            return data
        if mode == b"e":
            try:
                raw = _unb64(rest)
                return bytes(
                    self._cipher(key_id.decode()).decrypt(raw[:12], raw[12:], place.encode())
                )
            except Exception as exc:
                raise IntegrityError(f"{place}: the value cannot be decrypted") from exc
        raise IntegrityError(f"{place}: unknown seal kind {mode!r}")

    def _cipher(self, key_id: str) -> Any:
        if key_id not in self._aead:
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            except ImportError as exc:
                raise ConfigError(
                    "encryption needs the cryptography package",
                    fix="pip install 'perdure[crypto]', or unset PERDURE_ENCRYPT",
                ) from exc
            self._aead[key_id] = AESGCM(self.keys[key_id])
        return self._aead[key_id]


def place_of(tenant_id: str, run_id: str, field: str) -> str:
    """Where a state field lives; part of what its seal covers."""
    return f"{tenant_id}/{run_id}/{field}"


def seal_fields(
    keyring: Keyring | None, tenant_id: str, run_id: str, fields: dict[str, bytes]
) -> dict[str, bytes]:
    """Seal each field (unchanged when there is no keyring)."""
    if keyring is None:
        return fields
    return {k: keyring.seal(place_of(tenant_id, run_id, k), v) for k, v in fields.items()}


def open_fields(
    keyring: Keyring | None, tenant_id: str, run_id: str, fields: dict[str, bytes]
) -> dict[str, bytes]:
    """Open each field, or raise :class:`IntegrityError` (unchanged without a keyring)."""
    if keyring is None:
        return fields
    return {k: keyring.open(place_of(tenant_id, run_id, k), v) for k, v in fields.items()}
