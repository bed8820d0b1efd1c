"""Integrity and encryption of stored state: HMAC-SHA256 or AES-GCM, with key ids and rotation.

With a :class:`Keyring`, every stored state field is sealed with the active key and bound to its
place (tenant, run, field), so a value cannot be edited, or moved to another run, unnoticed.
Old keys still open what they sealed; the active key seals everything new. Once a keyring is
configured, an unsealed or wrongly sealed value is refused (:class:`IntegrityError`) and the run
is quarantined with ``integrity_failed`` — never accepted as plain.

Each seal also names the write of the run's state that produced it (``writer``: 1 for the
initial state, then one more for every commit that writes state), and the run row keeps a
sealed record of which write each field must come from (:class:`StateSeal`, column
``runs.state_seal``). A field written back from an earlier moment of the same run opens under
its key but names an older write than the run row expects: :class:`ReplayError`, and the run is
quarantined with ``state_replayed``.

Formats (ASCII text): ``rk2.h.<key id>.<writer>.<mac>.<json>`` (HMAC) and
``rk2.e.<key id>.<writer>.<nonce and ciphertext>`` (AES-GCM, needs the ``cryptography``
package: ``pip install 'perdure[crypto]'``). Values sealed before writers were bound
(``rk1.``, no writer) are still opened while the run row has no seal record; the run's next
commit re-seals every field in the ``rk2`` format (see docs/operations.md).
Configure with ``PERDURE_KEYS="k2:<base64 secret>,k1:<base64 secret>"`` (the first is active) and
``PERDURE_ENCRYPT=1``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from perdure.core.errors import ConfigError, PerdureError

PREFIX = b"rk2."
LEGACY = b"rk1."
"""Values sealed before writers were bound: no writer, opened only for runs without a record."""
SEAL_PLACE = "#state"
"""The field name the run row's :class:`StateSeal` is bound to."""


class IntegrityError(PerdureError):
    """A stored value is unsealed, sealed with an unknown key, or was changed."""

    code = "integrity_failed"
    fix = "restore the value from a backup or repair the run; check the configured keys"


class ReplayError(IntegrityError):
    """A stored value opens, but was written earlier than the run row says: a replayed state."""

    code = "state_replayed"
    fix = "patch the fields it should have (perdure repair RUN --patch-state JSON), or restore it"

    def __init__(self, message: str, evidence: dict[str, Any]) -> None:
        super().__init__(message)
        self.evidence = evidence


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _unb64(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


def _bound(place: str, writer: int | None) -> bytes:
    """What a seal covers besides the data: the place, and the writer (rk2 only)."""
    return place.encode() if writer is None else place.encode() + b"\0" + str(writer).encode()


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

    def seal(self, place: str, data: bytes, writer: int) -> bytes:
        """Seal ``data`` (canonical JSON) for ``place``, written by state write ``writer``."""
        head = PREFIX + (b"e." if self.encrypt else b"h.") + self.active.encode()
        head += b"." + str(writer).encode() + b"."
        bound = _bound(place, writer)
        if self.encrypt:
            nonce = os.urandom(12)
            return head + _b64(nonce + self._cipher(self.active).encrypt(nonce, data, bound))
        mac = hmac.new(self.keys[self.active], bound + b"\0" + data, hashlib.sha256)
        return head + _b64(mac.digest()) + b"." + data

    def open(self, place: str, stored: bytes) -> tuple[bytes, int | None]:
        """The data ``seal`` wrapped and its writer (None for a legacy ``rk1`` value), or
        :class:`IntegrityError`."""
        if stored.startswith(PREFIX):
            mode, _, rest = stored[len(PREFIX) :].partition(b".")
            key_id, _, rest = rest.partition(b".")
            number, _, rest = rest.partition(b".")
            if not number.isdigit():
                raise IntegrityError(f"{place}: the seal names no writer")
            writer: int | None = int(number)
        elif stored.startswith(LEGACY):
            mode, _, rest = stored[len(LEGACY) :].partition(b".")
            key_id, _, rest = rest.partition(b".")
            writer = None
        else:
            raise IntegrityError(f"{place}: the value is not sealed")
        key = self.keys.get(key_id.decode(errors="replace"))
        if key is None:
            raise IntegrityError(
                f"{place}: sealed with unknown key {key_id.decode(errors='replace')!r}"
            )
        bound = _bound(place, writer)
        if mode == b"h":
            mac, _, data = rest.partition(b".")
            expected = hmac.new(key, bound + b"\0" + data, hashlib.sha256).digest()
            try:
                ok = hmac.compare_digest(_unb64(mac), expected)
            except ValueError:
                ok = False
            if not ok:
                raise IntegrityError(f"{place}: the value does not match its seal")
            return data, writer
        if mode == b"e":
            try:
                raw = _unb64(rest)
                opened = self._cipher(key_id.decode()).decrypt(raw[:12], raw[12:], bound)
            except Exception as exc:
                raise IntegrityError(f"{place}: the value cannot be decrypted") from exc
            return bytes(opened), writer
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


def place_of(tenant_id: str, run_id: str, name: str) -> str:
    """Where a state field lives; part of what its seal covers."""
    return f"{tenant_id}/{run_id}/{name}"


@dataclass(frozen=True, slots=True)
class StateSeal:
    """The run row's record of its sealed state (``runs.state_seal``, itself sealed): how many
    state writes the run has had, the write each field must come from, and the run's
    ``steps_done`` when the record was written."""

    writes: int
    steps: int
    fields: Mapping[str, int] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Canonical JSON of the record."""
        return orjson.dumps(
            {"writes": self.writes, "steps": self.steps, "fields": dict(self.fields)},
            option=orjson.OPT_SORT_KEYS,
        )

    @classmethod
    def decode(cls, data: bytes) -> StateSeal:
        """The record ``encode`` wrote, or :class:`IntegrityError`."""
        try:
            raw = orjson.loads(data)
            fields = {str(k): int(v) for k, v in raw["fields"].items()}
            return cls(int(raw["writes"]), int(raw["steps"]), fields)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise IntegrityError("the run's state seal record is not readable") from exc


@dataclass(frozen=True, slots=True)
class SealedState:
    """Fields ready to store, the text of the run row's record, and the record itself (all
    None / unchanged without a keyring)."""

    fields: dict[str, bytes]
    seal: str | None
    record: StateSeal | None


def seal_state(
    keyring: Keyring | None,
    tenant_id: str,
    run_id: str,
    fields: dict[str, bytes],
    *,
    previous: StateSeal | None,
    steps: int,
    drop: Iterable[str] = (),
    after: int = 0,
) -> SealedState:
    """Seal the ``fields`` one state write writes (every field when ``previous`` is None) and
    the run row's new record; ``after`` is the highest write already used (for a record that
    is rebuilt, so no seal of an earlier write can be taken for a new one)."""
    if keyring is None:
        return SealedState(fields, None, None)
    writes = max(previous.writes if previous else 0, after) + 1
    gone = set(drop)
    kept = {k: v for k, v in (previous.fields if previous else {}).items() if k not in gone}
    record = StateSeal(writes, steps, {**kept, **dict.fromkeys(fields, writes)})
    sealed = {k: keyring.seal(place_of(tenant_id, run_id, k), v, writes) for k, v in fields.items()}
    text = keyring.seal(place_of(tenant_id, run_id, SEAL_PLACE), record.encode(), writes)
    return SealedState(sealed, text.decode(), record)


def open_each(
    keyring: Keyring, tenant_id: str, run_id: str, stored: dict[str, bytes]
) -> dict[str, tuple[bytes, int | None]]:
    """Open every field on its own (its data and writer), or :class:`IntegrityError`."""
    return {k: keyring.open(place_of(tenant_id, run_id, k), v) for k, v in stored.items()}


def open_for_repair(
    keyring: Keyring | None,
    tenant_id: str,
    run_id: str,
    stored: dict[str, bytes],
    seal: str | None,
) -> tuple[dict[str, bytes], int]:
    """For a repair: the stored fields that still open on their own (a tampered one is left
    out, the patch must replace it) and the highest state write the run has used."""
    if keyring is None:
        return stored, 0
    fields: dict[str, bytes] = {}
    after = 0
    for name, value in stored.items():
        try:
            data, writer = keyring.open(place_of(tenant_id, run_id, name), value)
        except IntegrityError:
            continue
        fields[name] = data
        after = max(after, writer or 0)
    if seal is not None:
        try:
            data, _ = keyring.open(place_of(tenant_id, run_id, SEAL_PLACE), seal.encode())
            after = max(after, StateSeal.decode(data).writes)
        except IntegrityError:
            pass
    return fields, after


def open_state(
    keyring: Keyring | None,
    tenant_id: str,
    run_id: str,
    stored: dict[str, bytes],
    *,
    seal: str | None,
    steps: int,
) -> tuple[dict[str, bytes], StateSeal | None]:
    """Open the stored fields and check them against the run row's record (``seal``, the
    run's ``steps``): :class:`IntegrityError` for a changed or missing value,
    :class:`ReplayError` for one written earlier than the record says. Without a record
    (a run sealed before writers were bound) only legacy ``rk1`` values are accepted."""
    if keyring is None:
        return stored, None
    opened = open_each(keyring, tenant_id, run_id, stored)
    if seal is None:
        bound = sorted(k for k, (_, w) in opened.items() if w is not None)
        if bound:
            raise IntegrityError(
                f"fields {', '.join(bound)} name state writes the run row has no record of"
            )
        return {k: data for k, (data, _) in opened.items()}, None
    data, writer = keyring.open(place_of(tenant_id, run_id, SEAL_PLACE), seal.encode())
    record = StateSeal.decode(data)
    if writer != record.writes:
        raise IntegrityError("the run's state seal record does not match its seal")
    if record.steps != steps:
        raise ReplayError(
            f"the state seal record was written after step {record.steps}, "
            f"but the run row has done {steps} steps",
            {"record_steps": record.steps, "run_steps": steps},
        )
    for name, (_, found) in sorted(opened.items()):
        expected = record.fields.get(name)
        if expected is None:
            raise IntegrityError(f"field {name!r} is not in the run's state seal record")
        if found != expected:
            raise ReplayError(
                f"field {name!r} was sealed by state write {found}, "
                f"but the run row expects write {expected}: an older value was written back",
                {"field": name, "sealed_by_write": found, "expected_write": expected},
            )
    missing = sorted(set(record.fields) - set(opened))
    if missing:
        raise IntegrityError(f"fields {', '.join(missing)} are missing from the stored state")
    return {k: data for k, (data, _) in opened.items()}, record
