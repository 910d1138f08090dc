"""Deterministic repros of the failure modes the randomized chaos runs hunt for: one fault at a
known point, then the promise that must hold. Each test is small and names the promise.

Promises (include/syncstore.h, the sync engine issue): creates are never duplicated; no local
edit is lost by a sync, a crash or a retry; a sync interrupted at any point can be re-run to the
right result; an entry edited while its own sync up is in flight stays dirty; a DONE sync up
with per-record problems says so (errors/conflicts, their entry ids, error and errorCode).
"""
import json
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import chaos_lib
from chaos_lib import (DIRTY_NEW, PC_TARGET, DevServer, Host, SOUP, TYPE, duplicates, entries, flag, open_store,
                       raw_sync_states, register_parent_children, up_state_problems, write_matches)

STATE_LIMIT = 64 * 1024


@pytest.fixture
def server(tmp_path):
    s = DevServer(tmp_path / "server")
    yield s
    s.stop()


@pytest.fixture
def clients(tmp_path):
    """Factory of hosts on fresh stores; every store is closed at the end."""
    made = []

    def make(server, name="a", client=0, variant="post", **remote):
        store = open_store(tmp_path / name)
        host = Host(store, client, lambda rec: None, random.Random(len(made) + 1), variant=variant)
        host.setup(server.url, **remote)
        made.append(store)
        return host

    yield make
    for store in made:
        store.close()


def by_key(host):
    out = {}
    for e in entries(host.store):
        out.setdefault(e.get("Key__c"), []).append(e)
    return out


def assert_no_duplicates(server, type_=TYPE):
    dups = duplicates(server.records(type_))
    assert not dups, f"duplicate {type_} records on the server: {dups}"


# ---- creates are never duplicated -----------------------------------------------------------


CREATE_ROUTES = {"post": "POST */composite/sobjects", "ext": "PATCH */composite/sobjects/Chaos__c/Ext__c"}


@pytest.mark.parametrize("variant", ["post", "ext"])
def test_lost_create_then_sync_down_is_not_duplicated(server, clients, variant):
    """A create whose answer was lost, then a sync down before the retry: the server record
    comes down as a second local entry and the retried create must not make a second record,
    nor leave two entries holding one record (every later sync down would fail on them)."""
    host = clients(server, variant=variant)
    server.set_faults(f"{CREATE_ROUTES[variant]} drop=after")   # every attempt (upserts are retried)
    key = host.create()
    # The store's first request: a fresh connection, so libcurl has nothing to resend.
    assert host.sync_up()["status"] == "FAILED"
    server.clear_faults()
    assert host.sync_down()["status"] == "DONE"
    up = host.sync_up()
    assert up["status"] == "DONE", up
    assert_no_duplicates(server)
    assert len(by_key(host)[key]) == 1, f"the record is held by local entries {[e['_soupEntryId'] for e in by_key(host)[key]]}"
    down = host.sync_down()
    assert down["status"] == "DONE", down


@pytest.mark.parametrize("variant", ["post", "ext"])
def test_lost_create_then_sync_down_then_edit_of_the_copy(server, clients, variant):
    """As above, but the host edits the copy the sync down stored (it is an entry like any
    other: a list shows it) before the retry. Still one record on the server, one entry, and the
    edit (the latest write of that record) on the server."""
    host = clients(server, variant=variant)
    server.set_faults(f"{CREATE_ROUTES[variant]} drop=after")   # every attempt (upserts are retried)
    key = host.create()
    assert host.sync_up()["status"] == "FAILED"
    server.clear_faults()
    assert host.sync_down()["status"] == "DONE"
    copies = [e for e in by_key(host)[key] if e.get("Id")]
    assert copies, "the sync down did not store the record"
    edited = host.edit(copies[0]["_soupEntryId"])
    for _ in range(2):
        assert host.sync_up()["status"] == "DONE"
        assert host.sync_down()["status"] == "DONE"
    assert_no_duplicates(server)
    assert len(by_key(host)[key]) == 1, f"the record is held by local entries {[e['_soupEntryId'] for e in by_key(host)[key]]}"
    assert [r[host.field] for r in server.records()] == [edited[host.field]], "the edit of the copy was lost"


@pytest.mark.parametrize("kind,glob", [("collection", "POST */composite/sobjects"), ("single", "POST */sobjects/Chaos__c")])
def test_create_dropped_on_a_kept_alive_connection_is_not_duplicated(server, clients, kind, glob):
    """drop=after on a reused connection: libcurl takes it for a stale connection and sends the
    POST again unless told not to."""
    host = clients(server)
    assert host.sync_down()["status"] == "DONE"   # leaves a kept-alive connection in the pool
    server.set_faults(f"{glob} drop=after times=1")
    host.create()
    host.sync_up(kind)
    server.clear_faults()
    host.sync_up(kind)
    assert_no_duplicates(server)
    assert len(server.records()) == 1


@pytest.mark.parametrize("offset", [0, -600, 600])
def test_lost_create_is_adopted_whatever_the_server_clock(tmp_path, clients, offset):
    """The retry after a lost create finds the record by the server's clock, not the client's."""
    server = DevServer(tmp_path / "server", "--clock-offset", str(offset))
    try:
        host = clients(server)
        server.set_faults("POST */composite/sobjects drop=after times=1")
        host.create()
        assert host.sync_up()["status"] == "FAILED"
        server.clear_faults()
        assert host.sync_up()["status"] == "DONE"
        assert_no_duplicates(server)
        assert len(server.records()) == 1
    finally:
        server.stop()


def test_parent_children_lost_answer_is_not_duplicated(server, clients):
    host = clients(server)
    store = host.store
    register_parent_children(store)
    store.upsert("parents", [{"attributes": {"type": "ChaosParent__c"}, "Id": "local-p1", "Name": "P1", "Key__c": "p1", **DIRTY_NEW}])
    store.upsert("children", [{"attributes": {"type": "ChaosChild__c"}, "Name": f"C{i}", "Key__c": f"c{i}",
                               "Parent__c": "local-p1", **DIRTY_NEW} for i in range(3)])
    server.set_faults("POST */composite drop=after times=1")
    sid = store.sync_up("parents", PC_TARGET, {"mergeMode": "OVERWRITE"}, "pc-up")
    assert store.wait_sync(sid, 60_000)["status"] == "FAILED"
    server.clear_faults()
    store.resync(sid)
    assert store.wait_sync(sid, 60_000)["status"] == "DONE"
    assert_no_duplicates(server, "ChaosParent__c")
    assert_no_duplicates(server, "ChaosChild__c")
    assert len(server.records("ChaosParent__c")) == 1 and len(server.records("ChaosChild__c")) == 3


def test_parent_children_adopted_parent_keeps_its_children(server, clients):
    """A parent and child sent in one request whose answer was lost; the parent is edited
    before the next run, which adopts the record the lost request made (the parent takes its
    server id at once, as an update of it) and then fails. The child must not be left naming the
    parent's temporary id, which no entry holds any more: no later run would find it (seen in
    the fault rounds: a child dirty for good, its record on the server)."""
    host = clients(server)
    store = host.store
    register_parent_children(store)
    store.upsert("parents", [{"attributes": {"type": "ChaosParent__c"}, "Id": "local-p1", "Name": "P1", "Key__c": "p1",
                              "V__c": "v1", **DIRTY_NEW}])
    store.upsert("children", [{"attributes": {"type": "ChaosChild__c"}, "Name": "C1", "Key__c": "c1", "V__c": "c-v1",
                               "Parent__c": "local-p1", **DIRTY_NEW}])
    server.set_faults("POST */composite drop=after times=1")
    sid = store.sync_up("parents", PC_TARGET, {"mergeMode": "OVERWRITE"}, "pc-up")
    assert store.wait_sync(sid, 60_000)["status"] == "FAILED"
    parent = entries(store, "parents")[0]
    parent["V__c"] = "v2"                   # edited since sent: the adoption is an update
    store.upsert("parents", [parent])
    server.set_faults("POST */composite status=500 times=1")
    store.resync(sid)
    assert store.wait_sync(sid, 60_000)["status"] == "FAILED"
    server.clear_faults()
    store.resync(sid)
    assert store.wait_sync(sid, 60_000)["status"] == "DONE"
    parent_id = server.records("ChaosParent__c")[0]["Id"]
    child = entries(store, "children")[0]
    assert child.get("Parent__c") == parent_id and not flag(child.get("__local__")), (
        f"the child after the parent's adoption: {json.dumps({k: v for k, v in child.items() if not k.startswith('_soup')})}; "
        f"the parent's record {parent_id}")
    assert server.records("ChaosParent__c")[0].get("V__c") == "v2"
    assert_no_duplicates(server, "ChaosParent__c")
    assert_no_duplicates(server, "ChaosChild__c")


# ---- no local edit is lost ------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["post", "ext"])
def test_local_delete_of_an_unanswered_create_reaches_the_server(server, clients, variant):
    """Created, sent, answer lost, then deleted locally: the record the first attempt made must
    be deleted on the server too, not left behind by a local-only delete."""
    host = clients(server, variant=variant)
    server.set_faults(f"{CREATE_ROUTES[variant]} drop=after")
    key = host.create()
    assert host.sync_up()["status"] == "FAILED"
    server.clear_faults()
    entry = by_key(host)[key][0]
    assert host.delete(entry["_soupEntryId"])
    assert host.sync_up()["status"] == "DONE"
    assert [r["Key__c"] for r in server.records()] == [], "the locally deleted record lives on on the server"


def test_edit_during_own_sync_up_stays_dirty(server, clients):
    """Edits made while the entry's own request is at the server (held 150 ms there), including
    right after the engine's pre-send write (same millisecond, often): each must stay dirty and
    reach the server on the next run."""
    host = clients(server)
    server.set_faults("POST * latency=150; PATCH * latency=150")
    lost = []
    trials = chaos_lib.env_int("CHAOS_INFLIGHT_TRIALS", 30)
    for trial in range(trials):
        mark_ms = None
        if trial % 2 == 0:
            key = host.create()
            eid = by_key(host)[key][0]["_soupEntryId"]
            sid = host.start_up()
            # Poll for the engine's pre-send mark and edit at once (same millisecond, often).
            deadline = time.time() + 5
            while time.time() < deadline:
                e = host.store.retrieve(SOUP, [eid])[0]
                if e.get("__sync_create_sent__") is not None:
                    mark_ms = e["_soupLastModifiedDate"]
                    break
        else:
            key = host.create()
            host.sync_up()
            eid = by_key(host)[key][0]["_soupEntryId"]
            host.edit(eid)
            before = write_matches(server.faults())
            sid = host.start_up()
            deadline = time.time() + 5
            while time.time() < deadline and write_matches(server.faults()) == before:
                time.sleep(0.001)
        edited = host.edit(eid)
        assert edited
        expected = edited[host.field]
        host.wait(sid, 60)
        e = host.store.retrieve(SOUP, [eid])[0]
        if not flag(e.get("__local__")) or e.get(host.field) != expected:
            same = " (the edit was stored in the same millisecond as the engine's pre-send mark)" \
                if mark_ms is not None and mark_ms == edited["_soupLastModifiedDate"] else ""
            lost.append(f"trial {trial}: entry {eid} dirty={e.get('__local__')} {host.field}={e.get(host.field)} "
                        f"(expected: still dirty with {expected}){same}")
    server.clear_faults()
    host.sync_up()
    on_server = {r["Key__c"]: r for r in server.records()}
    for e in entries(host.store):
        if on_server.get(e["Key__c"], {}).get(host.field) != e.get(host.field):
            lost.append(f"key {e['Key__c']}: server has {on_server.get(e['Key__c'], {}).get(host.field)}, local {e.get(host.field)}")
    assert not lost, "\n".join(lost)


def test_no_false_conflict_after_own_update(server, clients):
    host = clients(server)
    key = host.create()
    host.sync_up()
    assert host.sync_down()["status"] == "DONE"
    store = host.store
    up_l = store.sync_up(SOUP, host.up_target("collection"), {"mergeMode": "LEAVE_IF_CHANGED"}, "up-lic")
    assert store.wait_sync(up_l, 30_000)["status"] == "DONE"
    eid = by_key(host)[key][0]["_soupEntryId"]
    for _ in range(3):
        host.edit(eid)
        store.resync(up_l)
        state = store.wait_sync(up_l, 30_000)
        e = store.retrieve(SOUP, [eid])[0]
        assert state["status"] == "DONE" and state.get("conflicts", 0) == 0 and not flag(e.get("__local__")), \
            f"our own previous update is reported as a conflict: {state} / {e.get('__last_error__')}"


# ---- a sync interrupted at any point can be re-run --------------------------------------------


def test_sync_down_with_its_own_order_by_resumes_after_interruption(server, clients):
    """Pages in Name order are not in LastModifiedDate order: a run that fails after the first
    page must not move maxTimeStamp past records it never stored."""
    for i in range(20):
        # Name DESC is newest first: the first page holds the newest records.
        server.ok("POST", f"sobjects/{TYPE}", {"Name": f"n{i:02d}", "Key__c": f"k{i:02d}", "Owner__c": "srv"})
    host = clients(server)
    server.set_faults("GET */query/* status=500")
    sid = host.store.sync_down({"type": "soql", "query": "SELECT Id, Name, Key__c, LastModifiedDate FROM Chaos__c ORDER BY Name DESC"},
                               SOUP, {"mergeMode": "LEAVE_IF_CHANGED"}, "ordered")
    first = host.store.wait_sync(sid, 60_000)
    assert first["status"] == "FAILED"
    server.clear_faults()
    host.store.resync(sid)
    assert host.store.wait_sync(sid, 60_000)["status"] == "DONE"
    keys = sorted(e["Key__c"] for e in entries(host.store))
    assert keys == [f"k{i:02d}" for i in range(20)], f"records lost by the interrupted run: {20 - len(keys)}"


def test_repeated_next_records_url_ends_the_run(server, clients):
    """A server whose nextRecordsUrl names the page just served must not keep a sync down
    looping: the run ends (FAILED is fine), and a reSync without the fault gets everything."""
    for i in range(10):
        server.ok("POST", f"sobjects/{TYPE}", {"Name": f"r{i}", "Key__c": f"r{i}", "Owner__c": "srv"})
    host = clients(server)
    server.set_faults("GET */query* repeat-locator")
    sid = host.start_down()
    try:
        state = host.store.wait_sync(sid, 20_000)
    except chaos_lib.syncstore.SyncStoreError as e:
        assert e.name == "SYNCSTORE_ERR_BUSY"
        host.store.stop_syncs()
        host.store.wait_sync(sid, 60_000)
        host.store.restart_syncs(False)
        server.clear_faults()
        pytest.fail("the sync down was still following the repeated nextRecordsUrl after 20 s")
    server.clear_faults()
    assert state["status"] in ("DONE", "FAILED")
    assert host.sync_down()["status"] == "DONE"
    assert sorted(e["Key__c"] for e in entries(host.store)) == [f"r{i}" for i in range(10)]


def test_running_state_is_reset_when_the_store_opens(server, tmp_path):
    """A process killed mid-sync leaves RUNNING in the file; syncstore_open says such syncs become
    STOPPED, so right after open nothing may read RUNNING."""
    root = tmp_path / "killed"
    with open_store(root) as store:
        Host(store, 0, lambda r: None, random.Random(1)).setup(server.url)
    server.set_faults("GET */query* latency=5000")
    code = (f"import sys; sys.path.insert(0, {str(chaos_lib.REPO / 'Tests' / 'chaos')!r}); import chaos_lib, random\n"
            f"s = chaos_lib.open_store({str(root)!r}); h = chaos_lib.Host(s, 0, lambda r: None, random.Random(1))\n"
            f"h.setup({server.url!r}); h.start_down(); print('started', flush=True)\n"
            "import time; time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    server.clear_faults()
    with open_store(root) as store:
        raw = {s.get("name"): s.get("status") for s in raw_sync_states(store)}
        assert raw.get("down") != "RUNNING", f"after open the store still says {raw}"
        assert store.get_sync_status("down")["status"] == "STOPPED"


def test_terminal_callback_means_the_run_is_over(server, clients):
    """After a run's terminal callback (DONE/FAILED/STOPPED), starting the sync again must not be
    refused as already running."""
    host = clients(server)
    sid = host.start_down()
    host.wait(sid, 30)
    busy = 0
    runs = chaos_lib.env_int("CHAOS_CALLBACK_RUNS", 60)
    for i in range(runs):
        ended = threading.Event()
        cb = lambda st: ended.set() if st.get("status") in ("DONE", "FAILED", "STOPPED") else None  # noqa: E731
        try:
            if i % 2:
                host.store.clean_resync_ghosts(sid, cb)
            else:
                host.store.resync(sid, cb)
        except chaos_lib.syncstore.SyncStoreError as e:
            assert e.name == "SYNCSTORE_ERR_BUSY"
            busy += 1
            host.store.wait_sync(sid, 30_000)
            continue
        assert ended.wait(30)
    assert busy == 0, f"{busy} of {runs} starts right after the previous run's terminal callback were BUSY"


# ---- a DONE run with per-record problems says so ------------------------------------------------


@pytest.mark.parametrize("kind", ["collection", "single"])
def test_refused_record_is_reported_by_the_run(server, clients, kind):
    host = clients(server)
    good = [host.create() for _ in range(2)]
    bad = host.create()
    e = by_key(host)[bad][0]
    e["Name"] = None          # Name is required: the server refuses the create
    host.store.upsert(SOUP, [e])
    before = entries(host.store)
    state = host.sync_up(kind)
    after = entries(host.store)
    assert state["status"] == "DONE", state
    refused = by_key(host)[bad][0]
    assert flag(refused.get("__local__")) and "REQUIRED_FIELD_MISSING" in (refused.get("__last_error__") or "")
    assert all(not flag(by_key(host)[k][0].get("__local__")) for k in good)
    assert state.get("errors") == 1, state
    assert state.get("errorEntryIds") == [refused["_soupEntryId"]], state
    assert state.get("error") and state.get("errorCode"), state
    assert not up_state_problems(state, chaos_lib.newly_marked(before, after, state["startTime"]))


def test_conflict_is_reported_by_the_run(server, clients):
    host = clients(server)
    key = host.create()
    host.sync_up()
    assert host.sync_down()["status"] == "DONE"
    eid = by_key(host)[key][0]["_soupEntryId"]
    rec = server.records()[0]
    time.sleep(0.01)
    server.ok("PATCH", f"sobjects/{TYPE}/{rec['Id']}", {"V1__c": "someone else"})
    host.edit(eid)
    store = host.store
    sid = store.sync_up(SOUP, host.up_target("collection"), {"mergeMode": "LEAVE_IF_CHANGED"}, "up-lic")
    state = store.wait_sync(sid, 30_000)
    assert state["status"] == "DONE", state
    assert state.get("conflicts") == 1 and state.get("conflictEntryIds") == [eid], state
    assert state.get("error") and state.get("errorCode"), state
    assert flag(store.retrieve(SOUP, [eid])[0].get("__local__"))


@pytest.mark.parametrize("kind", ["collection", "single"])
def test_huge_error_body_is_not_copied_into_the_state(server, clients, kind):
    host = clients(server)
    key = host.create()
    e = by_key(host)[key][0]
    e["Email__c"] = "not-an-address-" + "x" * 1_000_000   # the server echoes it in its error
    host.store.upsert(SOUP, [e])
    up = host.store.sync_up(SOUP, dict(host.up_target(kind), createFieldlist=host.CREATE_FIELDS + [host.field, "Email__c"]),
                            {"mergeMode": "OVERWRITE"}, f"up-big-{kind}")
    state = host.store.wait_sync(up, 60_000)
    size = len(json.dumps(state))
    assert size < STATE_LIMIT, f"the sync state is {size} bytes: the server's error body was copied into it"
    again = host.store.get_sync_status(up)
    assert len(json.dumps(again)) < STATE_LIMIT
    assert state["status"] == "DONE" and state.get("errors") == 1 and state.get("error"), \
        {k: (v[:200] if isinstance(v, str) else v) for k, v in state.items()}
