"""The store through the package: soups, entries, cursors as iterators, exceptions, lifetime."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

import syncstore
from syncstore import _callbacks, cordova, mobilesync, smartstore

from package_support import PACKAGE_ROOT, DevServer, run_python

SPECS = [{"path": "Id", "type": "string"}, {"path": "Age", "type": "integer"}, {"path": "Bio", "type": "full_text"}]


def test_soup_round_trip(store: syncstore.Store) -> None:
    store.register_soup("contacts", SPECS)
    assert store.soup_exists("contacts") and not store.soup_exists("nope")
    assert store.get_soup_index_specs("contacts")[1] == {"path": "Age", "type": "integer"}
    stored = store.upsert("contacts", [{"Id": "003A", "Age": 9, "Bio": "grey cat lover"},
                                       {"Id": "003B", "Age": 10, "Bio": "ünïcødé dog"}])
    assert [e["_soupEntryId"] for e in stored] == [1, 2]
    with store.query_soup("contacts", {"queryType": "range", "indexPath": "Age", "beginKey": 9, "endKey": 10,
                                       "order": "descending", "pageSize": 10, "selectPaths": ["Id"]}) as cursor:
        assert cursor.entries == [["003B"], ["003A"]] and cursor.total_entries == 2
    assert [e["Id"] for e in store.query("contacts", {"queryType": "match", "indexPath": "Bio", "matchKey": "gr*"})] \
        == ["003A"]
    rows = store.run_smart_query({"queryType": "smart", "pageSize": 5,
                                  "smartSql": "select {contacts:Bio} from {contacts} where {contacts:Id} = '003B'"})
    assert list(rows) == [["ünïcødé dog"]]
    assert store.retrieve("contacts", [2, 99, 1])[0]["Id"] == "003B"
    store.remove("contacts", [1])
    assert store.retrieve("contacts", [1]) == []
    assert store.database_size() > 0


def test_find_reads_one_page_without_a_cursor(store: syncstore.Store) -> None:
    store.register_soup("n", [{"path": "n", "type": "integer"}])
    store.upsert("n", [{"n": i} for i in range(25)], return_entries=False)
    spec = {"queryType": "range", "indexPath": "n", "orderPath": "n", "pageSize": 10}
    assert [e["n"] for e in store.find("n", spec)] == list(range(10))
    assert [e["n"] for e in store.find("n", spec, 2)] == list(range(20, 25))
    assert store.find("n", spec, 3) == []
    assert store.find(None, {"queryType": "smart", "smartSql": "select count(*) from {n}"}) == [[25]]
    with pytest.raises(syncstore.ArgumentError):
        store.find("n", spec, -1)
    with pytest.raises(syncstore.NotFoundError):
        store.find("nope", spec)
    # Past int64 is refused, not wrapped to another page; the last int64 page is past every row.
    for page in (1 << 63, -(1 << 63) - 1):
        with pytest.raises(syncstore.ArgumentError, match="64 bits"):
            store.find("n", spec, page)
    assert store.find("n", spec, (1 << 63) - 1) == []
    assert [e["n"] for e in store.find("n", spec, 1.0)] == list(range(10, 20))  # int(page), as before
    # A failed lookup leaves nothing behind for the next one (out and error slots are reused),
    # and gives its slots back: failing lookups do not make new ones.
    assert [e["n"] for e in store.find("n", spec)] == list(range(10))
    from syncstore import _lib
    idle = len(_lib.out_slots)
    for _ in range(20):
        with pytest.raises(syncstore.NotFoundError):
            store.find("nope", spec)
    assert len(_lib.out_slots) == idle


def test_find_from_many_threads_reads_each_own_page(store: syncstore.Store) -> None:
    # Each call takes its own out and error slots: threads never read another's page or error.
    import threading
    store.register_soup("n", [{"path": "n", "type": "integer"}])
    store.upsert("n", [{"n": i} for i in range(200)], return_entries=False)
    wrong: list[str] = []

    def look(offset: int) -> None:
        for k in range(300):
            n = (offset * 37 + k) % 200
            if k % 7 == 0:
                try:
                    store.find("nope", {"queryType": "exact", "indexPath": "n", "matchKey": n})
                    wrong.append("no error for an unknown soup")
                except syncstore.NotFoundError as e:
                    if "nope" not in str(e):
                        wrong.append(str(e))
                continue
            page = store.find("n", {"queryType": "exact", "indexPath": "n", "matchKey": n})
            if [e["n"] for e in page] != [n]:
                wrong.append(f"{n}: {page}")

    threads = [threading.Thread(target=look, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    store.close()
    with pytest.raises(syncstore.StateError):
        store.find("n", {"queryType": "exact", "indexPath": "n", "matchKey": 1})


def test_cursor_iterates_every_page_and_closes(store: syncstore.Store) -> None:
    store.register_soup("n", [{"path": "n", "type": "integer"}])
    store.upsert("n", [{"n": i} for i in range(95)], return_entries=False)
    cursor = store.query_soup("n", {"queryType": "range", "indexPath": "n", "orderPath": "n", "pageSize": 10})
    assert cursor.total_pages == 10
    assert [e["n"] for e in cursor] == list(range(95))
    assert cursor.closed
    with pytest.raises(syncstore.NotFoundError):
        store.move_cursor_to_page(cursor.cursor_id, 0)
    # Stopping early inside a with block closes it too.
    with store.query_soup("n", {"queryType": "range", "indexPath": "n", "pageSize": 10}) as early:
        assert next(early)["n"] == 0
        assert early.next_page()[0]["n"] == 10 and early.current_page_index == 1
        assert early.previous_page()[0]["n"] == 0
        assert early.move_to_page(99)[0]["n"] == 90  # clamped
    with pytest.raises(syncstore.NotFoundError):
        store.move_cursor_to_page(early.cursor_id, 0)
    # A dropped cursor is closed by its finalizer.
    dropped = store.query_soup("n", {"queryType": "range", "indexPath": "n", "pageSize": 10})
    dropped_id = dropped.cursor_id
    del dropped
    with pytest.raises(syncstore.NotFoundError):
        store.move_cursor_to_page(dropped_id, 0)


def test_exceptions_carry_codes_and_leave_the_store_unchanged(store: syncstore.Store) -> None:
    with pytest.raises(syncstore.NotFoundError) as info:
        store.upsert("missing", [{}])
    assert info.value.code == 2 and info.value.name == "SYNCSTORE_ERR_NOT_FOUND" and "missing" in info.value.message
    assert isinstance(info.value, LookupError)
    store.register_soup("s", [{"path": "a", "type": "string"}])
    with pytest.raises(syncstore.ArgumentError):
        store.upsert("s", '[{"a": ')
    assert store.upsert("s", '[{"a": "text"}]')[0]["a"] == "text"  # JSON text passes through
    store.remove("s", [1])
    with pytest.raises(syncstore.ArgumentError):
        store.run_smart_query({"queryType": "smart", "smartSql": "select 1; drop table soup_attrs", "pageSize": 1})
    with pytest.raises(ValueError):
        store.upsert("s", [{"a": float("nan")}])
    with pytest.raises(ValueError):
        store.register_soup("bad\x00name", [{"path": "a", "type": "string"}])
    store.upsert("s", [{"a": "x"}, {"a": "x"}])
    with pytest.raises(syncstore.ConflictError):
        store.upsert("s", [{"a": "x", "b": 1}, {"a": "new"}], "a")
    assert store.query("s", {"queryType": "range", "indexPath": "a", "pageSize": 10}) == \
        store.query("s", {"queryType": "range", "indexPath": "a", "pageSize": 10})
    assert len(store.query("s", {"queryType": "range", "indexPath": "a", "pageSize": 10})) == 2
    store.register_soup("c", [{"path": "Id", "type": "string"}])
    store.create_sync_down({"type": "soql", "query": "SELECT Id FROM Contact"}, "c", None, "dup")
    with pytest.raises(syncstore.ExistsError):
        store.create_sync_down({"type": "soql", "query": "SELECT Id FROM Contact"}, "c", None, "dup")


def test_soup_maintenance(store: syncstore.Store) -> None:
    store.register_soup("s", [{"path": "a", "type": "string"}])
    store.upsert("s", [{"a": "x", "b": 1}, {"a": "y", "b": 2}, {"a": "z", "b": 2}])
    store.alter_soup("s", [{"path": "a", "type": "string"}, {"path": "b", "type": "integer"}], reindex=False)
    assert store.query("s", {"queryType": "exact", "indexPath": "b", "matchKey": 2, "pageSize": 10}) == []
    store.reindex_soup("s", ["b"])
    assert len(store.query("s", {"queryType": "exact", "indexPath": "b", "matchKey": 2, "pageSize": 10})) == 2
    assert store.remove_by_query("s", {"queryType": "exact", "indexPath": "b", "matchKey": 2, "pageSize": 1}) == 2
    store.clear_soup("s")
    assert store.query("s", {"queryType": "range", "indexPath": "a", "pageSize": 10}) == []
    store.remove_soup("s")
    assert not store.soup_exists("s")


def test_context_manager_closes_and_a_closed_store_raises(tmp_path: Path) -> None:
    with syncstore.Store(tmp_path, "cm") as s:
        s.register_soup("s", [{"path": "a", "type": "string"}])
        s.upsert("s", [{"a": "kept"}])
    assert s.closed
    with pytest.raises(syncstore.StateError):
        s.soup_exists("s")
    s.close()  # closing again is a no-op
    # The closed store's file alone holds the commit (WAL checkpointed on close).
    db = tmp_path / "user" / "cm.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from sqlite_master").fetchone()[0] > 0


def test_store_configs_listing_and_removal(tmp_path: Path) -> None:
    with syncstore.Store(tmp_path, {"storeName": "a"}), syncstore.Store(tmp_path, True), syncstore.Store(tmp_path):
        with pytest.raises(syncstore.BusyError) as info:
            syncstore.remove_store(tmp_path, {"storeName": "a"})
        assert "open" in info.value.message
    assert syncstore.list_stores(tmp_path) == ["a", "smartstore"]
    assert syncstore.list_stores(tmp_path, is_global=True) == ["smartstore"]
    syncstore.remove_store(tmp_path, "a")
    with pytest.raises(syncstore.NotFoundError):
        syncstore.remove_store(tmp_path, "a")
    syncstore.remove_all_stores(tmp_path)
    syncstore.remove_all_stores(tmp_path, is_global=True)
    assert syncstore.list_stores(tmp_path) == [] == syncstore.list_stores(tmp_path, True)
    with pytest.raises(syncstore.ArgumentError):
        syncstore.Store(tmp_path, {"storeName": "../escape"})


def test_store_and_sync_config_files(store: syncstore.Store, tmp_path: Path) -> None:
    config = tmp_path / "userstore.json"
    config.write_text(json.dumps({"soups": [{"soupName": "accounts", "indexes": [{"path": "Id", "type": "string"}]}]}))
    store.load_store_config(config)
    assert store.soup_exists("accounts")
    syncs = tmp_path / "usersyncs.json"
    syncs.write_text(json.dumps({"syncs": [{"syncName": "acc-down", "syncType": "syncDown", "soupName": "accounts",
                                            "target": {"type": "soql", "query": "SELECT Id FROM Account"},
                                            "options": {"mergeMode": "OVERWRITE"}}]}))
    store.load_sync_config(syncs)
    state = store.get_sync_status("acc-down")
    assert state is not None and state["status"] == "NEW" and state["type"] == "syncDown"
    with pytest.raises(syncstore.NotFoundError):
        store.load_sync_config(tmp_path / "missing.json")


SECOND_PROCESS = """
import json, sys
import syncstore
with syncstore.Store(sys.argv[1], {"storeName": "py"}) as s:
    try:
        s.get_sync_status(1)
        print(json.dumps({"ok": True}))
    except syncstore.BusyError as e:
        print(json.dumps({"ok": False, "retryable": e.retryable}))
"""


def test_one_process_at_a_time_runs_a_stores_syncs(tmp_path: Path) -> None:
    store = syncstore.Store(tmp_path, {"storeName": "py"})
    assert store.get_sync_status(1) is None  # starts this process's sync engine
    out = run_python(SECOND_PROCESS, str(tmp_path), cwd=str(PACKAGE_ROOT.parent))
    assert out.returncode == 0 and json.loads(out.stdout) == {"ok": False, "retryable": True}, out.stderr
    store.close()
    out = run_python(SECOND_PROCESS, str(tmp_path))
    assert json.loads(out.stdout) == {"ok": True}, out.stderr


def test_smart_sql_text_and_json_text_are_taken_as_node_takes_them(store: syncstore.Store,
                                                                    shared_server: DevServer) -> None:
    """run_smart_query takes the SQL text, set_remote and specs JSON text (as Node's smartQuery,
    setRemote and specs do); another type is an ArgumentError naming the argument, not Python's
    own ValueError from dict()."""
    store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}])
    store.set_remote(json.dumps(shared_server.remote))
    down = store.sync_down('{"type": "soql", "query": "SELECT Id, LastName FROM Contact"}', "contacts").wait(60)
    assert down["status"] == "DONE" and down["totalSize"] == 20
    with store.run_smart_query("select count(*) from {contacts}") as cursor:
        assert cursor.entries == [[20]]
    with store.run_smart_query("select {contacts:Id} from {contacts}", page_size=7) as cursor:
        assert (cursor.page_size, cursor.total_pages) == (7, 3)
    assert store.find(None, '{"queryType": "smart", "smartSql": "select count(*) from {contacts}"}') == [[20]]
    assert len(store.query("contacts", '{"queryType": "range", "indexPath": "Id", "pageSize": 5}')) == 20

    registered = len(_callbacks._registry)
    for call, says in [(lambda: store.run_smart_query(42), "Smart SQL text (str) or a smart query spec"),
                       (lambda: store.run_smart_query(["select 1"]), "not list"),
                       (lambda: store.set_remote(["https://x"]), "the remote must be a mapping"),
                       (lambda: store.query_soup("contacts", 7), "the query spec must be"),
                       (lambda: store.sync_down(None, "contacts"), "the sync target must be")]:
        with pytest.raises(syncstore.ArgumentError, match=re.escape(says)) as raised:
            call()
        assert raised.value.code == 1
    assert len(_callbacks._registry) == registered  # the refused sync_down left no listener behind
    with pytest.raises(syncstore.ArgumentError):  # JSON text the library refuses
        store.set_remote("instanceUrl=https://x")
    with pytest.raises(syncstore.ArgumentError):
        store.run_smart_query("delete from {contacts}")
    assert store.run_smart_query("select count(*) from {contacts}").entries == [[20]]  # unchanged


def test_cordova_faces_take_smart_sql_and_remote_json_text(tmp_path: Path, shared_server: DevServer) -> None:
    smartstore.init(tmp_path)
    try:
        smartstore.registerSoup("contacts", [{"path": "Id", "type": "string"}])
        mobilesync.setRemote(json.dumps(shared_server.remote))
        run = mobilesync.syncDown({"type": "soql", "query": "SELECT Id FROM Contact"}, "contacts",
                                  {"mergeMode": "OVERWRITE"})
        assert run.wait(60)["status"] == "DONE"
        cursor = smartstore.runSmartQuery("select count(*) from {contacts}")
        assert cursor["currentPageOrderedEntries"] == [[20]]
        smartstore.closeCursor(cursor)
        with pytest.raises(syncstore.ArgumentError, match="smart query specs only"):  # the plugin's message
            smartstore.runSmartQuery(3)
    finally:
        cordova.close_all()


def test_soup_listener_hears_each_commit_once_and_nothing_after_remove(store: syncstore.Store) -> None:
    import threading
    import time
    store.register_soup("contacts", SPECS)
    store.register_soup("other", SPECS)
    heard: list[dict] = []
    lock, arrived = threading.Lock(), threading.Event()

    def on_change(change: dict) -> None:
        with lock:
            heard.append(change)
        arrived.set()

    token = store.add_soup_listener("contacts", on_change)
    stored = store.upsert("contacts", [{"Id": "1"}, {"Id": "2"}])
    store.upsert("other", [{"Id": "x"}])  # another soup: not heard
    with pytest.raises(syncstore.ArgumentError):
        store.upsert("contacts", [{"Id": "3"}, 7])  # rolled back: not heard
    store.remove("contacts", [stored[0]["_soupEntryId"]])

    def commits() -> int:
        with lock:
            return sum(c["commits"] for c in heard)

    deadline = time.monotonic() + 10
    while commits() < 2 and time.monotonic() < deadline:
        arrived.wait(0.05)
        arrived.clear()
    store.remove_listener(token)
    store.upsert("contacts", [{"Id": "4"}])  # after the remove: not heard
    time.sleep(0.2)
    with lock:
        changes = list(heard)
    # Two commits, each told once: in two notices, or merged into one when the second came
    # before the first was told.
    assert sum(c["commits"] for c in changes) == 2 and len(changes) in (1, 2), changes
    assert all(len(c["soups"]) == 1 and c["soups"][0]["soup"] == "contacts" for c in changes), changes
    parts = [c["soups"][0] for c in changes]
    assert [i for p in parts for i in p["inserted"]["ids"]] == [e["_soupEntryId"] for e in stored]
    assert [i for p in parts for i in p["deleted"]["ids"]] == [stored[0]["_soupEntryId"]]
    assert all(c["origin"]["kind"] == "handle" for c in changes)
    assert changes[0]["sequence"] < changes[-1]["sequence"] or len(changes) == 1
    with pytest.raises(syncstore.NotFoundError):
        store.add_soup_listener("nope", on_change)
    with pytest.raises(syncstore.StateError):
        store.remove_listener(token)  # removed already
