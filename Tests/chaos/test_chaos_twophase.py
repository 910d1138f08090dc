"""Chaos for the `twophase` target (docs/sync.md#two-phase) against the dev server's --twophase
routes: fault rounds (drops before and after commit, 5xx, latency, a moving server clock) with
CHAOS_CLIENTS stores syncing at once and editing while their syncs are in flight, then a crash
host SIGKILLed at random points, then convergence. Two tables, one per timestamp format. The
server's answer shape changes as it runs (PUT /__devserver/twophase): rounds alternate between the
dev server's own per-operation answer and the plain one of a server written from the protocol's
description (per table the rows, and 409 for a call whose add names an id it has, which every
lost answer's retry does); each kill and the convergence draw one.

Every row has one writer, its owner (client N writes value `v` = "c<N>-<seq>" of the rows it
created, and deletes them), so the protocol's "newer last_update wins" makes exactly one
value right per row: the owner's last write. Checks: 0 duplicates (one server row per logical
`key`, however many lost answers and kills), 0 lost edits (each owner's last value, or its
delete, is on the server and in its store), and all clients converge to the server's rows.
"""
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from chaos_lib import DevServer, Summary, env_int, env_seed, flag, remote_config

import syncstore

HERE = Path(__file__).resolve().parent
TABLES = [("a", "tp_a", "id", "datetime"), ("b", "tp_b", "bid", "iso8601")]
TARGET = {"type": "twophase", "tables": [{"name": t, "soupName": soup, "idKey": key, "timestampFormat": fmt}
                                         for t, soup, key, fmt in TABLES]}
SERVER_TABLES = ",".join(f"{t}:{key}:{fmt}" for t, _, key, fmt in TABLES)
FAULTS = [
    "POST /twophase/synchronise drop=after rate=0.35",
    "POST /twophase/synchronise drop=before rate=0.3",
    "POST /twophase/synchronise drop=mid rate=0.2",
    "POST /twophase/synchronise status=500 rate=0.3",
    "GET /twophase/fetch status=503 rate=0.3",
    "GET /twophase/fetch drop=after rate=0.2",
    "latency=0-60",
]
MODES = ["operations", "plain"]


def set_mode(server, mode):
    """The synchronise answer shape: the dev server's per operation, or plain (per table)."""
    server.ok("PUT", "/__devserver/twophase", {"answer": mode})


class TwoPhaseClient:
    """One client's store: its own rows' writes (logged through `record`) and its syncs."""

    def __init__(self, root, url, client, rng, record=None, seq_start=0):
        self.store = syncstore.Store(root, {"storeName": "tp"})
        self.client = client
        self.owner = f"c{client}"
        self.rng = rng
        self.record = record or (lambda entry: None)
        self.seq = seq_start
        for _, soup, key, _ in TABLES:
            if not self.store.soup_exists(soup):
                self.store.register_soup(soup, [{"path": key, "type": "string"}, {"path": "key", "type": "string"},
                                                {"path": "__local__", "type": "string"}])
        self.store.set_remote(remote_config(url, maxAttempts=2))

    def entries(self, soup):
        with self.store.run_smart_query({"queryType": "smart", "pageSize": 100_000,
                                         "smartSql": f"select {{{soup}:_soup}} from {{{soup}}}"}) as cursor:
            rows = cursor.entries
        return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]

    def local_op(self, in_flight=False):
        """Creates, edits or deletes one of its own rows (logged before and after the write).
        `in_flight`: edits a row that is dirty now, one its running sync up is likely pushing."""
        table, soup, _, _ = self.rng.choice(TABLES)
        mine = [e for e in self.entries(soup) if e.get("owner") == self.owner and not flag(e.get("__locally_deleted__"))]
        dirty = [e for e in mine if flag(e.get("__local__"))]
        if in_flight and dirty:
            mine = dirty
        self.seq += 1
        value = f"{self.owner}-{self.seq}"
        roll = 1.0 if in_flight and dirty else self.rng.random()
        if not mine or roll < 0.4:
            entry = {"key": uuid.UUID(int=self.rng.getrandbits(128), version=4).hex, "owner": self.owner, "v": value,
                     "__local__": True, "__locally_created__": True}
        else:
            entry = dict(self.rng.choice(mine))
            entry["__local__"] = True
            if roll < 0.55:
                entry["__locally_deleted__"] = True
                value = None
            else:
                entry["v"] = value
                entry["__locally_updated__"] = True
        note = {"table": table, "key": entry["key"], "v": value}
        self.record({"op": "intent", **note})
        self.store.upsert(soup, [entry])
        self.record({"op": "done", **note})
        return (table, entry["key"]), value

    def sync_id(self, name):
        state = self.store.get_sync_status(name)
        return None if state is None else state["_soupEntryId"]

    def start(self, name, up):
        sid = self.sync_id(name)
        if sid is not None:
            self.store.resync(sid)
            return sid
        if up:
            return self.store.sync_up(TABLES[0][1], TARGET, {"mergeMode": "OVERWRITE"}, name)
        return self.store.sync_down(TARGET, TABLES[0][1], {"mergeMode": "OVERWRITE"}, name)

    def start_up(self):
        return self.start("up", True)

    def start_down(self):
        return self.start("down", False)

    def run(self, up, timeout_s=60):
        sid = self.start_up() if up else self.start_down()
        return self.store.wait_sync(sid, int(timeout_s * 1000))

    def values(self):
        """(table, key) -> v of the rows it holds (locally deleted ones excluded), and whether all are clean."""
        out, clean = {}, True
        for table, soup, _, _ in TABLES:
            for e in self.entries(soup):
                clean = clean and not flag(e.get("__local__"))
                if not flag(e.get("__locally_deleted__")):
                    out[(table, e.get("key"))] = e.get("v")
        return out, clean


def server_rows(server):
    """(table, key) -> [v, ...] of every server row (a key twice is a duplicate)."""
    ids = server.ok("GET", "/twophase/fetch")
    get = {t: [r[key] for r in ids.get(t, [])] for t, _, key, _ in TABLES}
    answer = server.ok("POST", "/twophase/synchronise", {"get": get})
    rows = answer["get"] if isinstance(answer.get("get"), dict) else answer  # either shape
    out = {}
    for table, _, _, _ in TABLES:
        for row in rows.get(table, []):
            out.setdefault((table, row.get("key")), []).append(row.get("v"))
    return out


def replay(log_path):
    """Per (table, key): the last value written for sure, and the value a write cut by a kill may
    have left instead. A write whose "intent" has no "done" (the next line is the next host's)
    may or may not have happened, and stays so until a later write of the same row is done: the
    hosts after the kill need not touch that row again (a maybe-delete hides it from them)."""
    done, pending = {}, {}
    if not os.path.exists(log_path):
        return done, pending
    open_intent = None
    with open(log_path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut by the kill
            k = (e["table"], e["key"])
            if e["op"] == "intent":
                if open_intent is not None:
                    pending[open_intent[0]] = open_intent[1]
                open_intent = (k, e["v"])
            else:
                done[k] = e["v"]
                pending.pop(k, None)
                open_intent = None
    if open_intent is not None:
        pending[open_intent[0]] = open_intent[1]
    return done, pending


def test_twophase_chaos(tmp_path):
    seed = env_seed()
    rounds, kills, clients = env_int("CHAOS_TP_ROUNDS", 8), env_int("CHAOS_TP_KILLS", 10), env_int("CHAOS_CLIENTS", 3)
    print(f"\ntwophase chaos: CHAOS_SEED={seed} rounds={rounds} kills={kills} clients={clients}")
    rng = random.Random(seed)
    started = time.time()
    server = DevServer(tmp_path / "server", "--twophase", "--twophase-tables", SERVER_TABLES)
    problems = []
    try:
        hosts = [TwoPhaseClient(str(tmp_path / f"c{i}"), server.url, i, random.Random(rng.random())) for i in range(clients)]
        expected = [dict() for _ in hosts]

        # Fault rounds: every client writes, then syncs while writing more, all at once.
        first_mode = rng.randrange(2)
        for r in range(rounds):
            mode = MODES[(first_mode + r) % 2]
            set_mode(server, mode)
            Summary.add(f"twophase_rounds_{mode}")
            # Phase 2 always takes a while, so edits land while it is in flight.
            server.set_faults(f"seed={rng.randrange(1 << 30)}; POST /twophase/synchronise latency=30-120; "
                              + "; ".join(rng.sample(FAULTS, rng.randint(1, 3))))
            server.set_clock(rng.choice([0, rng.randint(-600, 600)]))
            for i, h in enumerate(hosts):
                for _ in range(rng.randint(1, 3)):
                    k, v = h.local_op()
                    expected[i][k] = v

            def client_round(i, h, up, edit, pause):
                try:
                    sid = h.start_up() if up else h.start_down()
                    if edit:
                        time.sleep(pause)
                        k, v = h.local_op(in_flight=True)   # while the run is in flight
                        expected[i][k] = v
                    state = h.store.wait_sync(sid, 60_000)
                    Summary.add(f"twophase_{state['status'].lower()}")
                except syncstore.SyncStoreError as e:
                    problems.append(f"round {r} client {i}: {e}")

            threads = [threading.Thread(target=client_round, args=(i, h, rng.random() < 0.75, rng.random() < 0.6, rng.uniform(0, 0.08)))
                       for i, h in enumerate(hosts)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        server.clear_faults()
        Summary.add("twophase_rounds", rounds)

        # Crash kills: client 0's store, driven by a host process killed at random points.
        hosts[0].store.close()
        log = tmp_path / "c0-writes.log"
        for n in range(kills):
            proc = subprocess.Popen([sys.executable, str(HERE / "twophase_host.py"), str(tmp_path / "c0"), server.url, "0",
                                     str(seed * 1000 + n), str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            set_mode(server, rng.choice(MODES))
            if rng.random() < 0.5:
                server.set_faults(f"seed={n}; " + rng.choice(FAULTS))
            else:
                server.clear_faults()
            time.sleep(rng.uniform(0.4, 1.6))
            if proc.poll() is not None:
                problems.append(f"crash host {n} exited by itself: {proc.stderr.read().decode(errors='replace')[-2000:]}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stderr.close()
        server.clear_faults()
        Summary.add("twophase_kills", kills)
        hosts[0] = TwoPhaseClient(str(tmp_path / "c0"), server.url, 0, random.Random(rng.random()), seq_start=10**9)
        done, pending = replay(log)
        held, _ = hosts[0].values()
        for k, v in done.items():
            now = held.get(k)
            if now != v and not (k in pending and now == pending[k]):
                problems.append(f"lost edit after a kill: {k} holds {now!r}, last written {v!r}")
            expected[0][k] = now
        for k, v in pending.items():
            if k not in done:
                expected[0][k] = held.get(k)

        # Convergence: no faults, the server's clock back; every client syncs up then down.
        server.set_clock(0)
        set_mode(server, rng.choice(MODES))
        for attempt in range(4):
            for h in hosts:
                for up in (True, False):
                    state = h.run(up)
                    if state["status"] != "DONE":
                        problems.append(f"convergence pass {attempt}: client {h.client} {'up' if up else 'down'} {state['status']}: {state.get('error')}")
            rows = server_rows(server)
            views = [h.values() for h in hosts]
            if all(clean and vals == {k: v[0] for k, v in rows.items()} for vals, clean in views):
                break
        Summary.add("twophase_converge_passes", attempt + 1)

        rows = server_rows(server)
        dups = {k: v for k, v in rows.items() if len(v) > 1}
        lost = []
        for i, exp in enumerate(expected):
            for k, v in exp.items():
                have = rows.get(k, [None])[0]
                if have != v:
                    lost.append(f"client {i} {k}: server has {have!r}, last written {v!r}")
        unconverged = []
        flat = {k: v[0] for k, v in rows.items()}
        for h in hosts:
            vals, clean = h.values()
            if vals != flat or not clean:
                diff = {k for k in set(vals) | set(flat) if vals.get(k) != flat.get(k)}
                unconverged.append(f"client {h.client}: clean={clean}, differs on {sorted(diff)[:5]}")
        Summary.add("twophase_duplicates", len(dups))
        Summary.add("twophase_lost_edits", len(lost))
        Summary.add("twophase_rows", len(rows))
        Summary.set("twophase_seconds", round(time.time() - started, 1))
        for h in hosts:
            h.store.close()
        report = (f"seed {seed}: {len(dups)} duplicates {list(dups.items())[:5]}, {len(lost)} lost edits {lost[:10]}, "
                  f"unconverged {unconverged}, problems {problems[:10]}")
        assert not dups and not lost and not unconverged and not problems, report
        assert len(rows) > 0
    finally:
        server.stop()
