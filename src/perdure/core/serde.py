"""Encoding of state and payloads: canonical JSON through orjson, never pickle.

A workflow's state is a dataclass, a pydantic model or a plain ``dict``. It is stored as one JSON
value per top-level field, so a step boundary rewrites only the fields that changed. Decoding
builds the declared type again from those fields and refuses data that does not fit it; a value
is never turned into a class named by the data.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Union, get_args, get_origin

import orjson

from perdure.core.errors import DecodeError, InvalidInputError

_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, UTF-8, dataclasses and datetimes supported."""
    try:
        return orjson.dumps(value, option=_OPTS, default=_default)
    except TypeError as exc:
        raise InvalidInputError(
            f"value cannot be stored as JSON: {exc}",
            fix="use JSON-compatible data (dict, list, str, int, float, bool, None, dataclasses)",
        ) from exc


def loads(data: bytes | str) -> Any:
    """Parse JSON bytes; malformed data raises :class:`DecodeError`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"stored JSON is malformed: {exc}") from exc


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"type {type(value).__name__} is not JSON serializable")


class OversizeError(DecodeError):
    """Stored state is over the configured limits (bytes, fields or nesting depth)."""

    code = "oversize"
    fix = "shrink the state (keep large values out of it) or raise the limits"


@dataclass(frozen=True, slots=True)
class Limits:
    """What stored state may weigh: total bytes, number of top-level fields, nesting depth."""

    max_bytes: int = 1_000_000
    max_fields: int = 256
    max_depth: int = 64

    def check(self, fields: dict[str, bytes], changed: Iterable[str] | None = None) -> None:
        """Raise :class:`OversizeError` when ``fields`` (encoded JSON) break a limit.

        Sizes and the field count come from the encoded lengths. Nesting is read from the
        encoded text of the ``changed`` fields only (default: all of them), since a field that
        did not change was checked when it was written."""
        size = sum(len(k) + len(v) for k, v in fields.items())
        if size > self.max_bytes:
            raise OversizeError(f"state is {size} bytes; the limit is {self.max_bytes}")
        if len(fields) > self.max_fields:
            raise OversizeError(f"state has {len(fields)} fields; the limit is {self.max_fields}")
        names = fields if changed is None else changed
        self.check_nesting({name: fields[name] for name in names})

    def to_json(self) -> dict[str, int]:
        """The limits as a JSON object (evidence of a refusal)."""
        return {
            "max_bytes": self.max_bytes,
            "max_fields": self.max_fields,
            "max_depth": self.max_depth,
        }

    def check_nesting(self, fields: Mapping[str, bytes]) -> None:
        """Raise :class:`OversizeError` when one of ``fields`` nests deeper than allowed."""
        for name, raw in fields.items():
            if depth(raw, self.max_depth) > self.max_depth:
                raise OversizeError(
                    f"state field {name!r} nests deeper than {self.max_depth} levels"
                )


_STRING = re.compile(rb'"[^"]*"')
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}


def depth(raw: bytes, shallow: int = 0) -> int:
    """Nesting depth of JSON text, without parsing it. Answers ``shallow`` at once when the
    text holds no more than ``shallow`` opening brackets (it cannot nest deeper); otherwise
    escapes and strings are cut out and the brackets left are counted, by C code
    (``bytes.replace`` drops the escapes, ``bytes.translate`` keeps only brackets and quotes,
    ``re`` drops the strings), so the Python work grows with the brackets, not the bytes."""
    if raw.count(b"[") + raw.count(b"{") <= shallow:
        return shallow
    if b"\\" in raw:  # "\\" pairs first: a backslash left after them escapes what follows
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = raw.translate(None, _NOT_STRUCTURE)
    brackets = _STRING.sub(b"", structure).translate(None, _NOT_BRACKET)
    return max(accumulate(_STEP[b] for b in brackets), default=0)


class StateCodec:
    """Turns a workflow state into per-field JSON and back, for one declared state type."""

    def __init__(self, state_type: type[Any]) -> None:
        self.state_type = state_type
        self._is_dataclass = dataclasses.is_dataclass(state_type)
        self._is_model = hasattr(state_type, "model_validate") and hasattr(
            state_type, "model_fields"
        )
        if not (self._is_dataclass or self._is_model or state_type is dict):
            raise InvalidInputError(
                f"state type {state_type.__name__} is not supported",
                fix="declare the state as a dataclass, a pydantic model or dict",
            )
        self._hints: dict[str, Any] | None = None
        from perdure.core.fields import rebuilders, special_fields

        self.lazy, self.derived = special_fields(state_type)
        """Names of the lazy fields, and the builders of the derived ones (see
        :mod:`perdure.core.fields`)."""
        self.caches = rebuilders(state_type)
        """The lazy fields that are caches, with their ``rebuild`` functions."""
        skip = self.derived.keys() | self.lazy
        self._plain: tuple[str, ...] = (
            tuple(f.name for f in dataclasses.fields(state_type) if f.name not in skip)
            if self._is_dataclass
            else ()
        )
        """A dataclass state's fields encoded as they are (not lazy, not derived), found once."""

    def coerce(self, value: Any) -> Any:
        """Turn run input (an instance or a dict of fields) into a state instance."""
        if isinstance(value, self.state_type):
            return value
        if not isinstance(value, dict):
            raise InvalidInputError(
                f"input for state {self.state_type.__name__} must be an object, "
                f"got {type(value).__name__}",
                fix="pass a JSON object whose keys are the state's fields",
            )
        try:
            return self.from_fields({k: dumps(v) for k, v in value.items()})
        except DecodeError as exc:
            raise InvalidInputError(exc.message, fix="pass the fields the state declares") from exc

    def coerce_fields(self, fields: dict[str, bytes]) -> Any:
        """Like :meth:`from_fields`, but a misfit is the caller's input error (a state patch)."""
        try:
            return self.from_fields(fields)
        except DecodeError as exc:
            raise InvalidInputError(
                f"the patched state does not fit {self.state_type.__name__}: {exc.message}",
                fix="patch only declared fields, with values of their declared types",
            ) from exc

    def to_fields(self, state: Any) -> dict[str, bytes]:
        """Encode each top-level field of ``state`` as canonical JSON."""
        if self._is_model:
            data = state.model_dump(mode="json")
        elif self._is_dataclass:
            if type(state) is self.state_type:
                out = {name: dumps(getattr(state, name)) for name in self._plain}
            else:  # a subclass may add fields
                skip = self.derived.keys() | self.lazy
                names = [f.name for f in dataclasses.fields(state) if f.name not in skip]
                out = {name: dumps(getattr(state, name)) for name in names}
            for name in self.lazy:
                out[name] = _lazy_bytes(getattr(state, name))
            return out
        else:
            data = state
        return {name: dumps(value) for name, value in data.items()}

    def from_fields(self, fields: dict[str, bytes]) -> Any:
        """Build the declared state type from stored fields; raise :class:`DecodeError` if unfit."""
        if self.lazy or self.derived:
            return self._special_from_fields(fields)
        data = {name: loads(raw) for name, raw in fields.items()}
        name = getattr(self.state_type, "__name__", "state")
        if self._is_model:
            try:
                return self.state_type.model_validate(data)
            except ValueError as exc:
                raise DecodeError(f"stored state does not fit {name}: {exc}") from exc
        if not self._is_dataclass:
            return data
        return _build_dataclass(self.state_type, data, self._type_hints(), name)

    def _special_from_fields(self, fields: dict[str, bytes]) -> Any:
        """A dataclass with lazy fields (a :class:`Lazy` on its pointer, or on the value when
        it was stored inline) and derived fields (rebuilt from the others)."""
        from perdure.core.artifacts import pointed
        from perdure.core.fields import Lazy

        skip = self.lazy | self.derived.keys()
        plain = {k: v for k, v in fields.items() if k not in skip}
        data = {name: loads(raw) for name, raw in plain.items()}
        name = getattr(self.state_type, "__name__", "state")
        state = _build_dataclass(self.state_type, data, self._type_hints(), name)
        for field_name in self.lazy:
            raw = fields.get(field_name)
            if raw is None:
                continue
            ref = pointed(raw)
            build = self.caches.get(field_name)
            value: Lazy[Any]
            if ref is not None:
                value = Lazy(ref=ref, rebuild=build)
            elif build is not None and raw == b"null":
                value = Lazy(rebuild=build)  # never stored: rebuilt when read
            else:
                value = Lazy(loads(raw), rebuild=build)
            object.__setattr__(state, field_name, value)
        for field_name, build in self.derived.items():
            try:
                object.__setattr__(state, field_name, build(state))
            except Exception as exc:
                raise DecodeError(
                    f"{name}.{field_name}: rebuilding the derived field raised "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        return state

    def _type_hints(self) -> dict[str, Any]:
        if self._hints is None:
            self._hints = typing.get_type_hints(self.state_type)
        return self._hints


def _lazy_bytes(value: Any) -> bytes:
    """How a lazy field is stored: its pointer while it holds what was stored, else its value
    (which the runtime then stores as an artifact)."""
    from perdure.core.artifacts import digest_of, pointer
    from perdure.core.fields import Lazy

    if not isinstance(value, Lazy):
        return dumps(value)
    kept = value.kept()  # a cache field not set since: stored as it was, nothing encoded
    if kept is not None:
        return kept
    if not value.loaded:
        return pointer(value.ref) if value.ref is not None else b"null"
    raw = dumps(value.value)
    if value.ref is not None and digest_of(raw) == value.ref.digest:
        raw = pointer(value.ref)
    value.keep(raw)
    return raw


_PLAIN: dict[Any, tuple[type[Any], ...] | None] = {}


def _plain(hint: Any) -> tuple[type[Any], ...] | None:
    """The types a parsed JSON value of ``hint`` must be an instance of when that is all
    there is to check (``Any``, ``str``, a ``dict`` or ``list`` of ``Any``), else
    None (the value is checked by :func:`_check`)."""
    try:
        return _PLAIN[hint]
    except KeyError:
        pass
    except TypeError:  # an unhashable hint
        return None
    kinds: tuple[type[Any], ...] | None = None
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any or hint is object:
        kinds = (object,)
    elif hint is str:
        kinds = (str,)
    elif (origin is dict or hint is dict) and (not args or args[1] in (Any, object)):
        kinds = (dict,)
    elif (origin is list or hint is list) and (not args or args[0] in (Any, object)):
        kinds = (list,)
    _PLAIN[hint] = kinds
    return kinds


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints_of(cls: type[Any]) -> dict[str, Any]:
    """A nested dataclass's type hints, resolved once per class (not once per item)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _build_dataclass(cls: type[Any], data: Any, hints: dict[str, Any], path: str) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(f"{path}: expected an object, found {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise DecodeError(f"{path}: fields {unknown} are not declared by {cls.__name__}")
    try:  # the path of a field is formatted only for the error
        values = {k: _check(v, hints.get(k, Any), path) for k, v in data.items()}
    except DecodeError:
        values = {k: _check(v, hints.get(k, Any), f"{path}.{k}") for k, v in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise DecodeError(f"{path}: {exc}") from exc


_SCALARS: dict[type[Any], tuple[type[Any], ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
}


def _check(value: Any, hint: Any, path: str) -> Any:
    """Check ``value`` (parsed JSON) against a type hint; rebuild nested dataclasses."""
    if hint is Any or hint is object:
        return value
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                return _check(value, option, path)
            except DecodeError:
                continue
        raise DecodeError(f"{path}: {value!r} fits none of {hint}")
    if hint is type(None):
        if value is not None:
            raise DecodeError(f"{path}: expected null, found {type(value).__name__}")
        return None
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _build_dataclass(hint, value, _hints_of(hint), path)
    if hint in _SCALARS:
        is_bool = isinstance(value, bool)
        if not isinstance(value, _SCALARS[hint]) or (is_bool and hint is not bool):
            raise DecodeError(f"{path}: expected {hint.__name__}, found {value!r}")
        return value
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        if not isinstance(value, list):
            raise DecodeError(f"{path}: expected a list, found {type(value).__name__}")
        args = get_args(hint)
        item = args[0] if args and origin is not tuple else Any
        kinds = _plain(item)
        if kinds is not None and all(isinstance(v, kinds) for v in value):
            items = value  # nothing to convert: one isinstance per item
        else:  # the path of an item is formatted only for the error
            try:
                items = [_check(v, item, path) for v in value]
            except DecodeError:
                items = [_check(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
        return (origin or hint)(items) if (origin or hint) is not list else items
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise DecodeError(f"{path}: expected an object, found {type(value).__name__}")
        args = get_args(hint)
        item = args[1] if len(args) == 2 else Any
        if item is Any or item is object:
            return value  # parsed JSON: its keys are strings, and nobody else holds it
        try:
            return {k: _check(v, item, path) for k, v in value.items()}
        except DecodeError:
            return {k: _check(v, item, f"{path}.{k}") for k, v in value.items()}
    return value
