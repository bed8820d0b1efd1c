"""The dashboard's views in a real headless Chromium, on each database: the run list a page at
a time with its filters, a run's step timeline drawn to scale (retries, waits), its workflow's
step graph with the step it is on, tokens and cost per step, readable tool calls, a formatted
traceback, and the overview page. Every step takes a known time on the test's clock (see
``tests/apps/dashboard_app.py``), so the drawing is checked against exact durations.

Screenshots of each view are kept in ``$PERDURE_SCREENSHOTS`` (default
``tests/.artifacts/screenshots/``), named after the test and the database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from perdure import FakeClock, Principal, Runtime
from perdure.core.model import RunStatus
from perdure.server import create_app
from perdure.server.timeline import spend_of
from tests.apps import dashboard_app
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url
from tests.server.conftest import start_server, stop_server

SHOTS = Path(
    os.environ.get("PERDURE_SCREENSHOTS")
    or Path(__file__).resolve().parents[1] / ".artifacts" / "screenshots"
)
ALICE = Principal("t1", "alice", frozenset({"approver", "admin"}))


@dataclass
class Views:
    url: str
    runtime: Runtime
    clock: FakeClock
    token: str
    backend: str


@pytest.fixture(params=BACKENDS)
def views(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Views]:
    db = fresh_db_url(request, tmp_path, migrated=True)
    clock = FakeClock()
    dashboard_app.CLOCK = clock
    dashboard_app.FAILS["think"] = 1
    workflows = [dashboard_app.research, dashboard_app.broken]
    rt = Runtime(db, clock=clock, workflows=workflows, owner="server")
    token = rt.keys.create("alice", tenant="t1", roles=["approver", "admin"]).token
    running = start_server(create_app(rt, heartbeat=5, poll=0.02))
    yield Views(f"http://127.0.0.1:{running.port}", rt, clock, token, str(request.param))
    stop_server(running)
    rt.close()


def log_in(browser: Browser, views: Views) -> Page:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(views.url + "/login")
    page.fill("#key", views.token)
    page.click("#login")
    expect(page).to_have_url(views.url + "/")
    return page


def shoot(page: Page, name: str, views: Views) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-{views.backend}.png"), full_page=True)


def listed(page: Page) -> list[str]:
    return page.locator("#runs td.mono a").all_inner_texts()


def test_the_run_list_pages_by_cursor_and_filters(browser: Browser, views: Views) -> None:
    rt, clock = views.runtime, views.clock
    started = []
    for n in range(12):
        workflow = "broken" if n % 3 == 0 else "research"
        thread = "chat-a" if n in (1, 2) else None
        started.append(rt.start(workflow, tenant="t1", thread=thread).run_id)
        clock.advance(60)
    for run_id in started[4:7]:
        rt.cancel(run_id, tenant="t1", reason="not needed")
    page = log_in(browser, views)
    page.goto(views.url + "/?limit=5")
    seen: list[list[str]] = []
    while True:
        seen.append(listed(page))
        if page.locator("#next-page").count() == 0:
            break
        page.click("#next-page")
    assert seen == [started[11:6:-1], started[6:1:-1], started[1::-1]]
    shoot(page, "runs-last-page", views)
    page.click("#first-page")
    assert listed(page) == started[11:6:-1]

    page.select_option("#f-workflow", "broken")
    page.click("#apply")
    expect(page).to_have_url(
        f"{views.url}/?status=&workflow=broken&thread=&since=&until=&q=&limit=5"
    )
    assert listed(page) == [started[9], started[6], started[3], started[0]]
    page.select_option("#f-status", "CANCELLED")
    page.click("#apply")
    assert listed(page) == [started[6]]  # broken and cancelled
    page.click("#clear")
    page.select_option("#f-status", "CANCELLED")
    page.click("#apply")
    assert listed(page) == started[6:3:-1]
    page.goto(views.url + "/")
    page.fill("#f-thread", "chat-a")
    page.click("#apply")
    assert listed(page) == [started[2], started[1]]
    page.fill("#f-thread", "")
    page.fill("#f-q", started[5][-10:])
    page.click("#apply")
    assert listed(page) == [started[5]]
    page.fill("#f-q", "")
    page.fill("#f-since", "2026-01-01T00:03:00")  # the fourth run was created at 00:03
    page.fill("#f-until", "2026-01-01T00:06:00")
    page.click("#apply")
    assert listed(page) == started[5:2:-1]
    shoot(page, "runs-filtered", views)
    for query in ("cursor=not-a-cursor", "since=%00", "status=NOPE", "q=" + "x" * 300, "limit=-1"):
        answer = page.goto(f"{views.url}/?{query}")
        assert answer is not None and answer.status == 400, query
        expect(page.locator("body")).to_contain_text("invalid_input")
        assert "Traceback" not in page.content()
    page.close()


def test_a_run_page_draws_its_timeline_to_scale_and_its_step_graph(
    browser: Browser, views: Views
) -> None:
    rt, clock = views.runtime, views.clock
    run_id = rt.start("research", tenant="t1").run_id
    rt.run_until_idle()  # fetch (2 s), then think fails after 1 s and waits 3 s to retry
    page = log_in(browser, views)
    page.goto(f"{views.url}/runs/{run_id}")
    think = page.locator('#step-graph g.node[data-step="think"]')
    expect(think).to_have_class("node current")  # the step it is on, highlighted
    expect(page.locator('#step-graph g.node[data-step="fetch"]')).to_have_class("node done")
    expect(page.locator('#step-graph path.edge.taken[data-edge="fetch->think"]')).to_have_count(1)
    parked = page.locator("#step-timeline g.lane.queued")  # parked until its retry
    expect(parked.locator("path.mark.failed")).to_have_count(1)
    expect(parked.locator("rect.bar.backoff")).to_have_count(1)
    expect(page.locator("#step-timeline g.lane.running")).to_have_count(0)
    shoot(page, "run-retry-waiting", views)
    page.goto("about:blank")  # the live page would reload itself as the run moves on

    clock.advance(3)
    rt.run_until_idle()  # think (4 s), act (1 s), think (4 s), then the approval wait
    clock.advance(30)
    rt.approve(run_id, ALICE, comment="go")
    rt.run_until_idle()
    assert rt.get(run_id, tenant="t1").status is RunStatus.SUCCEEDED
    page.goto(f"{views.url}/runs/{run_id}")

    def lane(seq: int) -> tuple[float, float]:
        bar = page.locator(f'#step-timeline g.lane[data-seq="{seq}"] rect.bar.step')
        return float(bar.get_attribute("x") or "nan"), float(bar.get_attribute("width") or "nan")

    (x1, w1), (x2, w2), (x3, w3), (x4, w4) = (lane(n) for n in (1, 2, 3, 4))
    assert w2 == pytest.approx(2 * w1, abs=0.2) and w4 == pytest.approx(w2, abs=0.2)
    assert w3 == pytest.approx(w1 / 2, abs=0.2)
    assert x2 - x1 == pytest.approx(3 * w1, abs=0.2)  # think started 6 s in: 2 s + 1 s + 3 s
    assert x3 == pytest.approx(x2 + w2, abs=0.2) and x4 == pytest.approx(x3 + w3, abs=0.2)
    second = page.locator('#step-timeline g.lane[data-seq="2"]')
    expect(second).to_have_attribute("data-attempt", "2")
    expect(second.locator("path.mark.failed")).to_have_count(1)
    wait = page.locator("#step-timeline g.lane.wait")
    expect(wait).to_have_attribute("data-seconds", "30.0")
    wait_width = float(wait.locator("rect.bar.wait").get_attribute("width") or "nan")
    assert wait_width == pytest.approx(15 * w1, abs=0.3)  # 30 s against fetch's 2 s

    expect(page.locator('#step-graph g.node[data-step="think"]')).to_have_attribute(
        "data-visits", "2"
    )
    assert page.locator("#step-graph g.node.current").count() == 0  # finished
    for edge in ("fetch->think", "think->act", "act->think", "think->ask", "ask->finish"):
        expect(page.locator(f'#step-graph path.edge.taken[data-edge="{edge}"]')).to_have_count(1)

    shows_what_each_step_spent(page, rt, run_id)
    arguments = page.locator(".tool-call pre.arguments").first
    expect(arguments).to_contain_text('"query": "durable \\"agents\\""')
    expect(arguments).to_contain_text('"limit": 3')
    white = page.eval_on_selector("#timeline tbody td", "e => getComputedStyle(e).whiteSpace")
    assert white == "nowrap"  # the # column
    shoot(page, "run-finished", views)
    page.close()


def shows_what_each_step_spent(page: Page, rt: Runtime, run_id: str) -> None:
    """Tokens and cost of each step's model calls, and their total, as their replies recorded
    them."""
    effects = rt.status(run_id, tenant="t1").effects
    spent = {e.step_seq: spend_of(e.result) for e in effects if e.target == "model"}
    assert set(spent) == {2, 4} and all(s.tokens > 0 and s.cost > 0 for s in spent.values())
    for seq, s in spent.items():
        expect(page.locator(f'#steps tr[data-seq="{seq}"] td.tokens')).to_have_text(str(s.tokens))
        expect(page.locator(f'#steps tr[data-seq="{seq}"] td.cost')).to_have_text(f"${s.cost:,.4f}")
    total = sum(s.tokens for s in spent.values())
    expect(page.locator("#total-tokens")).to_have_text(str(total))
    expect(page.locator("#steps-total td.tokens")).to_have_text(str(total))


def test_a_failed_step_shows_its_traceback_formatted(browser: Browser, views: Views) -> None:
    rt = views.runtime
    run_id = rt.start("broken", tenant="t1").run_id
    rt.run_until_idle()
    page = log_in(browser, views)
    page.goto(f"{views.url}/runs/{run_id}")
    shown = page.locator("#error-traceback")
    expect(shown).to_contain_text("Traceback (most recent call last):")
    text = shown.inner_text()
    assert "\\n" not in text and 'raise ValueError(f"cannot parse {s.topic!r}")' in text
    assert text.splitlines()[-1] == "ValueError: cannot parse 'durable agents'"
    expect(page.locator('#step-graph g.node[data-step="explode"]')).to_have_class("node current")
    shoot(page, "run-traceback", views)
    page.close()


def test_the_overview_shows_runs_by_status_over_time_and_step_latency(
    browser: Browser, views: Views
) -> None:
    rt, clock = views.runtime, views.clock
    hours = []
    for n in range(3):  # each hour: one research run to its approval, one broken run
        hours.append(clock.now().isoformat()[:13])
        dashboard_app.FAILS["think"] = 0
        rt.start("research", tenant="t1")
        rt.start("broken", tenant="t1")
        if n == 2:
            rt.start("research", tenant="t1")
        rt.run_until_idle()
        clock.advance(3600)
    page = log_in(browser, views)
    page.goto(views.url + "/overview")
    for n, hour in enumerate(hours):
        column = page.locator(f'#runs-over-time g.column[data-period="{hour}"]')
        expect(column).to_have_attribute("data-total", "3" if n == 2 else "2")
        need = column.locator('rect.seg[data-status="NEEDS_ATTENTION"]')
        expect(need).to_have_attribute("data-count", "1")
        waiting = column.locator('rect.seg[data-status="WAITING_APPROVAL"]')
        expect(waiting).to_have_attribute("data-count", "2" if n == 2 else "1")
    tall = page.locator(f'#runs-over-time g.column[data-period="{hours[2]}"] rect.seg')
    short = page.locator(f'#runs-over-time g.column[data-period="{hours[0]}"] rect.seg')
    heights = [sum(float(r.get_attribute("height") or 0) for r in s.all()) for s in (tall, short)]
    assert heights[0] == pytest.approx(1.5 * heights[1], abs=0.2)
    fetch = page.locator('#latency tr[data-step="research/fetch"]')
    expect(fetch.locator("td.p50")).to_have_text("2.000 s")
    expect(fetch.locator("td.p99")).to_have_text("2.000 s")
    expect(page.locator('#latency tr[data-step="research/think"] td.p90')).to_have_text("4.000 s")
    shoot(page, "overview", views)
    page.click("#by-day")
    day = page.locator(f'#runs-over-time g.column[data-period="{hours[0][:10]}"]')
    expect(day).to_have_attribute("data-total", "7")
    page.close()
