"""SIGKILL during syncstore_change_key: a host process (rekey_host.py) opens a store of a few
thousand entries (one soup with integer, string, full_text and json1 indexes, a tenth of the
entries dirty local edits) and changes its key in a loop, A -> B -> A ... (A a raw key
x'<64 hex>', B a passphrase with kdfIter 1000), now and then to no key (plaintext) and back, with
an edit of one entry before about half of the changes; the test SIGKILLs it at random moments,
CHAOS_REKEY_KILLS times (default 60).

Kill moments: the time one change takes (T) is measured first on the same store; then each host
is killed a delay drawn uniformly from [0, 3T] after it says it is ready (a kill anywhere in its
loop), or, for some kills, while the new copy (<name>.db.rekey) is being written (a delay in
[0, T] after it appears), or just after the rename (0-3 ms after the .rekey name goes away:
the old connection closing, the new file opened and put in WAL mode).

After every kill:
- the store opens with exactly one of A, B and no key (the others fail with SYNCSTORE_ERR_AUTH),
  and that key is one the store may have: the one of the last finished change, or, killed in
  a change, its old or new key;
- no <name>.db.rekey (nor its -journal/-wal/-shm) is left once the store opened;
- every entry is there with its content (the built set plus the logged edits: every logged edit
  but the last happened, the last one did or not), counted by Smart SQL, and the indexes answer
  (exact on integer k and json1 tag, range on k, like on name, full-text match on note, exact on
  an edited val and on grp, Smart SQL counts by an indexed column);
- integrity_check of the closed file: sqlite3's for a plaintext store, and for an encrypted one
  of the image chaos_cipher.decrypt_store reads from it (every page's HMAC checked);
- while the store is encrypted, no file under the root holds the canary the entries carry,
  SQLite's plaintext header or a key, right after the kill and once the checker closed it (the
  .rekey copy of a change to no key may hold plaintext, as may the files of a plaintext store:
  there the canary must be found, the positive control of the scan).

Counts: where the kills landed (between changes; in a change with the .rekey file there at the
kill; in a change before the copy started or after the rename, told apart by the key that
opens), printed and in the chaos summary. Reproduce with CHAOS_SEED=<seed printed> (kill times
are wall-clock based: a seed gives the same keys, entries, edits and kill modes, not the same
instants).
"""
import json
import os
import random
import select
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chaos_cipher
import chaos_lib
import rekey_host
import syncstore
from chaos_lib import Problems, Summary, env_int, env_seed, fmt_problems

HERE = Path(__file__).resolve().parent
HOST = HERE / "rekey_host.py"
SOUP = rekey_host.SOUP
KDF_ITER = 1000
AUTH = 6   # SYNCSTORE_ERR_AUTH
INDEXES = [{"path": "k", "type": "integer"}, {"path": "name", "type": "string"}, {"path": "grp", "type": "integer"},
           {"path": "note", "type": "full_text"}, {"path": "tag", "type": "json1"}, {"path": "val", "type": "string"},
           {"path": "__local__", "type": "string"}]
CONTENT = ["k", "name", "grp", "note", "tag", "val", "pad", "__local__", "__locally_created__", "__locally_updated__",
           "__locally_deleted__"]
KEY_NAMES = ["A", "B", "none"]


def build_entries(rng, n, canary):
    out = {}
    for i in range(n):
        dirty = i % 10 == 3
        out[i] = {"k": i, "name": f"{canary}-{i:05d}", "grp": i % 17, "note": f"w{i % 50} {canary} n{i}",
                  "tag": f"t{i % 7}", "val": "v0-%08x" % rng.getrandbits(32), "pad": "%064x" % rng.getrandbits(256),
                  "__local__": dirty, "__locally_created__": False, "__locally_updated__": dirty,
                  "__locally_deleted__": False}
    return out


def db_file(root):
    return Path(root) / "user" / f"{rekey_host.STORE_NAME}.db"


def rekey_files(root):
    base = str(db_file(root)) + ".rekey"
    return [p for p in (base, base + "-journal", base + "-wal", base + "-shm") if os.path.exists(p)]


class Model:
    """The expected entries and key, from the host's log."""

    def __init__(self, entries, key):
        self.entries = entries
        self.key = key             # the key of the last finished change (or of the build)
        self.offset = 0

    def read_new(self, log_path):
        with open(log_path) as f:
            f.seek(self.offset)
            text = f.read()
        lines = text.split("\n")
        complete = lines[:-1]      # a line cut by the kill: its step never started
        self.offset += sum(len(line) + 1 for line in complete)
        return [json.loads(line) for line in complete if line.strip()]


def test_rekey_kills(tmp_path):
    seed = env_seed()
    kills = env_int("CHAOS_REKEY_KILLS", 60)
    n_entries = env_int("CHAOS_REKEY_ENTRIES", 3000)
    if kills <= 0:
        pytest.skip("CHAOS_REKEY_KILLS=0")
    print(f"\n[chaos rekey] CHAOS_SEED={seed} CHAOS_REKEY_KILLS={kills} CHAOS_REKEY_ENTRIES={n_entries} "
          f"lib={chaos_lib.library_path()}")
    rng = random.Random(seed)
    canary = "rekey-canary-%08x" % rng.getrandbits(32)
    keys = {"A": "x'%064x'" % rng.getrandbits(256), "B": "rekey passphrase %016x" % rng.getrandbits(64),
            "kdfIter": KDF_ITER, "entries": n_entries}
    needles = chaos_cipher.needles_for(canary, keys["A"], keys["B"])
    root = tmp_path / "store"
    log_path = tmp_path / "rekey.jsonl"
    log_path.touch()
    host_err = tmp_path / "host.stderr"
    problems = Problems()
    counts = {"kills": 0, "host_exits": 0, "between": 0, "mid_rekey_file": 0, "mid_old_key": 0, "mid_new_key": 0,
              "opened_A": 0, "opened_B": 0, "opened_none": 0, "auth_refusals": 0, "scans": 0, "canary_seen": 0,
              "edits": 0, "changes_done": 0, "mode_uniform": 0, "mode_copy": 0, "mode_rename": 0,
              "rekey_file_at_kill": 0}
    started = time.time()

    # The store: built under A, then T measured on it (A -> B -> A -> none -> A: every kind of change).
    expected = build_entries(rng, n_entries, canary)
    with syncstore.Store(root, rekey_host.store_config(keys, "A")) as store:
        store.register_soup(SOUP, INDEXES)
        store.upsert(SOUP, [dict(e) for e in expected.values()], return_entries=False)
        durations = []
        for target in ["B", "A", "none", "A"]:
            t0 = time.perf_counter()
            chaos_lib.change_key(store, None if target == "none" else keys[target])
            durations.append(time.perf_counter() - t0)
        size = store.database_size()
    change_s = statistics.median(durations)
    print(f"[chaos rekey] store of {n_entries} entries, {size} bytes; one change takes "
          f"{', '.join(f'{d * 1000:.0f}' for d in durations)} ms (T = {change_s * 1000:.0f} ms)")
    model = Model(expected, "A")
    check_store(-1, "the built store", root, keys, model, [], None, needles, canary, counts, problems)
    assert not len(problems), fmt_problems(problems.messages())

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for i in range(kills):
        tag = f"kill {i + 1}"
        mode = rng.choices(["uniform", "copy", "rename"], [6, 2, 2])[0]
        delay = rng.uniform(0, 3 * change_s) if mode == "uniform" else \
            rng.uniform(0, change_s) if mode == "copy" else rng.uniform(0, 0.003)
        with open(host_err, "ab") as err:
            err.write(f"--- {tag}\n".encode())
            err.flush()
            proc = subprocess.Popen([sys.executable, str(HOST), str(root), str(log_path), str(seed * 1000 + i),
                                     json.dumps(keys), model.key], stdout=subprocess.PIPE, stderr=err, env=env)
        rekey_at_kill = False
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            line = proc.stdout.readline() if ready else b""
            if line.strip() == b"ready":
                counts["mode_" + mode] += 1
                wait_for_moment(proc, root, mode, delay)
                rekey_at_kill = bool(rekey_files(root))
        finally:
            proc.kill()
            rc = proc.wait()
            proc.stdout.close()
        if rc == -9:
            counts["kills"] += 1
            counts["rekey_file_at_kill"] += rekey_at_kill
        else:
            counts["host_exits"] += 1
            tail = host_err.read_text(errors="replace").rsplit(f"--- {tag}\n", 1)[-1][-3000:]
            problems.add(tag, "HOST", tag, f"the rekey host exited with {rc}:\n{tail}")
        records = model.read_new(log_path)
        check_store(i, tag, root, keys, model, records, rekey_at_kill, needles, canary, counts, problems)
        if ("KEY", tag) in problems.items:
            break   # no key opens the store (or two do): nothing more to learn from it

    elapsed = time.time() - started
    mid = counts["mid_rekey_file"] + counts["mid_old_key"] + counts["mid_new_key"]
    for k, v in counts.items():
        Summary.add("rekey_" + k, v)
    Summary.set("rekey_seed", seed)
    Summary.set("rekey_change_ms", round(change_s * 1000, 1))
    Summary.set("rekey_seconds", round(elapsed, 1))
    Summary.add("rekey_problems", len(problems))
    print(f"[chaos rekey] seed={seed} kills={counts['kills']} host exits={counts['host_exits']}: {mid} in a change "
          f"({counts['mid_rekey_file']} with the .rekey copy being written, {counts['mid_old_key']} before it "
          f"(old key opens), {counts['mid_new_key']} after the rename (new key opens)), {counts['between']} between "
          f"changes; modes uniform/copy/rename {counts['mode_uniform']}/{counts['mode_copy']}/{counts['mode_rename']}; "
          f"opened with A/B/none {counts['opened_A']}/{counts['opened_B']}/{counts['opened_none']}, "
          f"{counts['auth_refusals']} AUTH refusals, {counts['changes_done']} changes and {counts['edits']} edits "
          f"logged, {counts['scans']} scans, canary seen in {counts['canary_seen']} plaintext files/images; "
          f"T={change_s * 1000:.0f} ms; "
          f"{len(problems)} problems in {elapsed:.0f} s")
    assert not len(problems), (f"CHAOS_SEED={seed}: {len(problems)} problems (log {log_path}):\n"
                               f"{fmt_problems(problems.messages())}")
    assert counts["kills"] >= kills * 0.9, f"CHAOS_SEED={seed}: only {counts['kills']} of {kills} hosts were killed"
    assert counts["canary_seen"], "the canary was never seen in a plaintext file or decrypted image (scan control)"


def wait_for_moment(proc, root, mode, delay):
    """Sleeps until the kill moment of `mode` (the host is then killed by the caller)."""
    base = str(db_file(root)) + ".rekey"
    if mode == "uniform":
        time.sleep(delay)
        return
    deadline = time.time() + 10
    while not os.path.exists(base):            # the copy starts
        if proc.poll() is not None or time.time() > deadline:
            return
        time.sleep(0.0003)
    if mode == "copy":
        time.sleep(delay)
        return
    while os.path.exists(base):                # the rename
        if proc.poll() is not None or time.time() > deadline:
            return
        time.sleep(0.0002)
    time.sleep(delay)


def config(keys, name):
    return rekey_host.store_config(keys, name)


def check_store(i, tag, root, keys, model, records, rekey_at_kill, needles, canary, counts, problems):
    """Every check after a kill (see the module docstring); updates the model."""
    rng = random.Random(i)
    # What the log says: the key(s) the store may have, and the edits.
    intent = None
    edits = []
    for rec in records:
        if rec["op"] == "intent":
            intent = rec
        elif rec["op"] == "done":
            intent = None
            model.key = rec["to"]
            counts["changes_done"] += 1
        elif rec["op"] == "edit":
            edits.append(rec)
    counts["edits"] += len(edits)
    allowed = {intent["from"], intent["to"]} if intent else {model.key}
    last = records[-1] if records else None

    # Right after the kill: which files hold something in clear (judged once the key is known).
    at_kill = chaos_cipher.scan(root, needles)

    # Exactly one of A, B, none opens it; the others are AUTH.
    opened = []
    order = KEY_NAMES[:]
    rng.shuffle(order)
    for name in order:
        try:
            store = syncstore.Store(root, config(keys, name))
        except syncstore.SyncStoreError as e:
            if e.code == AUTH:
                counts["auth_refusals"] += 1
            else:
                problems.add(tag, "OPEN", name, f"opening with key {name} failed with {e.name}, not AUTH: {e}")
            continue
        opened.append(name)
        try:
            leftovers = rekey_files(root)
            if leftovers:
                problems.add(tag, "LEFTOVER", tag, f"{[os.path.basename(p) for p in leftovers]} still there after "
                             f"the store opened with key {name}")
            check_entries(tag, store, model, edits, last, rng, problems)
        finally:
            store.close()
    if len(opened) != 1:
        problems.add(tag, "KEY", tag, f"the store opens with {opened or 'no key'} (exactly one of A, B, none must), "
                     f"log: {intent or ('last finished change to ' + model.key)}")
        return
    key = opened[0]
    if i >= 0:
        counts["opened_" + key] += 1
    if key not in allowed:
        problems.add(tag, "KEY", tag, f"the store opens with {key}, but the log allows only {sorted(allowed)} "
                     f"({'in the change ' + intent['from'] + ' -> ' + intent['to'] if intent else 'between changes'})")
    if i >= 0:
        if intent is None:
            counts["between"] += 1
        elif rekey_at_kill:
            counts["mid_rekey_file"] += 1
        elif key == intent["from"]:
            counts["mid_old_key"] += 1
        else:
            counts["mid_new_key"] += 1
    if intent and key == intent["to"]:
        model.key = key     # the change was done: the next host starts from the new key

    # Nothing in clear while encrypted (the .rekey copy of a change to no key may be plaintext).
    counts["scans"] += 1
    for path, hits in at_kill.items():
        is_copy = ".rekey" in path
        if is_copy and intent and intent["to"] == "none":
            continue
        if not is_copy and key == "none":
            continue
        problems.add(tag, "CLEARTEXT", path, f"right after the kill {path} holds {describe(hits, canary)} in clear "
                     f"(store key {key}, {'change ' + intent['from'] + ' -> ' + intent['to'] if intent else 'no change'})")
    if rekey_files(root):
        problems.add(tag, "LEFTOVER", "closed", f"{rekey_files(root)} there after the checker closed the store")
    # integrity_check of the closed file; the positive control of the scan on plaintext.
    path = db_file(root)
    if key == "none":
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()
        if canary.encode() in path.read_bytes():
            counts["canary_seen"] += 1
    else:
        try:
            image = chaos_cipher.decrypt_store(path, keys[key], KDF_ITER)
        except chaos_cipher.CipherError as e:
            result = [f"cipher: {e}"]
        else:
            result = chaos_cipher.integrity_check_image(image)
            if canary.encode() in image:
                counts["canary_seen"] += 1
        counts["scans"] += 1
        for p, hits in chaos_cipher.scan(root, needles).items():
            problems.add(tag, "CLEARTEXT", "closed " + p, f"after the checker closed the store (key {key}) {p} holds "
                         f"{describe(hits, canary)} in clear")
    if result != ["ok"]:
        problems.add(tag, "INTEGRITY", tag, f"integrity_check (key {key}): {result[:5]}")


def describe(hits, canary):
    return ", ".join("the canary" if h == canary.encode() else "the SQLite header" if h == chaos_cipher.SQLITE_HEADER
                     else "a key" for h in hits)


def check_entries(tag, store, model, edits, last, rng, problems):
    """The entries through the public API: all there with their content, counts, indexes answer.
    Applies the logged edits to the model (the last one only if the store shows it)."""
    expected = model.entries
    rows = store.find(None, {"queryType": "smart", "smartSql": f"select {{{SOUP}:_soup}} from {{{SOUP}}}",
                             "pageSize": len(expected) + 100})
    got = {}
    for r in rows:
        e = json.loads(r[0]) if isinstance(r[0], str) else r[0]
        if e.get("k") in got:
            problems.add(tag, "ENTRIES", f"dup-{e.get('k')}", f"k={e.get('k')} is held by two entries")
        got[e.get("k")] = e
    for rec in edits:
        # The last step of the log may have been cut by the kill: it happened if the store shows it.
        happened = rec is not last or got.get(rec["k"], {}).get("val") == rec["val"]
        if happened:
            expected[rec["k"]]["val"] = rec["val"]
            expected[rec["k"]]["__local__"] = True
            expected[rec["k"]]["__locally_updated__"] = True
    bad = []
    for k, want in expected.items():
        e = got.get(k)
        if e is None:
            bad.append(f"k={k} is missing")
            continue
        diff = [f for f in CONTENT if e.get(f) != want[f]]
        if diff:
            bad.append(f"k={k}: " + ", ".join(f"{f} {e.get(f)!r} != {want[f]!r}" for f in diff))
    extra = sorted(set(got) - set(expected))
    if extra:
        bad.append(f"unexpected entries k={extra[:10]}")
    for n, message in enumerate(bad[:20]):
        problems.add(tag, "ENTRIES", n, message)
    if bad:
        return

    def count(where=""):
        return store.find(None, {"queryType": "smart", "smartSql": f"select count(*) from {{{SOUP}}}{where}",
                                 "pageSize": 1})[0][0]

    def query(spec):
        return store.query(SOUP, dict(spec, pageSize=max(len(expected), 1)))

    answers = []
    answers.append(("count(*)", count(), len(expected)))
    g = rng.randrange(17)
    answers.append((f"count where grp = {g}", count(f" where {{{SOUP}:grp}} = {g}"),
                    sum(1 for e in expected.values() if e["grp"] == g)))
    answers.append(("count where __local__ dirty", count(f" where {{{SOUP}:__local__}} = 'true'"),
                    sum(1 for e in expected.values() if e["__local__"] is True)))
    for k in rng.sample(sorted(expected), min(4, len(expected))):
        hit = query({"queryType": "exact", "indexPath": "k", "matchKey": k})
        answers.append((f"exact k={k}", [e.get("val") for e in hit], [expected[k]["val"]]))
    lo = rng.randrange(len(expected))
    hi = min(len(expected) - 1, lo + rng.randrange(1, 200))
    answers.append((f"range k {lo}..{hi}", sorted(e["k"] for e in query({"queryType": "range", "indexPath": "k",
                                                                         "beginKey": lo, "endKey": hi})),
                    list(range(lo, hi + 1))))
    prefix = f"{expected[0]['name'][:-5]}{lo // 100:03d}"
    answers.append((f"like name {prefix}%", sorted(e["k"] for e in query({"queryType": "like", "indexPath": "name",
                                                                        "likeKey": prefix + "%"})),
                    sorted(k for k, e in expected.items() if e["name"].startswith(prefix))))
    w = rng.randrange(50)
    answers.append((f"match note w{w}", len(query({"queryType": "match", "indexPath": "note", "matchKey": f"w{w}"})),
                    sum(1 for e in expected.values() if e["note"].startswith(f"w{w} "))))
    t = rng.randrange(7)
    answers.append((f"exact tag t{t}", len(query({"queryType": "exact", "indexPath": "tag", "matchKey": f"t{t}"})),
                    sum(1 for e in expected.values() if e["tag"] == f"t{t}")))
    edited = [rec["k"] for rec in edits if expected[rec["k"]]["val"] == rec["val"]][-2:] or [rng.randrange(len(expected))]
    for k in edited:
        v = expected[k]["val"]
        answers.append((f"exact val {v}", [e["k"] for e in query({"queryType": "exact", "indexPath": "val", "matchKey": v})],
                        [k]))
    for what, got_answer, want in answers:
        if got_answer != want:
            problems.add(tag, "INDEX", what, f"{what}: the store answers {str(got_answer)[:200]}, expected {str(want)[:200]}")


# ---------------------------------------------------------------------------------------------
# Targeted repros of two problems the kill loop found (both fixed; README).

STOP_AFTER_RENAME = r'''
import os, signal, sys, threading
import syncstore
root, key = sys.argv[1], sys.argv[2]
store = syncstore.Store(root, {"storeName": "rekey"})
copy = os.path.join(root, "user", "rekey.db.rekey")

def watch():   # the change runs in C without the GIL: this thread sees the rename and stops the process
    while not os.path.exists(copy):
        pass
    while os.path.exists(copy):
        pass
    os.kill(os.getpid(), signal.SIGSTOP)

threading.Thread(target=watch, daemon=True).start()
import chaos_lib
chaos_lib.change_key(store, key)
'''




def test_rekey_plaintext_journal_after_rename(tmp_path):
    """A change from no key to a key, stopped (then SIGKILLed) right after its rename: no file
    beside the now encrypted store may hold plaintext. Up to 10 tries (the stop lands in the
    window about one try in two while the issue is there)."""
    key = "x'" + "5a" * 32 + "'"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    for attempt in range(1, 11):
        root = tmp_path / f"try{attempt}"
        with syncstore.Store(root, {"storeName": "rekey"}) as store:
            store.register_soup(SOUP, [{"path": "k", "type": "integer"}])
            store.upsert(SOUP, [{"k": i, "secret": f"journal-canary-{i}"} for i in range(2000)], return_entries=False)
        proc = subprocess.Popen([sys.executable, "-c", STOP_AFTER_RENAME, str(root), key], env=env)
        try:
            deadline = time.time() + 30
            while proc.poll() is None and time.time() < deadline:
                try:
                    with open(f"/proc/{proc.pid}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[0] == "T":
                            break
                except FileNotFoundError:
                    break
                time.sleep(0.001)
            found = chaos_cipher.scan(root, [chaos_cipher.SQLITE_HEADER, b"journal-canary-"])
        finally:
            proc.kill()
            proc.wait()
        # The store itself: opens with the new key only, whole, and the next open cleans up.
        with pytest.raises(syncstore.SyncStoreError) as refused:
            syncstore.Store(root, {"storeName": "rekey"}).close()
        assert refused.value.code == AUTH
        with syncstore.Store(root, {"storeName": "rekey", "key": key}) as store:
            assert store.find(None, {"queryType": "smart", "smartSql": f"select count(*) from {{{SOUP}}}",
                                     "pageSize": 1}) == [[2000]]
        assert not chaos_cipher.scan(root, [chaos_cipher.SQLITE_HEADER, b"journal-canary-"])
        assert chaos_cipher.integrity_encrypted(db_file(root), key, KDF_ITER) == ["ok"]
        if found:
            pytest.fail(f"change_key from no key to a key, killed right after its rename (try {attempt}): "
                        f"{sorted(found)} hold {sorted({h.decode(errors='replace') for v in found.values() for h in v})!r} "
                        f"in clear beside the encrypted store (the old connection's journal, kept in exclusive "
                        f"locking mode, with the plaintext page 1 of the old store)")


def test_rekey_kdf_iter_kept_through_plaintext(tmp_path):
    """A store opened with {"key", "kdfIter": 1000}, decrypted, then given a passphrase: the header
    says the new key uses the kdfIter the store was opened with."""
    root = tmp_path / "store"
    with syncstore.Store(root, {"storeName": "rekey", "key": "first passphrase", "kdfIter": KDF_ITER}) as store:
        store.register_soup(SOUP, [{"path": "k", "type": "integer"}])
        store.upsert(SOUP, [{"k": 1}], return_entries=False)
        chaos_lib.change_key(store, None)
        chaos_lib.change_key(store, "second passphrase")
    syncstore.Store(root, {"storeName": "rekey", "key": "second passphrase", "kdfIter": KDF_ITER}).close()
    with pytest.raises(syncstore.SyncStoreError) as refused:
        syncstore.Store(root, {"storeName": "rekey", "key": "second passphrase"}).close()
    assert refused.value.code == AUTH
