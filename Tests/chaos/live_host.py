"""A live sync client of test_chaos_live.py: one store in its own process, syncing by live sync
alone (a SOQL sync down, LEAVE_IF_CHANGED, kept current by change events; a sync up, OVERWRITE,
run by host writes), making the local writes the test asks for.

    python live_host.py ROOT URL CLIENT LOG LIVE_OPTIONS_JSON API_VERSION

At start it opens the store (creating the soup and the two syncs the first time), settles the
last write its previous life logged but may not have made (a SIGKILL between the write and its
log line), starts live sync and prints "ok ready". Then it reads commands on stdin, one a line:

    ops N SEED MIN_MS MAX_MS   N local writes (Random(SEED)), a pause of MIN_MS-MAX_MS before each
    dump PATH                  writes {"entries", "live", "syncs"} to PATH (JSON)
    state                      prints "ok state <live sync state JSON>"
    quit                       stops live sync, closes the store, exits 0

and answers each with a line starting "ok ". Every other line it prints is progress ("# ..."):
its writes, live sync's state changes and the runs that did not end DONE.

The log (fsynced, JSON lines): {"t": "intent", "seq", "op": "create" | "edit" | "delete", "key",
"field", "value", "owner"?} before a write, {"t": "done", "seq"} after it, {"t": "undone", "seq"}
when a new life finds that a logged write was not made. Values are "c<CLIENT>-<seq>"; seq goes on
from the log across lives.

Data model (test_chaos_live.py): every record has one writer, its Owner__c (c0, c1, c2 or srv for
the server side). Its creator sets Name, Key__c, Owner__c and its own value field V<creator>__c;
afterwards only the writer changes it: its value field V<writer>__c, or a delete. A client
creates records it writes itself, and some for another client or the server to write; it edits
and deletes the records it writes, whoever created them.
"""
import json
import os
import random
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chaos_lib  # noqa: E402
from chaos_lib import DOWN_QUERY, SOUP, SOUP_INDEXES, TYPE, VALUE_FIELDS, entries, flag, remote_config  # noqa: E402

WRITERS = ["c0", "c1", "c2", "srv"]

out_lock = threading.Lock()


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class LiveHost:
    def __init__(self, root, url, client, log_path, live_options, api_version):
        self.client = client
        self.owner = f"c{client}"
        self.field = VALUE_FIELDS[client]
        self.log_path = log_path
        self.live_options = live_options
        self.seq = 0
        self.last_state = None
        self.store = chaos_lib.open_store(root)
        if not self.store.soup_exists(SOUP):
            self.store.register_soup(SOUP, SOUP_INDEXES)
        self.store.set_remote(remote_config(url, apiVersion=api_version))
        if self.store.get_sync_status("down") is None:
            self.store.create_sync_down({"type": "soql", "query": DOWN_QUERY}, SOUP, {"mergeMode": "LEAVE_IF_CHANGED"}, "down")
        if self.store.get_sync_status("up") is None:
            target = {"type": "collection", "maxBatchSize": 5,
                      "createFieldlist": ["Name", "Key__c", "Owner__c", self.field], "updateFieldlist": [self.field]}
            self.store.create_sync_up(SOUP, target, {"mergeMode": "OVERWRITE"}, "up")
        self.settle_log()
        self.log = open(log_path, "a")

    # -- the log --

    def record(self, item):
        self.log.write(json.dumps(item) + "\n")
        self.log.flush()
        os.fsync(self.log.fileno())

    def settle_log(self):
        """Reads the log of the previous lives: the next seq, and whether a last intent with no
        outcome (the process was killed around the write) was made, judged from the store."""
        pending = None
        if os.path.exists(self.log_path):
            with open(self.log_path) as f:
                for line in f:
                    if not line.endswith("\n"):
                        break          # a line cut by the kill: never a whole intent (written in one call)
                    item = json.loads(line)
                    self.seq = max(self.seq, item.get("seq", 0))
                    if item["t"] == "intent":
                        pending = item
                    elif pending and item.get("seq") == pending["seq"]:
                        pending = None
            # drop a torn last line so the log stays JSON lines
            with open(self.log_path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        if pending is None:
            return
        by_key = [e for e in entries(self.store) if e.get("Key__c") == pending["key"]]
        e = by_key[0] if by_key else None
        if pending["op"] == "create":
            made = e is not None
        elif pending["op"] == "edit":
            made = e is not None and e.get(pending["field"]) == pending["value"]
        else:
            made = e is None or flag(e.get("__locally_deleted__"))
        with open(self.log_path, "a") as f:
            f.write(json.dumps({"t": "done" if made else "undone", "seq": pending["seq"], "settled": True}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        say(f"# settled seq {pending['seq']} ({pending['op']} {pending['key'][:8]}): {'made' if made else 'not made'}")

    # -- live sync --

    def on_event(self, event):
        if event.get("event") == "state":
            ce = event.get("changeEvents") or {}
            text = (f"{event.get('state')} stream={ce.get('state')} events={ce.get('events')}"
                    + (f" skipped={ce['skipped']}" if ce.get("skipped") else "")
                    + (f" error={str(event['error'])[:160]!r}" if event.get("error") else "")
                    + (f" stream_error={str(ce['error'])[:160]!r}" if ce.get("error") else ""))
            if text != self.last_state:
                self.last_state = text
                say(f"# {time.time():.3f} state {text}")
        elif event.get("event") == "run":
            s = event.get("sync") or {}
            if s.get("status") in ("FAILED", "STOPPED") or (s.get("status") == "DONE" and s.get("errorCode")):
                say(f"# {time.time():.3f} run {s.get('name')} {s.get('status')} {str(s.get('error'))[:200]!r}")

    def start_live(self):
        self.store.start_live_sync(self.live_options, self.on_event)

    # -- local writes --

    def next_value(self):
        self.seq += 1
        return self.seq, f"{self.owner}-{self.seq}"

    def mine(self):
        return [e for e in entries(self.store) if e.get("Owner__c") == self.owner and not flag(e.get("__locally_deleted__"))]

    def create(self, rng):
        seq, value = self.next_value()
        key = uuid.UUID(int=rng.getrandbits(128), version=4).hex
        writer = self.owner if rng.random() < 0.7 else rng.choice([w for w in WRITERS if w != self.owner])
        entry = {"attributes": {"type": TYPE}, "Name": f"n-{key[:10]}-{self.owner}", "Key__c": key, "Owner__c": writer,
                 self.field: value, "__local__": True, "__locally_created__": True, "__locally_updated__": False,
                 "__locally_deleted__": False}
        self.record({"t": "intent", "seq": seq, "op": "create", "key": key, "field": self.field, "value": value, "owner": writer,
                     "name": entry["Name"]})
        self.store.upsert(SOUP, [entry])
        self.record({"t": "done", "seq": seq})
        say(f"# op {seq} create {key[:8]} writer={writer} {self.field}={value}")

    def edit(self, e):
        current = self.store.retrieve(SOUP, [e["_soupEntryId"]])
        if not current or flag(current[0].get("__locally_deleted__")):
            return
        e = current[0]
        seq, value = self.next_value()
        e[self.field] = value
        e["__local__"] = True
        if not flag(e.get("__locally_created__")):
            e["__locally_updated__"] = True
        self.record({"t": "intent", "seq": seq, "op": "edit", "key": e["Key__c"], "field": self.field, "value": value})
        self.store.upsert(SOUP, [e])
        self.record({"t": "done", "seq": seq})
        say(f"# op {seq} edit {e['Key__c'][:8]} {self.field}={value}")

    def delete(self, e):
        current = self.store.retrieve(SOUP, [e["_soupEntryId"]])
        if not current or flag(current[0].get("__locally_deleted__")):
            return
        e = current[0]
        self.seq += 1
        seq = self.seq
        e["__local__"] = True
        e["__locally_deleted__"] = True
        self.record({"t": "intent", "seq": seq, "op": "delete", "key": e["Key__c"]})
        self.store.upsert(SOUP, [e])
        self.record({"t": "done", "seq": seq})
        say(f"# op {seq} delete {e['Key__c'][:8]}")

    def ops(self, n, seed, min_ms, max_ms):
        rng = random.Random(seed)
        for _ in range(n):
            time.sleep(rng.uniform(min_ms, max_ms) / 1000)
            mine = self.mine()
            op = rng.choices(["create", "edit", "burst", "delete"], [30, 45, 10, 15])[0]
            if op == "create" or not mine:
                self.create(rng)
            elif op == "edit":
                self.edit(rng.choice(mine))
            elif op == "burst":       # the same record edited again and again, faster than the debounce
                e = rng.choice(mine)
                for _ in range(rng.randint(2, 5)):
                    self.edit(e)
                    time.sleep(rng.uniform(0, 0.02))
            else:
                self.delete(rng.choice(mine))

    def dump(self, path):
        syncs = {name: self.store.get_sync_status(name) for name in ("up", "down")}
        doc = {"entries": entries(self.store), "live": self.store.live_sync_state(),
               "syncs": {k: {f: (v or {}).get(f) for f in ("status", "error", "maxTimeStamp", "endTime")} for k, v in syncs.items()}}
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)


def main():
    root, url, client, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    options, api = json.loads(sys.argv[5]), sys.argv[6]
    host = LiveHost(root, url, client, log_path, options, api)
    host.start_live()
    say(f"# {time.time():.3f} pid {os.getpid()} live sync started {json.dumps(options)}")
    say("ok ready")
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "ops":
            host.ops(int(parts[1]), int(parts[2]), float(parts[3]), float(parts[4]))
            say("ok ops")
        elif cmd == "dump":
            host.dump(parts[1])
            say("ok dump")
        elif cmd == "state":
            say("ok state " + json.dumps(host.store.live_sync_state()))
        elif cmd == "quit":
            host.store.stop_live_sync()
            host.store.close()
            say("ok quit")
            return
        else:
            say(f"ok error unknown command {cmd!r}")


if __name__ == "__main__":
    main()
