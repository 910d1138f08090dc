"""Crash chaos: a host process is SIGKILLed at random points, again and again (CHAOS_KILLS,
default 200), while it edits its store and syncs it with the dev server (write requests held
40-120 ms at the server so kills land mid-request, and some answers dropped after commit). The
store and the server persist across kills.

After every kill the checker reopens the store and asserts: the persisted sync states hold no
RUNNING (before and after the first sync call), the SQLite file passes integrity_check, no
logged local write is lost (every write but the host's last is known to have happened; the
last one either happened or not, but nothing else), a clean entry equals its server record, a
deleted entry gone locally is gone on the server, no client key is on the server twice, and a
server value never goes back to an older one of the same client. Between kills "another user"
edits, creates and deletes records on the server. After the last kill, plain sync up +
reSync + cleanResyncGhosts must converge (local == server, every latest logged value on the
server) within 3 passes.

The same test runs on an encrypted store (`test_crash_kills[encrypted]`, CHAOS_ENC_KILLS kills,
default 40): the store has a passphrase (kdfIter 4000, the Mobile SDK's) and every created
record and edit carries a canary string. On top of the checks above, after every kill: no file
under the store root holds the canary, SQLite's plaintext header or the key (right after the
kill and again once the checker closed the store), the store refuses a wrong passphrase, the
right passphrase with another kdfIter and no key (SYNCSTORE_ERR_AUTH, 6), and integrity_check
runs on the image chaos_cipher.decrypt_store reads from the file (every page's HMAC checked).
Positive controls: the plaintext run finds the canary in its files, the encrypted run in the
decrypted image.

Reproduce with CHAOS_SEED=<seed printed> (kill timing is wall-clock based, so a rerun explores
the same operations but not exactly the same kill points).
"""
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path


import pytest

import chaos_cipher
import chaos_lib
import syncstore
from chaos_lib import (DevServer, Host, Problems, ServerOrder, Summary, TYPE, compare_converged, duplicates, entries,
                       env_int, env_seed, flag, fmt_problems, integrity, open_store, raw_sync_states)

HERE = Path(__file__).resolve().parent
HOST = HERE / "chaos_host.py"
SYNC_NAMES = ["up", "up-single", "down"]
ENC_KDF_ITER = 4000
AUTH = 6   # SYNCSTORE_ERR_AUTH


class Secrets:
    """An encrypted run's key and canary (`key` None: the plaintext run, which still carries the
    canary: its files must show it, the positive control of the scan)."""

    def __init__(self, rng, encrypted):
        self.canary = "chaos-canary-%08x" % rng.getrandbits(32)
        self.key = ("chaos passphrase %016x" % rng.getrandbits(64)) if encrypted else None
        self.kdf_iter = ENC_KDF_ITER

    @property
    def store_config(self):
        return {"key": self.key, "kdfIter": self.kdf_iter} if self.key else None

    def host_options(self):
        return json.dumps({"store": self.store_config, "canary": self.canary})

    def needles(self):
        return chaos_cipher.needles_for(self.canary, self.key)


def crash_faults(rng, i):
    """Write latency always (the in-flight edits count on it); sometimes answers dropped after or
    before commit, 5xx, half bodies."""
    parts = [f"seed={i + 1}", "POST * latency=40-120", "PATCH * latency=40-120", "DELETE * latency=40-120", "GET * latency=0-15"]
    extra = [
        "POST */composite/sobjects drop=after rate=0.25",
        "POST */sobjects/Chaos__c drop=after rate=0.25",
        "PATCH */composite/sobjects drop=after rate=0.2",
        "DELETE */composite/sobjects drop=after rate=0.2",
        "PATCH */sobjects/Chaos__c/* drop=after rate=0.2",
        "DELETE */sobjects/Chaos__c/* drop=after rate=0.2",
        "POST */composite/sobjects drop=before rate=0.2",
        "* status=503 rate=0.05",
        "GET */query* drop=mid rate=0.1",
    ]
    if rng.random() < 0.6:
        parts += rng.sample(extra, rng.randint(1, 3))
    return "; ".join(parts)


class CrashModel:
    """What the host's log says each of its keys must look like locally."""

    def __init__(self, client):
        self.client = client
        self.field = chaos_lib.VALUE_FIELDS[client]
        self.keys = {}          # key -> {"value", "deleted"}
        self.offset = 0         # bytes of the log already applied

    def read_new(self, log_path):
        with open(log_path) as f:
            f.seek(self.offset)
            text = f.read()
        lines = text.split("\n")
        # A line cut by the kill (no newline yet) is a write that was never started.
        complete = lines[:-1]
        self.offset += sum(len(line) + 1 for line in complete)
        return [json.loads(line) for line in complete if line.strip()]

    def apply(self, rec):
        k = rec["key"]
        if rec["op"] == "create":
            self.keys[k] = {"value": rec["value"], "deleted": False}
        elif rec["op"] == "edit" and k in self.keys:
            self.keys[k]["value"] = rec["value"]
        elif rec["op"] == "delete" and k in self.keys:
            self.keys[k]["deleted"] = True

    def absorb(self, records, local_by_key):
        """Applies the new log records; the last one (the write the kill may have cut short)
        only if the store shows it happened."""
        for rec in records[:-1]:
            self.apply(rec)
        if records:
            last = records[-1]
            found = local_by_key.get(last["key"], [])
            if last["op"] == "create":
                happened = bool(found)
            elif last["op"] == "edit":
                happened = any(e.get(self.field) == last["value"] for e in found)
            else:
                happened = not found or any(flag(e.get("__locally_deleted__")) for e in found)
            if happened:
                self.apply(last)

    def check_local(self, local_by_key, server_by_key, tag, problems):
        for k, st in self.keys.items():
            found = local_by_key.get(k, [])
            live = server_by_key.get(k, [])
            if len(found) > 1:
                problems.add(tag, "LOCAL_DUPLICATE", k, f"key {k} is held by {len(found)} local entries "
                             f"{[(e['_soupEntryId'], e.get('Id')) for e in found]}")
            if st["deleted"]:
                if len(found) > 1:
                    continue   # reported as a local duplicate: which entry the host deleted is moot
                if not found and live:
                    problems.add(tag, "LOST", k, f"LOST DELETE key {k}: gone locally but still on the server {[r['Id'] for r in live]}")
                elif found and not any(flag(e.get("__locally_deleted__")) and flag(e.get("__local__")) for e in found):
                    problems.add(tag, "LOST", k, f"LOST DELETE key {k}: the entry is back to undeleted")
                continue
            if not found:
                problems.add(tag, "LOST", k, f"LOST EDIT key {k}: the entry vanished (last value {st['value']})")
                continue
            holders = [e for e in found if e.get(self.field) == st["value"]]
            if not holders:
                problems.add(tag, "LOST", k, f"LOST EDIT key {k}: local {self.field}={[e.get(self.field) for e in found]}, "
                             f"last logged {st['value']!r} (dirty={[flag(e.get('__local__')) for e in found]})")
                continue
            if len(found) > 1:
                continue   # reported as a local duplicate; which server record it maps to is moot
            e = holders[0]
            if not flag(e.get("__local__")):
                if len(live) > 1:
                    continue   # reported as a server duplicate
                if len(live) != 1 or live[0]["Id"] != e.get("Id"):
                    problems.add(tag, "LOST", k, f"key {k} is clean locally (Id {e.get('Id')}) but the server has "
                                 f"{[r['Id'] for r in live]}")
                elif live[0].get(self.field) != st["value"]:
                    problems.add(tag, "LOST", k, f"LOST EDIT key {k}: clean locally with {st['value']!r} but the server has "
                                 f"{live[0].get(self.field)!r}")


class OtherUser:
    """Another user editing the org while the host is down: V1 of any record, and records of
    its own (Owner "srv") that it creates and deletes."""

    def __init__(self, server, rng):
        self.server, self.rng = server, rng
        self.v1 = {}       # Id -> last V1 written
        self.n = 0

    def act(self, records):
        rng = self.rng
        if records and rng.random() < 0.35:
            for r in rng.sample(records, min(len(records), rng.randint(1, 2))):
                self.n += 1
                value = f"srv-{self.n}"
                status, _ = self.server.request("PATCH", f"sobjects/{TYPE}/{r['Id']}", {"V1__c": value})
                if status == 204:
                    self.v1[r["Id"]] = value
        if rng.random() < 0.2:
            key = "%032x" % rng.getrandbits(128)
            self.server.ok("POST", f"sobjects/{TYPE}", {"Name": f"srv-{key[:8]}", "Key__c": key, "Owner__c": "srv",
                                                         "Shared__c": False})
        own = [r for r in records if r.get("Owner__c") == "srv"]
        if own and rng.random() < 0.1:
            victim = rng.choice(own)
            self.server.request("DELETE", f"sobjects/{TYPE}/{victim['Id']}")
            self.v1.pop(victim["Id"], None)

    def check(self, records, tag):
        by_id = {r["Id"]: r for r in records}
        return [f"{tag}: other user's V1 on {i} is {by_id[i].get('V1__c')!r}, expected {v!r} (overwritten by a sync up?)"
                for i, v in self.v1.items() if i in by_id and by_id[i].get("V1__c") != v]


@pytest.mark.parametrize("mode", ["plain", "encrypted"])
def test_crash_kills(tmp_path, mode):
    seed = env_seed()
    enc = mode == "encrypted"
    kills = env_int("CHAOS_ENC_KILLS", 40) if enc else env_int("CHAOS_KILLS", 200)
    if kills <= 0:
        pytest.skip(f"{'CHAOS_ENC_KILLS' if enc else 'CHAOS_KILLS'}=0")
    max_life = float(os.environ.get("CHAOS_KILL_MAX_S", "1.2"))
    label = "chaos crash encrypted" if enc else "chaos crash"
    print(f"\n[{label}] CHAOS_SEED={seed} {'CHAOS_ENC_KILLS' if enc else 'CHAOS_KILLS'}={kills} "
          f"lib={chaos_lib.library_path()}")
    # The plaintext run keeps the streams it always had; the encrypted one draws its own.
    base = seed + (0x10000000 if enc else 0)
    rng = random.Random(base)
    secrets = Secrets(random.Random(base + 2), enc)
    server = DevServer(tmp_path / "server")
    root = tmp_path / "store"
    log_path = tmp_path / "history.jsonl"
    log_path.touch()
    host_err = tmp_path / "host.stderr"
    model = CrashModel(0)
    other = OtherUser(server, random.Random(base + 1))
    order = ServerOrder()
    problems = Problems()
    counts = {"kills": 0, "host_exits": 0, "running_after_reopen": 0, "canary_seen": 0, "wrong_key_refusals": 0,
              "scans": 0}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.time()
    passes = 0
    try:
        for i in range(kills):
            tag = f"kill {i + 1}"
            server.set_faults(crash_faults(rng, i))
            with open(host_err, "ab") as err:
                err.write(f"--- {tag}\n".encode())
                err.flush()
                proc = subprocess.Popen([sys.executable, str(HOST), str(root), server.url, str(log_path),
                                         str(base * 1000 + i), "0", "post", secrets.host_options()],
                                        stdout=subprocess.DEVNULL, stderr=err, env=env)
            life = rng.uniform(0.05, max_life)
            try:
                rc = proc.wait(timeout=life)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            if rc == -9:
                counts["kills"] += 1
            else:
                counts["host_exits"] += 1
                tail = host_err.read_text(errors="replace").rsplit(f"--- {tag}\n", 1)[-1][-3000:]
                if rc == 3:
                    problems.add(tag, "LIVENESS", tag, f"the host gave up waiting for a run:\n{tail}")
                else:
                    problems.add(tag, "HOST", tag, f"the host exited with {rc}:\n{tail}")
            server.clear_faults()
            if enc:
                check_at_rest(tag, "after the kill", root, secrets, counts, problems)
                check_wrong_keys(tag, root, secrets, counts, problems)
            check_after_kill(tag, root, server, model, log_path, counts, problems, order, secrets)
            if enc:
                check_at_rest(tag, "after the checker closed the store", root, secrets, counts, problems)
            elif chaos_cipher.scan(root, [secrets.canary.encode()]):
                counts["canary_seen"] += 1   # the positive control of the scan
            other.act(server.records())
        # Faults stop: plain syncs must converge, without any new local write.
        server.clear_faults()
        passes, final = converge(root, server, rng, secrets.store_config)
        for n, message in enumerate(final):
            problems.add("final", "LIVENESS" if "LIVENESS" in message else "CONVERGE", n, message)
        recs = server.records()
        for n, message in enumerate(other.check(recs, "final")):
            problems.add("final", "LOST", f"other-{n}", message)
        by_key = {}
        for r in recs:
            by_key.setdefault(r.get("Key__c"), []).append(r)
        for k, st in model.keys.items():
            live = by_key.get(k, [])
            if st["deleted"]:
                if live:
                    problems.add("final", "LOST", k, f"LOST DELETE key {k} still on the server {[r['Id'] for r in live]}")
            elif not live:
                problems.add("final", "LOST", k, f"LOST CREATE key {k} (last value {st['value']}) is not on the server")
            elif not any(r.get("V0__c") == st["value"] for r in live):
                problems.add("final", "LOST", k, f"LOST EDIT key {k}: server V0__c {[r.get('V0__c') for r in live]} != "
                             f"last logged {st['value']}")
        for k, ids in duplicates(recs).items():
            problems.add("final", "DUPLICATE", k, f"key {k} is on the server {len(ids)} times: {ids}")
    finally:
        server.stop()
    elapsed = time.time() - started
    dups = problems.subjects("DUPLICATE")
    lost = problems.subjects("LOST")
    # The plaintext run keeps its summary names; the encrypted one prefixes them with "enc_".
    pre = "enc_" if enc else ""
    Summary.set(pre + "crash_seed", seed)
    Summary.add(pre + "kills", counts["kills"])
    Summary.add(pre + "crash_host_exits", counts["host_exits"])
    Summary.add(pre + "crash_duplicates", len(dups))
    Summary.add(pre + "crash_local_duplicates", len(problems.subjects("LOCAL_DUPLICATE")))
    Summary.add(pre + "crash_lost_edits", len(lost))
    Summary.add(pre + "crash_lost_edits_on_duplicated_keys", len(lost & (dups | problems.subjects("LOCAL_DUPLICATE"))))
    Summary.add(pre + "crash_stale_overwrites", len(problems.subjects("STALE")))
    Summary.add(pre + "crash_running_after_reopen", counts["running_after_reopen"])
    Summary.add(pre + "crash_integrity_failures", len(problems.subjects("INTEGRITY")))
    Summary.add(pre + "crash_liveness_failures", len(problems.subjects("LIVENESS")))
    Summary.set(pre + "crash_keys", len(model.keys))
    Summary.set(pre + "crash_converge_passes", passes)
    Summary.set(pre + "crash_seconds", round(elapsed, 1))
    Summary.set(pre + "crash_canary_seen", counts["canary_seen"])
    if enc:
        Summary.add("enc_crash_cleartext_files", len(problems.subjects("CLEARTEXT")))
        Summary.add("enc_crash_wrong_key_refusals", counts["wrong_key_refusals"])
        Summary.add("enc_crash_key_failures", len(problems.subjects("KEY")))
        Summary.add("enc_crash_scans", counts["scans"])
    extra = (f" cleartext={len(problems.subjects('CLEARTEXT'))} wrong-key refusals={counts['wrong_key_refusals']} "
             f"key failures={len(problems.subjects('KEY'))} scans={counts['scans']}" if enc else "")
    print(f"[{label}] seed={seed} kills={counts['kills']} host exits={counts['host_exits']} keys={len(model.keys)} "
          f"duplicates={len(dups)} local duplicates={len(problems.subjects('LOCAL_DUPLICATE'))} lost={len(lost)} "
          f"running-after-reopen={counts['running_after_reopen']} integrity failures={len(problems.subjects('INTEGRITY'))}"
          f"{extra} canary seen (in {'the decrypted image' if enc else 'the files'}) after {counts['canary_seen']} "
          f"kills, converge passes={passes} in {elapsed:.0f} s")
    assert not len(problems), (f"CHAOS_SEED={seed}: {len(problems)} problems (history {log_path}):\n"
                               f"{fmt_problems(problems.messages())}")
    assert counts["kills"] >= kills * 0.9, f"CHAOS_SEED={seed}: only {counts['kills']} of {kills} runs were killed"
    if model.keys:
        # The positive control: the canary does reach the store (else "not in the files" proves nothing).
        assert counts["canary_seen"], (f"CHAOS_SEED={seed}: the canary {secrets.canary!r} was never seen in the "
                                       f"{'decrypted image' if enc else 'files'} of the store")


def check_at_rest(tag, when, root, secrets, counts, problems):
    """Encrypted run: no file under the store root holds the canary, SQLite's plaintext header or the key."""
    counts["scans"] += 1
    for path, hits in chaos_cipher.scan(root, secrets.needles()).items():
        what = ["the canary" if h == secrets.canary.encode() else "the SQLite header" if h == chaos_cipher.SQLITE_HEADER
                else "the key" for h in hits]
        problems.add(tag, "CLEARTEXT", path, f"{when}: {path} holds {', '.join(what)} in clear")


def check_wrong_keys(tag, root, secrets, counts, problems):
    """Encrypted run: the store refuses a wrong passphrase, the right one with another kdfIter, and
    no key, with SYNCSTORE_ERR_AUTH. Only once the file holds its first page (an empty file is a
    new store: any key would create it)."""
    path = chaos_lib.db_path(root)
    if not path.exists() or path.stat().st_size < chaos_cipher.PAGE:
        return
    for what, config in (("a wrong passphrase", {"key": secrets.key + " (wrong)", "kdfIter": secrets.kdf_iter}),
                         ("another kdfIter", {"key": secrets.key, "kdfIter": secrets.kdf_iter + 1}),
                         ("no key", None)):
        try:
            open_store(root, config).close()
        except syncstore.SyncStoreError as e:
            if e.code == AUTH:
                counts["wrong_key_refusals"] += 1
            else:
                problems.add(tag, "KEY", what, f"opening with {what} failed with {e.name}, not SYNCSTORE_ERR_AUTH: {e}")
        else:
            problems.add(tag, "KEY", what, f"the encrypted store opened with {what}")


def check_after_kill(tag, root, server, model, log_path, counts, problems, order, secrets):
    with open_store(root, secrets.store_config) as store:
        # Right after open, before any sync call: the header promises open resets RUNNING.
        raw = [s.get("name") for s in raw_sync_states(store) if s.get("status") == "RUNNING"]
        if raw:
            counts["running_after_reopen"] += 1
            problems.add(tag, "RUNNING", "raw", f"after reopen the store still says RUNNING for {raw} "
                         f"(until the first sync call; {counts['running_after_reopen']} kills so far)")
        for name in SYNC_NAMES:
            st = store.get_sync_status(name)
            if st and st["status"] == "RUNNING":
                problems.add(tag, "RUNNING", name, f"getSyncStatus({name}) is RUNNING after reopen")
        local = entries(store)
    if secrets.key:
        # integrity_check of the image read from the encrypted file (every page's HMAC checked).
        try:
            image = chaos_cipher.decrypt_store(chaos_lib.db_path(root), secrets.key, secrets.kdf_iter)
        except chaos_cipher.CipherError as e:
            result = [f"cipher: {e}"]
        else:
            result = chaos_cipher.integrity_check_image(image)
            if secrets.canary.encode() in image:
                counts["canary_seen"] += 1   # the positive control of the scan
    else:
        result = integrity(root)
    if result != ["ok"]:
        problems.add(tag, "INTEGRITY", tag, f"integrity_check: {result[:5]}")
    recs = server.records()
    local_by_key, server_by_key = {}, {}
    for e in local:
        local_by_key.setdefault(e.get("Key__c"), []).append(e)
    for r in recs:
        server_by_key.setdefault(r.get("Key__c"), []).append(r)
    model.absorb(model.read_new(log_path), local_by_key)
    model.check_local(local_by_key, server_by_key, tag, problems)
    for message in order.check(recs, tag, fields=[model.field]):
        problems.add(tag, "STALE", message.split("key ")[1].split(":")[0], message.split(": ", 1)[1])
    for k, ids in duplicates(recs).items():
        problems.add(tag, "DUPLICATE", k, f"key {k} is on the server {len(ids)} times: {ids}")


def converge(root, server, rng, store_config=None, passes=3):
    """Plain sync up + reSync + cleanResyncGhosts until local == server; returns (passes, problems)."""
    problems = []
    with open_store(root, store_config) as store:
        host = Host(store, 0, lambda rec: None, rng)
        host.setup(server.url)
        for n in range(1, passes + 1):
            try:
                up = host.sync_up("collection", 120)
                down = host.sync_down(120)
                ghosts = host.ghosts(120)
            except chaos_lib.SyncTimeout as e:
                problems = [f"final: LIVENESS: {e}"]
                continue
            problems = compare_converged("final", entries(store), server.records())
            for label, st in (("sync up", up), ("sync down", down), ("ghosts", ghosts)):
                if st and st.get("status") != "DONE":
                    problems.append(f"final pass {n}: {label} ended {st.get('status')}: {st.get('error')}")
            if not problems:
                return n, []
    return passes, problems
