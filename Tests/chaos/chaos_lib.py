"""Shared pieces of the chaos suite: the dev server process, the objects and soups the hosts
sync, the host operations (local writes logged before they are made, syncs), and the checks.

Stdlib only (plus the ctypes binding): the server is read through urllib with a fresh
connection per request, so the checker itself never resends anything.

Data model. One server object, Chaos__c. Every entry a host creates carries a unique client
key (Key__c, a UUID) and its owner (Owner__c = "c<N>", "srv" for records another user makes on
the server). Client N writes only its own value field V<N>__c (sync up sends only that field
on update), so each (key, field) has a single writer and "latest value wins" can be checked
exactly: the server must end with the last value that client logged. Values are "c<N>-<seq>",
seq increasing per client, so a server value can be ordered against the client's log.
Private keys may be deleted by their owner only; shared keys are edited by every client and
never deleted (an update of a record another client deleted would be re-created by OVERWRITE,
by design, and make the key look duplicated).
"""
import json
import os
import random
import re
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
import syncstore  # noqa: E402  (the installed package: pip install ./bindings/python)

sys.path.insert(0, str(REPO / "Tests" / "support"))
import devserver_process  # noqa: E402  (the shared dev server fixture)

TOKEN = "chaos-token"
API_VERSION = "v62.0"
STORE_NAME = "chaos"
SOUP = "chaos"
TYPE = "Chaos__c"
VALUE_FIELDS = ["V0__c", "V1__c", "V2__c", "V3__c"]
# Compared between a local entry and its server record once converged.
DATA_FIELDS = ["Name", "Key__c", "Owner__c", "Shared__c"] + VALUE_FIELDS
DOWN_QUERY = ("SELECT Id, Name, Key__c, Ext__c, Owner__c, Shared__c, V0__c, V1__c, V2__c, V3__c, "
              "Email__c, LastModifiedDate FROM Chaos__c")
SOUP_INDEXES = [{"path": "Id", "type": "string"}, {"path": "Key__c", "type": "string"},
                {"path": "__local__", "type": "string"}]
# A local create's flags, as the host sets them.
DIRTY_NEW = {"__local__": True, "__locally_created__": True, "__locally_updated__": False, "__locally_deleted__": False}
# Parents (ChaosParent__c) and their children (ChaosChild__c, Parent__c), pushed in composite requests.
PC_TARGET = {"type": "parent_children",
             "parent": {"sobjectType": "ChaosParent__c", "soupName": "parents", "idFieldName": "Id"},
             "children": {"sobjectType": "ChaosChild__c", "soupName": "children", "parentIdFieldName": "Parent__c"},
             "parentCreateFieldlist": ["Name", "Key__c", "V__c"], "parentUpdateFieldlist": ["V__c"],
             "childrenCreateFieldlist": ["Name", "Key__c", "V__c"], "childrenUpdateFieldlist": ["V__c"]}

SCHEMA = {"sobjects": [
    {"name": "Chaos__c", "label": "Chaos", "labelPlural": "Chaos", "keyPrefix": "a0C", "custom": True, "fields": [
        {"name": "Name", "type": "string", "length": 80, "required": True, "nameField": True},
        {"name": "Key__c", "type": "string", "length": 64},
        {"name": "Ext__c", "type": "string", "length": 64, "externalId": True},
        {"name": "Owner__c", "type": "string", "length": 8},
        {"name": "Shared__c", "type": "boolean"},
        {"name": "V0__c", "type": "string", "length": 40},
        {"name": "V1__c", "type": "string", "length": 40},
        {"name": "V2__c", "type": "string", "length": 40},
        {"name": "V3__c", "type": "string", "length": 40},
        # Long on purpose: an invalid address is echoed whole in the error, so a test can make
        # the server refuse a record with an error body of any size.
        {"name": "Email__c", "type": "email", "length": 4000000},
    ]},
    {"name": "ChaosParent__c", "label": "Chaos Parent", "labelPlural": "Chaos Parents", "keyPrefix": "a0P", "custom": True, "fields": [
        {"name": "Name", "type": "string", "length": 80, "required": True, "nameField": True},
        {"name": "Key__c", "type": "string", "length": 64},
        {"name": "V__c", "type": "string", "length": 40},
    ]},
    {"name": "ChaosChild__c", "label": "Chaos Child", "labelPlural": "Chaos Children", "keyPrefix": "a0K", "custom": True, "fields": [
        {"name": "Name", "type": "string", "length": 80, "required": True, "nameField": True},
        {"name": "Key__c", "type": "string", "length": 64},
        {"name": "V__c", "type": "string", "length": 40},
        {"name": "Parent__c", "type": "reference", "referenceTo": "ChaosParent__c", "relationshipName": "Parent__r",
         "childRelationshipName": "Children__r", "cascadeDelete": True},
    ]},
]}


def env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def env_seed():
    """CHAOS_SEED, else a fresh random seed (printed by the tests, so a failure can be rerun)."""
    value = os.environ.get("CHAOS_SEED", "").strip()
    return int(value) if value else random.SystemRandom().randrange(1, 2**31)


def flag(value):
    """The engine's reading of a local flag: true, 1, "true", "1"."""
    return value is True or value == 1 or value in ("true", "1")


def library_path():
    return syncstore.library_path()


# ---------------------------------------------------------------------------------------------
# The dev server


class DevServer(devserver_process.DevServer):
    """A syncstore-devserver process on 127.0.0.1 with --admin, the chaos schema and tiny pages;
    its log in <workdir>/devserver.stderr."""

    def __init__(self, workdir, *args, batch=7):
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        schema = workdir / "chaos-schema.json"
        schema.write_text(json.dumps(SCHEMA))
        args = ("--admin", "--schema", str(schema), "--min-batch-size", "1", "--default-batch-size", str(batch), *args)
        if os.environ.get("CHAOS_VERBOSE"):
            args += ("--verbose",)  # every request, with its injected fault, in devserver.stderr
        super().__init__(*args, token=TOKEN, api_version=API_VERSION, stderr=workdir / "devserver.stderr")

    # -- plain HTTP, one connection per request --

    def request(self, method, path, body=None, headers=None, timeout=60):
        url = path if path.startswith("http") else (self.url + path if path.startswith("/") else f"{self.api}/{path}")
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        if isinstance(data, str):
            data = data.encode()
        h = {"Authorization": f"Bearer {TOKEN}", "Connection": "close"}
        if data is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, (json.loads(text) if text.strip().startswith(("{", "[")) else text)
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def ok(self, method, path, body=None, headers=None):
        status, payload = self.request(method, path, body, headers)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path} -> {status} {payload}")
        return payload

    def set_faults(self, spec):
        status, text = self.request("PUT", "/__devserver/faults", spec.encode())
        if status != 200:
            raise RuntimeError(f"bad fault spec {spec!r}: {text}")
        return text

    def faults(self):
        return self.request("GET", "/__devserver/faults")[1]

    def clear_faults(self):
        self.request("DELETE", "/__devserver/faults")

    def set_clock(self, seconds):
        return self.ok("PUT", "/__devserver/clock", {"offsetSeconds": seconds})

    def query_all(self, soql):
        """Every record of a query, following nextRecordsUrl (pages of 2000)."""
        page = self.ok("GET", "query?q=" + urllib.parse.quote(soql), headers={"Sforce-Query-Options": "batchSize=2000"})
        records = list(page["records"])
        seen = set()
        while not page.get("done", True):
            nxt = page["nextRecordsUrl"]
            if nxt in seen:
                raise RuntimeError(f"the server repeats {nxt} (a repeat-locator fault still on?)")
            seen.add(nxt)
            page = self.ok("GET", nxt, headers={"Sforce-Query-Options": "batchSize=2000"})
            records += page["records"]
        return records

    def records(self, type_=TYPE):
        fields = "Id, Name, Key__c, Owner__c, Shared__c, V0__c, V1__c, V2__c, V3__c, LastModifiedDate" if type_ == TYPE \
            else "Id, Name, Key__c, V__c" + (", Parent__c" if type_ == "ChaosChild__c" else "")
        return self.query_all(f"SELECT {fields} FROM {type_}")


def write_matches(faults_text):
    """Requests the write-latency rules have seen (`GET /__devserver/faults`): a write reached the server."""
    total = 0
    for line in faults_text.splitlines():
        m = re.match(r"rule: (POST|PATCH|DELETE) \* latency=\S+ \(matched (\d+),", line)
        if m:
            total += int(m.group(2))
    return total


def duplicates(records):
    """Keys held by more than one live server record: {key: [ids]}."""
    by_key = {}
    for r in records:
        by_key.setdefault(r.get("Key__c"), []).append(r["Id"])
    return {k: ids for k, ids in by_key.items() if k is not None and len(ids) > 1}


def value_seq(value):
    """The sequence number in a client value "c<N>-<seq>" (None for other values)."""
    m = re.fullmatch(r"c\d+-(\d+)", value or "")
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------
# The store side


def register_parent_children(store):
    """The soups of PC_TARGET: parents and children, each by Id, Key__c and __local__ (children by
    Parent__c too)."""
    store.register_soup("parents", [{"path": "Id", "type": "string"}, {"path": "Key__c", "type": "string"},
                                    {"path": "__local__", "type": "string"}])
    store.register_soup("children", [{"path": "Id", "type": "string"}, {"path": "Key__c", "type": "string"},
                                     {"path": "Parent__c", "type": "string"}, {"path": "__local__", "type": "string"}])


def open_store(root, config=None):
    """The chaos store under `root`; `config` adds to the store config (an encrypted run's "key"
    and "kdfIter")."""
    return syncstore.Store(root, {"storeName": STORE_NAME, **(config or {})})


def change_key(store, new_key):
    """syncstore_change_key: Store.change_key when the installed package has it, else the C
    function through the package's ctypes library."""
    if hasattr(store, "change_key"):
        store.change_key(new_key)
        return
    import ctypes
    from syncstore import _lib
    fn = _lib.lib().syncstore_change_key
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_lib.Error)], ctypes.c_int
    _lib.call(fn, store._p(), _lib.enc(new_key))


def db_path(root):
    return Path(root) / "user" / f"{STORE_NAME}.db"


def integrity(root):
    """PRAGMA integrity_check of the store file, read-only (call after the engine closed it)."""
    conn = sqlite3.connect(f"file:{db_path(root)}?mode=ro", uri=True, timeout=30)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def entries(store, soup=SOUP):
    """Every entry of the soup (one Smart SQL page); none when the soup does not exist yet (a host
    killed before its setup registered it)."""
    if not store.soup_exists(soup):
        return []
    with store.run_smart_query({"queryType": "smart", "smartSql": f"select {{{soup}:_soup}} from {{{soup}}}",
                                "pageSize": 100_000}) as cursor:
        rows = cursor.entries
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


def raw_sync_states(store):
    """The persisted sync states as stored, read with Smart SQL (no sync API call)."""
    if not store.soup_exists("syncs_soup"):
        return []
    return entries(store, "syncs_soup")


def remote_config(url, **extra):
    config = {"instanceUrl": url, "accessToken": TOKEN, "apiVersion": API_VERSION, "retryBaseDelayMs": 10,
              # The dev server holds a write at most 120 ms (latency rules): a create unanswered
              # for 1.5 s is settled.
              "createSettleMs": 1500,
              "connectTimeoutMs": 5000, "stallTimeoutMs": 20000}
    config.update(extra)
    return config


class SyncTimeout(Exception):
    """A run did not end in time: the liveness failure."""


# ---------------------------------------------------------------------------------------------
# A host: what an app does with the store (local writes flagged as docs/smartstore.md#local-change-flags says, syncs)


class Host:
    """One client's store and the operations of the chaos runs.

    `log(record)` is called before every local write with what is about to be written; the
    crash host makes it an fsynced file append. `variant` "post" creates with POST (sent-at
    mark + lost-create adoption), "ext" with upserts on Ext__c."""

    CREATE_FIELDS = ["Name", "Key__c", "Owner__c", "Shared__c"]

    def __init__(self, store, client, log, rng, variant="post", seq_start=0, batch=3, canary=None):
        self.store = store
        # A string every created record (Name) and every edit (a local "Memo" field) carries:
        # an encrypted run checks it is never in the store's files.
        self.canary = canary
        self.client = client
        self.owner = f"c{client}"
        self.field = VALUE_FIELDS[client]
        self.log = log
        self.rng = rng
        self.variant = variant
        self.seq = seq_start
        self.batch = batch

    # -- setup --

    def up_target(self, kind):
        target = {"type": kind, "createFieldlist": self.CREATE_FIELDS + [self.field], "updateFieldlist": [self.field]}
        if kind == "collection":
            target["maxBatchSize"] = self.batch
        if self.variant == "ext":
            target["externalIdFieldName"] = "Ext__c"
        return target

    def setup(self, url, **remote):
        if not self.store.soup_exists(SOUP):
            self.store.register_soup(SOUP, SOUP_INDEXES)
        self.store.set_remote(remote_config(url, **remote))

    def sync_id(self, name):
        state = self.store.get_sync_status(name)
        return None if state is None else state["_soupEntryId"]

    # -- local writes --

    def next_value(self):
        self.seq += 1
        return self.seq, f"{self.owner}-{self.seq}"

    def create(self, shared=False):
        seq, value = self.next_value()
        key = uuid.UUID(int=self.rng.getrandbits(128), version=4).hex
        name = f"n-{key[:12]}" + (f"-{self.canary}" if self.canary else "")
        entry = {"attributes": {"type": TYPE}, "Name": name, "Key__c": key, "Owner__c": self.owner,
                 "Shared__c": bool(shared), self.field: value, **DIRTY_NEW}
        self.log({"op": "create", "client": self.client, "seq": seq, "key": key, "field": self.field, "value": value,
                  "shared": bool(shared), "t": time.time()})
        self.store.upsert(SOUP, [entry])
        return key

    def editable(self, items):
        return [e for e in items if not flag(e.get("__locally_deleted__"))
                and (e.get("Owner__c") == self.owner or flag(e.get("Shared__c")) or e.get("Shared__c") is True)]

    def edit(self, entry_id):
        """Read-modify-write of one entry: the stored entry, or False when it is gone or deleted."""
        current = self.store.retrieve(SOUP, [entry_id])
        if not current or flag(current[0].get("__locally_deleted__")):
            return False
        e = current[0]
        seq, value = self.next_value()
        e[self.field] = value
        if self.canary:
            e["Memo"] = f"{self.canary} {value}"
        e["__local__"] = True
        if not flag(e.get("__locally_created__")):
            e["__locally_updated__"] = True
        self.log({"op": "edit", "client": self.client, "seq": seq, "key": e.get("Key__c"), "field": self.field,
                  "value": value, "entry": entry_id, "t": time.time()})
        return self.store.upsert(SOUP, [e])[0]

    def delete(self, entry_id):
        current = self.store.retrieve(SOUP, [entry_id])
        if not current or flag(current[0].get("__locally_deleted__")):
            return False
        e = current[0]
        if e.get("Owner__c") != self.owner or flag(e.get("Shared__c")):
            return False
        seq = self.seq = self.seq + 1
        e["__local__"] = True
        e["__locally_deleted__"] = True
        self.log({"op": "delete", "client": self.client, "seq": seq, "key": e.get("Key__c"), "entry": entry_id, "t": time.time()})
        self.store.upsert(SOUP, [e])
        return True

    # -- syncs --

    def start_up(self, kind="collection"):
        name = "up" if kind == "collection" else "up-single"
        sid = self.sync_id(name)
        if sid is None:
            return self.store.sync_up(SOUP, self.up_target(kind), {"mergeMode": "OVERWRITE"}, name)
        self.store.resync(sid)
        return sid

    def start_down(self):
        sid = self.sync_id("down")
        if sid is None:
            return self.store.sync_down({"type": "soql", "query": DOWN_QUERY}, SOUP, {"mergeMode": "LEAVE_IF_CHANGED"}, "down")
        self.store.resync(sid)
        return sid

    def stop_while_running(self, rng, max_pause_s, timeout_s):
        """Starts a sync up or down, stops every sync after a random pause, waits for the run to
        end (STOPPED or done) and accepts syncs again."""
        sid = self.start_up() if rng.random() < 0.5 else self.start_down()
        time.sleep(rng.uniform(0, max_pause_s))
        self.store.stop_syncs()
        try:
            self.wait(sid, timeout_s)
        finally:
            self.store.restart_syncs(False)

    def wait(self, sid, timeout_s):
        try:
            return self.store.wait_sync(sid, int(timeout_s * 1000))
        except syncstore.SyncStoreError as e:
            if e.name != "SYNCSTORE_ERR_BUSY":
                raise
        # Timed out: stop it so the run can go on, and report the liveness failure.
        self.store.stop_syncs()
        try:
            self.store.wait_sync(sid, 60_000)
        finally:
            self.store.restart_syncs(False)
        raise SyncTimeout(f"client {self.client}: sync {sid} still running after {timeout_s} s")

    def sync_up(self, kind="collection", timeout_s=120):
        return self.wait(self.start_up(kind), timeout_s)

    def sync_down(self, timeout_s=120):
        return self.wait(self.start_down(), timeout_s)

    def ghosts(self, timeout_s=120):
        """cleanResyncGhosts of the sync down; returns its final report."""
        sid = self.sync_id("down")
        if sid is None:
            return None
        done = threading.Event()
        reports = []

        def on_report(report):
            reports.append(report)
            if report.get("status") in ("DONE", "FAILED", "STOPPED"):
                done.set()

        self.store.clean_resync_ghosts(sid, on_report)
        if not done.wait(timeout_s):
            self.store.stop_syncs()
            done.wait(60)
            self.store.restart_syncs(False)
            raise SyncTimeout(f"client {self.client}: cleanResyncGhosts still running after {timeout_s} s")
        # The terminal report can come before the run has left the worker (a sync started at
        # once would be BUSY; test_chaos_targeted checks that separately): wait for it here.
        self.store.wait_sync(sid, int(timeout_s * 1000))
        return reports[-1]


# ---------------------------------------------------------------------------------------------
# Checks


def up_state_problems(state, marked):
    """Visible partial success: a DONE sync up that left `marked` entries (those it gave a
    __last_error__: refused or in conflict) must say so in its terminal state."""
    problems = []
    if state.get("status") != "DONE" or not marked:
        return problems
    reported = int(state.get("errors", 0) or 0) + int(state.get("conflicts", 0) or 0)
    if reported < len(marked):
        problems.append(f"sync up {state.get('name')} DONE left {len(marked)} entries with a new __last_error__ "
                        f"but reports errors={state.get('errors')} conflicts={state.get('conflicts')}")
    ids = set(state.get("errorEntryIds") or []) | set(state.get("conflictEntryIds") or [])
    missing = [m for m in marked if m not in ids]
    if missing:
        problems.append(f"sync up {state.get('name')}: entries {missing[:5]} with a new __last_error__ are not in "
                        f"errorEntryIds/conflictEntryIds")
    if not state.get("error") or not state.get("errorCode"):
        problems.append(f"sync up {state.get('name')} DONE with per-record problems has error={state.get('error')!r} "
                        f"errorCode={state.get('errorCode')}")
    return problems


def newly_marked(before, after, started_ms):
    """Entry ids that got a (new) __last_error__ written at or after started_ms and are still dirty."""
    old = {e["_soupEntryId"]: e.get("__last_error__") for e in before}
    out = []
    for e in after:
        if not flag(e.get("__local__")) or not e.get("__last_error__"):
            continue
        if e.get("_soupLastModifiedDate", 0) >= started_ms or old.get(e["_soupEntryId"]) != e.get("__last_error__"):
            out.append(e["_soupEntryId"])
    return out


def compare_converged(label, local, server_records):
    """Problems that keep `local` (one client's entries) from equalling the server's records."""
    problems = []
    by_id = {r["Id"]: r for r in server_records}
    seen = {}
    for e in local:
        if flag(e.get("__local__")):
            problems.append(f"{label}: entry {e.get('_soupEntryId')} key {e.get('Key__c')} still dirty "
                            f"(last error {str(e.get('__last_error__'))[:200]!r})")
            continue
        sid = e.get("Id")
        if sid not in by_id:
            problems.append(f"{label}: clean entry {e.get('_soupEntryId')} key {e.get('Key__c')} id {sid} is not on the server")
            continue
        if sid in seen:
            problems.append(f"{label}: entries {seen[sid]} and {e.get('_soupEntryId')} both hold {sid}")
        seen[sid] = e.get("_soupEntryId")
        r = by_id[sid]
        for f in DATA_FIELDS:
            lv, rv = e.get(f), r.get(f)
            if f == "Shared__c":
                lv, rv = bool(flag(lv)), bool(flag(rv))
            if lv != rv:
                problems.append(f"{label}: {sid} key {e.get('Key__c')} {f} local {lv!r} != server {rv!r}")
    for sid, r in by_id.items():
        if sid not in seen:
            problems.append(f"{label}: server record {sid} key {r.get('Key__c')} has no local entry")
    return problems


class ServerOrder:
    """Server values of a client's field never go back to an older value of that client:
    remembers the highest seq seen per (key, field)."""

    def __init__(self):
        self.seen = {}
        self.reported = set()

    def check(self, records, tag, fields=VALUE_FIELDS):
        problems = []
        counts = {}
        for r in records:
            counts[r.get("Key__c")] = counts.get(r.get("Key__c"), 0) + 1
        for r in records:
            if counts[r.get("Key__c")] > 1:
                continue   # a duplicated key: reported as such, its values have no single order
            for f in fields:
                seq = value_seq(r.get(f))
                if seq is None:
                    continue
                k = (r.get("Key__c"), f)
                if seq < self.seen.get(k, 0):
                    if k not in self.reported:
                        self.reported.add(k)
                        problems.append(f"{tag}: STALE OVERWRITE key {k[0]}: server {f} went back to {r.get(f)} after seq {self.seen[k]}")
                    continue
                self.seen[k] = max(seq, self.seen.get(k, 0))
        return problems


class Problems:
    """Problems found over a run, each reported once: the same lost edit seen after every later
    kill is one problem (first seen at `tag`). Kinds: LOST (edits, creates, deletes), DUPLICATE,
    LOCAL_DUPLICATE, STALE, RUNNING, INTEGRITY, LIVENESS, HOST, CONVERGE, STATE."""

    def __init__(self):
        self.items = {}      # (kind, subject) -> message

    def add(self, tag, kind, subject, message):
        if (kind, subject) not in self.items:
            self.items[(kind, subject)] = f"{tag}: {kind}: {message}"

    def subjects(self, kind):
        return {s for (k, s) in self.items if k == kind}

    def messages(self):
        order = ["LIVENESS", "HOST", "INTEGRITY", "RUNNING", "DUPLICATE", "LOCAL_DUPLICATE", "LOST", "STALE", "CONVERGE", "STATE"]
        return [m for kind in order for (k, _), m in self.items.items() if k == kind] + \
            [m for (k, _), m in self.items.items() if k not in order]

    def __len__(self):
        return len(self.items)


class Summary:
    """Counts printed at the end of the session (conftest) and written to $CHAOS_SUMMARY."""

    counts = {}
    notes = []

    @classmethod
    def add(cls, key, n=1):
        cls.counts[key] = cls.counts.get(key, 0) + n

    @classmethod
    def set(cls, key, value):
        cls.counts[key] = value

    @classmethod
    def note(cls, text):
        cls.notes.append(text)


def fmt_problems(problems, limit=40):
    head = problems[:limit]
    more = f"\n... and {len(problems) - limit} more" if len(problems) > limit else ""
    return "\n".join(head) + more
