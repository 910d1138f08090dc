"""syncstore.smartstore / syncstore.mobilesync: Cordova names and argument orders, values returned."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import syncstore
from syncstore import cordova, mobilesync, smartstore

from package_support import DevServer

GLOBAL = {"isGlobalStore": True, "storeName": "shared"}


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    smartstore.init(tmp_path)
    yield tmp_path
    cordova.close_all()


def test_smartstore_functions(root: Path) -> None:
    assert smartstore.registerSoup("cats", [{"path": "name", "type": "string"}, {"path": "age", "type": "integer"},
                                            {"path": "bio", "type": "full_text"}]) == "cats"
    assert smartstore.registerSoup(GLOBAL, "cats", [{"path": "name", "type": "string"}]) == "cats"
    assert smartstore.soupExists("cats") and smartstore.soupExists(GLOBAL, "cats")
    assert not smartstore.soupExists(True, "cats")  # the default global store is another one
    saved = smartstore.upsertSoupEntries("cats", [{"name": f"cat{i}", "age": i, "bio": "black tabby" if i % 2
                                                   else "grey"} for i in range(25)])
    assert len(saved) == 25
    smartstore.upsertSoupEntriesWithExternalId("cats", [{"name": "cat3", "age": 33}], "name")
    assert smartstore.retrieveSoupEntries("cats", [saved[3]["_soupEntryId"]])[0]["age"] == 33

    cursor = smartstore.querySoup("cats", smartstore.buildAllQuerySpec("name", "ascending", 10))
    assert cursor["totalEntries"] == 25 and cursor["totalPages"] == 3 and len(cursor["currentPageOrderedEntries"]) == 10
    cursor = smartstore.moveCursorToNextPage(cursor)
    assert cursor["currentPageIndex"] == 1
    cursor = smartstore.moveCursorToPageIndex(cursor, 2)
    assert len(cursor["currentPageOrderedEntries"]) == 5
    cursor = smartstore.moveCursorToPreviousPage(cursor)
    assert cursor["currentPageIndex"] == 1
    smartstore.closeCursor(cursor)
    with pytest.raises(syncstore.NotFoundError):
        smartstore.moveCursorToNextPage(cursor)

    exact = smartstore.querySoup("cats", smartstore.buildExactQuerySpec("name", "cat7", 5, "ascending", None, ["age"]))
    assert exact["currentPageOrderedEntries"] == [[7]]
    ranged = smartstore.querySoup("cats", smartstore.buildRangeQuerySpec("age", 20, None, "descending", 50))
    assert [e["age"] for e in ranged["currentPageOrderedEntries"]] == [33, 24, 23, 22, 21, 20]
    like = smartstore.querySoup("cats", smartstore.buildLikeQuerySpec("name", "cat1%", "ascending", 50))
    assert like["totalEntries"] == 11
    match = smartstore.querySoup("cats", smartstore.buildMatchQuerySpec("bio", "black NOT grey", "ascending", 50))
    assert match["totalEntries"] == 11  # cat3 was replaced without a bio
    smart = smartstore.runSmartQuery(smartstore.buildSmartQuerySpec("select count(*) from {cats}", 1))
    assert smart["currentPageOrderedEntries"] == [[25]]

    smartstore.removeFromSoup("cats", [saved[0]["_soupEntryId"]])
    smartstore.removeFromSoup("cats", smartstore.buildExactQuerySpec("name", "cat1"))
    assert smartstore.runSmartQuery(smartstore.buildSmartQuerySpec("select count(*) from {cats}"))[
        "currentPageOrderedEntries"] == [[23]]
    specs = [{"path": "name", "type": "string"}, {"path": "age", "type": "integer"}]
    assert smartstore.alterSoup("cats", specs, True) == "cats"
    assert smartstore.getSoupIndexSpecs("cats") == specs
    assert smartstore.reIndexSoup("cats", ["age"]) == "cats"
    smartstore.clearSoup("cats")
    smartstore.removeSoup("cats")
    assert not smartstore.soupExists("cats")
    assert smartstore.getDatabaseSize() > 0 and smartstore.getDatabaseSize(GLOBAL) > 0

    # The plugin's answer: storeConfigs, not names.
    assert smartstore.getAllStores() == [{"storeName": "smartstore", "isGlobalStore": False}]
    assert smartstore.getAllGlobalStores() == [dict(GLOBAL), {"storeName": "smartstore", "isGlobalStore": True}]
    smartstore.removeStore(GLOBAL)
    assert smartstore.getAllGlobalStores() == [{"storeName": "smartstore", "isGlobalStore": True}]
    smartstore.removeAllGlobalStores()
    smartstore.removeAllStores()
    assert smartstore.getAllStores() == [] == smartstore.getAllGlobalStores()


def test_mobilesync_functions(root: Path, shared_server: DevServer) -> None:
    events: List[Dict[str, Any]] = []
    mobilesync.addSyncListener(events.append)
    try:
        config = {"storeName": "synced"}
        smartstore.registerSoup(config, "contacts", [{"path": "Id", "type": "string"},
                                                     {"path": "LastName", "type": "string"}])
        mobilesync.setRemote(config, shared_server.remote)
        run = mobilesync.syncDown(config, {"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "contacts",
                                  {"mergeMode": mobilesync.MERGE_MODE.OVERWRITE}, "cdv-down")
        final = run.wait(60)
        assert final["status"] == "DONE" and final in mobilesync._finished  # the listeners got it first
        assert events[0]["status"] == "RUNNING" and events[-1]["status"] == "DONE"
        assert events[-1]["storeName"] == "synced" and events[-1]["isGlobalStore"] is False
        smartstore.upsertSoupEntries(config, "contacts", [{"attributes": {"type": "Contact"}, "LastName": "Cordova",
                                                          "__local__": True, "__locally_created__": True}])
        up = mobilesync.syncUp(config, "contacts", {"fieldlist": ["LastName"]}, "cdv-up")
        assert up.wait(60)["status"] == "DONE"
        up2 = mobilesync.syncUp(config, {"type": "single"}, "contacts", {"fieldlist": ["LastName"]})
        assert up2.wait(60)["type"] == "syncUp"
        async def resync() -> Any:
            return await mobilesync.reSync(config, "cdv-down")

        assert asyncio.run(resync())["status"] == "DONE"
        seen = len(events)
        assert mobilesync.cleanResyncGhosts(config, run.sync_id, timeout=60) == 0  # the plugin's answer: a number
        assert len(events) == seen  # and no sync event
        status = mobilesync.getSyncStatus(config, "cdv-down")
        assert status is not None and status["_soupEntryId"] == run.sync_id
        mobilesync.deleteSync(config, "cdv-down")
        mobilesync.deleteSync(config, up.sync_id)
        assert mobilesync.getSyncStatus(config, run.sync_id) is None
    finally:
        mobilesync.removeSyncListener(events.append)


def test_the_plugins_rules_reach_the_modules(root: Path, shared_server: DevServer) -> None:
    """Where the modules used to decide for themselves, the dispatcher now answers: an exact
    query with a null matchKey matches nothing, a null or unknown queryType is refused, an
    unknown sync has no status (None), and one setRemote without a storeConfig serves every
    store, global ones too."""
    smartstore.registerSoup("cats", [{"path": "name", "type": "string"}])
    smartstore.upsertSoupEntries("cats", [{"name": "tom"}])
    assert smartstore.querySoup("cats", smartstore.buildExactQuerySpec("name", None))["totalEntries"] == 0
    for query_type in (None, "near"):
        with pytest.raises(syncstore.ArgumentError, match="queryType" if query_type is None else "near"):
            smartstore.querySoup("cats", {"queryType": query_type, "indexPath": "name", "matchKey": "tom"})
    assert mobilesync.getSyncStatus("nothing") is None
    with pytest.raises(syncstore.ArgumentError, match="moveCursorToPreviousPage"):  # cordova.force.js's check
        smartstore.moveCursorToPreviousPage(smartstore.querySoup("cats", smartstore.buildAllQuerySpec("name")))

    mobilesync.setRemote(shared_server.remote)
    smartstore.registerSoup(True, "contacts", [{"path": "Id", "type": "string"}])
    run = mobilesync.syncDown(True, {"type": "soql", "query": "SELECT Id FROM Contact"}, "contacts", {})
    assert run.started["status"] == "RUNNING" and run.kind == "syncDown"
    final = run.wait(60)
    assert final["status"] == "DONE" and final["totalSize"] == len(shared_server.query("SELECT Id FROM Contact"))


def test_init_is_required(tmp_path: Path) -> None:
    cordova._root = None
    with pytest.raises(syncstore.StateError):
        smartstore.soupExists("x")


def test_store_listeners_fire_smartstore_changed_events(root: Path) -> None:
    import threading
    import time

    events: List[Dict[str, Any]] = []
    lock = threading.Lock()

    def on_event(at: str, name: str, detail: Dict[str, Any]) -> None:
        if name == "smartstoreChanged":
            with lock:
                events.append(detail)

    def wait_for(test: Any) -> List[Dict[str, Any]]:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with lock:
                if test(events):
                    return list(events)
            time.sleep(0.02)
        raise AssertionError(f"events: {events}")

    cordova.add_event_listener(on_event)
    try:
        smartstore.registerSoup("dogs", [{"path": "name", "type": "string"}])
        soup_id = smartstore.addSoupListener("dogs")
        query_id = smartstore.addQueryListener("dogs", smartstore.buildExactQuerySpec("name", "rex"), {"minIntervalMs": 0})
        assert soup_id != query_id
        wait_for(lambda e: any(d["listenerId"] == query_id and d["origin"]["kind"] == "initial" for d in e))
        [rex] = smartstore.upsertSoupEntries("dogs", [{"name": "rex"}])
        seen = wait_for(lambda e: any(d["listenerId"] == query_id and d["totalEntries"] == 1 for d in e)
                        and any(d["listenerId"] == soup_id for d in e))
        soup_event = next(d for d in seen if d["listenerId"] == soup_id)
        assert soup_event["storeName"] == "smartstore" and soup_event["isGlobalStore"] is False
        assert soup_event["origin"]["kind"] == "handle" and soup_event["soups"][0]["inserted"]["ids"] == [rex["_soupEntryId"]]
        assert smartstore.removeListener(soup_id) == "OK" and smartstore.removeListener(query_id) == "OK"
        assert smartstore.removeListener(query_id) == "OK"  # an unknown id: nothing to do
        with lock:
            before = len(events)
        smartstore.upsertSoupEntries("dogs", [{"name": "rex"}])
        time.sleep(0.3)
        with lock:
            assert len(events) == before
        with pytest.raises(syncstore.NotFoundError):
            smartstore.addSoupListener("cats")
    finally:
        cordova.remove_event_listener(on_event)
