"""``perdure history``, ``fork`` and ``savepoint`` (and ``show --at``): a run's past, and new
runs from a point of it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import click
import orjson

from perdure.cli.support import Settings, app_option, parse_json, pass_settings, run_command
from perdure.core.attempts import committed_attempts
from perdure.core.chat import MODEL_TARGET
from perdure.core.errors import InvalidInputError
from perdure.core.model import JSON, Event, StepRecord
from perdure.core.shapes import iso
from perdure.runtime.admin.inspector import RunView
from perdure.runtime.admin.timeline import HistoryEntry
from perdure.runtime.runtime import Runtime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


def duration(text: str, what: str) -> timedelta:
    """``30d``, ``12h``, ``15m``, ``90s`` or ``0`` as a duration; else one-line bad input."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise InvalidInputError(
            f"{what} {text!r} is not a duration", fix="write e.g. 30d, 12h, 15m, 90s or 0"
        )
    seconds = float(found.group(1)) * _UNITS[found.group(2)]
    if seconds > 100 * 365 * 86_400:
        raise InvalidInputError(f"{what} {text!r} is over 100 years", fix="pass a shorter one")
    return timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class StepFacts:
    """What ``perdure history`` adds to a step: when it started, how long it took, and the
    messages, effects and model tokens it recorded."""

    started_at: datetime | None = None
    seconds: float | None = None
    messages: int = 0
    effects: int = 0
    tokens: int = 0
    attempt: int = 1
    """The attempt the step committed on, counted across failures and crashes."""

    def to_json(self) -> dict[str, JSON]:
        """The facts as JSON fields of a history entry."""
        return {
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "seconds": self.seconds,
            "messages": self.messages,
            "effects": self.effects,
            "tokens": self.tokens,
            "attempt": self.attempt,
        }

    def text(self) -> str:
        """The facts as the text columns of a history line."""
        if self.started_at is None:
            return ""
        took = f"{self.seconds:.3f}s" if self.seconds is not None else "-"
        again = f"  attempt {self.attempt}" if self.attempt > 1 else ""
        return (
            f"  at {iso(self.started_at)} took {took}{again}  messages {self.messages}  "
            f"effects {self.effects}  tokens {self.tokens}"
        )


def step_facts(view: RunView, events: Sequence[Event] = ()) -> dict[int, StepFacts]:
    """Each committed step's facts, by step number, from a run's view and its ``events``
    (every one, oldest first: the attempts are read from them)."""
    attempts = committed_attempts(events)
    steps = sorted(view.steps, key=lambda s: s.seq)
    found: dict[int, StepFacts] = {}
    for s in steps:
        effects = [e for e in view.effects if e.step_seq == s.seq]
        tokens = sum(_tokens(e.result) for e in effects if e.target == MODEL_TARGET)
        said = [
            m
            for m in view.messages
            if m.run_id == s.run_id and m.at is not None and _owner(steps, m.at) == s.seq
        ]
        seconds = (s.finished_at - s.started_at).total_seconds()
        found[s.seq] = StepFacts(
            s.started_at, seconds, len(said), len(effects), tokens, attempts.get(s.seq, 1)
        )
    return found


def every_event(rt: Runtime, run_id: str, tenant: str) -> list[Event]:
    """All of a run's events, oldest first, read a thousand at a time."""
    found: list[Event] = []
    while True:
        page = rt.activity.events(
            run_id, tenant=tenant, after=found[-1].seq if found else 0, limit=1000
        )
        found += page
        if len(page) < 1000:
            return found


def _owner(steps: list[StepRecord], at: datetime) -> int | None:
    """The step whose boundary committed a message written at ``at``: the last one that
    finished by then."""
    done = [s.seq for s in steps if s.finished_at <= at]
    return done[-1] if done else None


def _tokens(result: JSON) -> int:
    usage = result.get("usage") if isinstance(result, dict) else None
    if not isinstance(usage, dict):
        return 0
    names = ("input_tokens", "output_tokens", "input", "output")
    return sum(v for k, v in usage.items() if k in names and isinstance(v, int))


def _entry_line(e: HistoryEntry, facts: StepFacts | None = None) -> str:
    name = e.step or "(start)"
    changed = ", ".join(
        f"{c.field}{'' if c.size is not None else ' (removed)'}"
        f"{' [artifact]' if c.offloaded else ''}"
        f"{f' (+{c.size} bytes appended)' if c.appended else ''}"
        for c in e.changes
    )
    marks = f"  savepoint: {', '.join(e.savepoints)}" if e.savepoints else ""
    if e.artifacts:
        marks += f"  artifacts: {len(e.artifacts)}"
    then = f" -> {e.next_step}" if e.next_step else ""
    outcome = f" {e.outcome}{then}" if e.outcome else ""
    more = facts.text() if facts is not None else ""
    return f"{e.step_seq:>4}  {name}{outcome}{more}  changed: {changed or '-'}{marks}"


@click.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def history(settings: Settings, run_id: str, as_json: bool) -> None:
    """List a run's steps (0 is its start) with the state fields each one changed and the
    savepoints that mark it. See a state with `perdure show RUN --at STEP`."""
    with settings.reader() as rt:
        entries = rt.history.entries(run_id, tenant=settings.tenant)
        lineage = rt.history.lineage(run_id, tenant=settings.tenant)
        facts = step_facts(
            rt.status(run_id, tenant=settings.tenant, events=0),
            every_event(rt, run_id, settings.tenant),
        )
    if as_json:
        out = {
            "run_id": run_id,
            "forked_from": lineage.to_json() if lineage else None,
            "steps": [
                {**e.to_json(), **facts.get(e.step_seq, StepFacts()).to_json()} for e in entries
            ],
        }
        click.echo(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
        return
    if lineage is not None:
        click.echo(
            f"forked from {lineage.source_run_id} at step {lineage.step_seq}"
            + (f" (savepoint {lineage.savepoint})" if lineage.savepoint else "")
        )
    for e in entries:
        click.echo(_entry_line(e, facts.get(e.step_seq)))


def show_state_at(settings: Settings, run_id: str, step: int, as_json: bool) -> None:
    """What ``perdure show RUN --at STEP`` prints: the state at that step."""
    with settings.reader() as rt:
        state = rt.history.state_at(run_id, step, tenant=settings.tenant)
    if as_json:
        out = {"run_id": run_id, "step_seq": step, "state": state}
        click.echo(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
        return
    click.echo(f"run {run_id} at step {step}:")
    for name, value in state.items():
        text = orjson.dumps(value).decode()
        click.echo(f"  {name} = {text if len(text) <= 200 else text[:200] + '...'}")


@click.command()
@click.argument("run_id")
@app_option
@click.option("--at", "at_step", type=int, help="Fork from the state after step N (0: start).")
@click.option("--savepoint", help="Fork from this savepoint.")
@click.option("--patch-state", help="State fields to overwrite, as a JSON object.")
@click.option("--next", "next_step", help="The step the fork starts with (default: the next).")
@click.option("--thread", help="The fork's thread (default: a new one named after it).")
@click.option("--as", "by", help="Who forks (recorded).")
@pass_settings
@run_command
def fork(
    settings: Settings,
    run_id: str,
    app: str | None,
    at_step: int | None,
    savepoint: str | None,
    patch_state: str | None,
    next_step: str | None,
    thread: str | None,
    by: str | None,
) -> None:
    """Create a new run from a run's state at a step or a savepoint (time travel).

    The original is not changed. Effects confirmed up to that point are not repeated: the fork
    never runs those steps. The steps after it run again in the fork, with new effect keys:
    their effects happen again (see docs/history.md). A worker runs the fork like any run.
    """
    with settings.runtime(app, with_workflows=True) as rt:
        run = rt.history.fork(
            run_id,
            at=at_step,
            savepoint=savepoint,
            patch=parse_json(patch_state, "--patch-state"),
            next_step=next_step,
            thread=thread,
            tenant=settings.tenant,
            by=by,
        )
    click.echo(f"forked {run_id} as {run.run_id} (PENDING at {run.next_step})")


@click.command()
@click.argument("run_id")
@click.argument("label")
@click.option("--at", "at_step", type=int, help="Step N (default: the last committed).")
@click.option("--expires", help="Lapse after this long, e.g. 30d (default: never).")
@click.option("--as", "by", help="Who confirms it (recorded).")
@pass_settings
@run_command
def savepoint(
    settings: Settings,
    run_id: str,
    label: str,
    at_step: int | None,
    expires: str | None,
    by: str | None,
) -> None:
    """Mark a point of a run's history as a confirmed savepoint LABEL to fork from later."""
    ttl = None if expires is None else duration(expires, "--expires")
    with settings.runtime() as rt:
        sp = rt.history.savepoint(
            run_id, label, at=at_step, tenant=settings.tenant, by=by, expires=ttl
        )
    until = f", until {sp.expires_at:%Y-%m-%d %H:%M} UTC" if sp.expires_at else ""
    click.echo(f"savepoint {sp.label} of {run_id} at step {sp.step_seq} by {sp.created_by}{until}")
