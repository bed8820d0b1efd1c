"""Open streams end when their credential does: a stream opened with an API key closes once
the key is revoked (one opened with a stream token, once the key that minted it is), one
opened with a dashboard session once the session ends (logout, its
key revoked, expiry). Revocation may happen in another process (``perdure keys revoke``), so
each open stream asks again every ``recheck`` seconds; the streams of one credential share
one question (:class:`Recheck`). A closed stream's last message is ``event: closed`` with the
refusal's code; a client that reconnects is refused (401)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Literal

import orjson
from starlette.concurrency import run_in_threadpool

from perdure.core.errors import NotAuthenticatedError, PerdureError
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime

Credential = tuple[Literal["key", "session", "stream"], str]
"""What a stream was opened with: an API key, a session token or a stream token."""


class Recheck:
    """Whether credentials still hold, asked of the runtime at most once every ``every``
    seconds per credential whatever the number of streams that follow it."""

    def __init__(self, runtime: Runtime, every: float) -> None:
        self.runtime = runtime
        self.credentials = Credentials(runtime.parts)
        self.every = every
        self._answers: dict[Credential, tuple[float, NotAuthenticatedError | None]] = {}
        self._asking: dict[Credential, asyncio.Future[NotAuthenticatedError | None]] = {}

    async def refusal(self, credential: Credential) -> NotAuthenticatedError | None:
        """Why ``credential`` no longer holds, or None while it does (a store that cannot be
        reached does not close streams: they fail on their own reads)."""
        now = asyncio.get_running_loop().time()
        known = self._answers.get(credential)
        if known is not None and now - known[0] < self.every:
            return known[1]
        asking = self._asking.get(credential)
        if asking is None:
            asking = asyncio.ensure_future(run_in_threadpool(self._ask, credential))
            self._asking[credential] = asking
            asking.add_done_callback(lambda _: self._asking.pop(credential, None))
        answer = await asyncio.shield(asking)
        self._answers[credential] = (asyncio.get_running_loop().time(), answer)
        if len(self._answers) > 10_000:  # forget the oldest answers
            for stale in list(self._answers)[:5_000]:
                del self._answers[stale]
        return answer

    def _ask(self, credential: Credential) -> NotAuthenticatedError | None:
        kind, token = credential
        try:
            if kind == "key":
                self.runtime.keys.authenticate(token)
            elif kind == "stream":
                self.credentials.stream_access(token, expired_ok=True)
            else:
                self.credentials.session_principal(token, touch=False)
        except NotAuthenticatedError as exc:
            return exc
        except PerdureError:
            return None
        return None


def closing(refusal: PerdureError) -> bytes:
    """The last message of a stream whose credential no longer holds."""
    body = {"code": refusal.code, "message": refusal.message}
    return b"event: closed\ndata: %s\n\n" % orjson.dumps(body)


async def _next(items: AsyncIterator[bytes]) -> bytes:
    return await items.__anext__()


async def guarded(
    body: AsyncIterator[bytes], recheck: Recheck, credential: Credential
) -> AsyncIterator[bytes]:
    """``body``, ended with :func:`closing` as soon as ``credential`` no longer holds (asked
    every ``recheck.every`` seconds, whether or not ``body`` has anything to send)."""
    loop = asyncio.get_running_loop()
    checked = loop.time()
    pending: asyncio.Future[bytes] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(_next(body))
            left = recheck.every - (loop.time() - checked)
            await asyncio.wait({pending}, timeout=max(0.0, left))
            if loop.time() - checked >= recheck.every:
                checked = loop.time()
                refused = await recheck.refusal(credential)
                if refused is not None:
                    yield closing(refused)
                    return
            if not pending.done():
                continue
            try:
                chunk = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield chunk
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        aclose = getattr(body, "aclose", None)
        if aclose is not None:
            await aclose()
