"""The rekey host: opens the rekey test's store and changes its key again and again until it is
SIGKILLed (test_chaos_rekey.py).

    python3 rekey_host.py ROOT LOG SEED KEYS_JSON CURRENT

KEYS_JSON: {"A": "x'<64 hex>'", "B": "<passphrase>", "kdfIter": 1000, "entries": N}; CURRENT: the key the
store opens with now ("A", "B" or "none"). Prints "ready" once the store is open, then loops:
sometimes edits one entry (read, new "val", upsert), then changes the key: A -> B or B -> A
mostly, A or B -> none (plaintext) sometimes, none -> A (and reopens the store with A and its
kdfIter, as an app would). Every step is
appended to LOG (JSON lines) and fsynced *before* it is made ("edit", "intent" with from/to),
and "done" after a change returned, so the checker knows which keys the store may have and which
edits happened. Exit code 4 = an unexpected error (traceback on stderr).
"""
import json
import os
import random
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_lib  # noqa: E402
import syncstore  # noqa: E402

STORE_NAME = "rekey"
SOUP = "rk"


def store_config(keys, name):
    """The store config that opens the store when its key is `name` ("A", "B" or "none")."""
    if name == "none":
        return {"storeName": STORE_NAME}
    return {"storeName": STORE_NAME, "key": keys[name], "kdfIter": keys["kdfIter"]}


def next_key(rng, current):
    if current == "none":
        return "A"
    if rng.random() < 0.2:
        return "none"
    return "B" if current == "A" else "A"


class Log:
    def __init__(self, path):
        self.f = open(path, "a")

    def __call__(self, record):
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def main():
    root, log_path, seed, keys, current = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
    rng = random.Random(seed)
    log = Log(log_path)
    store = syncstore.Store(root, store_config(keys, current))
    log({"op": "start", "key": current, "pid": os.getpid()})
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        if rng.random() < 0.5:
            k = rng.randrange(keys["entries"])
            found = store.find(SOUP, {"queryType": "exact", "indexPath": "k", "matchKey": k, "pageSize": 2})
            if len(found) != 1:
                raise RuntimeError(f"entry k={k}: the exact query on k gives {len(found)} entries")
            e = found[0]
            e["val"] = f"e{os.getpid()}-{n}"
            e["__local__"] = True
            e["__locally_updated__"] = True
            log({"op": "edit", "k": k, "val": e["val"]})
            store.upsert(SOUP, [e], return_entries=False)
        target = next_key(rng, current)
        log({"op": "intent", "from": current, "to": target})
        chaos_lib.change_key(store, None if target == "none" else keys[target])
        log({"op": "done", "to": target})
        if current == "none":
            # The key just set took the default kdfIter (a plaintext store has no other): open
            # the store again with the kdfIter its later keys must use.
            store.close()
            store = syncstore.Store(root, store_config(keys, target))
        current = target


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        sys.exit(4)
