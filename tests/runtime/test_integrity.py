"""Sealed state: HMAC and AES-GCM with key ids and rotation; tampering quarantines the run."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, step
from perdure.core.errors import ConfigError
from perdure.core.seal import IntegrityError, Keyring
from perdure.core.workflow import Outcome, wait_for_signal
from tests.backends import overwrite_state_field, read_state_field

K1 = b"k1-secret-0123456789abcdef012345"[:32]
K2 = b"k2-secret-abcdefabcdef0123456789"[:32]


@dataclass
class Secret:
    note: str = ""


@step(next=["finish"])
def hold(ctx: Context, s: Secret) -> Outcome:
    s.note += "+held"
    return wait_for_signal("go", next="finish")


@step
def finish(ctx: Context, s: Secret) -> Outcome:
    s.note += "+done"
    return done(s.note)


secret_flow = Workflow("secret", state=Secret, steps=[hold, finish])


def rt(db_url: str, clock: FakeClock, keyring: Keyring | None) -> Runtime:
    return Runtime(db_url, clock=clock, workflows=[secret_flow], keyring=keyring)


def stored(db_url: str, run_id: str) -> str:
    return read_state_field(db_url, run_id, "note")


def overwrite(db_url: str, run_id: str, value: str) -> None:
    overwrite_state_field(db_url, run_id, None, value)


def held_run(db_url: str, clock: FakeClock, keyring: Keyring | None) -> str:
    with rt(db_url, clock, keyring) as runtime:
        run = runtime.start(secret_flow, {"note": "top secret"})
        runtime.run_until_idle()
        runtime.signal(run.run_id, "go")
    return run.run_id


def test_sealed_state_round_trips(db_url: str, clock: FakeClock) -> None:
    keys = Keyring({"k1": K1}, "k1")
    run_id = held_run(db_url, clock, keys)
    assert stored(db_url, run_id).startswith("rk2.h.k1.")
    with rt(db_url, clock, keys) as runtime:
        runtime.run_until_idle()
        assert runtime.get(run_id).result == "top secret+held+done"


def test_a_tampered_value_quarantines_the_run(db_url: str, clock: FakeClock) -> None:
    keys = Keyring({"k1": K1}, "k1")
    run_id = held_run(db_url, clock, keys)
    overwrite(db_url, run_id, stored(db_url, run_id).replace("top secret", "top public"))
    with rt(db_url, clock, keys) as runtime:
        runtime.run_until_idle()
        run = runtime.get(run_id)
    assert (run.status, run.error.reason) == (RunStatus.QUARANTINED, "integrity_failed")


def test_an_unsigned_value_is_never_accepted_as_plain(db_url: str, clock: FakeClock) -> None:
    run_id = held_run(db_url, clock, None)
    with rt(db_url, clock, Keyring({"k1": K1}, "k1")) as runtime:
        runtime.run_until_idle()
        assert runtime.get(run_id).error.reason == "integrity_failed"


def test_a_value_moved_from_another_run_is_refused(db_url: str, clock: FakeClock) -> None:
    keys = Keyring({"k1": K1}, "k1")
    first = held_run(db_url, clock, keys)
    second = held_run(db_url, clock, keys)
    overwrite(db_url, second, stored(db_url, first))
    with rt(db_url, clock, keys) as runtime:
        runtime.run_until_idle()
        assert runtime.get(second).error.reason == "integrity_failed"


def test_rotation_old_keys_verify_the_new_key_signs(db_url: str, clock: FakeClock) -> None:
    run_id = held_run(db_url, clock, Keyring({"k1": K1}, "k1"))
    rotated = Keyring({"k2": K2, "k1": K1}, "k2")
    with rt(db_url, clock, rotated) as runtime:
        runtime.run_until_idle()
        assert runtime.get(run_id).status is RunStatus.SUCCEEDED
    assert stored(db_url, run_id).startswith("rk2.h.k2."), "new writes use the active key"
    retired = held_run(db_url, clock, Keyring({"k1": K1}, "k1"))
    with rt(db_url, clock, Keyring({"k2": K2}, "k2")) as runtime:
        runtime.run_until_idle()
        assert runtime.get(retired).error.reason == "integrity_failed"


def test_encrypted_state_round_trips_and_a_wrong_key_quarantines(
    db_url: str, clock: FakeClock
) -> None:
    keys = Keyring({"k1": K1}, "k1", encrypt=True)
    run_id = held_run(db_url, clock, keys)
    assert "top secret" not in stored(db_url, run_id)
    assert stored(db_url, run_id).startswith("rk2.e.k1.")
    wrong = Keyring({"k1": K2}, "k1", encrypt=True)
    with rt(db_url, clock, wrong) as runtime:
        runtime.run_until_idle()
        assert runtime.get(run_id).error.reason == "integrity_failed"
    with rt(db_url, clock, keys) as runtime:
        runtime.versions.repair(run_id, patch={"note": "re-entered"}, by="ops")
        runtime.run_until_idle()
        assert runtime.get(run_id).result == "re-entered+done"


def test_keys_come_from_the_environment() -> None:
    spec = f"k2:{base64.b64encode(K2).decode()},k1:{base64.b64encode(K1).decode()}"
    keyring = Keyring.from_env({"PERDURE_KEYS": spec, "PERDURE_ENCRYPT": "1"})
    assert keyring is not None
    assert (keyring.active, sorted(keyring.keys), keyring.encrypt) == ("k2", ["k1", "k2"], True)
    assert Keyring.from_env({}) is None
    with pytest.raises(ConfigError, match="not base64"):
        Keyring.from_env({"PERDURE_KEYS": "k1:***"})
    with pytest.raises(ConfigError, match="at least 16 bytes"):
        Keyring({"k1": b"short"}, "k1")
    with pytest.raises(IntegrityError):
        Keyring({"k1": K1}, "k1").open("t/r/f", b"rk1.h.zz.AAAA.{}")
