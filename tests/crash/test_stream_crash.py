"""A process SIGKILLed in the middle of a streamed reply, resumed by a new one: readers that
reconnect with their last sequence number, and a reader that kept following, see every entry
exactly once, the ``superseded`` marker, and the whole reply of the final attempt. Then: two
worker processes never run two runs of one thread at once."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from perdure import Runtime
from perdure.core.streams import StreamEntry
from perdure.core.streams import StreamEventKind as K
from tests.apps.streams_app import WORDS, turn
from tests.conftest import ROOT, Gates, cli_env, perdure_cmd, run_cli

APP = "tests.apps.streams_app"


def wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def deltas(entries: list[StreamEntry], attempt: int) -> str:
    return "".join(e.text for e in entries if e.kind is K.DELTA and e.attempt == attempt)


def test_a_reply_cut_by_sigkill_is_superseded_and_streamed_again_whole(
    db_url: str, tmp_path: Path
) -> None:
    out = run_cli(db_url, "start", "streamer", "--app", APP, "--input", '{"message": "m1"}')
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[1]
    gates = Gates(tmp_path / "gates", "stream")  # never opened: the writer waits until killed
    env = cli_env(STREAM_HOLD_AFTER="10", STREAM_GATE=str(tmp_path / "gates"))
    proc = subprocess.Popen(perdure_cmd(db_url, "resume", run_id, "--app", APP), env=env, cwd=ROOT)

    with Runtime(db_url) as rt:
        follower: list[StreamEntry] = []
        reader = rt.threads.stream("m1", follow=True, poll=0.02)
        following = threading.Thread(target=lambda: follower.extend(reader))
        following.start()
        wait_for(lambda: len(list(rt.threads.stream("m1"))) == 10)  # five batches of two are stored
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        gates.open_all()

        before = list(rt.threads.stream("m1"))  # a client that read the draft, then disconnected
        assert [(e.seq, e.attempt) for e in before] == [(i, 1) for i in range(1, 11)]
        assert deltas(before, 1) == "".join(WORDS[:10])

        out = run_cli(db_url, "resume", run_id, "--app", APP)
        assert out.returncode == 0, out.stderr
        assert rt.get(run_id).status == "SUCCEEDED"

        after = list(
            rt.threads.stream("m1", after=before[-1].seq)
        )  # it reconnects with its last seq
        following.join(30)
        assert not following.is_alive(), "the follower ended with the finished message"

    assert after[0].kind is K.SUPERSEDED and after[0].attempt == 2
    assert after[-1].kind is K.FINISHED
    seen = before + after
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1)), "every entry exactly once"
    assert deltas(seen, 2) == "".join(WORDS), "the final attempt is the whole reply"
    assert follower == seen, "a reader that kept following saw the same, once each"

    cli = run_cli(db_url, "stream", "m1", "--after", str(before[-1].seq), "--json")
    assert cli.returncode == 0, cli.stderr
    assert len(cli.stdout.splitlines()) == len(after)
    assert '"kind":"superseded"' in cli.stdout.splitlines()[0]


def test_two_workers_never_run_two_runs_of_one_thread_at_once(db_url: str, tmp_path: Path) -> None:
    log = tmp_path / "turns.log"
    with Runtime(db_url, workflows=[turn]) as rt:
        ids = [rt.start(turn, thread="one-thread").run_id for _ in range(6)]
        other = rt.start(turn, thread="another").run_id
    env = cli_env(TURN_LOG=str(log))
    cmd = perdure_cmd(db_url, "worker", "--app", APP, "--concurrency", "3", "--poll", "0.05")
    workers = [subprocess.Popen(cmd, env=env, cwd=ROOT) for _ in range(2)]
    try:
        with Runtime(db_url) as rt:
            wait_for(
                lambda: all(rt.get(r).status == "SUCCEEDED" for r in [*ids, other]), timeout=60
            )
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=30)
    lines = [line.split() for line in log.read_text().splitlines()]
    order = [run for kind, run, _, _ in lines if kind == "ENTER" and run in ids]
    assert list(dict.fromkeys(order)) == ids, "the thread's runs ran in the order they started"
    holder = None
    for kind, run, name, _ in lines:
        if run not in ids:
            continue
        if kind == "ENTER":
            assert holder in (None, run), f"{run} entered {name} while {holder} held the thread"
            holder = run
        elif name == "t3":
            holder = None
    assert Counter(run for kind, run, _, _ in lines if kind == "ENTER")[other] == 3
