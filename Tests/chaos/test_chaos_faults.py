"""Fault chaos: CHAOS_ROUNDS (default 100) seeded rounds in which CHAOS_CLIENTS (default 3)
client stores sync the same records at once (one thread each) while the dev server injects a
random mix of faults: answers dropped before and after commit on every write route the engine
uses (sObject Collections, single records, upserts by external id, /composite), half bodies,
5xx, 401 storms and expired tokens (client 1 logs in with OAuth and must refresh), latency,
query locators that repeat themselves, and a server clock offset of up to +-10 minutes.

Clients: 0 creates with POST (sent-at mark + adoption) and also pushes parents with children
through parent_children (/composite); 1 the same without parent_children, logged in with
OAuth; 2 creates by upsert on an external id. Every client edits its own value field of its
own keys and of shared keys; only owners delete their private keys (see chaos_lib).

After each round (faults off for the read) the server must hold no client key twice and no
value older than one it held before. Then the faults stop and every client runs plain sync up,
then reSync + cleanResyncGhosts, at most 3 times, with no new local write: every client must
converge with the server, and the history must hold: each (key, field) on the server has the
last value its client logged, created keys exist once, deleted keys are gone.

CHAOS_SEED reproduces the fault plan and every client's operations (thread timing is not
reproducible, so neither is every interleaving).
"""
import json
import os
import random
import threading
import time
import traceback

import chaos_lib
from chaos_lib import (DIRTY_NEW, PC_TARGET, DevServer, Host, ServerOrder, Summary, SyncTimeout, compare_converged,
                       duplicates, entries, env_int, env_seed, flag, fmt_problems, newly_marked, open_store,
                       register_parent_children, up_state_problems)

WRITE_ROUTES = [
    "POST */composite/sobjects",                 # collection creates
    "PATCH */composite/sobjects",                # collection updates
    "DELETE */composite/sobjects",               # collection deletes
    "PATCH */composite/sobjects/Chaos__c/Ext__c",  # collection upserts (client 2)
    "POST */sobjects/Chaos__c",                  # single creates
    "PATCH */sobjects/Chaos__c/*",               # single updates and upserts by Ext__c
    "DELETE */sobjects/Chaos__c/*",              # single deletes
    "POST */composite",                          # parent_children
]
OTHER_FAULTS = [
    "GET */query* drop=mid rate=0.25",
    "GET * status=503 rate=0.15",
    "* status=500 rate=0.08",
    "POST */composite/sobjects/Chaos__c status=502 rate=0.3",   # LEAVE_IF_CHANGED/adoption look-ups
    "GET */sobjects/Chaos__c/updated* drop=before rate=0.3",     # adoption look-ups
    "GET */query* repeat-locator times=2",
    "latency=0-25",
]
SYNC_TIMEOUT_S = 60


def round_faults(rng, r):
    parts = [f"seed={r + 1}"]
    for route in rng.sample(WRITE_ROUTES, rng.randint(1, 4)):
        method, glob = route.split(" ", 1)
        parts.append(f"{method} {glob} drop={rng.choice(['after', 'after', 'before'])} rate={rng.choice([0.2, 0.35, 0.5])}")
    for extra in rng.sample(OTHER_FAULTS, rng.randint(0, 3)):
        parts.append(extra)
    if rng.random() < 0.25:
        parts.append(f"* unauthorized after={rng.randint(0, 20)} times={rng.randint(1, 6)}")
    if rng.random() < 0.2:
        parts.append(f"* expire-tokens after={rng.randint(0, 20)} times=1")
    return "; ".join(parts)


class Client:
    def __init__(self, idx, root, server, seed, variant, oauth):
        self.idx = idx
        self.store = open_store(root)
        self.log = []
        self.rng = random.Random(seed)
        self.host = Host(self.store, idx, self.log.append, random.Random(seed + 7), variant=variant)
        remote = {}
        if oauth:
            _, tok = server.request("POST", "/services/oauth2/token",
                                    b"grant_type=password&username=dev%40example.com&password=devpassword",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
            remote = {"accessToken": tok["access_token"], "refreshToken": tok["refresh_token"], "clientId": "chaos"}
        self.host.setup(server.url, **remote)
        self.pc = idx == 0
        if self.pc:
            register_parent_children(self.store)
        self.problems = []
        self.liveness = 0
        self.partial_checked = 0

    # -- one round --

    def run_round(self, n_ops, tag):
        try:
            for _ in range(n_ops):
                self.op(tag)
        except SyncTimeout as e:
            self.liveness += 1
            self.problems.append(f"{tag}: LIVENESS: {e}")
        except Exception:
            self.problems.append(f"{tag}: client {self.idx} raised:\n{traceback.format_exc()}")

    def op(self, tag):
        rng, host = self.rng, self.host
        ops = ["create", "edit", "delete", "up", "up_single", "down", "ghosts", "stop"] + (["pc_create", "pc_edit", "pc_up"] if self.pc else [])
        weights = [16, 20, 6, 18, 6, 16, 4, 3] + ([5, 5, 8] if self.pc else [])
        op = rng.choices(ops, weights)[0]
        if op == "create":
            for _ in range(rng.randint(1, 3)):
                host.create(shared=rng.random() < 0.4)
        elif op == "edit":
            items = host.editable(entries(self.store))
            for e in rng.sample(items, min(len(items), rng.randint(1, 3))):
                host.edit(e["_soupEntryId"])
        elif op == "delete":
            own = [e for e in host.editable(entries(self.store)) if e.get("Owner__c") == host.owner and not flag(e.get("Shared__c"))]
            if own:
                host.delete(rng.choice(own)["_soupEntryId"])
        elif op in ("up", "up_single"):
            before = entries(self.store)
            state = host.sync_up("collection" if op == "up" else "single", SYNC_TIMEOUT_S)
            self.check_partial(state, before, tag)
        elif op == "down":
            host.sync_down(SYNC_TIMEOUT_S)
        elif op == "ghosts":
            host.ghosts(SYNC_TIMEOUT_S)
        elif op == "stop":
            host.stop_while_running(rng, 0.05, SYNC_TIMEOUT_S)
        elif op == "pc_create":
            self.pc_create()
        elif op == "pc_edit":
            self.pc_edit()
        elif op == "pc_up":
            self.pc_up()

    def check_partial(self, state, before, tag):
        if state.get("status") != "DONE":
            return
        after = entries(self.store)
        marked = newly_marked(before, after, state.get("startTime", 0))
        if marked:
            self.partial_checked += 1
            errors = {e["_soupEntryId"]: str(e.get("__last_error__"))[:160] for e in after if e["_soupEntryId"] in marked}
            self.problems += [f"{tag}: client {self.idx}: {p} (errors: {list(errors.values())[:2]})"
                              for p in up_state_problems(state, marked)]

    # -- parents and children (client 0): parent_children sync up through /composite --

    def pc_create(self):
        host = self.host
        seq, value = host.next_value()
        pkey = "%032x" % host.rng.getrandbits(128)
        temp = f"local-{pkey[:12]}"
        self.log.append({"op": "pc_create", "type": "ChaosParent__c", "key": pkey, "value": value, "seq": seq, "client": self.idx})
        self.store.upsert("parents", [{"attributes": {"type": "ChaosParent__c"}, "Id": temp, "Name": f"p-{pkey[:8]}",
                                       "Key__c": pkey, "V__c": value, **DIRTY_NEW}])
        for _ in range(self.rng.randint(0, 2)):
            seq, value = host.next_value()
            ckey = "%032x" % host.rng.getrandbits(128)
            self.log.append({"op": "pc_create", "type": "ChaosChild__c", "key": ckey, "parent": pkey, "value": value,
                             "seq": seq, "client": self.idx})
            self.store.upsert("children", [{"attributes": {"type": "ChaosChild__c"}, "Name": f"c-{ckey[:8]}", "Key__c": ckey,
                                            "V__c": value, "Parent__c": temp, **DIRTY_NEW}])

    def pc_edit(self):
        soup = self.rng.choice(["parents", "children"])
        items = entries(self.store, soup)
        if not items:
            return
        e = self.rng.choice(items)
        seq, value = self.host.next_value()
        e["V__c"] = value
        e["__local__"] = True
        if not flag(e.get("__locally_created__")):
            e["__locally_updated__"] = True
        self.log.append({"op": "pc_edit", "type": "ChaosParent__c" if soup == "parents" else "ChaosChild__c",
                         "key": e["Key__c"], "value": value, "seq": seq, "client": self.idx})
        self.store.upsert(soup, [e])

    def pc_up(self, timeout_s=SYNC_TIMEOUT_S):
        state = self.store.get_sync_status("pc-up")
        if state is None:
            sid = self.store.sync_up("parents", PC_TARGET, {"mergeMode": "OVERWRITE"}, "pc-up")
        else:
            sid = state["_soupEntryId"]
            self.store.resync(sid)
        return self.host.wait(sid, timeout_s)

    def close(self):
        self.store.close()


def history_problems(clients, server, dup_keys):
    """Each (key, field) on the server holds the last value its client logged; created keys are
    there once, deleted ones are gone. Returns (problems, lost count)."""
    problems, lost = [], 0
    recs = server.records()
    by_key = {}
    for r in recs:
        by_key.setdefault(r.get("Key__c"), []).append(r)
    created, deleted, last = {}, set(), {}
    for c in clients:
        for rec in c.log:
            if rec["op"] == "create":
                created[rec["key"]] = rec
                last[(rec["key"], rec["field"])] = rec["value"]
            elif rec["op"] == "edit":
                last[(rec["key"], rec["field"])] = rec["value"]
            elif rec["op"] == "delete":
                deleted.add(rec["key"])
    stuck = {}
    for c in clients:
        for e in entries(c.store):
            if flag(e.get("__local__")) and e.get("__last_error__"):
                stuck[(e.get("Key__c"), c.host.field)] = e.get("__last_error__")
    for key, rec in created.items():
        live = by_key.get(key, [])
        if key in deleted:
            if live:
                lost += 1
                dup = f" (the key was on the server twice after {dup_keys[key][0]})" if key in dup_keys else ""
                problems.append(f"LOST DELETE key {key} (client {rec['client']}) still on the server {[r['Id'] for r in live]}{dup}")
            continue
        if not live:
            lost += 1
            problems.append(f"LOST CREATE key {key} (client {rec['client']}, {rec['value']}) is not on the server")
            continue
        r = live[0]
        for name, want in (("Owner__c", f"c{rec['client']}"), ("Shared__c", rec["shared"])):
            if (bool(r.get(name)) if name == "Shared__c" else r.get(name)) != want:
                problems.append(f"key {key}: server {name} {r.get(name)!r} != created {want!r}")
    for (key, field), value in last.items():
        if key in deleted or not by_key.get(key):
            continue
        values = [r.get(field) for r in by_key[key]]
        have = values[0] if len(values) == 1 else values
        if value not in values:
            if (key, field) in stuck:
                problems.append(f"key {key} {field}: not synced, entry dirty with error {str(stuck[(key, field)])[:200]}")
            else:
                lost += 1
                dup = " (the key is duplicated on the server)" if len(values) > 1 else ""
                problems.append(f"LOST EDIT key {key} {field}: server {have!r}, last logged {value!r}{dup}")
    return problems, lost, recs


def pc_problems(client, server):
    problems, lost = [], 0
    last, parent_of = {}, {}
    for rec in client.log:
        if rec["op"] in ("pc_create", "pc_edit"):
            last[(rec["type"], rec["key"])] = rec["value"]
            if rec.get("parent"):
                parent_of[rec["key"]] = rec["parent"]
    server_recs = {}
    for t in ("ChaosParent__c", "ChaosChild__c"):
        recs = server.records(t)
        for k, ids in duplicates(recs).items():
            problems.append(f"DUPLICATE {t} key {k}: {ids}")
        server_recs[t] = {r["Key__c"]: r for r in recs}
    for (t, key), value in last.items():
        r = server_recs[t].get(key)
        if r is None:
            lost += 1
            problems.append(f"LOST CREATE {t} key {key} ({value}) is not on the server")
        elif r.get("V__c") != value:
            lost += 1
            problems.append(f"LOST EDIT {t} key {key}: server V__c {r.get('V__c')!r}, last logged {value!r}")
        elif t == "ChaosChild__c":
            parent = server_recs["ChaosParent__c"].get(parent_of.get(key))
            if parent is None or r.get("Parent__c") != parent["Id"]:
                problems.append(f"child {key}: Parent__c {r.get('Parent__c')} is not its parent's record {parent and parent['Id']}")
    for soup in ("parents", "children"):
        for e in entries(client.store, soup):
            if flag(e.get("__local__")):
                problems.append(f"client 0 {soup}: entry {e['_soupEntryId']} key {e.get('Key__c')} still dirty "
                                f"({str(e.get('__last_error__'))[:200]})")
    return problems, lost


def test_fault_rounds(tmp_path):
    seed = env_seed()
    rounds = env_int("CHAOS_ROUNDS", 100)
    n_clients = env_int("CHAOS_CLIENTS", 3)
    max_offset = env_int("CHAOS_MAX_CLOCK_OFFSET", 600)
    print(f"\n[chaos faults] CHAOS_SEED={seed} CHAOS_ROUNDS={rounds} CHAOS_CLIENTS={n_clients} lib={chaos_lib.library_path()}")
    rng = random.Random(seed)
    server = DevServer(tmp_path / "server")
    # Stamps never go back (as in an org), so a lowered offset would only freeze them: the
    # offsets of the rounds are drawn at random and applied in increasing order.
    offsets = sorted(rng.randint(-max_offset, max_offset) for _ in range(rounds))
    variants = os.environ.get("CHAOS_VARIANTS", "post,post,ext").split(",")   # create path per client
    clients = [Client(i, tmp_path / f"client{i}", server, seed * 10 + i, variants[i % len(variants)], oauth=(i == 1))
               for i in range(n_clients)]
    order = ServerOrder()
    problems, dup_keys = [], {}
    started = time.time()
    passes = 0
    try:
        for c in clients:
            c.host.sync_down()
            c.host.sync_up()
        for r in range(rounds):
            tag = f"round {r + 1}"
            server.set_clock(offsets[r])
            server.set_faults(round_faults(rng, r))
            plans = [(c, rng.randint(3, 8)) for c in clients]
            threads = [threading.Thread(target=c.run_round, args=(n, tag)) for c, n in plans]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            server.clear_faults()
            recs = server.records()
            problems += order.check(recs, tag)
            for k, ids in duplicates(recs).items():
                dup_keys.setdefault(k, (tag, ids))
        # The faults stop (the clock stays skewed): plain syncs, no new local writes.
        server.clear_faults()
        final = []
        for passes in range(1, 4):
            final = []
            try:
                for c in clients:
                    st = c.host.sync_up("collection", SYNC_TIMEOUT_S)
                    if st["status"] != "DONE":
                        final.append(f"final pass {passes}: client {c.idx} sync up {st['status']}: {st['error']}")
                    if c.pc:
                        st = c.pc_up()
                        if st["status"] != "DONE":
                            final.append(f"final pass {passes}: client {c.idx} parent_children sync up {st['status']}: {st['error']}")
                for c in clients:
                    st = c.host.sync_down(SYNC_TIMEOUT_S)
                    if st["status"] != "DONE":
                        final.append(f"final pass {passes}: client {c.idx} sync down {st['status']}: {st['error']}")
                    report = c.host.ghosts(SYNC_TIMEOUT_S)
                    if report and report.get("status") != "DONE":
                        final.append(f"final pass {passes}: client {c.idx} cleanResyncGhosts {report.get('status')}: {report.get('error')}")
            except SyncTimeout as e:
                final.append(f"final: LIVENESS: {e}")
                continue
            recs = server.records()
            for c in clients:
                final += compare_converged(f"client {c.idx}", entries(c.store), recs)
            if not final:
                break
        problems += final
        hist, lost, recs = history_problems(clients, server, dup_keys)
        problems += hist
        for k, ids in duplicates(recs).items():
            dup_keys.setdefault(k, ("final", ids))
        if any(c.pc for c in clients):
            pcp, pc_lost = pc_problems(clients[0], server)
            problems += pcp
            lost += pc_lost
        for c in clients:
            problems += c.problems
    finally:
        for c in clients:
            with open(tmp_path / f"client{c.idx}-history.jsonl", "w") as f:
                f.writelines(json.dumps(rec) + "\n" for rec in c.log)
            c.close()
        server.stop()
    elapsed = time.time() - started
    for k, (where, ids) in dup_keys.items():
        problems.append(f"DUPLICATE key {k} on the server (first seen after {where}): {ids}")
    dups_pc = sum(1 for p in problems if p.startswith("DUPLICATE Chaos"))
    liveness = sum(c.liveness for c in clients) + sum(1 for p in problems if p.startswith("final: LIVENESS"))
    writes = sum(len(c.log) for c in clients)
    Summary.set("faults_seed", seed)
    Summary.add("fault_rounds", rounds)
    Summary.set("fault_clients", n_clients)
    Summary.add("fault_duplicates", len(dup_keys) + dups_pc)
    Summary.add("fault_lost_edits", lost)
    Summary.add("fault_liveness_failures", liveness)
    Summary.add("fault_partial_success_runs_checked", sum(c.partial_checked for c in clients))
    Summary.set("fault_local_writes", writes)
    Summary.set("fault_converge_passes", passes)
    Summary.set("fault_seconds", round(elapsed, 1))
    print(f"[chaos faults] seed={seed} rounds={rounds} clients={n_clients} local writes={writes} "
          f"duplicates={len(dup_keys) + dups_pc} lost={lost} liveness={liveness} converge passes={passes} in {elapsed:.0f} s")
    assert not problems, f"CHAOS_SEED={seed}: {len(problems)} problems:\n{fmt_problems(problems)}"
