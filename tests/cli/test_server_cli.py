"""The server from the command line, each command in its own process: keys, ``serve``,
decisions made through a server, ``watch``, and a worker's metrics port and JSON logs."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from perdure import Runtime
from perdure.testing import FileClock
from tests.apps import server_app
from tests.conftest import ROOT, cli_env, perdure_cmd, read_until, run_cli, start_worker

APP = "tests.apps.server_app"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(db_url: str) -> Iterator[str]:
    """``perdure serve`` in a process of its own; its URL."""
    assert run_cli(db_url, "migrate").returncode == 0
    port = free_port()
    proc = subprocess.Popen(
        perdure_cmd(db_url, "serve", "--app", APP, "--port", str(port)),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    read_until(proc, "serving on")  # printed once the socket listens
    yield f"http://127.0.0.1:{port}"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def test_keys_are_made_shown_once_listed_and_revoked(db_url: str) -> None:
    made = run_cli(db_url, "--tenant", "t1", "keys", "create", "ops", "--role", "admin")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("pdk_") and "not shown again" in made.stderr
    key_id = token.split("_")[1]
    listed = run_cli(db_url, "--tenant", "t1", "keys", "list")
    assert key_id in listed.stdout and token not in listed.stdout and "roles=admin" in listed.stdout
    assert "no keys" in run_cli(db_url, "--tenant", "t2", "keys", "list").stdout
    refused = run_cli(db_url, "--tenant", "t2", "keys", "revoke", key_id)
    assert refused.returncode == 1 and "error[key_not_found]" in refused.stderr
    revoked = run_cli(db_url, "--tenant", "t1", "keys", "revoke", key_id)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    bad = run_cli(db_url, "keys", "create", "x", "--role", "NOT A ROLE")
    assert bad.returncode == 1 and bad.stderr.startswith("error[invalid_input]")


def test_a_decision_through_the_server_is_recorded_as_the_keys_principal(
    db_url: str, server: str
) -> None:
    token = run_cli(db_url, "keys", "create", "carol", "--role", "approver").stdout.strip()
    run_id = run_cli(db_url, "start", "job", "--app", APP, "--wait").stdout.split()[1]
    decided = run_cli(
        db_url, "approve", run_id, "--server", server, "--key", token, "--comment", "ok"
    )
    assert decided.returncode == 0, decided.stderr
    assert "approved by carol" in decided.stdout
    again = run_cli(db_url, "reject", run_id, "--server", server, "--key", token)
    assert again.returncode == 1 and "error[approval_not_pending]" in again.stderr
    local = run_cli(db_url, "approve", run_id)  # against the database: name and role needed
    assert local.returncode == 1 and "--as NAME and --role ROLE" in local.stderr
    assert run_cli(db_url, "worker", "--app", APP, "--until-idle").returncode == 0
    watched = run_cli(db_url, "watch", run_id, "--server", server, "--key", token)
    assert watched.returncode == 0, watched.stderr
    assert "approval_decided" in watched.stdout and "ended SUCCEEDED" in watched.stdout
    trail = run_cli(db_url, "audit")  # who decided, and the key it came through
    assert trail.returncode == 0, trail.stderr
    (line,) = trail.stdout.splitlines()
    assert f"{run_id}  approve  by carol  via key:{token.split('_')[1]}  ok" in line
    as_json = json.loads(run_cli(db_url, "audit", "--json").stdout)
    assert (as_json["verb"], as_json["by"], as_json["run_id"]) == ("approve", "carol", run_id)
    assert "no decisions" in run_cli(db_url, "--tenant", "t2", "audit").stdout


def test_watch_follows_a_run_from_the_database_until_it_ends(db_url: str) -> None:
    run_id = run_cli(db_url, "start", "plain", "--app", APP).stdout.split()[1]
    assert run_cli(db_url, "worker", "--app", APP, "--until-idle").returncode == 0
    watched = run_cli(db_url, "watch", run_id)
    assert watched.returncode == 0, watched.stderr
    lines = watched.stdout.splitlines()
    assert lines[0].startswith("#") and "created" in lines[0]
    assert "RUNNING -> SUCCEEDED" in watched.stdout and lines[-1].endswith("ended SUCCEEDED")
    missing = run_cli(db_url, "watch", "no-such-run")
    assert missing.returncode == 1 and "error[run_not_found]" in missing.stderr


def test_a_worker_serves_metrics_and_logs_json_lines(db_url: str) -> None:
    ids = [run_cli(db_url, "start", "plain", "--app", APP).stdout.split()[1] for _ in range(2)]
    port = free_port()
    proc = subprocess.Popen(
        perdure_cmd(
            db_url,
            "worker",
            "--app",
            APP,
            "--metrics-port",
            str(port),
            "--log-format",
            "json",
            "--log-level",
            "info",
        ),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the worker says when it serves metrics, and when each run stopped (after its metrics)
    read_until(proc, "metrics on", *(f"run {run_id} " for run_id in ids))
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    assert 'perdure_step_outcomes_total{outcome="done",step="only",workflow="plain"} 2.0' in text
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    steps = [r for r in records if r.get("step") == "only" and r.get("outcome") == "done"]
    assert sorted(r["run_id"] for r in steps) == sorted(ids)
    assert all(r["fence"] == 1 and r["attempt"] == 1 for r in steps)


def test_watch_shows_a_long_wait_then_follows_the_run_to_its_end(db_url: str) -> None:
    run_id = run_cli(db_url, "start", "job", "--app", APP, "--wait").stdout.split()[1]
    proc = subprocess.Popen(
        perdure_cmd(db_url, "watch", run_id, "--poll", "0.05"),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = read_until(proc, "waiting for a decision")
    assert '"role":"approver"' in lines[-1]
    decided = run_cli(db_url, "approve", run_id, "--as", "dana", "--role", "approver")
    assert decided.returncode == 0, decided.stderr
    assert run_cli(db_url, "worker", "--app", APP, "--until-idle").returncode == 0
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "approval_decided" in out and out.rstrip().endswith("ended SUCCEEDED")


def test_runs_watch_prints_the_table_until_interrupted(db_url: str) -> None:
    run_id = run_cli(db_url, "start", "plain", "--app", APP).stdout.split()[1]
    proc = subprocess.Popen(
        perdure_cmd(db_url, "runs", "--watch"),
        env=cli_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert "PENDING" in read_until(proc, run_id)[-1]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


def test_start_signal_and_cancel_through_the_server_act_in_the_keys_tenant(
    db_url: str, server: str
) -> None:
    token = run_cli(db_url, "--tenant", "t9", "keys", "create", "svc").stdout.strip()
    remote = ["--server", server, "--key", token]
    started = run_cli(db_url, "start", "plain", *remote, "--idempotency-key", "k1", "--json")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)
    assert run["tenant_id"] == "t9" and run["status"] == "PENDING"
    again = json.loads(
        run_cli(db_url, "start", "plain", *remote, "--idempotency-key", "k1", "--json").stdout
    )
    assert again["run_id"] == run["run_id"]
    sent = run_cli(db_url, "signal", run["run_id"], "nudge", "--id", "n1", *remote)
    assert sent.returncode == 0 and "kept in the run's inbox" in sent.stdout
    cancelled = run_cli(db_url, "cancel", run["run_id"], "--reason", "no longer needed", *remote)
    assert cancelled.returncode == 0 and "CANCELLED" in cancelled.stdout
    hidden = run_cli(db_url, "show", run["run_id"])  # the default tenant does not see it
    assert hidden.returncode == 1 and "error[run_not_found]" in hidden.stderr
    waited = run_cli(db_url, "start", "plain", *remote, "--wait")
    assert waited.returncode == 1 and "perdure watch RUN --server" in waited.stderr
    bad = run_cli(db_url, "start", "plain", "--server", server, "--key", "pdk_nope")
    assert bad.returncode == 1 and bad.stderr.startswith("error[not_authenticated]")


def test_a_port_in_use_is_one_line_not_a_traceback(db_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        served = run_cli(db_url, "serve", "--app", APP, "--port", port)
        assert served.returncode == 1 and served.stderr.startswith("error[invalid_config]")
        metrics = run_cli(db_url, "worker", "--app", APP, "--metrics-port", port, "--until-idle")
        assert metrics.returncode == 1 and metrics.stderr.startswith("error[invalid_config]")
        assert "Traceback" not in served.stderr + metrics.stderr


def test_a_fresh_worker_shows_takeovers_at_zero_so_the_first_one_fires_the_alert(
    db_url: str, shared_clock: FileClock, tmp_path: Path
) -> None:
    """``increase(perdure_lease_takeovers_total[10m]) > 0`` (docs/observability.md) needs the
    counter at 0 before the first takeover; a worker without ``--metrics-store`` exports no
    store gauge (the server or one worker does: ``sum()`` must not multiply them). Prometheus's
    own ``promtool`` lints both scrapes and evaluates the shipped alert rules
    (docs/prometheus-alerts.yml) on the two values the worker exported: the alert fires."""
    run_cli(db_url, "migrate")
    with Runtime(db_url, workflows=[server_app.plain], owner="gone", lease_seconds=10) as gone:
        run = gone.start("plain")
        assert gone.claim_next() is not None  # claimed, then its owner "dies"
    port = free_port()
    proc = start_worker(db_url, APP, "--metrics-port", str(port), "--poll", "0.05")
    try:
        read_until(proc, "metrics on")
        before = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'perdure_lease_takeovers_total{workflow="plain"} 0.0' in before
        assert "perdure_runs{" not in before and "perdure_queue_depth" not in before
        shared_clock.advance(30)  # the dead owner's lease runs out: the worker takes it over
        read_until(proc, f"run {run.run_id} ")
        after = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'perdure_lease_takeovers_total{workflow="plain"} 1.0' in after
        alert_fires_on(before, after, tmp_path)
        open_metrics = httpx.get(
            f"http://127.0.0.1:{port}/metrics",
            headers={"Accept": "application/openmetrics-text; version=1.0.0"},
            timeout=5,
        )
        assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
        assert open_metrics.text.rstrip().endswith("# EOF")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def alert_fires_on(before: str, after: str, folder: Path) -> None:
    """``promtool check metrics`` accepts both scrapes, and ``promtool test rules`` finds
    ``PerdureWorkersDying`` silent on the first and firing on the second, a minute later."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is needed (apt-get install prometheus; .ci/run installs it)"
    for scrape in (before, after):
        linted = subprocess.run(
            [promtool, "check", "metrics"],
            input=scrape,
            capture_output=True,
            text=True,
            check=False,
        )
        assert linted.returncode == 0, linted.stdout + linted.stderr
    series = 'perdure_lease_takeovers_total{workflow="plain"}'
    values = [float(s.split(series + " ")[1].split()[0]) for s in (before, after)]
    dying = {
        "exp_labels": {"severity": "ticket", "workflow": "plain"},
        "exp_annotations": {
            "summary": "Runs of plain were taken over from workers that died or froze",
            "description": "Look for killed or frozen worker processes (perdure workers).",
        },
    }
    case = {
        "rule_files": [str(ROOT / "docs" / "prometheus-alerts.yml")],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": series, "values": " ".join(map(str, values))}],
                "alert_rule_test": [
                    {"eval_time": "0m", "alertname": "PerdureWorkersDying", "exp_alerts": []},
                    {"eval_time": "1m", "alertname": "PerdureWorkersDying", "exp_alerts": [dying]},
                ],
            }
        ],
    }
    rules_test = folder / "takeover-alert.test.json"  # JSON is YAML
    rules_test.write_text(json.dumps(case))
    tested = subprocess.run(
        [promtool, "test", "rules", str(rules_test)], capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_shipped_alert_rules_are_valid_prometheus_rules() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is needed (apt-get install prometheus; .ci/run installs it)"
    rules = ROOT / "docs" / "prometheus-alerts.yml"
    checked = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, (
        checked.stdout + checked.stderr
    )


def test_one_worker_with_metrics_store_exports_the_stores_gauges_at_zero(db_url: str) -> None:
    run_cli(db_url, "start", "plain", "--app", APP)
    port = free_port()
    proc = start_worker(db_url, APP, "--metrics-port", str(port), "--metrics-store")
    try:
        read_until(proc, "metrics on", "run ")
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'perdure_runs_quarantined{tenant="default"} 0.0' in text
        assert 'perdure_effects_ambiguous{tenant="default"} 0.0' in text
        assert "perdure_queue_depth 0.0" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
