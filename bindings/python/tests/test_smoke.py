"""Smoke test of the store through ctypes: a real SQLite file under a temp directory."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import syncstore  # noqa: E402


@pytest.fixture
def store(tmp_path):
    with syncstore.Store(tmp_path, {"storeName": "py"}) as s:
        yield s


def test_version_and_abi():
    lib = syncstore.library()
    assert lib.syncstore_abi_version() == 1
    assert lib.syncstore_version().decode().count(".") == 2


def test_soup_round_trip(store):
    store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "Age", "type": "integer"},
                                     {"path": "Bio", "type": "full_text"}])
    assert store.soup_exists("contacts")
    assert store.get_soup_index_specs("contacts")[1] == {"path": "Age", "type": "integer"}
    stored = store.upsert("contacts", [{"Id": "003A", "Age": 9, "Bio": "grey cat lover"},
                                       {"Id": "003B", "Age": 10, "Bio": "ünïcødé dog"}])
    assert [e["_soupEntryId"] for e in stored] == [1, 2]
    # integer index compares numerically: 9 < 10
    cursor = store.query_soup("contacts", {"queryType": "range", "indexPath": "Age", "beginKey": 9,
                                           "endKey": 10, "order": "descending", "pageSize": 10,
                                           "selectPaths": ["Id"]})
    assert cursor["currentPageOrderedEntries"] == [["003B"], ["003A"]]
    cursor = store.query_soup("contacts", {"queryType": "match", "indexPath": "Bio", "matchKey": "gr*", "pageSize": 5})
    assert [e["Id"] for e in cursor["currentPageOrderedEntries"]] == ["003A"]
    store.close_cursor(cursor["cursorId"])
    rows = store.run_smart_query({"queryType": "smart", "pageSize": 5,
                                  "smartSql": "select {contacts:Bio} from {contacts} where {contacts:Id} = '003B'"})
    assert rows["currentPageOrderedEntries"] == [["ünïcødé dog"]]


def test_errors_are_exceptions_with_codes(store):
    with pytest.raises(syncstore.SyncStoreError) as info:
        store.upsert("missing", [{}])
    assert info.value.name == "SYNCSTORE_ERR_NOT_FOUND" and "missing" in info.value.message
    store.register_soup("s", [{"path": "a", "type": "string"}])
    with pytest.raises(syncstore.SyncStoreError) as info:
        store.upsert("s", "[{\"a\": ")
    assert info.value.code == 1
    with pytest.raises(syncstore.SyncStoreError) as info:
        store.run_smart_query({"queryType": "smart", "smartSql": "select 1; drop table soup_attrs", "pageSize": 1})
    assert info.value.name == "SYNCSTORE_ERR_ARGUMENT"
    assert store.query_soup("s", {"queryType": "range", "pageSize": 10})["totalEntries"] == 0


def test_store_listing_and_removal(tmp_path):
    with syncstore.Store(tmp_path, {"storeName": "a"}):
        with pytest.raises(syncstore.SyncStoreError) as info:
            syncstore.remove_store(tmp_path, {"storeName": "a"})
        assert info.value.name == "SYNCSTORE_ERR_BUSY"
    assert syncstore.list_stores(tmp_path) == ["a"]
    syncstore.remove_store(tmp_path, {"storeName": "a"})
    assert syncstore.list_stores(tmp_path) == []


def test_closed_handle_is_an_error(tmp_path):
    s = syncstore.Store(tmp_path)
    s.close()
    with pytest.raises(syncstore.SyncStoreError) as info:
        s.soup_exists("x")
    assert info.value.name == "SYNCSTORE_ERR_STATE"


def test_store_config_file(store, tmp_path):
    config = tmp_path / "userstore.json"
    config.write_text(json.dumps({"soups": [{"soupName": "accounts", "indexes": [{"path": "Id", "type": "string"}]}]}))
    store.load_store_config(config)
    assert store.soup_exists("accounts")


def test_smart_sql_past_its_time_limit_is_stopped(store):
    """A valid but huge join stops at the spec's timeoutMs with ARGUMENT; the store stays usable."""
    store.register_soup("s", [{"path": "n", "type": "integer"}])
    store.upsert("s", [{"n": i} for i in range(300)])
    spec = {"queryType": "smart", "pageSize": 1, "timeoutMs": 100,
            "smartSql": "select count(*) from {s} a, {s} b, {s} c, {s} d where a.{s:n} + b.{s:n} + c.{s:n} + d.{s:n} = -1"}
    with pytest.raises(syncstore.SyncStoreError) as info:
        store.run_smart_query(spec)
    assert info.value.name == "SYNCSTORE_ERR_ARGUMENT" and "timeoutMs" in info.value.message
    count = store.run_smart_query({"queryType": "smart", "pageSize": 1, "smartSql": "select count(*) from {s}"})
    assert count["currentPageOrderedEntries"] == [[300]]


SECOND_PROCESS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import syncstore
with syncstore.Store(sys.argv[2], {"storeName": "py"}) as s:
    try:
        s.get_sync_status(1)
        print(json.dumps({"ok": True}))
    except syncstore.SyncStoreError as e:
        print(json.dumps({"ok": False, "name": e.name, "retryable": bool(e.retryable)}))
"""


def test_one_process_at_a_time_runs_a_stores_syncs(tmp_path):
    """While this process has the store's sync engine, sync calls in another process get a
    retryable BUSY; once it closes the store, they work."""
    import subprocess

    def other_process():
        out = subprocess.run([sys.executable, "-c", SECOND_PROCESS, str(Path(__file__).resolve().parents[1]), str(tmp_path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    store = syncstore.Store(tmp_path, {"storeName": "py"})
    assert store.get_sync_status(1) is None  # starts this process's sync engine
    assert other_process() == {"ok": False, "name": "SYNCSTORE_ERR_BUSY", "retryable": True}
    store.close()
    assert other_process() == {"ok": True}
