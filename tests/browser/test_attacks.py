"""Attacks on the dashboard and the API from a hostile page, in a real headless Chromium, on
both backends, while a person with every role is logged in.

The attacker's pages are served by a second small HTTP server on 127.0.0.1: reached as
``http://127.0.0.1:PORT`` they are *same-site* with the server under test (another port of
the same host: the browser sends the person's ``SameSite=Strict`` cookie along), reached as
``http://localhost:PORT`` they are *cross-site*. They try request forgery against ``/v1`` and
against the dashboard's forms (top-level and framed forms, ``fetch`` with credentials,
``text/plain`` bodies, no Referer), clickjacking with a click, login and logout forgery; each
attempt must change nothing, and the same action from the dashboard's own page (the control)
succeeds. A revoked key and a logout close the pages' open streams. Nothing reaches the
internet; nothing waits on the wall clock (Playwright polls with a generous deadline).
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Response, expect

from perdure import FakeClock, Runtime
from perdure.core.model import RunStatus
from perdure.runtime.admin.credentials import Credentials
from perdure.server import create_app
from tests.backends import BACKENDS
from tests.conftest import fresh_db_url
from tests.server.conftest import WORKFLOWS, start_server, stop_server

ATTACKER_HOSTS = ["127.0.0.1", "localhost"]
"""Where the attacker's pages are served from: another port of the same host (same-site),
and another host name (cross-site)."""


class Attacker:
    """The attacker's web server: serves the HTML of :attr:`pages` by path."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.split("?")[0], "<p>nothing here</p>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Target:
    """The server under test, its runtime, and keys: alice (every role: the victim) and
    mallory (the attacker's own key, in the same tenant)."""

    url: str
    runtime: Runtime
    tokens: dict[str, str] = field(default_factory=dict)

    def key_id(self, who: str) -> str:
        return self.tokens[who].split("_")[1]


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    db = fresh_db_url(request, tmp_path, migrated=True)
    rt = Runtime(db, clock=FakeClock(), workflows=WORKFLOWS, owner="server")
    running = start_server(create_app(rt, heartbeat=5, poll=0.02, recheck=0.1))
    out = Target(f"http://127.0.0.1:{running.port}", rt)
    out.tokens["alice"] = rt.keys.create("alice", tenant="t1", roles=["approver", "admin"]).token
    out.tokens["mallory"] = rt.keys.create("mallory", tenant="t1", roles=["approver"]).token
    yield out
    stop_server(running)
    rt.close()


@pytest.fixture
def attacker() -> Iterator[Attacker]:
    found = Attacker()
    yield found
    found.close()


@pytest.fixture
def victim(browser: Browser, target: Target) -> Iterator[BrowserContext]:
    """The person's browser (closed before the server stops, with its open streams)."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield context
    context.close()


def log_in(page: Page, target: Target, who: str = "alice") -> None:
    page.goto(target.url + "/login")
    page.fill("#key", target.tokens[who])
    page.click("#login")
    expect(page).to_have_url(target.url + "/")
    expect(page.locator("header .who")).to_contain_text(who)


@dataclass
class World:
    """What the attacks aim at: a run waiting for approval, a run whose effect is ambiguous
    (it needs a person), and that effect's key."""

    waiting: str
    stuck: str
    effect: str


def world(target: Target) -> World:
    rt = target.runtime
    waiting = rt.start("job", {"ticks": 0, "amount": 900}, tenant="t1").run_id
    stuck = rt.start("charge", tenant="t1").run_id
    rt.run_until_idle()
    (effect,) = rt.effects.list(tenant="t1", run_id=stuck)
    return World(waiting, stuck, effect.key)


def unchanged(target: Target, w: World) -> None:
    """Nothing the attacks aimed at moved: no decision, no signal, no session of the
    attacker's key, no key made."""
    rt = target.runtime
    assert rt.get(w.waiting, tenant="t1").status is RunStatus.WAITING_APPROVAL
    assert rt.get(w.stuck, tenant="t1").status is RunStatus.NEEDS_ATTENTION
    (effect,) = rt.effects.list(tenant="t1", run_id=w.stuck)
    assert str(effect.status) == "ambiguous"
    assert [a.status for a in rt.approvals(tenant="t1", pending=False)] == ["pending"]
    assert rt.activity.audit(tenant="t1") == []
    assert rt.store.signals("t1", w.waiting) == []
    assert {k.name for k in rt.keys.list(tenant="t1")} == {"alice", "mallory"}
    assert (
        Credentials(rt.parts).sessions(tenant="t1", key_id=target.key_id("mallory"), ended=True)
        == []
    )


# -- the attacker's pages -------------------------------------------------------------------------

HEAD = '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'


def _fields(fields: dict[str, str]) -> str:
    return "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )


def json_as_text_plain(body: dict[str, object]) -> dict[str, str]:
    """A form field that a ``text/plain`` form sends as ``body`` in JSON: ``name=value``."""
    text = json.dumps(body)[:-1] + ', "pad": "'
    return {text: '"}'}


def form_page(action: str, fields: dict[str, str], enctype: str) -> str:
    """A page that posts a form to ``action`` at once, as a top-level navigation."""
    return (
        f'{HEAD}<form id="f" method="post" enctype="{enctype}" action="{html.escape(action)}">'
        f"{_fields(fields)}</form><script>document.getElementById('f').submit()</script>"
    )


@dataclass(frozen=True)
class Shot:
    """One forged request: where, what, and how it is encoded."""

    action: str
    fields: dict[str, str]
    enctype: str = "application/x-www-form-urlencoded"


def barrage_page(shots: list[Shot]) -> str:
    """A page that fires every shot in three ways at once: a form posted into an invisible
    frame, ``fetch`` with credentials in ``no-cors`` mode (no preflight: ``text/plain`` or a
    form body), and ``fetch`` with credentials as JSON (a CORS request); then sets its title
    to ``done``."""
    frames, forms = [], []
    for n, shot in enumerate(shots):
        frames.append(f'<iframe name="sink{n}" style="width:1px;height:1px;opacity:0"></iframe>')
        forms.append(
            f'<form id="f{n}" target="sink{n}" method="post" enctype="{shot.enctype}" '
            f'action="{html.escape(shot.action)}">{_fields(shot.fields)}</form>'
        )
    specs = json.dumps(
        [{"action": s.action, "fields": s.fields, "enctype": s.enctype} for s in shots]
    )
    script = f"""
<script>
const shots = {specs};
const frames = Array.from(document.querySelectorAll("iframe"));
const loaded = frames.map(
  (f) => new Promise((ok) => f.addEventListener("load", ok, {{once: true}})));
shots.forEach((_, n) => document.getElementById("f" + n).submit());
const bodies = (s) => s.enctype === "text/plain"
  ? Object.entries(s.fields).map(([k, v]) => k + "=" + v).join("\\r\\n")
  : new URLSearchParams(s.fields).toString();
const fetched = shots.flatMap((s) => [
  fetch(s.action, {{method: "POST", credentials: "include", mode: "no-cors",
                    headers: {{"Content-Type": s.enctype}}, body: bodies(s)}}),
  fetch(s.action, {{method: "POST", credentials: "include",
                    headers: {{"Content-Type": "application/json"}},
                    body: JSON.stringify({{comment: "forged", reason: "forged", applied: true,
                                           name: "paid", key: "x"}})}}),
]);
Promise.allSettled([...loaded, ...fetched]).then(() => {{ document.title = "done"; }});
</script>"""
    return HEAD + "".join(frames) + "".join(forms) + script


def seen(context: BrowserContext, target: Target) -> list[tuple[str, str, int]]:
    """Every answer the server under test gave this browser: method, path, status."""
    found: list[tuple[str, str, int]] = []

    def record(response: Response) -> None:
        if response.url.startswith(target.url):
            found.append(
                (response.request.method, response.url[len(target.url) :], response.status)
            )

    context.on("response", record)
    return found


def refusals_only(answers: list[tuple[str, str, int]], paths: set[str]) -> None:
    """Each forged POST reached the server and was refused (401, 403 or 415); none was let
    through."""
    posts = [(path, status) for method, path, status in answers if method == "POST"]
    assert {path for path, _ in posts} >= paths, (sorted(paths), posts)
    assert all(status in (401, 403, 415) for _, status in posts), posts


def run_attack(context: BrowserContext, attacker: Attacker, host: str, html_page: str) -> None:
    attacker.pages["/barrage"] = html_page
    page = context.new_page()
    page.goto(attacker.url(host, "/barrage"))
    expect(page).to_have_title("done")
    page.close()


def top_level(context: BrowserContext, attacker: Attacker, host: str, shot: Shot) -> int:
    """Post ``shot`` as a top-level form from the attacker's page; the status it got."""
    attacker.pages["/top"] = form_page(shot.action, shot.fields, shot.enctype)
    page = context.new_page()
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.goto(attacker.url(host, "/top"))
    status = answer.value.status
    page.close()
    return status


# -- the attacks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ATTACKER_HOSTS)
def test_forged_api_requests_change_nothing_and_the_key_still_works(
    victim: BrowserContext, target: Target, attacker: Attacker, host: str
) -> None:
    w = world(target)
    log_in(victim.new_page(), target)
    answers = seen(victim, target)
    base = target.url
    verbs = {
        f"/v1/runs/{w.waiting}/approve": {"comment": "forged"},
        f"/v1/runs/{w.waiting}/reject": {"comment": "forged"},
        f"/v1/runs/{w.waiting}/cancel": {"reason": "forged"},
        f"/v1/runs/{w.waiting}/signals": {"name": "paid"},
        f"/v1/runs/{w.stuck}/resume": {},
        f"/v1/runs/{w.stuck}/fail": {"reason": "forged"},
        f"/v1/effects/{w.effect}/resolve": {"applied": True, "reason": "forged"},
        "/v1/keys": {"name": "backdoor", "roles": ["admin"]},
    }
    shots = [Shot(base + p, json_as_text_plain(b), "text/plain") for p, b in verbs.items()]
    shots += [Shot(base + p, {"comment": "forged", "reason": "forged"}) for p in verbs]
    run_attack(victim, attacker, host, barrage_page(shots))
    for path, body in list(verbs.items())[:2]:
        assert top_level(
            victim, attacker, host, Shot(base + path, json_as_text_plain(body), "text/plain")
        ) in (401, 415)
    refusals_only(answers, set(verbs))
    unchanged(target, w)
    # The control: the API with the key in Authorization, as a program sends it.
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {target.tokens['alice']}"}
    ) as c:
        r = c.post(f"/v1/runs/{w.waiting}/approve", json={"comment": "mine"})
    assert r.status_code == 200, r.text
    (decision,) = target.runtime.activity.audit(tenant="t1")
    assert (decision.by, decision.via) == ("alice", f"key:{target.key_id('alice')}")


@pytest.mark.parametrize("host", ATTACKER_HOSTS)
def test_forged_dashboard_forms_change_nothing_and_the_pages_own_forms_work(
    victim: BrowserContext, target: Target, attacker: Attacker, host: str
) -> None:
    w = world(target)
    page = victim.new_page()
    log_in(page, target)
    answers = seen(victim, target)
    base = target.url
    actions = {
        f"/runs/{w.waiting}/approve": {"comment": "forged"},
        f"/runs/{w.waiting}/reject": {"comment": "forged"},
        f"/runs/{w.waiting}/cancel": {},
        f"/runs/{w.stuck}/resume": {},
        f"/runs/{w.stuck}/fail": {"reason": "forged"},
        "/effects/resolve": {"key": w.effect, "applied": "yes", "reason": "forged"},
    }
    shots = [Shot(base + p, f) for p, f in actions.items()]
    shots += [Shot(base + p, {**f, "csrf": "guessed"}, "text/plain") for p, f in actions.items()]
    run_attack(victim, attacker, host, barrage_page(shots))
    for path, fields in list(actions.items())[:3]:
        status = top_level(victim, attacker, host, Shot(base + path, fields))
        assert status in (401, 403), (path, status)
    refusals_only(answers, set(actions))
    statuses = {status for method, _, status in answers if method == "POST"}
    if host == "127.0.0.1":  # same-site: the cookie went along; the origin check refused it
        assert statuses == {403}, statuses
    else:  # cross-site: SameSite=Strict kept the cookie home
        assert statuses == {401}, statuses
    unchanged(target, w)
    # The controls: the person's own page, each action once.
    page.goto(f"{base}/attention")
    page.fill("#ambiguous input[name=reason]", "the bank shows it")
    page.click("#ambiguous button[value=yes]")
    expect(page.locator("#ambiguous")).not_to_contain_text(w.stuck)
    page.goto(f"{base}/runs/{w.waiting}")
    page.fill("input[name=comment]", "mine")
    page.click("#approve")
    expect(page.locator("#status")).to_have_text("RUNNING")
    page.click("#cancel")
    expect(page.locator("#status")).to_have_text("CANCELLED")
    trail = target.runtime.activity.audit(tenant="t1")
    assert [(d.verb, d.by) for d in trail] == [
        ("resolve", "alice"),
        ("approve", "alice"),
        ("cancel", "alice"),
    ]
    (session,) = Credentials(target.runtime.parts).sessions(tenant="t1")
    assert {d.via for d in trail} == {f"session:{session.session_id}"}


def test_a_framed_run_page_cannot_turn_a_click_into_an_approval(
    victim: BrowserContext, target: Target, attacker: Attacker
) -> None:
    w = world(target)
    page = victim.new_page()
    log_in(page, target)
    page.goto(f"{target.url}/runs/{w.waiting}")
    box = page.locator("#approve").bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    answers = seen(victim, target)
    attacker.pages["/prize"] = (
        f'{HEAD}<button id="prize" style="position:absolute;left:{x - 60}px;top:{y - 20}px;'
        'width:120px;height:40px">Claim your prize</button>'
        f'<iframe id="frame" src="{target.url}/runs/{w.waiting}" style="position:absolute;'
        'left:0;top:0;width:1200px;height:900px;border:0;opacity:0.01;z-index:2"></iframe>'
    )
    lure = victim.new_page()
    with lure.expect_response(lambda r: r.url.startswith(target.url + "/runs/")) as framed:
        lure.goto(attacker.url("127.0.0.1", "/prize"))
    assert framed.value.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in framed.value.headers["content-security-policy"]
    frame = lure.frame_locator("#frame")
    expect(frame.locator("body")).to_be_attached()
    assert frame.locator("#approve").count() == 0  # the browser refused to show the page
    lure.mouse.click(x, y)
    lure.close()
    assert not [a for a in answers if a[0] == "POST"]
    unchanged(target, w)
    page.mouse.click(x, y)  # the control: the same click on the person's own page
    expect(page.locator("#status")).to_have_text("RUNNING")
    assert [d.verb for d in target.runtime.activity.audit(tenant="t1")] == ["approve"]


@pytest.mark.parametrize("host", ATTACKER_HOSTS)
def test_login_and_logout_cannot_be_forged(
    victim: BrowserContext, target: Target, attacker: Attacker, host: str
) -> None:
    w = world(target)
    base = target.url
    answers = seen(victim, target)
    mallory = {"key": target.tokens["mallory"]}
    # The attacker's own valid login form pair (nonce cookie and token), planted in the
    # victim's browser: cookies are not separated by port, so only the origin check is left.
    with httpx.Client(base_url=base) as own:
        form = own.get("/login")
        nonce = own.cookies["perdure_login"]
        token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token is not None
    attacker.pages["/plant"] = (
        f"{HEAD}<script>document.cookie = 'perdure_login={nonce}; path=/login';"
        "document.title = 'done';</script>"
    )
    planting = victim.new_page()
    planting.goto(attacker.url(host, "/plant"))
    expect(planting).to_have_title("done")
    planting.close()
    shots = [
        Shot(base + "/login", mallory),
        Shot(base + "/login", {**mallory, "csrf": token.group(1)}),
        Shot(base + "/login", {**mallory, "csrf": token.group(1)}, "text/plain"),
    ]
    run_attack(victim, attacker, host, barrage_page(shots))
    assert top_level(victim, attacker, host, shots[1]) == 403
    refusals_only(answers, {"/login"})
    unchanged(target, w)  # no session of mallory's key
    assert Credentials(target.runtime.parts).sessions(tenant="t1", ended=True) == []
    page = victim.new_page()
    page.goto(base + "/")
    expect(page).to_have_url(base + "/login")  # the victim is not logged in as anyone
    # Logged in, the person cannot be logged out by another page.
    log_in(page, target)
    answers.clear()
    run_attack(victim, attacker, host, barrage_page([Shot(base + "/logout", {})]))
    assert top_level(victim, attacker, host, Shot(base + "/logout", {})) in (401, 403)
    assert all(status != 303 for method, _, status in answers if method == "POST"), answers
    # A link from another page: a navigation (cross-site, it carries no cookie) must not make
    # the browser forget its session.
    attacker.pages["/link"] = f"{HEAD}<script>location.href = {json.dumps(base + '/')}</script>"
    away = victim.new_page()
    away.goto(attacker.url(host, "/link"))
    expect(away).to_have_url(re.compile(re.escape(base) + "/(login)?$"))
    away.close()
    (session,) = Credentials(target.runtime.parts).sessions(tenant="t1")
    assert session.ended_at is None
    page.goto(base + "/")
    expect(page.locator("header .who")).to_contain_text("alice")
    page.click("#logout")  # the control: the person's own button
    expect(page).to_have_url(base + "/login")
    (ended,) = Credentials(target.runtime.parts).sessions(tenant="t1", ended=True)
    assert ended.ended_why == "logout"


def test_a_revoked_key_and_a_logout_close_the_open_pages_streams(
    victim: BrowserContext, target: Target
) -> None:
    w = world(target)
    run_page, list_page = victim.new_page(), victim.new_page()
    log_in(run_page, target)
    run_page.goto(f"{target.url}/runs/{w.waiting}")
    list_page.goto(f"{target.url}/")
    expect(run_page.locator("#live")).to_have_text("● live")
    target.runtime.keys.revoke(target.key_id("alice"), tenant="t1")
    expect(run_page).to_have_url(target.url + "/login")  # the stream closed, the page left
    expect(list_page).to_have_url(target.url + "/login")
    assert {
        s.ended_why for s in Credentials(target.runtime.parts).sessions(tenant="t1", ended=True)
    } == {"revoked"}
    # A logout in one tab closes the stream of another.
    log_in(run_page, target, "mallory")
    list_page.goto(f"{target.url}/runs/{w.waiting}")
    expect(list_page.locator("#live")).to_have_text("● live")
    run_page.click("#logout")
    expect(list_page).to_have_url(target.url + "/login")
