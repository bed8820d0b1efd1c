"""Live event streams over a real server on both backends, while a worker thread advances the
run: a client that reads part of a stream, drops it and reconnects with ``Last-Event-ID``
ends up with every event exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from perdure import FakeClock, Runtime
from perdure.server import create_app
from tests.apps.server_app import GATE, WORDS
from tests.server.conftest import WORKFLOWS, Served, start_server, stop_server


@dataclass
class Frame:
    """One server-sent event: its id, its type and its data."""

    id: int | None = None
    event: str = "message"
    data: Any = None
    comments: list[str] = field(default_factory=list)


def frames(response: httpx.Response) -> Iterator[Frame]:
    """The frames of a text/event-stream response, as they arrive (comments included, but for
    the opening one)."""
    frame = Frame()
    for line in response.iter_lines():
        if line == ": open":
            continue
        if line.startswith(":"):
            yield Frame(event="comment", comments=[line[1:].strip()])
        elif line.startswith("id:"):
            frame.id = int(line[3:])
        elif line.startswith("event:"):
            frame.event = line[6:].strip()
        elif line.startswith("data:"):
            frame.data = orjson.loads(line[5:])
        elif line == "" and (frame.data is not None or frame.id is not None):
            yield frame
            frame = Frame()


def test_a_reconnect_with_last_event_id_gets_every_later_event_exactly_once(
    served: Served, worker: Runtime
) -> None:
    with served.client("approver") as c:
        run_id = c.post("/v1/runs", json={"workflow": "job", "input": {"ticks": 6}}).json()[
            "run_id"
        ]
        got: list[Frame] = []
        GATE.release(2)
        with c.stream("GET", f"/v1/runs/{run_id}/events") as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            ticks = 0
            for f in frames(r):
                if f.event == "message":
                    got.append(f)
                    ticks += f.data["type"] == "step_completed" and f.data["step"] == "tick"
                if ticks == 2:
                    break  # drop the connection in the middle of the run
        GATE.release(2)  # the worker goes on while nobody listens
        with c.stream(
            "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(got[-1].id)}
        ) as r:
            for f in frames(r):
                if f.event == "message":
                    got.append(f)
                    ticks += f.data["type"] == "step_completed" and f.data["step"] == "tick"
                if ticks == 3:
                    break
        GATE.release(2)
        with c.stream("GET", f"/v1/runs/{run_id}/events?after={got[-1].id}") as r:
            for f in frames(r):
                if f.event == "comment":
                    continue
                if f.event == "end":
                    break
                got.append(f)
                if f.data["type"] == "status" and f.data["data"]["to"] == "WAITING_APPROVAL":
                    assert c.post(f"/v1/runs/{run_id}/approve", json={}).status_code == 200
        stored = served.runtime.activity.events(run_id, tenant="t1", limit=10_000)
    assert [f.id for f in got] == [e.seq for e in stored]
    assert [f.data["seq"] for f in got] == [f.id for f in got]
    assert len({f.id for f in got}) == len(got)
    assert got[-1].data["data"]["to"] == "SUCCEEDED"


def test_a_quiet_stream_sends_heartbeats(served: Served) -> None:
    with served.client() as c:
        run_id = c.post("/v1/runs", json={"workflow": "plain"}).json()["run_id"]
        with c.stream("GET", f"/v1/runs/{run_id}/events") as r:
            seen = []
            for f in frames(r):
                seen.append(f.event)
                if f.comments == ["heartbeat"]:
                    break
    assert seen[0] == "message" and seen[-1] == "comment"


def test_every_frame_that_is_not_a_comment_carries_data_and_the_first_carries_retry(
    served: Served,
) -> None:
    run_id = served.runtime.start("plain", tenant="t1").run_id
    served.runtime.run_until_idle()
    with served.client() as c:
        raw = c.get(f"/v1/runs/{run_id}/events").content
    blocks = [b for b in raw.split(b"\n\n") if b]
    assert blocks[0] == b": open"  # a comment: no client dispatches it
    events = [b.split(b"\n") for b in blocks[1:]]
    assert all(any(line.startswith(b"data: ") for line in e) for e in events), raw
    assert events[0][0] == b"retry: 1000"
    assert not any(line.startswith(b"retry:") for e in events[1:] for line in e)
    assert events[-1] == [b"event: end", b"data: {}"]


def test_a_finished_runs_stream_sends_its_events_then_ends(served: Served) -> None:
    run_id = served.runtime.start("plain", tenant="t1").run_id
    served.runtime.run_until_idle()
    with served.client("reader") as c, c.stream("GET", f"/v1/runs/{run_id}/events") as r:
        got = list(frames(r))
    assert got[-1].event == "end"
    assert [f.id for f in got[:-1]] == [
        e.seq for e in served.runtime.activity.events(run_id, tenant="t1")
    ]


def test_the_tenant_feed_shows_only_the_tenants_runs_filtered_by_type(
    served: Served, worker: Runtime
) -> None:
    with served.client() as c, served.client("other") as theirs:
        before = theirs.post("/v1/runs", json={"workflow": "plain"}).json()["run_id"]
        mine = [c.post("/v1/runs", json={"workflow": "plain"}).json()["run_id"] for _ in range(3)]
        ended: set[str] = set()
        with c.stream("GET", "/v1/events", params={"type": "status"}) as r:
            for f in frames(r):
                if f.event != "message":
                    continue
                assert f.data["type"] == "status" and f.data["run_id"] in mine
                if f.data["data"]["to"] == "SUCCEEDED":
                    ended.add(f.data["run_id"])
                if ended == set(mine):
                    break
    assert before not in ended


def test_on_postgresql_streams_wake_on_notify_without_polling(
    pg_url: str, clock: FakeClock
) -> None:
    """No poll and no heartbeat for an hour: only LISTEN/NOTIFY can deliver the signal's event
    within the read timeout."""
    rt = Runtime(pg_url, clock=clock, workflows=WORKFLOWS)
    token = rt.keys.create("n", tenant="t1").token
    running = start_server(create_app(rt, heartbeat=3600, poll=3600))
    try:
        run = rt.start("order", tenant="t1")
        rt.run_until_idle()
        headers = {"Authorization": f"Bearer {token}"}
        url = f"http://127.0.0.1:{running.port}/v1/runs/{run.run_id}/events"
        with httpx.stream("GET", url, headers=headers, timeout=20) as r:
            for f in frames(r):
                if f.data["type"] == "status" and f.data["data"]["to"] == "WAITING_EXTERNAL":
                    rt.signal(run.run_id, "other", tenant="t1", signal_id="x1")
                if f.data["type"] == "signal_received":
                    break
        assert f.data["data"]["signal_id"] == "x1"
    finally:
        stop_server(running)
        rt.close()


def test_a_messages_deltas_stream_resumes_from_last_event_id_and_ends_when_it_is_whole(
    served: Served, worker: Runtime
) -> None:
    with served.client("reader") as c:
        run_id = c.post("/v1/runs", json={"workflow": "talk", "input": {"message_id": "m-7"}})
        assert run_id.status_code == 201
        got: list[Frame] = []
        GATE.release(2)
        with c.stream("GET", "/v1/messages/m-7/stream") as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            for f in frames(r):
                if f.event == "message":
                    got.append(f)
                if len(got) == 2:
                    break  # drop the connection mid-reply
        GATE.release(2)
        with c.stream(
            "GET", "/v1/messages/m-7/stream", headers={"Last-Event-ID": str(got[-1].id)}
        ) as r:
            for f in frames(r):
                if f.event == "message":
                    got.append(f)
                if len(got) == 3:
                    break
        GATE.release(len(WORDS))
        with c.stream("GET", f"/v1/messages/m-7/stream?after={got[-1].id}") as r:
            for f in frames(r):
                if f.event == "end":
                    break
                if f.event == "message":
                    got.append(f)
    stored = list(served.runtime.threads.stream("m-7", tenant="t1"))
    assert [f.id for f in got] == [e.seq for e in stored], "every entry once, none twice"
    assert [f.data["kind"] for f in got] == ["delta"] * len(WORDS) + ["finished"]
    assert "".join(f.data["text"] for f in got) == "".join(WORDS)
