"""Sync through ctypes against a real syncstore-devserver process on 127.0.0.1."""
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import syncstore  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
TOKEN = "py-sync-token"


@pytest.fixture
def server():
    binary = os.environ.get("SYNCSTORE_DEVSERVER", str(REPO / ".build/debug/syncstore-devserver"))
    if not os.access(binary, os.X_OK):
        pytest.skip(f"syncstore-devserver is not built at {binary}")
    proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--token", TOKEN, "--seed", "Contact=250"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = proc.stdout.readline().strip()
    assert url.startswith("http"), url
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_sync_down_and_up(server, tmp_path):
    states = []
    done = threading.Event()

    def on_state(state):
        states.append(state)
        if state["status"] in ("DONE", "FAILED", "STOPPED"):
            done.set()

    with syncstore.Store(tmp_path, {"storeName": "py-sync"}) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}])
        store.set_remote({"instanceUrl": server, "accessToken": TOKEN})
        sync_id = store.sync_down({"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "contacts",
                                  {"mergeMode": "OVERWRITE"}, "py-down", on_state)
        assert done.wait(60)
        assert [s["status"] for s in states][0] == "RUNNING"
        assert states[-1]["status"] == "DONE" and states[-1]["totalSize"] == 250
        assert store.get_sync_status("py-down")["_soupEntryId"] == sync_id
        assert store.get_sync_status(987654) is None

        stored = store.upsert("contacts", [{"attributes": {"type": "Contact"}, "LastName": "FromPython",
                                            "__local__": True, "__locally_created__": True}])
        up = store.sync_up("contacts", options={"fieldlist": ["LastName"]})
        final = store.wait_sync(up, 60000)
        assert final["status"] == "DONE", final["error"]
        entry = store.retrieve("contacts", [stored[0]["_soupEntryId"]])[0]
        assert entry["Id"].startswith("003") and entry["__local__"] is False

        with pytest.raises(syncstore.SyncStoreError) as info:
            store.sync_down({"type": "soql", "query": "SELECT Id FROM Contact"}, "contacts", name="py-down")
        assert info.value.name == "SYNCSTORE_ERR_EXISTS"
