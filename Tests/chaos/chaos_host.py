"""The crash host: an app process that works on its store until it is SIGKILLed.

    python3 chaos_host.py ROOT URL LOG SEED CLIENT [VARIANT [OPTIONS_JSON]]

Runs random local creates, edits and deletes (flagged as hosts do, docs/smartstore.md#local-change-flags) and syncs
(sync up collection and single, sync down reSync, cleanResyncGhosts, stop + restart, and sync ups
with an edit made while the request is at the server) against the dev server at URL, forever.
Every local write is appended to LOG (JSON lines) and fsynced *before* it is made, so the
checker knows that every logged write but the last one happened. Exit codes: 3 = a run did not
end in time (liveness), 4 = an unexpected error (traceback on stderr).
OPTIONS_JSON: {"store": {...added to the store config: "key", "kdfIter"}, "canary": "..."} (the
encrypted run: the store is opened with its key, and created records and edits carry the canary).
"""
import json
import os
import random
import sys
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_lib  # noqa: E402
from chaos_lib import Host, SyncTimeout, entries, flag  # noqa: E402

SYNC_TIMEOUT_S = 60


def last_seq(log_path, client):
    seq = 0
    if os.path.exists(log_path):
        with open(log_path) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut by the kill: its write never started
                if rec.get("client") == client:
                    seq = max(seq, rec.get("seq", 0))
    return seq


class Log:
    def __init__(self, path):
        self.f = open(path, "a")

    def __call__(self, record):
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def admin_faults(url):
    with urllib.request.urlopen(urllib.request.Request(url + "/__devserver/faults", headers={"Connection": "close"}), timeout=10) as r:
        return r.read().decode()


def main():
    root, url, log_path, seed, client = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    variant = sys.argv[6] if len(sys.argv) > 6 else "post"
    options = json.loads(sys.argv[7]) if len(sys.argv) > 7 else {}
    rng = random.Random(seed)
    log = Log(log_path)
    store = chaos_lib.open_store(root, options.get("store"))
    host = Host(store, client, log, rng, variant=variant, seq_start=last_seq(log_path, client),
                canary=options.get("canary"))
    host.setup(url)

    def local():
        return entries(store)

    def pick(items):
        return rng.choice(items) if items else None

    ops = ["create", "edit", "delete", "up", "up_single", "inflight", "down", "ghosts", "stop"]
    weights = [18, 22, 8, 16, 5, 7, 14, 4, 6]
    while True:
        op = rng.choices(ops, weights)[0]
        if op == "create":
            for _ in range(rng.randint(1, 3)):
                host.create(shared=False)
        elif op == "edit":
            for _ in range(rng.randint(1, 3)):
                e = pick(host.editable(local()))
                if e:
                    host.edit(e["_soupEntryId"])
        elif op == "delete":
            e = pick([x for x in host.editable(local()) if x.get("Owner__c") == host.owner])
            if e:
                host.delete(e["_soupEntryId"])
        elif op in ("up", "up_single"):
            host.sync_up("collection" if op == "up" else "single", SYNC_TIMEOUT_S)
        elif op == "down":
            host.sync_down(SYNC_TIMEOUT_S)
        elif op == "ghosts":
            host.ghosts(SYNC_TIMEOUT_S)
        elif op == "stop":
            host.stop_while_running(rng, 0.08, SYNC_TIMEOUT_S)
        elif op == "inflight":
            # An edit made while the entry's own sync up request is at the server (the write
            # rules hold every write 40+ ms before handling it, so the edit lands before the
            # engine writes the outcome: the entry must stay dirty with the new value).
            e = pick(host.editable(local()))
            if not e:
                continue
            host.edit(e["_soupEntryId"])
            before = chaos_lib.write_matches(admin_faults(url))
            sid = host.start_up(rng.choice(["collection", "collection", "single"]))
            deadline = time.time() + 3
            while time.time() < deadline and chaos_lib.write_matches(admin_faults(url)) == before:
                time.sleep(0.002)
            if time.time() < deadline:
                dirty = [x for x in host.editable(local()) if flag(x.get("__local__"))]
                target = e if rng.random() < 0.6 else pick(dirty)
                if target:
                    host.edit(target["_soupEntryId"])
            host.wait(sid, SYNC_TIMEOUT_S)


if __name__ == "__main__":
    try:
        main()
    except SyncTimeout as e:
        print(f"LIVENESS: {e}", file=sys.stderr, flush=True)
        sys.exit(3)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        sys.exit(4)
