"""The API's operator endpoints: effects, what needs a person, the fleet, keys, and who a
key is. Same rules as :mod:`perdure.server.api`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from perdure.core.model import JSON, Principal, RunStatus
from perdure.core.shapes import effect_json, iso, run_json
from perdure.runtime.runtime import Runtime
from perdure.server.api import call, endpoint, json_response, parsed
from perdure.server.auth import ADMIN, require
from perdure.server.bodies import EffectsQuery, NewKey, ResolveEffect, StuckQuery, queried


@endpoint
async def list_effects(request: Request, who: Principal, rt: Runtime) -> Response:
    """Effects of the tenant (or of one run), filtered by status."""
    query = queried(request, EffectsQuery)
    found = await call(
        rt.effects.list, tenant=who, run_id=query.run_id, status=query.status, limit=query.limit
    )
    return json_response({"effects": [effect_json(e) for e in found]})


@endpoint
async def resolve_effect(request: Request, who: Principal, rt: Runtime) -> Response:
    """Record a person's decision on an ambiguous effect (admin)."""
    require(who, ADMIN, "resolving an effect")
    body = await parsed(request, ResolveEffect)
    record = await call(
        rt.effects.resolve,
        str(request.path_params["key"]),
        applied=body.applied,
        by=who.subject,
        reason=body.reason,
        tenant=who,
        receipt=body.receipt,
        result=body.result,
        request_id=body.request_id,
    )
    return json_response(effect_json(record))


@endpoint
async def stuck_runs(request: Request, who: Principal, rt: Runtime) -> Response:
    """The tenant's RUNNING runs with no progress for ``threshold`` seconds."""
    threshold = queried(request, StuckQuery).threshold
    found = await call(
        rt.activity.stuck, threshold_seconds=float(threshold), limit=1000, tenant=who
    )
    return json_response({"runs": [run_json(r) for r in found], "threshold": threshold})


@endpoint
async def quarantined_runs(request: Request, who: Principal, rt: Runtime) -> Response:
    """The tenant's QUARANTINED runs with their evidence."""
    found = await call(rt.runs, tenant=who, status=[RunStatus.QUARANTINED], limit=10_000)
    return json_response({"runs": [run_json(r) for r in found]})


@endpoint
async def list_workers(request: Request, who: Principal, rt: Runtime) -> Response:
    """Live workers of the database (admin: the fleet serves every tenant)."""
    require(who, ADMIN, "listing workers")
    now = rt.clock.now()
    found = await call(rt.activity.workers)
    return json_response(
        {
            "workers": [
                {
                    "owner": w.owner,
                    "host": w.host,
                    "pid": w.pid,
                    "concurrency": w.concurrency,
                    "runs_held": w.runs_held,
                    "started_at": iso(w.started_at),
                    "last_beat": iso(w.last_beat),
                    "stopped_at": iso(w.stopped_at),
                    "live": w.stopped_at is None and now - w.last_beat < timedelta(minutes=1),
                }
                for w in found
            ]
        }
    )


@endpoint
async def me(request: Request, who: Principal, rt: Runtime) -> Response:
    """Who the key speaks for."""
    return json_response({"tenant": who.tenant_id, "name": who.subject, "roles": sorted(who.roles)})


@endpoint
async def keys(request: Request, who: Principal, rt: Runtime) -> Response:
    """List the tenant's keys (GET) or make one (POST, shown once) (admin)."""
    require(who, ADMIN, "managing keys")
    if request.method == "POST":
        body = await parsed(request, NewKey)
        made = await call(rt.keys.create, body.name, tenant=who, roles=body.roles)
        return json_response({**key_json(made.key), "token": made.token}, 201)
    return json_response({"keys": [key_json(k) for k in await call(rt.keys.list, tenant=who)]})


@endpoint
async def revoke_key(request: Request, who: Principal, rt: Runtime) -> Response:
    """Revoke one of the tenant's keys (admin)."""
    require(who, ADMIN, "managing keys")
    key = await call(rt.keys.revoke, str(request.path_params["key_id"]), tenant=who)
    return json_response(key_json(key))


def key_json(key: Any) -> dict[str, JSON]:
    """An API key as JSON (never its secret)."""
    return {
        "key_id": key.key_id,
        "tenant": key.tenant_id,
        "name": key.name,
        "roles": sorted(key.roles),
        "created_at": iso(key.created_at),
        "revoked_at": iso(key.revoked_at),
    }
