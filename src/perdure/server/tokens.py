"""``POST /v1/stream-tokens``: a short-lived, read-only token that opens one stream as
``?token=`` (see :mod:`perdure.core.stream_tokens`), for clients such as a browser's
``EventSource`` that cannot send an ``Authorization`` header."""

from __future__ import annotations

from datetime import timedelta

from starlette.requests import Request
from starlette.responses import Response

from perdure.core.errors import InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.model import Principal
from perdure.core.shapes import iso
from perdure.core.stream_tokens import EVENTS, message_scope, run_scope
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime
from perdure.server.api import call, endpoint, json_response, parsed
from perdure.server.bodies import NewStreamToken


@endpoint
async def mint(request: Request, who: Principal, rt: Runtime) -> Response:
    """Mint a stream token for a run of the tenant, a message, or the tenant's feed."""
    body = await parsed(request, NewStreamToken)
    if body.run_id is not None and body.message_id is not None:
        raise InvalidInputError(
            "a stream token opens one stream: name run_id or message_id, not both",
            fix="mint one token per stream",
        )
    if body.run_id is not None:
        run = await call(rt.get, checked_id(body.run_id, "run id"), tenant=who)
        scope = run_scope(run.run_id)
    elif body.message_id is not None:
        scope = message_scope(checked_id(body.message_id, "message id"))
    else:
        scope = EVENTS
    credentials: Credentials = request.app.state.credentials
    made = await call(
        credentials.stream_token, who, scope, lifetime=timedelta(seconds=body.seconds)
    )
    return json_response(
        {"token": made.token, "scope": made.scope, "expires_at": iso(made.expires_at)}, 201
    )
