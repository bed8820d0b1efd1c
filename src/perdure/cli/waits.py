"""``perdure approvals``, ``approve``, ``reject`` and ``signal``: acting on waiting runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
import orjson

from perdure.cli import render
from perdure.cli.client import Client, server_options
from perdure.cli.support import Settings, parse_json, pass_settings, run_command
from perdure.core.errors import InvalidInputError
from perdure.core.model import Principal


@click.command()
@click.option("--all", "show_all", is_flag=True, help="Decided ones too.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def approvals(settings: Settings, show_all: bool, as_json: bool) -> None:
    """List approval requests waiting for a decision."""
    with settings.reader() as rt:
        found = rt.approvals(tenant=settings.tenant, pending=not show_all)
    if as_json:
        click.echo(orjson.dumps([render.approval_json(a) for a in found]).decode())
        return
    if not found:
        click.echo("no approvals waiting" if not show_all else "no approvals")
    for a in found:
        click.echo(render.approval_line(a))


def _decide(
    settings: Settings,
    run_id: str,
    by: str | None,
    roles: tuple[str, ...],
    comment: str | None,
    request_id: str | None,
    approve: bool,
    server: str | None = None,
    key: str | None = None,
) -> None:
    if server:  # the server authenticates the key: the decision is recorded as its principal
        body = {"comment": comment, "request_id": request_id}
        verb = "approve" if approve else "reject"
        found = Client(server, key).call("POST", f"/v1/runs/{run_id}/{verb}", body)
        step = found["on_approve"] if found["status"] == "approved" else found["on_reject"]
        by = found["decided_by"]
        click.echo(f"run {run_id} {found['status']} by {by}; it continues with {step}")
        return
    if not by or not roles:
        raise InvalidInputError(
            "a decision made against the database needs --as NAME and --role ROLE",
            fix="pass them, or decide through a server with --server URL --key KEY",
        )
    principal = Principal(settings.tenant, by, frozenset(roles))
    with settings.runtime() as rt:
        decide = rt.approve if approve else rt.reject
        decided = decide(run_id, principal, comment=comment, request_id=request_id)
    step = decided.on_approve if decided.approved else decided.on_reject
    click.echo(f"run {run_id} {decided.status} by {decided.decided_by}; it continues with {step}")


decision_options = [
    click.argument("run_id"),
    click.option("--as", "by", help="Who decides (against the database)."),
    click.option("--role", "roles", multiple=True, help="A role you hold (against the database)."),
    click.option("--comment", help="Why."),
    click.option("--request-id", help="Repeat-safe id of this request."),
    click.option("--server", envvar="PERDURE_SERVER", help="Decide through a perdure server."),
    click.option("--key", help="API key for --server (default: PERDURE_KEY)."),
]


F = TypeVar("F", bound=Callable[..., Any])


def with_decision_options(fn: F) -> F:
    """Add the options shared by ``approve`` and ``reject``."""
    for option in reversed(decision_options):
        fn = option(fn)
    return fn


@click.command()
@with_decision_options
@pass_settings
@run_command
def approve(
    settings: Settings,
    run_id: str,
    by: str | None,
    roles: tuple[str, ...],
    comment: str | None,
    request_id: str | None,
    server: str | None,
    key: str | None,
) -> None:
    """Approve what RUN_ID waits for; it continues with its on-approve step."""
    _decide(settings, run_id, by, roles, comment, request_id, True, server, key)


@click.command()
@with_decision_options
@pass_settings
@run_command
def reject(
    settings: Settings,
    run_id: str,
    by: str | None,
    roles: tuple[str, ...],
    comment: str | None,
    request_id: str | None,
    server: str | None,
    key: str | None,
) -> None:
    """Reject what RUN_ID waits for; it continues with its on-reject step."""
    _decide(settings, run_id, by, roles, comment, request_id, False, server, key)


@click.command()
@click.argument("run_id")
@click.argument("name")
@click.option("--payload", help="The signal's payload as JSON.")
@click.option("--id", "signal_id", help="Delivery id; the same id twice is delivered once.")
@server_options
@pass_settings
@run_command
def signal(
    settings: Settings,
    run_id: str,
    name: str,
    payload: str | None,
    signal_id: str | None,
    server: str | None,
    key: str | None,
) -> None:
    """Send signal NAME to RUN_ID (kept in its inbox if it does not wait for it yet)."""
    if server:
        body = {"name": name, "payload": parse_json(payload, "--payload"), "signal_id": signal_id}
        found = Client(server, key).call("POST", f"/v1/runs/{run_id}/signals", body)
        sent_id, sent_name, what = found["signal_id"], found["name"], found["outcome"]
    else:
        with settings.runtime() as rt:
            sent, what = rt.signal(
                run_id,
                name,
                parse_json(payload, "--payload"),
                tenant=settings.tenant,
                signal_id=signal_id,
            )
        sent_id, sent_name = sent.signal_id, sent.name
    said = {
        "woke": "the run was waiting for it and continues",
        "queued": "kept in the run's inbox until it waits for it",
        "duplicate": "already delivered; nothing changed",
    }[what]
    click.echo(f"signal {sent_name} ({sent_id}): {said}")
