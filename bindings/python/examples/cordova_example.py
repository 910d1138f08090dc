"""Porting hybrid-app code: the Cordova smartstore / mobilesync names, values instead of callbacks.
Usage: cordova_example.py URL TOKEN"""

import sys
import tempfile

from syncstore import mobilesync, smartstore

scratch = tempfile.TemporaryDirectory()  # the stores' directory, removed at the end
smartstore.init(scratch.name)
config = {"storeName": "hybrid", "isGlobalStore": False}
smartstore.registerSoup(config, "contacts", [{"path": "Id", "type": "string"}])
mobilesync.setRemote(config, {"instanceUrl": sys.argv[1], "accessToken": sys.argv[2]})

run = mobilesync.syncDown(config, {"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "contacts",
                          {"mergeMode": mobilesync.MERGE_MODE.OVERWRITE}, "hybrid-down")
print("syncDown", run.wait(60)["status"])

cursor = smartstore.querySoup(config, "contacts", smartstore.buildAllQuerySpec("Id", "ascending", 5))
print("entries", cursor["totalEntries"], "first page", len(cursor["currentPageOrderedEntries"]))
smartstore.closeCursor(config, cursor)

smartstore.close_all()
scratch.cleanup()
