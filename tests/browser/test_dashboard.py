"""The dashboard in a real headless Chromium (Debian's ``chromium``, driven by Playwright):
log in with a key, watch a run progress live, approve it, see it finish; a key without the
role sees no buttons; the page of what needs a person shows an ambiguous effect."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from perdure import FakeClock, Runtime
from perdure.runtime.worker import Worker
from perdure.server import create_app
from tests.apps import server_app
from tests.server.conftest import WORKFLOWS, start_server, stop_server


class Site:
    def __init__(self, url: str, runtime: Runtime, tokens: dict[str, str]) -> None:
        self.url = url
        self.runtime = runtime
        self.tokens = tokens


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    clock = FakeClock()
    db = f"sqlite:///{tmp_path / 'perdure.db'}"
    rt = Runtime(db, clock=clock, workflows=WORKFLOWS, owner="server")
    tokens = {
        "alice": rt.keys.create("alice", tenant="t1", roles=["approver", "admin"]).token,
        "bob": rt.keys.create("bob", tenant="t1").token,
    }
    running = start_server(create_app(rt, heartbeat=5, poll=0.02))
    worker_rt = Runtime(db, clock=clock, workflows=WORKFLOWS, owner="worker")
    w = Worker(worker_rt, poll_interval=0.01, max_poll_interval=0.05)
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    yield Site(f"http://127.0.0.1:{running.port}", rt, tokens)
    w.stop()
    server_app.GATE.release(1000)
    thread.join(timeout=30)
    while server_app.GATE.acquire(blocking=False):
        pass
    stop_server(running)
    worker_rt.close()
    rt.close()


def log_in(page: Page, site: Site, who: str) -> None:
    page.goto(site.url + "/")
    expect(page).to_have_url(site.url + "/login")
    page.fill("#key", site.tokens[who])
    page.click("#login")
    expect(page).to_have_url(site.url + "/")


def test_a_person_logs_in_watches_a_run_live_approves_it_and_sees_it_finish(
    browser: Browser, site: Site
) -> None:
    page = browser.new_page()
    page.goto(site.url + "/login")
    page.fill("#key", "pdk_not_a_key")
    page.click("#login")
    expect(page.locator("#login-error")).to_be_visible()
    log_in(page, site, "alice")
    run = site.runtime.start("job", {"ticks": 3, "amount": 42}, tenant="t1")
    expect(page.locator("#runs")).to_contain_text(run.run_id)  # the list refreshed itself
    page.click(f"text={run.run_id}")
    expect(page.locator("#status")).to_have_text("RUNNING")
    rows = page.locator("#timeline tbody tr")
    expect(page.locator("#steps-done")).to_have_text("1")  # begin; the first tick waits
    for n in (2, 3):  # each tick the test lets go appears without a reload
        server_app.GATE.release(1)
        expect(page.locator("#steps-done")).to_have_text(str(n))
        expect(page.locator("#timeline")).to_contain_text("step_completed")
    server_app.GATE.release(1)  # the last tick, then the run asks for approval
    expect(page.locator("#approve")).to_be_visible()  # the page showed the wait by itself
    expect(page.locator("#steps-done")).to_have_text("5")
    expect(page.locator("#approval")).to_contain_text('"amount":42')
    before = rows.count()
    page.fill("input[name=comment]", "fine by me")
    page.click("#approve")
    expect(page.locator("#status")).to_have_text("SUCCEEDED")
    expect(page.locator("#result")).to_contain_text('"approved":true')
    assert rows.count() > before
    decided = site.runtime.approvals(tenant="t1", pending=False)
    assert [(a.decided_by, a.comment) for a in decided] == [("alice", "fine by me")]
    page.goto(site.url + "/?status=SUCCEEDED")
    expect(page.locator("#runs")).to_contain_text(run.run_id)
    page.close()


def test_a_person_without_the_role_sees_no_decision_buttons(browser: Browser, site: Site) -> None:
    run = site.runtime.start("job", {"ticks": 0}, tenant="t1")
    page = browser.new_page()
    log_in(page, site, "bob")
    page.goto(f"{site.url}/runs/{run.run_id}")
    expect(page.locator("#no-role")).to_be_visible()
    assert page.locator("#approve").count() == 0
    page.close()


def test_the_attention_page_lists_an_ambiguous_effect_and_resolves_it(
    browser: Browser, site: Site
) -> None:
    run = site.runtime.start("charge", tenant="t1")
    page = browser.new_page()
    log_in(page, site, "alice")
    page.goto(f"{site.url}/runs/{run.run_id}")
    expect(page.locator("#status")).to_have_text("NEEDS_ATTENTION")
    page.goto(site.url + "/attention")
    expect(page.locator("#ambiguous")).to_contain_text(run.run_id)
    page.fill("#ambiguous input[name=reason]", "the bank shows the charge")
    page.fill("#ambiguous input[name=receipt]", "rc-9")
    page.click("#ambiguous button[value=yes]")
    expect(page.locator("#ambiguous")).not_to_contain_text(run.run_id)
    page.goto(f"{site.url}/runs/{run.run_id}")
    expect(page.locator("#status")).to_have_text("SUCCEEDED")
    page.close()
