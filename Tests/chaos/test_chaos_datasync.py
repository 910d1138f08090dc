"""Chaos slice for the Datasync targets (docs/sync.md#datasync) against the dev server's
--datasync /tables routes: a host SIGKILLed at random points, then fault rounds with 3 clients
syncing at once (sync up OVERWRITE, sync down LEAVE_IF_CHANGED). Each client creates rows and
edits and deletes its own rows and the other clients' (field `v`, values `c<N>-<seq>` with a
growing seq), and syncs every row down; between the local writes and the syncs of each round the
server soft-deletes a few rows (another writer), mostly ones a client has just edited, so pushes
meet rows soft-deleted meanwhile (OVERWRITE brings them back).
Checks: no key twice on the server (0 duplicates); after convergence no dirty entry, the stores
equal the server's live rows, and every key only its owner wrote holds that client's last write
(0 lost edits); a key several writers touched holds one of their writes or is deleted.

Knobs: CHAOS_DS_KILLS (12), CHAOS_DS_ROUNDS (10), CHAOS_DS_SERVER_DELETES (2: most rows the
server soft-deletes per round among those just edited, plus maybe one at random), CHAOS_CLIENTS
(3), CHAOS_SEED."""
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

from chaos_lib import Summary, env_int, env_seed
from datasync_host import TABLE, TOKEN, Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import devserver_process  # noqa: E402

HOST = Path(__file__).resolve().parent / "datasync_host.py"


class Server(devserver_process.DevServer):
    def __init__(self, workdir):
        super().__init__("--datasync", "--admin", "--datasync-page-size", "5", token=TOKEN, stderr=Path(workdir) / "devserver.stderr")

    def call(self, method, path, body=None):
        import urllib.request
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}", "Connection": "close"})
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
        return json.loads(text) if text and r.headers.get("Content-Type", "").startswith("application/json") else text

    def rows(self):
        rows, path = [], f"/tables/{TABLE}?__includedeleted=true"
        while path:
            page = self.call("GET", path)
            rows += page["items"]
            path = page.get("nextLink", "")[len(self.url):] if page.get("nextLink") else None
        return rows

    def faults(self, spec):
        self.call("PUT", "/__devserver/faults", spec.encode())


def distinct(rows):
    """Each row (id) once. A row listed twice is one row: the pages are read while a killed
    host's last request may still change the table (a row made meanwhile shifts the pages)."""
    return list({r["id"]: r for r in rows}.values())


def duplicates(rows):
    """Keys held by more than one row."""
    keys = [r.get("key") for r in distinct(rows)]
    return len(keys) - len(set(keys))


def twice(rows):
    """The rows whose key another row has too (for a failure's message)."""
    rows = distinct(rows)
    keys = [r.get("key") for r in rows]
    return [r for r in rows if keys.count(r.get("key")) > 1]


def converge(server, clients, server_deleted=()):
    """Plain sync up + down until no entry is dirty, then the checks. `server_deleted`: keys the
    server deleted itself (a writer besides the clients)."""
    server.call("DELETE", "/__devserver/faults")
    for _ in range(3):
        for c in clients:
            c.sync("up")
        for c in clients:
            c.sync("down")
        if all(not any(e.get("__local__") for e in c.entries()) for c in clients):
            break
    rows = server.rows()
    live = {r["key"]: r["v"] for r in rows if not r["deleted"]}
    problems = []
    writers = {}
    for c in clients:
        for key in c.log:
            writers.setdefault(key, set()).add(c.n)
    wrote = set().union(*(c.wrote for c in clients))
    for c in clients:
        dirty = [(e["key"], e.get("__last_error__")) for e in c.entries() if e.get("__local__")]
        if dirty:
            problems.append(f"client {c.n}: {len(dirty)} entries still dirty: {dirty[:3]}")
        local = {e["key"]: e["v"] for e in c.entries()}
        if local != live:
            problems.append(f"client {c.n}: store differs from the server ({len(local)} vs {len(live)} rows)")
        for key, v in c.log.items():
            if len(writers[key]) > 1 or key in server_deleted:
                # Several writers, each pushing with OVERWRITE: the last push wins.
                if key in live and (key, live[key]) not in wrote:
                    problems.append(f"key {key} is {live[key]!r} on the server, which no client wrote")
            elif live.get(key) != v and (key not in c.also or live.get(key) != c.also[key]):
                problems.append(f"client {c.n}: key {key} is {live.get(key)!r} on the server, last written {v!r}")
    return rows, problems


def test_datasync_fault_rounds(tmp_path):
    seed = env_seed()
    rng = random.Random(seed)
    server = Server(tmp_path)
    try:
        clients = [Client(tmp_path / f"c{n}", n, server.url, random.Random(rng.random()), others=True)
                   for n in range(env_int("CHAOS_CLIENTS", 3))]
        # Keys the server soft-deleted itself; keys seen deleted on the server, and how many of
        # those a later OVERWRITE push brought back.
        server_deleted, seen_deleted, undeleted = set(), set(), 0
        specs = ["POST /tables/* drop=after rate=0.4", "PUT /tables/* drop=after rate=0.4", "DELETE /tables/* drop=after rate=0.5",
                 "* /tables/* status=503 rate=0.2", "GET /tables/* drop=mid rate=0.2", "* /tables/* drop=before rate=0.15"]
        started, failed = time.time(), 0
        def observe(rows):
            """Counts the keys seen deleted on the server that are live again."""
            nonlocal seen_deleted, undeleted
            live = {r["key"] for r in rows if not r["deleted"]}
            undeleted += len(seen_deleted & live)
            seen_deleted = (seen_deleted | {r["key"] for r in rows if r["deleted"]}) - live

        for round_ in range(env_int("CHAOS_DS_ROUNDS", 10)):
            spec = f"seed={rng.randrange(1 << 30)}; " + "; ".join(rng.sample(specs, 2)) + "; * /tables/* latency=0-15"
            for c in clients:
                c.local_ops()
            # Another writer soft-deletes rows, faults off: some a client has just edited (its
            # OVERWRITE push meets a 410 and must bring the row back), maybe one at random.
            rows = server.rows()
            observe(rows)
            live = [r for r in rows if not r["deleted"]]
            edited = {e["key"] for c in clients for e in c.entries() if e.get("__locally_updated__") and not e.get("__locally_deleted__")}
            candidates = [r for r in live if r["key"] in edited]
            targets = rng.sample(candidates, min(len(candidates), rng.randint(0, env_int("CHAOS_DS_SERVER_DELETES", 2))))
            if live and rng.random() < 0.5:
                targets.append(rng.choice(live))
            for r in {t["id"]: t for t in targets}.values():
                server.call("DELETE", f"/tables/{TABLE}/{r['id']}")
                server_deleted.add(r["key"])
                seen_deleted.add(r["key"])
            server.faults(spec)
            server.call("PUT", "/__devserver/clock", str(rng.randint(-600, 600)).encode())

            def work(c):
                nonlocal failed
                for kind in ("up", "down"):
                    if c.sync(kind)["status"] != "DONE":
                        failed += 1

            threads = [threading.Thread(target=work, args=(c,)) for c in clients]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            server.call("DELETE", "/__devserver/faults")  # the check's own reads
            rows = server.rows()
            observe(rows)
            assert duplicates(rows) == 0, f"seed {seed}: round {round_}: a key made twice on the server ({spec}): {twice(rows)}"
        rows, problems = converge(server, clients, server_deleted)
        observe(rows)
        assert duplicates(rows) == 0, f"seed {seed}: a key made twice: {twice(rows)}"
        assert not problems, f"seed {seed}: " + "; ".join(problems[:10])
        Summary.add("datasync_rounds", env_int("CHAOS_DS_ROUNDS", 10))
        Summary.add("datasync_failed_runs", failed)
        Summary.set("datasync_rows", len(rows))
        Summary.add("datasync_server_deletes", len(server_deleted))
        Summary.add("datasync_undeleted", undeleted)
        print(f"datasync fault rounds: seed {seed}, {len(rows)} rows, {failed} failed runs, {len(server_deleted)} server deletes, "
              f"{undeleted} rows brought back by OVERWRITE, {time.time() - started:.1f} s")
    finally:
        server.stop()


def test_datasync_crash_kills(tmp_path):
    """A host doing local writes and syncs, SIGKILLed at random points. Its log (fsynced after
    each committed local write) says the last value per key; after every kill no key is twice
    on the server; after the last, one converging run must bring every logged write up."""
    seed = env_seed()
    rng = random.Random(seed + 1)
    server = Server(tmp_path)
    root, log = tmp_path / "host", tmp_path / "host.log"
    try:
        server.faults(f"seed={seed % 1000}; POST /tables/* drop=after rate=0.2; PUT /tables/* drop=after rate=0.2; * /tables/* latency=0-30")
        kills = env_int("CHAOS_DS_KILLS", 12)
        for k in range(kills):
            host = subprocess.Popen([sys.executable, str(HOST), str(root), server.url, TOKEN, str(log), str(rng.randrange(1 << 30))])
            time.sleep(rng.uniform(0.3, 1.5))
            host.send_signal(signal.SIGKILL)
            host.wait()
            rows = server.rows()
            assert duplicates(rows) == 0, f"seed {seed}: kill {k}: a key made twice on the server: {twice(rows)}"
        client = Client(root, 0, server.url, rng)
        lines = []
        for line in log.read_text().splitlines() if log.exists() else []:
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by the kill: its write was not made
                lines.append({"start": None})
        for i, record in enumerate(lines):
            if "key" not in record:
                continue
            client.log[record["key"]] = record["v"]
            client.also.pop(record["key"], None)
            # A host's last logged write (before the next host's start line, or the end) may have
            # been killed before it committed: its previous value is right then.
            if i + 1 == len(lines) or "start" in lines[i + 1]:
                client.also[record["key"]] = record["prev"]
        rows, problems = converge(server, [client])
        assert duplicates(rows) == 0
        assert not problems, f"seed {seed}: " + "; ".join(problems[:10])
        Summary.add("datasync_kills", kills)
        print(f"datasync crash kills: seed {seed}, {kills} kills, {len(client.log)} keys written, {len(rows)} rows")
    finally:
        server.stop()
