"""``perdure audit``: the decisions people made on runs, who made them and how they
authenticated."""

from __future__ import annotations

import click
import orjson

from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.audit import Decision
from perdure.core.shapes import iso


def decision_json(d: Decision) -> dict[str, object]:
    """A decision of the audit trail as JSON."""
    return {
        "seq": d.seq,
        "at": iso(d.at),
        "run_id": d.run_id,
        "verb": d.verb,
        "by": d.by,
        "via": d.via,
        "detail": d.detail,
    }


def decision_line(d: Decision) -> str:
    """A decision of the audit trail as one line."""
    line = f"{d.seq}  {iso(d.at)}  {d.run_id}  {d.verb}  by {d.by or '-'}  via {d.via or '-'}"
    return f"{line}  {d.detail}" if d.detail else line


@click.command()
@click.option("--after", default=0, show_default=True, help="Only decisions after this event.")
@click.option(
    "--limit", default=100, show_default=True, type=click.IntRange(1, 100_000), help="At most."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON, one decision per line.")
@pass_settings
@run_command
def audit(settings: Settings, after: int, limit: int, as_json: bool) -> None:
    """List the tenant's decisions (approve, reject, resolve, resume, fail, cancel), oldest
    first: who made each, and the API key or dashboard session it came through (via)."""
    with settings.reader() as rt:
        found = rt.activity.audit(tenant=settings.tenant, after=after, limit=limit)
    if as_json:
        for d in found:
            click.echo(orjson.dumps(decision_json(d)).decode())
        return
    if not found:
        click.echo("no decisions")
    for d in found:
        click.echo(decision_line(d))
