"""How a LangGraph checkpoint becomes store records and back: LangGraph's serializer protocol
(``dumps_typed``/``loads_typed``), perdure's seals, and a typed error for anything unreadable.

The default serializer is LangGraph's ``JsonPlusSerializer`` in its strict form: no pickle
fallback and msgpack extension types limited to LangGraph's safe list (plus what the caller
allows). A stored value of type ``pickle`` is refused unless the saver was built with
``allow_pickle=True``, whatever serializer is configured. With a
:class:`~perdure.core.seal.Keyring`, every stored value is sealed (HMAC or AES-GCM) bound to
its place (tenant, namespace, checkpoint or channel version, type tag), so an edited,
swapped or retyped value is refused instead of loaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from perdure.core.errors import GraphCheckpointUnreadableError, InvalidInputError
from perdure.core.seal import Keyring

EMPTY = "empty"
"""The type tag of a channel that has a version but no value."""


def default_serde(allowed_msgpack_modules: Iterable[tuple[str, ...]] = ()) -> SerializerProtocol:
    """LangGraph's serializer without pickle and with msgpack types limited to the safe list
    and ``allowed_msgpack_modules`` (``(module, class name)`` pairs)."""
    allowed = tuple(allowed_msgpack_modules) or None
    return JsonPlusSerializer(pickle_fallback=False, allowed_msgpack_modules=allowed)


class Codec:
    """Dumps and loads values for one tenant's checkpoints, sealing when a keyring is set."""

    def __init__(
        self,
        serde: SerializerProtocol,
        keyring: Keyring | None,
        tenant_id: str,
        *,
        allow_pickle: bool = False,
    ) -> None:
        self.serde = serde
        self.keyring = keyring
        self.tenant_id = tenant_id
        self.allow_pickle = allow_pickle

    def dump(self, place: str, value: Any) -> tuple[str, bytes]:
        """The type tag and stored bytes of ``value`` (sealed for ``place``)."""
        type_, data = self.serde.dumps_typed(value)
        if type_ == "pickle" and not self.allow_pickle:
            raise InvalidInputError(
                f"the serializer wants to pickle a value at {place}",
                fix="store JSON-friendly values, or build the saver with allow_pickle=True",
            )
        return type_, self._seal(place, type_, data)

    def load(self, place: str, type_: str, stored: bytes | None) -> Any:
        """The value :meth:`dump` stored, or :class:`GraphCheckpointUnreadableError`."""
        if type_ == "pickle" and not self.allow_pickle:
            raise GraphCheckpointUnreadableError(
                f"{place} holds a pickled value, which this saver never loads"
            )
        try:
            data = stored
            if stored is not None and self.keyring is not None:
                data, _ = self.keyring.open(f"{place}/{type_}", stored)
            return self.serde.loads_typed((type_, data if data is not None else b""))
        except GraphCheckpointUnreadableError:
            raise
        except Exception as exc:
            detail = getattr(exc, "message", None) or f"{exc.__class__.__name__}: {exc}"
            raise GraphCheckpointUnreadableError(f"{place} cannot be read ({detail})") from exc

    def _seal(self, place: str, type_: str, data: bytes) -> bytes:
        if self.keyring is None:
            return data
        # writer 0: a checkpoint's place already names its version (values never change there)
        return self.keyring.seal(f"{place}/{type_}", data, 0)

    def checkpoint_place(self, ns: str, checkpoint_id: str) -> str:
        """Where a checkpoint body lives (what its seal binds it to)."""
        return f"langgraph/{self.tenant_id}/{ns}/checkpoint/{checkpoint_id}"

    def blob_place(self, ns: str, channel: str, version: str) -> str:
        """Where a channel value lives."""
        return f"langgraph/{self.tenant_id}/{ns}/channel/{channel}/{version}"

    def write_place(self, ns: str, checkpoint_id: str, task_id: str, idx: int) -> str:
        """Where a pending write lives."""
        return f"langgraph/{self.tenant_id}/{ns}/write/{checkpoint_id}/{task_id}/{idx}"


def json_bytes(value: Any, what: str) -> bytes:
    """Canonical JSON of metadata or a filter, or :class:`InvalidInputError`."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise InvalidInputError(
            f"the checkpoint {what} is not JSON ({exc})",
            fix="keep checkpoint metadata to strings, numbers, booleans, lists and objects",
        ) from exc


def json_object(data: bytes) -> dict[str, Any]:
    """Stored metadata as a dict, or ValueError."""
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise ValueError("metadata is not a JSON object")
    return value


def preview(value: Any, limit: int = 200) -> Any:
    """A small JSON-friendly picture of an interrupt value, for perdure's events."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = orjson.dumps(repr(value)).decode()
    if len(text) <= limit:
        return orjson.loads(text)
    return text[:limit] + "…"
