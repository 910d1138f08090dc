"""The Datasync chaos clients (test_chaos_datasync.py) and its crash host:
`python datasync_host.py ROOT URL TOKEN LOG SEED` writes and syncs in a loop until killed,
appending (fsynced) each local write's key, value and previous value to LOG before making it."""
import json
import os
import random
import sys
import uuid

import syncstore

TOKEN = "chaos-datasync-token"
SOUP = "todo"
TABLE = "todo"
DOWN = {"type": "datasync", "table": TABLE}
UP = {"type": "datasync", "table": TABLE, "createFieldlist": ["key", "owner", "v"], "updateFieldlist": ["key", "owner", "v"]}


class Client:
    """One store; `log` keeps, per key, the last value written locally (None once deleted),
    `wrote` every (key, value) written locally. A client edits and deletes its own rows and,
    with `others` set, those of the other clients too (an edit may meet a row another client
    soft-deleted: pushed with OVERWRITE, it brings the row back)."""

    def __init__(self, root, n, url, rng, journal=None, others=False):
        self.n, self.rng, self.seq, self.journal, self.others = n, rng, rng.randrange(1 << 40), journal, others
        self.store = syncstore.Store(str(root), {"storeName": f"ds{n}"})
        if not self.store.soup_exists(SOUP):
            self.store.register_soup(SOUP, [{"path": "id", "type": "string"}, {"path": "key", "type": "string"},
                                            {"path": "__local__", "type": "string"}])
        self.store.set_remote({"instanceUrl": url, "accessToken": TOKEN, "retryBaseDelayMs": 10,
                               "connectTimeoutMs": 5000, "stallTimeoutMs": 20000})
        self.log = {}
        self.wrote = set()
        # key -> another value accepted at the end (the crash host's last, maybe unmade, write)
        self.also = {}

    def entries(self):
        with self.store.run_smart_query({"queryType": "smart", "smartSql": f"select {{{SOUP}:_soup}} from {{{SOUP}}}",
                                         "pageSize": 100_000}) as cursor:
            return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in cursor.entries]

    def note(self, key, v, prev):
        """The crash host's journal: the write, before it is made."""
        if self.journal:
            self.journal.write(json.dumps({"key": key, "v": v, "prev": prev}) + "\n")
            self.journal.flush()
            os.fsync(self.journal.fileno())

    def value(self):
        self.seq += 1
        return f"c{self.n}-{self.seq}"

    def local_ops(self):
        live = [e for e in self.entries() if not e.get("__locally_deleted__")]
        mine = [e for e in live if e.get("owner") == f"c{self.n}"]
        for _ in range(self.rng.randint(1, 3)):
            key = uuid.UUID(int=self.rng.getrandbits(128), version=4).hex
            v = self.value()
            self.note(key, v, None)
            self.store.upsert(SOUP, [{"key": key, "owner": f"c{self.n}", "v": v, "__local__": True, "__locally_created__": True}])
            self.log[key] = v
            self.wrote.add((key, v))
        picks = self.rng.sample(mine, min(len(mine), self.rng.randint(0, 3)))
        if self.others:
            theirs = [e for e in live if e.get("owner") != f"c{self.n}"]
            picks += self.rng.sample(theirs, min(len(theirs), self.rng.randint(0, 2)))
        for e in picks:
            prev = e["v"]
            if self.rng.random() < 0.2:
                e.update({"__local__": True, "__locally_deleted__": True})
                self.note(e["key"], None, prev)
                self.log[e["key"]] = None
            else:
                e.update({"v": self.value(), "__local__": True})
                if not e.get("__locally_created__"):
                    e["__locally_updated__"] = True
                self.note(e["key"], e["v"], prev)
                self.log[e["key"]] = e["v"]
                self.wrote.add((e["key"], e["v"]))
            self.store.upsert(SOUP, [e])

    def sync(self, kind, timeout_s=120):
        name = f"{kind}{self.n}"
        state = self.store.get_sync_status(name)
        if state is None:
            sid = (self.store.sync_up(SOUP, UP, {"mergeMode": "OVERWRITE"}, name) if kind == "up"
                   else self.store.sync_down(DOWN, SOUP, {"mergeMode": "LEAVE_IF_CHANGED"}, name))
        else:
            sid = state["_soupEntryId"]
            self.store.resync(sid)
        return self.store.wait_sync(sid, int(timeout_s * 1000))


def main():
    root, url, token, log, seed = sys.argv[1:6]
    assert token == TOKEN
    with open(log, "a") as journal:
        journal.write(json.dumps({"start": int(seed)}) + "\n")
        journal.flush()
        client = Client(root, 0, url, random.Random(int(seed)), journal)
        while True:
            client.local_ops()
            client.sync("up")
            client.sync("down")


if __name__ == "__main__":
    main()
