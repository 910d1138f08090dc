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
