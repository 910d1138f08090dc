"""Custom sync targets written as Python classes (syncstore_register_custom_target)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import syncstore


class MemoryBackend(syncstore.CustomTarget):
    """A backend kept in a dict, paged two records at a time."""

    def __init__(self) -> None:
        self.records: Dict[str, Dict[str, Any]] = {
            f"r{i}": {"Id": f"r{i}", "Name": f"record {i}", "LastModifiedDate": f"2025-01-0{1 + i % 9}T00:00:00.000Z"}
            for i in range(7)}
        self.pushed: List[str] = []
        self.threads: set[str] = set()
        self.next_id = 100

    def fetch_page(self, target: Dict[str, Any], since_ms: int, continuation: Optional[str]) -> Dict[str, Any]:
        self.threads.add(threading.current_thread().name)
        assert target["type"] == "memory"
        ids = sorted(self.records)
        start = int(continuation or 0)
        page: Dict[str, Any] = {"records": [self.records[i] for i in ids[start:start + 2]], "totalSize": len(ids)}
        if start + 2 < len(ids):
            page["next"] = str(start + 2)
        return page

    def remote_ids(self, target: Dict[str, Any]) -> List[Any]:
        return sorted(self.records)

    def push_record(self, target: Dict[str, Any], action: str, record: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        self.pushed.append(action)
        if record.get("Name") == "refused":
            raise syncstore.ServerError("the backend refuses this one")
        if action == "create":
            new_id = f"r{self.next_id}"
            self.next_id += 1
            self.records[new_id] = {"Id": new_id, "Name": record["Name"], "LastModifiedDate": "2025-02-01T00:00:00.000Z"}
            return {"id": new_id}
        if action == "update":
            self.records[record["Id"]]["Name"] = record["Name"]
        elif action == "delete":
            del self.records[record["Id"]]
        return None


class DownOnly(syncstore.CustomTarget):
    """Only fetch_page: the other callbacks are NULL for the engine."""

    def fetch_page(self, target: Dict[str, Any], since_ms: int, continuation: Optional[str]) -> Dict[str, Any]:
        raise KeyError("backend exploded")


def test_python_target_down_up_and_ghosts(store: syncstore.Store) -> None:
    backend = MemoryBackend()
    store.register_soup("items", [{"path": "Id", "type": "string"}, {"path": "Name", "type": "string"}])
    store.register_custom_target("memory", backend)
    down = store.sync_down({"type": "memory"}, "items", {"mergeMode": "OVERWRITE"}, "mem-down")
    assert down.wait(30)["status"] == "DONE"
    assert threading.main_thread().name not in backend.threads
    items = store.query("items", {"queryType": "range", "indexPath": "Id", "pageSize": 3})
    assert [e["Id"] for e in items] == [f"r{i}" for i in range(7)]

    first = items[0]
    store.upsert("items", [dict(first, Name="renamed", __local__=True, __locally_updated__=True),
                           dict(items[1], __local__=True, __locally_deleted__=True),
                           {"Name": "brand new", "__local__": True, "__locally_created__": True},
                           {"Name": "refused", "__local__": True, "__locally_created__": True}])
    up = store.sync_up("items", {"type": "memory"}, {"fieldlist": ["Name"]}, "mem-up").wait(30)
    assert up["status"] == "DONE" and up["errors"] == 1 and up["errorCode"] == syncstore.ServerError.code_value
    assert sorted(backend.pushed) == ["create", "create", "delete", "update"]
    assert backend.records["r0"]["Name"] == "renamed" and "r1" not in backend.records
    refused = store.query("items", {"queryType": "exact", "indexPath": "Name", "matchKey": "refused", "pageSize": 1})
    assert "refuses" in str(refused[0]["__last_error__"])
    created = store.query("items", {"queryType": "exact", "indexPath": "Name", "matchKey": "brand new", "pageSize": 1})
    assert created[0]["Id"] == "r100"

    del backend.records["r2"]
    report = store.clean_resync_ghosts("mem-down").wait(30)
    assert report["status"] == "DONE" and report["removed"] == 1
    assert store.query("items", {"queryType": "exact", "indexPath": "Id", "matchKey": "r2", "pageSize": 1}) == []


def test_exceptions_in_a_target_fail_the_run_cleanly(store: syncstore.Store) -> None:
    store.register_soup("items", [{"path": "Id", "type": "string"}])
    store.register_custom_target("down-only", DownOnly())
    run = store.sync_down({"type": "down-only"}, "items", None, "d")
    state = run.wait(30)
    assert state["status"] == "FAILED" and "backend exploded" in state["error"]
    assert isinstance(run.error, syncstore.SyncStoreError)
    # remote_ids is not implemented: the engine gets NULL and reports it.
    ghosts = store.clean_resync_ghosts("d").wait(30)
    assert ghosts["status"] == "FAILED"
    assert store.query("items", {"queryType": "range", "indexPath": "Id", "pageSize": 1}) == []
    with pytest.raises(TypeError):
        store.register_custom_target("nope", object())  # type: ignore[arg-type]
    with pytest.raises(syncstore.ArgumentError):
        store.register_custom_target("soql", DownOnly())
