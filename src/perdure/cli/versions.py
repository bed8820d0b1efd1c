"""``perdure check`` (before a deploy), ``repair`` and ``fail`` (runs that need a person)."""

from __future__ import annotations

import sys

import click
import orjson

from perdure.cli import render
from perdure.cli.support import (
    Settings,
    app_option,
    parse_json,
    pass_settings,
    run_command,
)


@click.command()
@app_option
@click.option("--all-tenants/--this-tenant", default=True, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def check(settings: Settings, app: str | None, all_tenants: bool, as_json: bool) -> None:
    """Before a deploy: which live runs the new code can run, must migrate, or would
    quarantine, and why. Changes nothing. Exits 1 if any would be quarantined."""
    with settings.runtime(app, with_workflows=True) as rt:
        rows = rt.versions.check(tenant=None if all_tenants else settings.tenant)
    if as_json:
        click.echo(orjson.dumps([render.check_json(r) for r in rows]).decode())
    else:
        click.echo(render.check_table(rows))
    blocked = [r for r in rows if r.verdict == "quarantine"]
    if not as_json:
        counts = {v: sum(r.verdict == v for r in rows) for v in ("run", "migrate", "quarantine")}
        click.echo(
            f"\n{len(rows)} live runs: {counts['run']} run as they are, {counts['migrate']} "
            f"migrate, {counts['quarantine']} would be quarantined"
        )
    if blocked:
        sys.exit(1)


@click.command()
@click.argument("run_id")
@app_option
@click.option("--at", "at_step", help="Continue at this step.")
@click.option("--patch-state", help="State fields to overwrite, as a JSON object.")
@click.option("--as", "by", help="Who repairs (recorded).")
@pass_settings
@run_command
def repair(
    settings: Settings,
    run_id: str,
    app: str | None,
    at_step: str | None,
    patch_state: str | None,
    by: str | None,
) -> None:
    """Bring a quarantined run back (without running it); a worker or `resume` continues."""
    with settings.runtime(app, with_workflows=True) as rt:
        run = rt.versions.repair(
            run_id,
            tenant=settings.tenant,
            at=at_step,
            patch=parse_json(patch_state, "--patch-state"),
            by=by,
        )
    click.echo(
        f"run {run_id} {run.status} at {run.next_step}; a worker or `perdure resume` continues it"
    )


@click.command("fail")
@click.argument("run_id")
@click.option("--reason", required=True, help="Why it ends.")
@click.option("--as", "by", help="Who decides (recorded).")
@pass_settings
@run_command
def fail_run(settings: Settings, run_id: str, reason: str, by: str | None) -> None:
    """End a run that needs a person (NEEDS_ATTENTION, QUARANTINED) as FAILED."""
    with settings.runtime() as rt:
        run = rt.versions.fail(run_id, tenant=settings.tenant, reason=reason, by=by)
    click.echo(f"run {run_id} {run.status}")
