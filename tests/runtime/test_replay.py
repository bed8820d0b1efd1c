"""A sealed state written back from an earlier moment of the same run is refused: each seal
names the state write that made it, and the run row's sealed record says which write each
field must come from. Values sealed before records existed stay readable."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, step
from perdure.core.seal import Keyring
from perdure.core.workflow import Outcome, wait_for_signal
from tests.backends import overwrite_run_column, overwrite_state_field, read_state_field

K1 = b"k1-secret-0123456789abcdef012345"[:32]


@dataclass
class Account:
    balance: int = 100
    note: str = ""


@step(next=["pay"])
def open_account(ctx: Context, s: Account) -> Outcome:
    s.note = "opened"
    return wait_for_signal("go", next="pay")


@step(next=["close"])
def pay(ctx: Context, s: Account) -> Outcome:
    s.balance -= 70
    return wait_for_signal("go", next="close")


@step
def close(ctx: Context, s: Account) -> Outcome:
    return done({"balance": s.balance, "note": s.note})


flow = Workflow("account", state=Account, steps=[open_account, pay, close])


def rt(db_url: str, clock: FakeClock, keyring: Keyring) -> Runtime:
    return Runtime(db_url, clock=clock, workflows=[flow], keyring=keyring)


def advance(runtime: Runtime, run_id: str) -> None:
    runtime.signal(run_id, "go")
    runtime.run_until_idle()


@pytest.mark.parametrize("encrypt", [False, True], ids=["hmac", "aes-gcm"])
def test_an_older_sealed_state_of_the_same_run_is_quarantined_not_replayed(
    db_url: str, clock: FakeClock, encrypt: bool
) -> None:
    keys = Keyring({"k1": K1}, "k1", encrypt=encrypt)
    with rt(db_url, clock, keys) as runtime:
        run_id = runtime.start(flow, {}).run_id
        runtime.run_until_idle()
        saved = read_state_field(db_url, run_id, "balance")  # 100, before paying
        advance(runtime, run_id)  # pay rewrites balance to 30
        assert read_state_field(db_url, run_id, "balance") != saved
        overwrite_state_field(db_url, run_id, "balance", saved)
        advance(runtime, run_id)
        run = runtime.get(run_id)
    assert run.status is RunStatus.QUARANTINED, run.result
    assert run.error is not None and run.error.reason == "state_replayed"
    assert run.error.evidence["field"] == "balance"
    assert run.error.evidence["sealed_by_write"] < run.error.evidence["expected_write"]


def test_a_replayed_run_is_repaired_by_patching_the_replayed_field(
    db_url: str, clock: FakeClock
) -> None:
    keys = Keyring({"k1": K1}, "k1")
    with rt(db_url, clock, keys) as runtime:
        run_id = runtime.start(flow, {}).run_id
        runtime.run_until_idle()
        saved = read_state_field(db_url, run_id, "balance")
        advance(runtime, run_id)
        overwrite_state_field(db_url, run_id, "balance", saved)
        advance(runtime, run_id)
        assert runtime.get(run_id).status is RunStatus.QUARANTINED
        runtime.versions.repair(run_id, patch={"balance": 30}, by="ops")
        runtime.run_until_idle()
        assert runtime.get(run_id).result == {"balance": 30, "note": "opened"}


def test_an_older_seal_record_written_back_with_its_fields_is_refused(
    db_url: str, clock: FakeClock
) -> None:
    keys = Keyring({"k1": K1}, "k1")
    with rt(db_url, clock, keys) as runtime:
        run_id = runtime.start(flow, {}).run_id
        runtime.run_until_idle()
        before = runtime.get(run_id).state_seal
        saved = read_state_field(db_url, run_id, "balance")
        advance(runtime, run_id)
        overwrite_state_field(db_url, run_id, "balance", saved)
        overwrite_run_column(db_url, run_id, "state_seal", before)
        advance(runtime, run_id)
        run = runtime.get(run_id)
    assert (run.status, run.error and run.error.reason) == (
        RunStatus.QUARANTINED,
        "state_replayed",
    )


def legacy_seal(place: str, data: bytes) -> str:
    """A value as sealed before writers were bound (format rk1, HMAC of place and data)."""
    mac = hmac.new(K1, place.encode() + b"\0" + data, hashlib.sha256).digest()
    return "rk1.h.k1." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode() + "." + data.decode()


def test_a_run_sealed_before_records_existed_still_runs_and_is_resealed(
    db_url: str, clock: FakeClock
) -> None:
    keys = Keyring({"k1": K1}, "k1")
    with rt(db_url, clock, keys) as runtime:
        run_id = runtime.start(flow, {}).run_id
        runtime.run_until_idle()
        tenant = runtime.get(run_id).tenant_id
        for name, value in (("balance", b"100"), ("note", b'"opened"')):
            legacy = legacy_seal(f"{tenant}/{run_id}/{name}", value)
            overwrite_state_field(db_url, run_id, name, legacy)
        overwrite_run_column(db_url, run_id, "state_seal", None)
        advance(runtime, run_id)
        assert runtime.get(run_id).status is RunStatus.WAITING_EXTERNAL
        assert runtime.get(run_id).state_seal is not None
        assert read_state_field(db_url, run_id, "note").startswith("rk2.h.k1."), "resealed"
        advance(runtime, run_id)
        assert runtime.get(run_id).result == {"balance": 30, "note": "opened"}


def test_a_bound_value_without_the_run_rows_record_is_refused(
    db_url: str, clock: FakeClock
) -> None:
    keys = Keyring({"k1": K1}, "k1")
    with rt(db_url, clock, keys) as runtime:
        run_id = runtime.start(flow, {}).run_id
        runtime.run_until_idle()
        overwrite_run_column(db_url, run_id, "state_seal", None)
        advance(runtime, run_id)
        run = runtime.get(run_id)
    assert (run.status, run.error and run.error.reason) == (
        RunStatus.QUARANTINED,
        "integrity_failed",
    )
