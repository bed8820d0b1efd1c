"""What the SDK adapters share: calling a vendor SDK's ``create`` (sync or async client) for a
whole reply or a stream of deltas, fitting parameters the SDK version does not name into
``extra_body``, and turning the SDK's connection failures and timeouts into transient errors.
Imports no SDK: each adapter (:mod:`perdure.providers.openai`,
:mod:`perdure.providers.anthropic`) names its own wire format and exception classes."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from perdure.core.chat import Delta, ModelRequest, ModelResponse, Pricing
from perdure.core.effects import TransientError


def transient(exc: Exception, timeout: type[Exception], connection: type[Exception]) -> Exception:
    """``exc`` as perdure reads it: the SDK's ``timeout`` error, its ``connection`` error or an
    httpx error (no HTTP status) become a :class:`TransientError`; status errors pass as they
    are (their status and Retry-After are read by perdure)."""
    if isinstance(exc, timeout):
        return TransientError("timeout", str(exc))
    if isinstance(exc, connection) or type(exc).__module__.startswith("httpx"):
        return TransientError("dependency_unavailable", f"{type(exc).__name__}: {exc}")
    return exc


def fitted(create: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Parameters this SDK version does not name travel in ``extra_body``."""
    try:
        known = inspect.signature(create).parameters
    except (TypeError, ValueError):
        return kwargs
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in known.values()):
        return kwargs
    extra = {k: v for k, v in kwargs.items() if k not in known}
    if not extra:
        return kwargs
    fitted = {k: v for k, v in kwargs.items() if k in known}
    fitted["extra_body"] = {**extra, **(kwargs.get("extra_body") or {})}
    return fitted


def cut() -> TransientError:
    """The error of a stream that ended before the reply did."""
    return TransientError("dependency_unavailable", "the stream ended before the reply did")


class SdkModel:
    """A :class:`perdure.core.chat.ChatModel` on a vendor SDK client: ``complete`` and
    ``stream``, sync or async as the client is. An adapter names how to build its client
    (:meth:`_client`), the SDK's ``create`` method and wire format (:meth:`_create`,
    :meth:`_request`, :meth:`_response`, :meth:`_deltas`) and its errors (:meth:`_translated`)."""

    name: str
    client: Any
    pricing: Pricing | None
    asynchronous: bool

    def __init__(
        self,
        name: str,
        client: Any = None,
        *,
        pricing: Pricing | None = None,
        asynchronous: bool = False,
        **client_options: Any,
    ) -> None:
        if client is None:
            client_options.setdefault("max_retries", 0)
            client = self._client(asynchronous, client_options)
        self.name = name
        self.client = client
        self.pricing = pricing
        self.asynchronous = asynchronous or type(client).__name__.startswith("Async")

    def _client(self, asynchronous: bool, options: dict[str, Any]) -> Any:
        """A new SDK client (async or not) built from ``options``."""
        raise NotImplementedError

    def _create(self) -> Any:
        """The SDK method that makes one request."""
        raise NotImplementedError

    def _request(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        """``request`` as the SDK's keyword arguments."""
        raise NotImplementedError

    def _response(self, response: Any) -> ModelResponse:
        """The SDK's whole reply as a :class:`ModelResponse`."""
        raise NotImplementedError

    def _deltas(self, item: Any) -> tuple[Iterable[Delta], bool]:
        """One streamed item's deltas, and whether it ends the reply."""
        raise NotImplementedError

    def _translated(self, exc: Exception) -> Exception:
        """An SDK error as perdure reads it (:func:`transient`)."""
        raise NotImplementedError

    def complete(self, request: ModelRequest) -> Any:
        """One reply (a coroutine with an async client)."""
        try:
            create = self._create()
            out = create(**fitted(create, self._request(request, False)))
        except Exception as exc:
            raise self._translated(exc) from exc
        if inspect.isawaitable(out):
            return self._acomplete(out)
        return self._response(out)

    async def _acomplete(self, pending: Any) -> ModelResponse:
        try:
            return self._response(await pending)
        except Exception as exc:
            raise self._translated(exc) from exc

    def stream(self, request: ModelRequest) -> Any:
        """The reply's deltas (an async iterator with an async client)."""
        if self.asynchronous:
            return self._astream(request)
        return self._stream(request)

    def _stream(self, request: ModelRequest) -> Iterator[Delta]:
        finished = False
        try:
            create = self._create()
            for item in create(**fitted(create, self._request(request, True))):
                deltas, ends = self._deltas(item)
                finished = finished or ends
                yield from deltas
        except Exception as exc:
            raise self._translated(exc) from exc
        if not finished:
            raise cut()

    async def _astream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        finished = False
        try:
            create = self._create()
            items = await create(**fitted(create, self._request(request, True)))
            async for item in items:
                deltas, ends = self._deltas(item)
                finished = finished or ends
                for delta in deltas:
                    yield delta
        except Exception as exc:
            raise self._translated(exc) from exc
        if not finished:
            raise cut()
