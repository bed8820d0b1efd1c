"""``perdure workflows --app MODULE``: what an app declares, before anything runs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click
import orjson

from perdure.cli.support import app_option, load_app, run_command
from perdure.core.model import JSON
from perdure.core.workflow import Workflow


def workflow_json(wf: Workflow[Any]) -> dict[str, JSON]:
    """A workflow as ``perdure workflows --json`` prints it."""
    return {
        "name": wf.name,
        "version": wf.version,
        "state_schema": wf.state_schema,
        "start": wf.start,
        "steps": [
            {
                "name": s.name,
                "next": sorted(s.next),
                "retry": None if s.retry is None else _retry(asdict(s.retry)),
            }
            for s in wf.steps.values()
        ],
        "compensators": sorted(wf.compensators),
        "budget": None if wf.budget is None else wf.budget.start().limits.to_json(),
        "reducers": sorted(wf.reducers),
        "model": wf.model,
    }


def _retry(policy: dict[str, Any]) -> dict[str, JSON]:
    return {k: sorted(v) if isinstance(v, frozenset | set) else v for k, v in policy.items()}


def workflow_text(wf: Workflow[Any]) -> str:
    """A workflow as lines: its name and versions, then each step with where it goes."""
    lines = [f"{wf.name}  version {wf.version}  state schema {wf.state_schema}  start {wf.start}"]
    for s in wf.steps.values():
        goes = ", ".join(sorted(s.next)) or "(ends)"
        retry = "" if s.retry is None else f"  retry: {s.retry.max_attempts} attempts"
        lines.append(f"  {s.name} -> {goes}{retry}")
    if wf.compensators:
        lines.append(f"  compensators: {', '.join(sorted(wf.compensators))}")
    if wf.budget is not None:
        limits = {k: v for k, v in wf.budget.start().limits.to_json().items() if v is not None}
        lines.append(f"  budget: {orjson.dumps(limits).decode()}")
    return "\n".join(lines)


@click.command()
@app_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@run_command
def workflows(app: str | None, as_json: bool) -> None:
    """List the workflows an app declares: versions, steps and where each goes, retries."""
    found = sorted(load_app(app), key=lambda wf: wf.name)
    if as_json:
        click.echo(orjson.dumps([workflow_json(wf) for wf in found]).decode())
        return
    click.echo("\n".join(workflow_text(wf) for wf in found))
