"""The Runtime's face: a kernel of verbs and parts named by noun; every verb awaitable through
AsyncRuntime without a hand-kept list; the old names kept one release as warning aliases."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perdure import Context, Workflow, done, step
from perdure.core.clock import FakeClock
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.admin.verbs import is_part, verbs_of
from perdure.runtime.asyncrt import AsyncPart, AsyncRuntime
from perdure.runtime.renamed import CALLED, KEPT, RENAMED
from perdure.runtime.runtime import Runtime

DOCS = Path(__file__).parents[2] / "docs"

PARTS = {
    "activity",
    "archive",
    "effects",
    "history",
    "keys",
    "memory",
    "retention",
    "threads",
    "versions",
}
WIRING = {"store", "clock", "parts", "services"}
NOT_VERBS = {
    "Runtime.close",  # AsyncRuntime.aclose
    "Archive.archive",  # what gc(archive=True) calls
    "Archive.erase",  # what delete_thread / delete_run call
    "Threads.finish_interrupts",  # what start and post call
    "Versions.recover_new",  # what run_until_idle calls
}
"""Public methods that are plumbing of the Runtime's own verbs, not verbs of their own."""


@dataclass
class Note:
    text: str = ""


@step
def write(ctx: Context, s: Note):  # type: ignore[no-untyped-def]
    s.text = "written"
    return done()


def one_step() -> Workflow[Note]:
    return Workflow("face_note", state=Note, steps=[write])


@pytest.fixture
def rt(db_url: str, clock: FakeClock) -> Iterator[Runtime]:
    with Runtime(db_url, clock=clock, workflows=[one_step()]) as runtime:
        yield runtime


def public(obj: object) -> list[str]:
    return [n for n in dir(obj) if not n.startswith("_")]


def parts_of(rt: Runtime) -> dict[str, object]:
    return {n: v for n, v in vars(rt).items() if not n.startswith("_") and is_part(v)}


def test_the_runtime_has_at_most_35_public_names_a_kernel_and_its_parts(rt: Runtime) -> None:
    names = public(rt)
    assert len(names) <= 35, f"{len(names)} public names: {names}"
    assert set(parts_of(rt)) == PARTS
    kernel = set(names) - PARTS - WIRING
    assert kernel == set(verbs_of(Runtime)) | {"close"}


def test_every_public_method_of_the_runtime_and_its_parts_is_a_marked_verb(rt: Runtime) -> None:
    unmarked = []
    for owner in [rt, *parts_of(rt).values()]:
        verbs = verbs_of(type(owner))
        for name in public(owner):
            member = getattr(type(owner), name, None)
            label = f"{type(owner).__name__}.{name}"
            if inspect.isfunction(member) and name not in verbs and label not in NOT_VERBS:
                unmarked.append(label)
            if name in verbs:
                assert (getattr(owner, name).__doc__ or "").strip(), f"{label} has no docstring"
    assert not unmarked, f"mark these with @verb (or name them plumbing): {unmarked}"


def test_async_runtime_covers_every_verb_of_the_runtime_and_of_each_part(rt: Runtime) -> None:
    art = AsyncRuntime(rt)
    try:
        missing = [n for n in verbs_of(Runtime) if n not in vars(art)]
        for name, part in parts_of(rt).items():
            view = vars(art).get(name)
            assert isinstance(view, AsyncPart), name
            for verb_name, kind in verbs_of(type(part)).items():
                found = vars(view).get(verb_name)
                if found is None:
                    missing.append(f"{name}.{verb_name}")
                elif kind == "call":
                    assert inspect.iscoroutinefunction(found), f"{name}.{verb_name}"
                assert found is None or found.__doc__ == getattr(part, verb_name).__doc__
        assert not missing, f"not awaitable: {missing}"
        assert len(verbs_of(Runtime)) + sum(len(verbs_of(type(p))) for p in parts_of(rt).values())
    finally:
        art._pool.shutdown()


def test_async_verbs_of_parts_run_the_sync_ones(rt: Runtime) -> None:
    async def go() -> tuple[Any, ...]:
        art = AsyncRuntime(rt)
        made = await art.keys.create("alice", tenant="t1")
        listed = await art.keys.list(tenant="t1")
        who = await art.keys.authenticate(made.token)
        erased = await art.memory.erase("user/u1", tenant="t1")
        entries = [e async for e in art.threads.stream("m-none", tenant="t1")]
        counts = await art.activity.run_counts()
        await art.aclose()
        return made, listed, who, erased, entries, counts

    made, listed, who, erased, entries, counts = asyncio.run(go())
    assert [k.key_id for k in listed] == [made.key.key_id]
    assert (who.tenant_id, who.subject, erased, entries, counts) == ("t1", "alice", 0, [], [])


def resolve(root: object, path: str) -> Any:
    for name in path.split("."):
        root = getattr(root, name)
    return root


def same(old: Any, new: Any) -> bool:
    """The alias is the new thing itself (a bound method of the same part, or the object)."""
    if inspect.ismethod(old) and inspect.ismethod(new):
        return old.__func__ is new.__func__ and old.__self__ is new.__self__
    return old is new


def documented() -> dict[str, str]:
    """Old name -> new path, as docs/api.md's table tells users (the test's oracle)."""
    page = (DOCS / "api.md").read_text()
    table = page[page.index("## Renamed in this release") :]
    rows = re.findall(
        r"^\| `rt\.(\w+)[^`]*` \| `(?:rt\.|Credentials\(rt\.parts\)\.)([\w.]+)", table, re.M
    )
    return dict(rows)


@pytest.mark.parametrize("old", sorted(set(RENAMED) - set(KEPT)))
def test_each_old_name_warns_and_is_the_new_one(rt: Runtime, old: str) -> None:
    new = documented()[old]
    with pytest.warns(DeprecationWarning, match=rf"Runtime\.{old} is deprecated: use Runtime\."):
        found = getattr(rt, old)
    if hasattr(Credentials, new):  # the server's access
        assert found.__func__ is getattr(Credentials, new)
        assert found.__self__.parts is rt.parts
    else:
        assert same(found, resolve(rt, new)), f"Runtime.{old} is not Runtime.{new}"


@pytest.mark.parametrize("old", sorted(KEPT))
def test_the_old_names_without_a_same_object_still_work(rt: Runtime, old: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"Runtime\.{old} is deprecated"):
        found = getattr(rt, old)
    if old == "lease_seconds":
        assert found == rt.services.heartbeat.lease.total_seconds() == 30.0
    elif old == "fleet":
        assert found.workers() == rt.activity.workers()
    else:
        assert found() is None  # nothing to claim: the same as run_until_idle(max_runs=1) == 0


@pytest.mark.parametrize("old", sorted(CALLED))
def test_an_old_verb_whose_name_is_now_a_part_is_the_parts_call(rt: Runtime, old: str) -> None:
    run = rt.start(one_step(), {})
    rt.run_until_idle()
    args: tuple[Any, ...] = (run.run_id,) if old == "history" else ()
    expected = resolve(rt, CALLED[old])(*args)
    with pytest.warns(DeprecationWarning, match=rf"Runtime\.{old}\(\.\.\.\) is deprecated"):
        assert getattr(rt, old)(*args) == expected


def test_the_old_names_work_on_the_async_runtime_too(rt: Runtime) -> None:
    async def go() -> tuple[Any, Any]:
        art = AsyncRuntime(rt)
        with pytest.warns(DeprecationWarning, match=r"AsyncRuntime\.erase_memory is deprecated"):
            erased = await art.erase_memory("user/u1")
        with pytest.warns(DeprecationWarning, match=r"AsyncRuntime\.memory\(\.\.\.\) is dep"):
            items = await art.memory()
        await art.aclose()
        return erased, items

    assert asyncio.run(go()) == (0, [])


def test_an_unknown_name_is_still_an_attribute_error(rt: Runtime) -> None:
    with pytest.raises(AttributeError, match="no attribute 'erase_everything'"):
        rt.erase_everything  # type: ignore[attr-defined]  # noqa: B018


def test_the_api_page_lists_every_old_name_with_its_new_one() -> None:
    page = (DOCS / "api.md").read_text()
    table = page[page.index("## Renamed in this release") :]
    listed = set(re.findall(r"^\| `rt\.(\w+)", table, re.M))
    missing = {old: new for old, new in {**RENAMED, **CALLED}.items() if old not in listed}
    assert not missing, f"docs/api.md lacks: {missing}"
