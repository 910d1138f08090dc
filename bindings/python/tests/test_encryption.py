"""Encryption at rest through the package: SQLCipher 4 interop both ways (the ``sqlcipher3``
module, which bundles SQLCipher, is the other side), no plaintext on disk (while syncing, after a
SIGKILL, after close), damaged pages, wrong keys, keys kept out of messages, change_key.

Real store files, a real syncstore-devserver process on 127.0.0.1 and real SQLCipher; no mocks.
Passphrase keys use kdfIter 4000 (the Mobile SDK's) or raw keys to stay fast, except where the
default of 256000 is itself under test.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
import sqlcipher3  # type: ignore[import-untyped,import-not-found,unused-ignore]

import syncstore
from syncstore import cordova, mobilesync, smartstore

from package_support import TOKEN, DevServer

INDEXES = [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"},
           {"path": "__local__", "type": "string"}]
QUERY = "SELECT Id, LastName, Email, LastModifiedDate FROM Contact"
ALL = {"queryType": "range", "indexPath": "Id", "order": "ascending", "pageSize": 20000}

KEY = "correct horse battery staple 7f3a"
KEY2 = "second-Passphrase-91c4"
RAW = "x'" + "2dd29ca851e7b56e4697b0e1f08507293d761a05ce4d1b628663f411a8086d99" + "'"
RAW_SALTED = "x'" + "98483c6eb40b6c31a448c22a66ded3b5e5e8d5119cac8327b655c8b5c4836481" \
                    + "0102030405060708090a0b0c0d0e0f10" + "'"
MOBILE_SDK_ITER = 4000
SECRETS = (KEY, KEY2, RAW, RAW_SALTED)

CANARY = "CANARY-7c1e9f2b-only-in-records"
SQLITE_HEADER = b"SQLite format 3\x00"
SYNCED_RECORDS = 10_000


# -- helpers -----------------------------------------------------------------------------------

def store_file(root: Path, name: str) -> Path:
    return root / "user" / f"{name}.db"


def sql_key(key: str) -> str:
    """A key as the value of SQLCipher's PRAGMA key / ATTACH ... KEY: raw keys as "x'..'"."""
    if key.startswith("x'"):
        return f'"{key}"'
    return "'" + key.replace("'", "''") + "'"


def sqlcipher_open(path: Path, key: str, kdf_iter: Optional[int] = None) -> Any:
    conn = sqlcipher3.connect(str(path))
    conn.execute(f"PRAGMA key = {sql_key(key)}")
    if kdf_iter is not None:
        conn.execute(f"PRAGMA kdf_iter = {int(kdf_iter)}")
    return conn


def soup_rows(conn: Any, soup: str) -> List[Dict[str, Any]]:
    """A soup's entries read straight from the database: the soup_attrs catalog names the
    TABLE_<id> whose ``soup`` column holds each entry's JSON (SmartStore's layout)."""
    (table_id,) = conn.execute("SELECT id FROM soup_attrs WHERE soupName = ?", (soup,)).fetchone()
    return [json.loads(text) for (text,) in conn.execute(f"SELECT soup FROM TABLE_{int(table_id)} ORDER BY id")]


def by_id(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return sorted(entries, key=lambda e: int(e["_soupEntryId"]))


def scan(*dirs: Path, needles: Tuple[bytes, ...] = (CANARY.encode(), SQLITE_HEADER)) -> Dict[str, int]:
    """Occurrences of each needle in every file under ``dirs`` (the db, -wal, -shm, journals,
    rekey copies, anything): {"<file> <needle>": count}, only the non-zero ones. Files that
    vanish while being read (a journal deleted at commit) are skipped."""
    hits: Dict[str, int] = {}
    for top in dirs:
        for folder, _, files in os.walk(top):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except FileNotFoundError:
                    continue
                for needle in needles:
                    count = data.count(needle)
                    if count:
                        hits[f"{os.path.relpath(path, top)} {needle!r}"] = count
    return hits


def snapshot(root: Path) -> Dict[str, bytes]:
    """Every file under root and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def contact(i: int, **extra: Any) -> Dict[str, Any]:
    return {"Id": f"LOCAL{i:05d}", "LastName": f"Entry {i} é中🙂", "Bio": "x" * (i % 300), **extra}


def seed_store(root: Path, config: Dict[str, Any], count: int = 300) -> List[Dict[str, Any]]:
    with syncstore.Store(root, config) as store:
        store.register_soup("contacts", INDEXES)
        return store.upsert("contacts", [contact(i) for i in range(count)])


def read_all(store: syncstore.Store) -> List[Dict[str, Any]]:
    return by_id(store.query("contacts", ALL))


def expect_auth_error(root: Path, config: Dict[str, Any]) -> syncstore.AuthError:
    with pytest.raises(syncstore.AuthError) as info:
        syncstore.Store(root, config)
    assert info.value.code == 6
    assert_no_secret(str(info.value))
    return info.value


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text
        assert secret.strip("x'") not in text, text


def read_line(proc: "subprocess.Popen[str]", timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no output from the child in {timeout} s"
    return proc.stdout.readline().strip()


@pytest.fixture(scope="module")
def canary_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """10k Contacts whose LastName and Email carry the canary, served in pages of 500 with 60 ms
    of latency each, so a sync down lasts long enough to be caught in the middle."""
    records = [{"LastName": f"{CANARY} {i}", "FirstName": "Ada", "Email": f"c{i}@{CANARY}.example"}
               for i in range(SYNCED_RECORDS)]
    data = tmp_path_factory.mktemp("canary") / "contacts.json"
    data.write_text(json.dumps({"Contact": records}))
    s = DevServer("--import", str(data), "--default-batch-size", "500", "--faults", "GET */query* latency=60")
    yield s
    s.stop()


# -- interop: SyncStore -> SQLCipher -----------------------------------------------------------

@pytest.mark.parametrize("key, kdf_iter", [(KEY, None), (KEY, MOBILE_SDK_ITER), (RAW, None), (RAW_SALTED, None)],
                         ids=["sqlcipher4-defaults", "mobile-sdk-4000", "raw-key", "raw-key-and-salt"])
def test_a_store_written_by_syncstore_opens_in_sqlcipher(tmp_path: Path, key: str, kdf_iter: Optional[int]) -> None:
    config: Dict[str, Any] = {"storeName": "interop", "key": key}
    if kdf_iter is not None:
        config["kdfIter"] = kdf_iter
    with syncstore.Store(tmp_path, config) as store:
        store.register_soup("contacts", INDEXES)
        store.register_soup("notes", [{"path": "title", "type": "full_text"}])
        written = store.upsert("contacts", [contact(i) for i in range(400)])
        store.upsert("contacts", [dict(written[7], LastName="Edited")])
        store.remove("contacts", [written[8]["_soupEntryId"]])
        store.upsert("notes", [{"title": f"note {i} " + "lorem ipsum " * 20} for i in range(50)])
        expected = read_all(store)
        notes = by_id(store.query("notes", {"queryType": "range", "indexPath": "title", "pageSize": 100}))
    path = store_file(tmp_path, "interop")
    assert not path.read_bytes().startswith(SQLITE_HEADER)

    conn = sqlcipher_open(path, key, kdf_iter)
    try:
        assert conn.execute("PRAGMA cipher_integrity_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert soup_rows(conn, "contacts") == expected and len(expected) == 399
        assert soup_rows(conn, "notes") == notes
        assert conn.execute("SELECT count(*) FROM TABLE_2_fts WHERE TABLE_2_fts MATCH 'note'").fetchone() == (50,)
    finally:
        conn.close()

    # The other side refuses a wrong key and a wrong kdfIter (so the checks above are meaningful).
    wrong_iter = 64000 if kdf_iter is None else 256000
    for bad_key, bad_iter in ((KEY2, kdf_iter), (key, wrong_iter if not key.startswith("x'") else None)):
        if bad_key == key and key.startswith("x'"):
            continue  # a raw key has no KDF: kdf_iter does not apply
        bad = sqlcipher_open(path, bad_key, bad_iter)
        with pytest.raises(sqlcipher3.DatabaseError):
            bad.execute("SELECT count(*) FROM sqlite_master").fetchall()
        bad.close()
    plain = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError):
        plain.execute("SELECT count(*) FROM sqlite_master").fetchall()
    plain.close()


# -- interop: SQLCipher -> SyncStore -----------------------------------------------------------

@pytest.mark.parametrize("kdf_iter", [None, MOBILE_SDK_ITER], ids=["sqlcipher4-defaults", "mobile-sdk-4000"])
def test_a_store_encrypted_by_sqlcipher_export_opens_queries_and_syncs_in_syncstore(
        tmp_path: Path, server: DevServer, kdf_iter: Optional[int]) -> None:
    root = tmp_path / "stores"
    local = seed_store(root, {"storeName": "exported"}, 120)
    path = store_file(root, "exported")
    assert path.read_bytes().startswith(SQLITE_HEADER)

    # SQLCipher encrypts the plaintext store into enc.db with sqlcipher_export.
    encrypted = tmp_path / "enc.db"
    conn = sqlcipher3.connect(str(path))
    conn.execute(f"ATTACH DATABASE '{encrypted}' AS enc KEY {sql_key(KEY)}")
    if kdf_iter is not None:
        conn.execute(f"PRAGMA enc.kdf_iter = {kdf_iter}")
    conn.execute("SELECT sqlcipher_export('enc')")
    conn.execute("DETACH DATABASE enc")
    conn.close()
    assert not encrypted.read_bytes().startswith(SQLITE_HEADER)
    for leftover in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)
    os.replace(encrypted, path)

    config: Dict[str, Any] = {"storeName": "exported", "key": KEY}
    if kdf_iter is not None:
        config["kdfIter"] = kdf_iter
    expect_auth_error(root, {"storeName": "exported"})
    with syncstore.Store(root, config) as store:
        assert read_all(store) == by_id(local)
        assert store.find("contacts", {"queryType": "exact", "indexPath": "LastName",
                                       "matchKey": local[5]["LastName"], "pageSize": 5}) == [local[5]]
        more = store.upsert("contacts", [contact(i) for i in range(1000, 1030)])
        assert [e["_soupEntryId"] for e in more] == list(range(121, 151))
        store.set_remote(server.remote)
        final = store.sync_down({"type": "soql", "query": QUERY}, "contacts", {"mergeMode": "OVERWRITE"},
                                "down").wait(60)
        assert final["status"] == "DONE" and final["totalSize"] == 250
        after = read_all(store)
        assert len(after) == 120 + 30 + 250

    # Reopened by SyncStore, and by SQLCipher again: everything SyncStore wrote is in SQLCipher's format.
    with syncstore.Store(root, config) as store:
        assert read_all(store) == after
        assert store.get_sync_status("down")["status"] == "DONE"  # type: ignore[index]
    conn = sqlcipher_open(path, KEY, kdf_iter)
    try:
        assert conn.execute("PRAGMA cipher_integrity_check").fetchall() == []
        assert soup_rows(conn, "contacts") == after
    finally:
        conn.close()


# -- no plaintext on disk ----------------------------------------------------------------------

def edit_while_syncing(store: syncstore.Store, i: int) -> None:
    """A local create and an edit of an entry the sync brought down, both carrying the canary."""
    store.upsert("contacts", [{"Id": f"LOCAL{i:05d}", "LastName": f"{CANARY} local {i}", "__local__": True,
                               "__locally_created__": True}], return_entries=False)
    synced = store.find("contacts", {"queryType": "range", "indexPath": "Id", "beginKey": "003",
                                     "pageSize": 1})
    if synced:
        store.upsert("contacts", [dict(synced[0], LastName=f"{CANARY} edited {i}", __local__=True,
                                       __locally_updated__=True)], return_entries=False)


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext-control"])
def test_no_plaintext_on_disk_while_syncing_10k_records_and_after_close(
        tmp_path: Path, canary_server: DevServer, encrypted: bool) -> None:
    root = tmp_path / "stores"
    config: Dict[str, Any] = {"storeName": "secret"}
    if encrypted:
        config.update(key=KEY, kdfIter=MOBILE_SDK_ITER)
    mid_sync: List[Dict[str, int]] = []
    with syncstore.Store(root, config) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(canary_server.remote)
        run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", {"mergeMode": "LEAVE_IF_CHANGED"})
        i = 0
        while not run.done:
            edit_while_syncing(store, i)
            i += 1
            state = run.state
            hits = scan(root)
            if state is not None and state["status"] == "RUNNING" and 0 < state["progress"] < 100:
                mid_sync.append(hits)
            time.sleep(0.02)
        final = run.wait(60)
        assert final["status"] == "DONE" and final["totalSize"] == SYNCED_RECORDS
        assert len(mid_sync) >= 3, "the sync was never caught in the middle"
        assert store.query("contacts", {"queryType": "like", "indexPath": "LastName",
                                        "likeKey": f"{CANARY} local %", "pageSize": 10})
        entries = store.query("contacts", ALL)
        assert len(entries) == SYNCED_RECORDS + i
        open_hits = scan(root)
    closed_hits = scan(root)

    if encrypted:
        assert [h for h in mid_sync if h] == [], "plaintext on disk while syncing"
        assert open_hits == {} and closed_hits == {}
    else:  # the control: the same scans find the canary and the header in a plaintext store
        assert any(any(CANARY in k for k in h) for h in mid_sync), mid_sync
        assert any(CANARY in k for k in closed_hits) and any("SQLite format 3" in k for k in closed_hits)


# A child that opens a store, starts a sync down and writes canary entries until it is killed.
SYNC_AND_WRITE = r"""
import json, sys
import syncstore
root, url, token, config, canary = sys.argv[1:6]
store = syncstore.Store(root, json.loads(config))
store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"},
                                 {"path": "__local__", "type": "string"}])
store.set_remote({"instanceUrl": url, "accessToken": token, "apiVersion": "v62.0"})
run = store.sync_down({"type": "soql", "query": "SELECT Id, LastName, Email, LastModifiedDate FROM Contact"},
                      "contacts", {"mergeMode": "LEAVE_IF_CHANGED"}, "down")
told = False
i = 0
while True:
    store.upsert("contacts", [{"Id": "LOCAL%05d" % i, "LastName": "%s local %d" % (canary, i), "__local__": True,
                               "__locally_created__": True}], return_entries=False)
    i += 1
    state = run.state
    if not told and i >= 20 and state is not None and state["progress"] > 0:
        print("syncing", flush=True)
        told = True
"""


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plaintext-control"])
def test_no_plaintext_on_disk_after_sigkill_of_a_process_syncing_and_writing(
        tmp_path: Path, canary_server: DevServer, encrypted: bool) -> None:
    root, temp = tmp_path / "stores", tmp_path / "sqlite-temp"
    temp.mkdir()
    config: Dict[str, Any] = {"storeName": "killed"}
    if encrypted:
        config.update(key=KEY, kdfIter=MOBILE_SDK_ITER)
    # SQLite's temporary files would go to SQLITE_TMPDIR: scanned too (there should be none).
    env = dict(os.environ, SQLITE_TMPDIR=str(temp), TMPDIR=str(temp))
    child = subprocess.Popen([sys.executable, "-c", SYNC_AND_WRITE, str(root), canary_server.url, TOKEN,
                              json.dumps(config), CANARY], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert read_line(child, 60) == "syncing"
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        _, stderr = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL, stderr
    assert Path(f"{store_file(root, 'killed')}-wal").exists()
    hits = scan(root, temp)

    if not encrypted:
        assert any(CANARY in k for k in hits), hits
        return
    assert hits == {}, "plaintext on disk after SIGKILL"
    assert list(temp.iterdir()) == []
    # The killed process's commits are all there (recovered from the WAL); the sync it was
    # running is STOPPED; closed, the file opens in SQLCipher.
    with syncstore.Store(root, config) as store:
        local = store.query("contacts", {"queryType": "like", "indexPath": "LastName",
                                         "likeKey": f"{CANARY} local %", "pageSize": 100000})
        assert len(local) >= 20
        assert store.get_sync_status("down")["status"] == "STOPPED"  # type: ignore[index]
        count = len(store.query("contacts", ALL))
    assert scan(root) == {}
    conn = sqlcipher_open(store_file(root, "killed"), KEY, MOBILE_SDK_ITER)
    try:
        assert conn.execute("PRAGMA cipher_integrity_check").fetchall() == []
        assert len(soup_rows(conn, "contacts")) == count
    finally:
        conn.close()


def test_the_key_itself_is_never_written_to_disk(tmp_path: Path) -> None:
    seed_store(tmp_path, {"storeName": "k", "key": KEY, "kdfIter": MOBILE_SDK_ITER}, 50)
    with syncstore.Store(tmp_path, {"storeName": "k", "key": KEY, "kdfIter": MOBILE_SDK_ITER}) as store:
        store.change_key(KEY2)
        store.upsert("contacts", [contact(99)])
    assert scan(tmp_path, needles=(KEY.encode(), KEY2.encode())) == {}


# -- damaged files, wrong keys, keys out of messages -------------------------------------------

def flip_bit(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_any_page_is_a_storage_error_never_wrong_data(tmp_path: Path) -> None:
    config = {"storeName": "damaged", "key": RAW}
    root = tmp_path / "stores"
    seed_store(root, config, 600)
    with syncstore.Store(root, config) as store:
        expected = read_all(store)
    path = store_file(root, "damaged")
    original = path.read_bytes()
    page_size = 4096
    pages = len(original) // page_size
    assert pages >= 20 and len(original) % page_size == 0

    failures = 0
    for page in range(2, pages + 1):  # page 1 below
        path.write_bytes(original)
        flip_bit(path, (page - 1) * page_size + 37 * page % (page_size - 16))
        try:
            with syncstore.Store(root, config) as store:
                got = read_all(store)
                count = store.find(None, {"queryType": "smart", "smartSql": "select count(*) from {contacts}",
                                          "pageSize": 1})
                matches = store.find("contacts", {"queryType": "like", "indexPath": "LastName",
                                                  "likeKey": "Entry 1%", "pageSize": 1000})
        except syncstore.StorageError as e:
            assert e.code == 9 and "integrity check" in e.message, e.message
            assert_no_secret(e.message)
            failures += 1
            continue
        # The damaged page was not one these reads needed (a free page, another index):
        # whatever came back is exactly what was written.
        assert got == expected and count == [[len(expected)]]
        assert by_id(matches) == [e for e in expected if e["LastName"].startswith("Entry 1")]
    assert failures >= pages // 2, f"only {failures} of {pages - 1} damaged pages were detected"

    # A damaged page 1 (past its salt): STORAGE when opening, not AUTH and not data.
    path.write_bytes(original)
    flip_bit(path, 2000)
    with pytest.raises(syncstore.StorageError) as info:
        with syncstore.Store(root, config) as store:
            read_all(store)
    assert "integrity check" in info.value.message
    path.write_bytes(original)
    with syncstore.Store(root, config) as store:
        assert read_all(store) == expected


def test_wrong_missing_or_unwanted_keys_are_auth_errors_and_leave_the_file_untouched(tmp_path: Path) -> None:
    good: Dict[str, Any] = {"storeName": "locked", "key": KEY, "kdfIter": MOBILE_SDK_ITER}
    entries = seed_store(tmp_path, good, 40)
    seed_store(tmp_path, {"storeName": "open"}, 10)
    before = snapshot(tmp_path)

    expect_auth_error(tmp_path, dict(good, key=KEY2))
    expect_auth_error(tmp_path, dict(good, key=RAW))
    expect_auth_error(tmp_path, {"storeName": "locked"})
    expect_auth_error(tmp_path, {"storeName": "locked", "key": None})
    expect_auth_error(tmp_path, dict(good, kdfIter=MOBILE_SDK_ITER + 1))
    expect_auth_error(tmp_path, {"storeName": "open", "key": KEY})
    expect_auth_error(tmp_path, {"storeName": "open", "key": RAW})
    assert snapshot(tmp_path) == before, "a refused open changed the files"

    for bad in ({"storeName": "locked", "key": ""}, dict(good, kdfIter=0), dict(good, kdfIter="4000"),
                {"storeName": "locked", "key": 42}, {"storeName": "locked", "key": "x'2dd29c'"},
                {"storeName": "locked", "key": RAW.replace("2d", "zz")}):
        with pytest.raises(syncstore.ArgumentError) as info:
            syncstore.Store(tmp_path, bad)
        assert_no_secret(str(info.value))
    assert snapshot(tmp_path) == before

    with syncstore.Store(tmp_path, good) as store:
        assert read_all(store) == by_id(entries)
        # A second handle in this process must carry the same key.
        with pytest.raises(syncstore.AuthError) as second:
            syncstore.Store(tmp_path, dict(good, key=KEY2))
        assert_no_secret(str(second.value))
        with syncstore.Store(tmp_path, good) as again:
            assert len(read_all(again)) == 40
    # Listing and removing stores needs no key.
    assert syncstore.list_stores(tmp_path) == ["locked", "open"]
    syncstore.remove_store(tmp_path, {"storeName": "locked"})
    assert syncstore.list_stores(tmp_path) == ["open"]


def test_the_key_never_appears_in_names_states_reprs_messages_or_output(
        tmp_path: Path, shared_server: DevServer, capfd: pytest.CaptureFixture[str]) -> None:
    states: List[syncstore.SyncState] = []
    config = {"storeName": "quiet", "key": KEY, "kdfIter": MOBILE_SDK_ITER}
    texts: List[str] = []
    store = syncstore.Store(tmp_path, config)
    try:
        texts.append(repr(store))
        store.register_soup("contacts", INDEXES)
        store.set_remote(shared_server.remote)
        run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", None, "down", states.append)
        assert run.wait(60)["status"] == "DONE"
        failed = store.sync_down({"type": "soql", "query": "SELECT Nope FROM Nothing"}, "contacts").wait(60)
        assert failed["status"] == "FAILED"
        texts += [json.dumps(states), json.dumps(failed), json.dumps(store.get_sync_status("down")), repr(run)]
        for call in (lambda: store.upsert("missing", [{}]), lambda: store.query("contacts", {"queryType": "nope"}),
                     lambda: store.find(None, {"queryType": "smart", "smartSql": "select nothing from {x}"}),
                     lambda: store.change_key("")):
            with pytest.raises(syncstore.SyncStoreError) as info:
                call()
            texts += [str(info.value), repr(info.value)]
        texts.append(json.dumps(syncstore.list_stores(tmp_path)))
    finally:
        store.close()
    with pytest.raises(syncstore.StateError) as closed:
        store.upsert("contacts", [{}])
    texts += [str(closed.value), repr(store)]
    assert "quiet" in repr(store) and "quiet" in str(closed.value)  # they do name the store
    captured = capfd.readouterr()
    texts += [captured.out, captured.err]
    for text in texts:
        assert_no_secret(text)


# -- change_key --------------------------------------------------------------------------------

def test_change_key_plaintext_to_k1_to_k2_to_none_keeps_every_entry(tmp_path: Path) -> None:
    name = "rekeyed"
    path = store_file(tmp_path, name)
    entries = by_id(seed_store(tmp_path, {"storeName": name}, 200))

    with syncstore.Store(tmp_path, {"storeName": name}) as store:
        cursor = store.query_soup("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 10})
        store.change_key(KEY)  # a plaintext store gets the default kdfIter, 256000
        assert read_all(store) == entries  # the same handle keeps working, its cursors too
        cursor.move_to_page(5)
        assert cursor.entries == entries[50:60]
        cursor.close()
        entries += store.upsert("contacts", [contact(500)])
    assert not path.read_bytes().startswith(SQLITE_HEADER)
    assert scan(tmp_path, needles=(b"Entry ", SQLITE_HEADER)) == {}, "plaintext left after encrypting"
    expect_auth_error(tmp_path, {"storeName": name})
    expect_auth_error(tmp_path, {"storeName": name, "key": KEY, "kdfIter": MOBILE_SDK_ITER})
    conn = sqlcipher_open(path, KEY)
    assert conn.execute("PRAGMA cipher_integrity_check").fetchall() == []
    assert soup_rows(conn, "contacts") == entries
    conn.close()

    with syncstore.Store(tmp_path, {"storeName": name, "key": KEY}) as store:
        assert read_all(store) == entries
        store.change_key(KEY2)  # keeps the kdfIter it was opened with
        entries += store.upsert("contacts", [contact(501)])
        with syncstore.Store(tmp_path, {"storeName": name, "key": KEY2}) as other:
            assert read_all(other) == entries  # a new handle of this process needs the new key
    expect_auth_error(tmp_path, {"storeName": name, "key": KEY})

    with syncstore.Store(tmp_path, {"storeName": name, "key": KEY2}) as store:
        assert read_all(store) == entries
        store.change_key(None)
        entries += store.upsert("contacts", [contact(502)])
    expect_auth_error(tmp_path, {"storeName": name, "key": KEY2})
    assert path.read_bytes().startswith(SQLITE_HEADER)
    plain = sqlite3.connect(path)
    assert soup_rows(plain, "contacts") == entries
    plain.close()
    with syncstore.Store(tmp_path, {"storeName": name}) as store:
        assert read_all(store) == entries
        store.change_key(None)  # plaintext to no key: nothing to do
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{name}.db"]


def test_change_key_of_a_plaintext_store_uses_the_kdf_iter_of_its_config(tmp_path: Path) -> None:
    config = {"storeName": "mobile-plain", "kdfIter": MOBILE_SDK_ITER}
    entries = by_id(seed_store(tmp_path, config, 30))
    with syncstore.Store(tmp_path, config) as store:
        store.change_key(KEY)
    expect_auth_error(tmp_path, {"storeName": "mobile-plain", "key": KEY})  # not 256000
    with syncstore.Store(tmp_path, dict(config, key=KEY)) as store:
        assert read_all(store) == entries
    conn = sqlcipher_open(store_file(tmp_path, "mobile-plain"), KEY, MOBILE_SDK_ITER)
    assert soup_rows(conn, "contacts") == entries
    conn.close()


def test_change_key_keeps_the_kdf_iter_and_takes_raw_keys(tmp_path: Path) -> None:
    config = {"storeName": "mobile", "key": KEY, "kdfIter": MOBILE_SDK_ITER}
    entries = by_id(seed_store(tmp_path, config, 50))
    with syncstore.Store(tmp_path, config) as store:
        store.change_key(KEY2)
    conn = sqlcipher_open(store_file(tmp_path, "mobile"), KEY2, MOBILE_SDK_ITER)
    assert soup_rows(conn, "contacts") == entries
    conn.close()
    with syncstore.Store(tmp_path, dict(config, key=KEY2)) as store:
        store.change_key(RAW)
    expect_auth_error(tmp_path, dict(config, key=KEY2))
    with syncstore.Store(tmp_path, {"storeName": "mobile", "key": RAW}) as store:
        assert read_all(store) == entries
        for bad in ("", "x'2dd29c'"):
            with pytest.raises(syncstore.ArgumentError):
                store.change_key(bad)
        assert read_all(store) == entries
    conn = sqlcipher_open(store_file(tmp_path, "mobile"), RAW)
    assert soup_rows(conn, "contacts") == entries
    conn.close()


def test_change_key_is_busy_while_a_sync_runs(tmp_path: Path, canary_server: DevServer) -> None:
    config = {"storeName": "busy", "key": KEY, "kdfIter": MOBILE_SDK_ITER}
    with syncstore.Store(tmp_path, config) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(canary_server.remote)
        run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", {"mergeMode": "OVERWRITE"})
        with pytest.raises(syncstore.BusyError) as info:
            store.change_key(KEY2)
        assert info.value.retryable
        assert_no_secret(str(info.value))
        assert store.find("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 1}) is not None
        assert run.stop()["status"] == "STOPPED"
        store.wait_sync(run, 30_000)
        store.change_key(KEY2)
    expect_auth_error(tmp_path, config)
    with syncstore.Store(tmp_path, dict(config, key=KEY2)) as store:
        assert store.get_sync_status(run.sync_id)["status"] == "STOPPED"  # type: ignore[index]


HOLD_OPEN = r"""
import json, sys
import syncstore
store = syncstore.Store(sys.argv[1], json.loads(sys.argv[2]))
store.upsert("contacts", [{"Id": "held"}])
print("open", flush=True)
sys.stdin.read()
store.close()
"""


def test_change_key_is_busy_while_another_process_has_the_store_open(tmp_path: Path) -> None:
    config = {"storeName": "shared", "key": RAW}
    entries = by_id(seed_store(tmp_path, config, 20))
    child = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, str(tmp_path), json.dumps(config)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert read_line(child, 30) == "open"
        with syncstore.Store(tmp_path, config) as store:
            with pytest.raises(syncstore.BusyError) as info:
                store.change_key(KEY2)
            assert info.value.retryable
            assert_no_secret(str(info.value))
            entries += store.upsert("contacts", [contact(77)])  # still usable, still the old key
            assert child.stdin is not None
            child.stdin.close()
            assert child.wait(30) == 0
            store.change_key(KEY2)  # retried once the other process is gone
            assert read_all(store)[:20] == entries[:20] and len(read_all(store)) == 22
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    expect_auth_error(tmp_path, config)
    # Opened with a raw key (no kdfIter), the new passphrase gets the default kdfIter, 256000.
    with syncstore.Store(tmp_path, {"storeName": "shared", "key": KEY2}) as store:
        assert len(read_all(store)) == 22


# A process that tries to change the key of a store another process has open, then reads.
REFUSED_THEN_READ = r"""
import json, sys
import syncstore
store = syncstore.Store(sys.argv[1], json.loads(sys.argv[2]))
try:
    store.change_key(sys.argv[3])
except syncstore.BusyError:
    print("busy", flush=True)
print("read", len(store.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 100})), flush=True)
store.close()
"""


def test_a_change_key_refused_as_busy_leaves_the_store_readable(tmp_path: Path) -> None:
    config = {"storeName": "refused", "key": RAW}
    seed_store(tmp_path, config, 20)
    with syncstore.Store(tmp_path, config) as holder:  # this process has the store open
        child = subprocess.Popen([sys.executable, "-c", REFUSED_THEN_READ, str(tmp_path), json.dumps(config), KEY2],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert read_line(child, 30) == "busy"
            assert read_line(child, 4) == "read 20", "the store is no longer readable after the refused change"
        finally:
            child.kill()
            child.communicate(timeout=30)
        assert len(read_all(holder)) == 20


# A child that changes the key back and forth (K1 <-> K2) until it is killed.
REKEY_LOOP = r"""
import json, sys
import syncstore
root, config, k1, k2 = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
store = syncstore.Store(root, config)
print("open", flush=True)
while True:
    store.change_key(k2)
    store.change_key(k1)
"""


def test_sigkill_during_change_key_leaves_a_store_that_opens_with_exactly_one_key(tmp_path: Path) -> None:
    config = {"storeName": "crashy", "key": KEY, "kdfIter": MOBILE_SDK_ITER}
    entries = by_id(seed_store(tmp_path, config, 1500))
    opened_with = {KEY: 0, KEY2: 0}
    key = KEY
    for round_ in range(6):
        k2 = KEY2 if key == KEY else KEY
        child = subprocess.Popen([sys.executable, "-c", REKEY_LOOP, str(tmp_path), json.dumps(dict(config, key=key)),
                                  key, k2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert read_line(child, 30) == "open"
            time.sleep(0.05 + 0.07 * round_)
        finally:
            child.kill()
            child.communicate(timeout=30)
        works = []
        for candidate in (KEY, KEY2):
            try:
                with syncstore.Store(tmp_path, dict(config, key=candidate)) as store:
                    assert read_all(store) == entries
                works.append(candidate)
            except syncstore.AuthError:
                pass
        assert len(works) == 1, f"round {round_}: opens with {len(works)} keys"
        key = works[0]
        opened_with[key] += 1
        assert not Path(f"{store_file(tmp_path, 'crashy')}.rekey").exists()
    assert scan(tmp_path) == {}


def test_a_leftover_rekey_file_is_deleted_by_the_next_open(tmp_path: Path) -> None:
    config = {"storeName": "left", "key": RAW}
    seed_store(tmp_path, config, 5)
    leftover = Path(f"{store_file(tmp_path, 'left')}.rekey")
    leftover.write_bytes(os.urandom(8192))
    with syncstore.Store(tmp_path, config) as store:
        assert len(read_all(store)) == 5
    assert not leftover.exists()


# -- the Cordova-style face: a host key provider -----------------------------------------------

def test_cordova_modules_open_stores_with_the_hosts_key_provider(tmp_path: Path, shared_server: DevServer) -> None:
    asked: List[Dict[str, Any]] = []

    def provider(config: syncstore.StoreConfigDict) -> Optional[str]:
        asked.append(dict(config))
        return KEY if config.get("storeName") == "secure" else None

    smartstore.init(tmp_path)
    cordova.set_encryption_key_provider(provider, kdf_iter=MOBILE_SDK_ITER)
    secure = {"storeName": "secure", "isGlobalStore": False}
    try:
        smartstore.registerSoup(secure, "contacts", INDEXES)
        smartstore.registerSoup("contacts", INDEXES)  # the default store: the provider says plaintext
        smartstore.upsertSoupEntries(secure, "contacts", [contact(i) for i in range(10)])
        mobilesync.setRemote(secure, shared_server.remote)
        assert mobilesync.syncDown(secure, {"type": "soql", "query": QUERY}, "contacts", {}, "d").wait(60)[
            "status"] == "DONE"
        assert [s["storeName"] for s in smartstore.getAllStores()] == ["secure", "smartstore"]
    finally:
        cordova.close_all()
        cordova.set_encryption_key_provider(None)
    assert {"isGlobalStore": False, "storeName": "secure"} in asked
    assert {"isGlobalStore": False, "storeName": "smartstore"} in asked

    expect_auth_error(tmp_path, {"storeName": "secure"})
    with syncstore.Store(tmp_path, {"storeName": "secure", "key": KEY, "kdfIter": MOBILE_SDK_ITER}) as store:
        assert len(read_all(store)) == 10 + 20
    with syncstore.Store(tmp_path, None) as store:
        assert store.soup_exists("contacts")
    conn = sqlcipher_open(store_file(tmp_path, "secure"), KEY, MOBILE_SDK_ITER)
    assert len(soup_rows(conn, "contacts")) == 30
    conn.close()

    # Without a provider the modules open stores without a key: an encrypted one is refused.
    smartstore.init(tmp_path)
    try:
        with pytest.raises(syncstore.AuthError):
            smartstore.soupExists(secure, "contacts")
    finally:
        cordova.close_all()
