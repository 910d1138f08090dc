"""First steps: a store, a soup, entries and a query (no server needed)."""

import sys
import tempfile

import syncstore

# The stores' directory: the first argument, else a scratch directory removed at the end.
scratch = tempfile.TemporaryDirectory()
root = sys.argv[1] if len(sys.argv) > 1 else scratch.name

with syncstore.Store(root, {"storeName": "app"}) as store:
    store.register_soup("contacts", [{"path": "Id", "type": "string"},
                                     {"path": "LastName", "type": "string"},
                                     {"path": "Age", "type": "integer"}])
    store.upsert("contacts", [{"Id": "003A", "LastName": "Ng", "Age": 34},
                              {"Id": "003B", "LastName": "Okafor", "Age": 27}])

    # A query gives a cursor; iterating it pages through every result, then closes it.
    spec = {"queryType": "range", "indexPath": "Age", "beginKey": 30, "pageSize": 50}
    for entry in store.query_soup("contacts", spec):
        print(entry["LastName"], entry["Age"])

    try:
        store.upsert("no-such-soup", [{}])
    except syncstore.NotFoundError as e:
        print("error", e.code, e.name)

scratch.cleanup()
