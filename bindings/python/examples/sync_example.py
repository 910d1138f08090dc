"""Sync with a Salesforce-compatible server: down, offline edit, up. Usage: sync_example.py URL TOKEN"""

import sys
import tempfile

import syncstore

url, token = sys.argv[1], sys.argv[2]


def on_state(state: syncstore.SyncState) -> None:
    # Called on the sync worker thread for every state change.
    print(state["type"], state["status"], state["progress"])


with tempfile.TemporaryDirectory() as root, syncstore.Store(root, {"storeName": "sync"}) as store:
    store.register_soup("contacts", [{"path": "Id", "type": "string"},
                                     {"path": "LastName", "type": "string"}])
    store.set_remote({"instanceUrl": url, "accessToken": token, "apiVersion": "v62.0"})

    down = store.sync_down({"type": "soql", "query": "SELECT Id, LastName, LastModifiedDate FROM Contact"},
                           "contacts", {"mergeMode": "LEAVE_IF_CHANGED"}, "contacts-down", on_state)
    state = down.wait(timeout=60)
    print("downloaded", state["totalSize"])

    # Edit offline: mark the entry as locally updated, then push it.
    first = next(store.query_soup("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 1}))
    first.update(LastName="Edited", __local__=True, __locally_updated__=True)
    store.upsert("contacts", [first])
    up = store.sync_up("contacts", options={"fieldlist": ["LastName"]}, name="contacts-up", callback=on_state)
    print("sync up", up.wait(timeout=60)["status"])

    # Later: fetch what changed since, and drop records deleted on the server.
    print("reSync", store.resync("contacts-down").wait(60)["status"])
    print("ghosts removed", store.clean_resync_ghosts("contacts-down").wait(60)["removed"])
