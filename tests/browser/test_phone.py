"""The dashboard at phone width (375 x 800, as people approve from phones) in the real headless
Chromium: the runs list, the approval queue and a waiting run's page fit the screen (nothing
scrolls sideways), and the approve button is visible and approves the run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from perdure import FakeClock, Runtime
from perdure.server import create_app
from tests.server.conftest import WORKFLOWS, start_server, stop_server

PHONE = {"width": 375, "height": 800}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Runtime, str]]:
    rt = Runtime(
        f"sqlite:///{tmp_path / 'perdure.db'}", clock=FakeClock(), workflows=WORKFLOWS, owner="s"
    )
    token = rt.keys.create("alice", tenant="t1", roles=["approver", "admin"]).token
    running = start_server(create_app(rt, heartbeat=5, poll=0.02))
    yield f"http://127.0.0.1:{running.port}", rt, token
    stop_server(running)
    rt.close()


def fits(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{page.url} is {width} px wide at 375 px"


def test_at_phone_width_the_queue_and_the_run_page_fit_and_approve_works(
    browser: Browser, site: tuple[str, Runtime, str]
) -> None:
    url, rt, token = site
    run = rt.start("job", {"ticks": 0, "amount": 1250}, tenant="t1")
    rt.run_until_idle()
    assert str(rt.get(run.run_id, tenant="t1").status) == "WAITING_APPROVAL"
    page = browser.new_page(viewport=PHONE)
    page.goto(url + "/login")
    fits(page)
    page.fill("#key", token)
    page.click("#login")
    expect(page.locator("#runs")).to_contain_text(run.run_id)
    fits(page)
    page.goto(url + "/attention")
    expect(page.locator("body")).to_contain_text(run.run_id)
    fits(page)
    page.goto(f"{url}/runs/{run.run_id}")
    approve = page.locator("#approve")
    expect(approve).to_be_visible()
    expect(approve).to_be_in_viewport()
    fits(page)
    box = approve.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    approve.click()
    expect(page.locator("#approve")).to_have_count(0)
    rt.run_until_idle()
    decided = rt.approvals(tenant="t1", pending=False)
    assert [a.decided_by for a in decided] == ["alice"]
    page.close()
