"""asyncio: awaiting runs and iterating their progress without blocking the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import List

import pytest

import syncstore

from package_support import DevServer

QUERY = "SELECT Id, LastName, LastModifiedDate FROM Contact"


async def flow(store: syncstore.Store, server: DevServer) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    ticking = asyncio.create_task(ticker())
    run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", {"mergeMode": "OVERWRITE"}, "down")
    seen: List[str] = []
    async for state in run.progress():
        seen.append(state["status"])
    assert seen[0] == "RUNNING" and seen[-1] == "DONE" and seen.count("DONE") == 1
    final = await run
    assert final["status"] == "DONE" and final["totalSize"] == 300
    # Awaiting again, and iterating a finished run, give the same end.
    assert (await run)["status"] == "DONE"
    assert [s["status"] async for s in run.progress()][-1] == "DONE"

    store.upsert("contacts", [{"attributes": {"type": "Contact"}, "LastName": "Async", "__local__": True,
                               "__locally_created__": True}])
    up = await store.sync_up("contacts", None, {"fieldlist": ["LastName"]}, "up")
    assert up["status"] == "DONE"
    assert (await store.resync("down"))["status"] == "DONE"
    report = await store.clean_resync_ghosts("down")
    assert report["type"] == "cleanResyncGhosts" and report["removed"] == 0

    # Several runs awaited together.
    states = await asyncio.gather(store.resync("up"), store.resync("down"))
    assert [s["status"] for s in states] == ["DONE", "DONE"]
    stop.set()
    await ticking
    assert ticks > 10  # the loop kept running while the syncs ran


def test_await_runs_and_iterate_progress(tmp_path: Path) -> None:
    server = DevServer("--seed", "Contact=300", "--min-batch-size", "1", "--default-batch-size", "50",
                       "--faults", "GET */query* latency=10")
    try:
        with syncstore.Store(tmp_path) as store:
            store.register_soup("contacts", [{"path": "Id", "type": "string"}])
            store.set_remote(server.remote)
            asyncio.run(flow(store, server))
    finally:
        server.stop()


def test_await_raises_callback_errors(shared_server: DevServer, tmp_path: Path) -> None:
    def broken(state: syncstore.SyncState) -> None:
        raise ValueError("callback failure")

    async def main(store: syncstore.Store) -> None:
        with pytest.raises(syncstore.CallbackError) as info:
            await store.sync_down({"type": "soql", "query": QUERY}, "contacts", callback=broken)
        assert isinstance(info.value.errors[0], ValueError)

    with syncstore.Store(tmp_path) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}])
        store.set_remote(shared_server.remote)
        asyncio.run(main(store))
