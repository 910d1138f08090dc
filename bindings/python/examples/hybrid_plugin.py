"""The hybrid plugins' native half: the calls cordova.force.js makes (service, action, args),
answered by the library's dispatcher as the Mobile SDK's plugins answer them.
Usage: hybrid_plugin.py URL TOKEN"""

import sys
import tempfile
import threading
from typing import Any, Dict

import syncstore
from syncstore.plugin import MOBILESYNC, SMARTSTORE, Plugin

scratch = tempfile.TemporaryDirectory()  # the stores' directory, removed at the end
finished: Dict[str, Any] = {}
done = threading.Event()


def on_event(name: str, detail: Dict[str, Any]) -> None:
    # The document event a hybrid page listens to; called on the library's sync worker thread.
    if name == "sync" and detail["status"] in ("DONE", "FAILED"):
        finished.update(detail)
        done.set()


# The logged-in user's credentials serve every store the plugin opens.
with Plugin(scratch.name, remote={"instanceUrl": sys.argv[1], "accessToken": sys.argv[2]}) as plugin:
    plugin.on_event(on_event)
    plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "contacts", "indexes": [{"path": "Id", "type": "string"}]}])
    started = plugin.exec(MOBILESYNC, "syncDown", [{
        "soupName": "contacts", "options": {"mergeMode": "OVERWRITE"},
        "target": {"type": "soql", "query": "SELECT Id, LastName FROM Contact"}}])
    done.wait(60)
    print("sync", finished["status"], finished["totalSize"], "in", finished["storeName"])

    cursor = plugin.exec(SMARTSTORE, "pgQuerySoup", [{
        "soupName": "contacts", "querySpec": {"queryType": "range", "indexPath": "Id", "pageSize": 5}}])
    print("entries", cursor["totalEntries"], "first page", len(cursor["currentPageOrderedEntries"]))
    plugin.exec(SMARTSTORE, "pgCloseCursor", [{"cursorId": cursor["cursorId"]}])

    try:
        plugin.exec(SMARTSTORE, "pgClearSoup", [{"soupName": "nothing"}])
    except syncstore.NotFoundError as e:  # the plugin's error message, as the error callback gets it
        print("error", e.name)
    removed = plugin.exec(MOBILESYNC, "cleanResyncGhosts", [{"syncId": started["_soupEntryId"]}], timeout=60)
    print("ghosts removed", removed)

scratch.cleanup()
