"""``perdure memory list``, ``show`` and ``erase`` as a person meets them, one process per
command, on each backend."""

from __future__ import annotations

import json

from tests.conftest import run_cli

APP = "tests.apps.memory_app"


def remembered(db_url: str, tenant: str = "default") -> str:
    started = run_cli(db_url, "--tenant", tenant, "start", "remember", "--app", APP)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    resumed = run_cli(db_url, "--tenant", tenant, "resume", run_id, "--app", APP)
    assert resumed.returncode == 0, resumed.stderr
    return run_id


def test_a_person_lists_shows_and_erases_what_a_run_remembered(db_url: str) -> None:
    run_id = remembered(db_url)
    listed = run_cli(db_url, "memory", "list", "user")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        'user/u1\tfact\tv1\t{"text":"likes tea and a cat"}',
        "user/u1\tvisits\tv1\t1",
    ]
    assert run_cli(db_url, "memory", "list", "user/u10").stdout == ""
    where = run_cli(db_url, "memory", "list", "--where", "kind=fact")
    assert where.returncode == 0 and where.stdout == "", "a number is no object with a kind"

    shown = run_cli(db_url, "memory", "show", "user/u1", "visits", "--json")
    assert shown.returncode == 0, shown.stderr
    item = json.loads(shown.stdout)
    assert (item["namespace"], item["value"], item["version"]) == (["user", "u1"], 1, 1)
    assert item["run_id"] == run_id
    text = run_cli(db_url, "memory", "show", "user/u1", "visits").stdout
    assert "version 1" in text and f"run {run_id}" in text

    erased = run_cli(db_url, "memory", "erase", "user/u1", "--as", "dpo")
    assert erased.returncode == 0, erased.stderr
    assert erased.stdout.strip() == "erased 2 memory item(s) under user/u1"
    gone = run_cli(db_url, "memory", "show", "user/u1", "visits")
    assert gone.returncode == 1
    assert gone.stderr.startswith("error[memory_not_found]: ")
    assert len(gone.stderr.strip().splitlines()) == 1


def test_memory_commands_see_only_their_tenant(db_url: str) -> None:
    remembered(db_url, tenant="acme")
    assert run_cli(db_url, "--tenant", "acme", "memory", "list").stdout.count("\n") == 2
    assert run_cli(db_url, "--tenant", "globex", "memory", "list").stdout == ""
    erased = run_cli(db_url, "--tenant", "globex", "memory", "erase", "user")
    assert erased.stdout.strip() == "erased 0 memory item(s) under user"


def test_bad_namespaces_and_keys_get_one_line_with_a_code(db_url: str) -> None:
    remembered(db_url)
    for args in (
        ("memory", "show", "user//u1", "visits"),
        ("memory", "show", "user/u1", ""),
        ("memory", "erase", ""),
        ("memory", "list", "user", "--where", "nothing"),
    ):
        out = run_cli(db_url, *args)
        assert out.returncode == 1, (args, out.stdout)
        assert out.stderr.startswith("error[invalid_input]: "), (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1
