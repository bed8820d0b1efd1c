"""``perdure effects`` (list and resolve side effects) and ``perdure chaos`` (crash matrix)."""

from __future__ import annotations

import sys

import click
import orjson

from perdure.cli import render
from perdure.cli.support import Settings, parse_json, pass_settings, run_command
from perdure.core.errors import ConfigError


@click.group(invoke_without_command=True)
@click.option("--run", "run_id", help="Only the effects of this run.")
@click.option("--status", "statuses", multiple=True, help="Filter by status (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def effects(
    ctx: click.Context, run_id: str | None, statuses: tuple[str, ...], as_json: bool
) -> None:
    """List side effects (e.g. `--status ambiguous`: those waiting for a person)."""
    if ctx.invoked_subcommand is None:
        _list(ctx.find_object(Settings), run_id, statuses, as_json)


@run_command
def _list(settings: Settings, run_id: str | None, statuses: tuple[str, ...], as_json: bool) -> None:
    with settings.reader() as rt:
        found = rt.effects.list(tenant=settings.tenant, run_id=run_id, status=statuses)
    if as_json:
        click.echo(orjson.dumps([render.effect_json(e) for e in found]).decode())
        return
    if not found:
        click.echo("no effects")
        return
    for e in found:
        error = e.last_error.get("kind") if isinstance(e.last_error, dict) else ""
        click.echo(
            f"{e.status:<11} attempts={e.attempts} {e.target}.{e.operation}  {e.key}"
            + (f"  receipt={e.receipt}" if e.receipt else "")
            + (f"  last_error={error}" if error else "")
        )


@effects.command("resolve")
@click.argument("key")
@click.option(
    "--confirmed", "applied", flag_value=True, default=None, help="The provider applied it."
)
@click.option("--not-applied", "applied", flag_value=False, help="The provider never applied it.")
@click.option("--receipt", help="The provider's receipt or resource id (with --confirmed).")
@click.option(
    "--result",
    "result_json",
    help="The provider's result as JSON (with --confirmed): what the step (or the model, for a "
    "tool call) receives as the effect's result; without it, null.",
)
@click.option("--as", "by", required=True, help="Who decides.")
@click.option("--reason", required=True, help="Why (what you checked).")
@click.option("--request-id", help="Repeat-safe id of this request.")
@pass_settings
@run_command
def resolve(
    settings: Settings,
    key: str,
    applied: bool | None,
    receipt: str | None,
    result_json: str | None,
    by: str,
    reason: str,
    request_id: str | None,
) -> None:
    """Record a person's decision about an ambiguous effect; its run continues."""
    if applied is None:
        raise ConfigError(
            "say what happened to the effect", fix="pass --confirmed or --not-applied"
        )
    with settings.runtime() as rt:
        record = rt.effects.resolve(
            key,
            applied=applied,
            by=by,
            reason=reason,
            tenant=settings.tenant,
            receipt=receipt,
            result=parse_json(result_json, "--result"),
            request_id=request_id,
        )
    click.echo(f"effect {record.key} is now {record.status}; run {record.run_id} continues")


@click.command()
@click.argument("target", metavar="MODULE:WORKFLOW")
@click.option("--input", "input_json", help="The run's input as JSON.")
@click.option("--durability", type=click.Choice(["sync", "async", "exit"]), default="sync")
@click.option(
    "--approve-as", "approve_as", metavar="ROLE", help="Approve approval waits as this role."
)
@run_command
def chaos(target: str, input_json: str | None, durability: str, approve_as: str | None) -> None:
    """Crash a workflow at every crash point and resume it; print the matrix.

    MODULE is importable from the current folder; WORKFLOW is the workflow's name. Each row runs
    in a fresh folder (relative paths in the input are per row).

    Exits non-zero when a row shows a duplicated side effect or a result different from the
    uninterrupted reference run.
    """
    from perdure.testing import format_matrix, run_matrix

    module, _, workflow = target.partition(":")
    if not module or not workflow:
        raise ConfigError(
            f"{target!r} does not name a workflow",
            fix="write MODULE:WORKFLOW, e.g. myapp.flows:refund",
        )
    rows = run_matrix(
        module,
        workflow,
        parse_json(input_json, "--input"),
        durability=durability,
        approve_as=approve_as,
    )
    click.echo(format_matrix(rows))
    bad = [r for r in rows if not r.ok]
    click.echo(f"\n{len(rows) - 1} crash points, {len(bad)} failing")
    if bad:
        sys.exit(1)
