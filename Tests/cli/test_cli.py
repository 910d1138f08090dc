"""syncstore-cli as a user runs it: every subcommand against a real server process it serves,
bad input (unknown store, malformed JSON, hostile Smart SQL, unreachable server), exit codes by
error class, and the demo with its output checked step by step.

The binary is $SYNCSTORE_CLI, else .build/debug/syncstore-cli (scripts/test.sh builds it).
"""
import json
import os
import re
import shlex
import signal
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("SYNCSTORE_CLI", str(ROOT / ".build" / "debug" / "syncstore-cli"))
TOKEN = "cli-test-token"

USERSTORE = {"soups": [{"soupName": "contacts", "indexes": [
    {"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "__local__", "type": "string"}]}]}
USERSYNCS = {"syncs": [
    {"syncName": "contacts-down", "syncType": "syncDown", "soupName": "contacts",
     "target": {"type": "soql", "query": "SELECT Id, LastName, Title, LastModifiedDate FROM Contact"},
     "options": {"mergeMode": "LEAVE_IF_CHANGED"}},
    {"syncName": "contacts-up", "syncType": "syncUp", "soupName": "contacts",
     "options": {"fieldlist": ["LastName", "Title"], "mergeMode": "LEAVE_IF_CHANGED"}},
]}


def cli(*args, timeout=120, env=None):
    # Keys only come from what a test gives: none from the environment pytest runs in.
    base = {k: v for k, v in os.environ.items() if k not in ("SYNCSTORE_KEY", "SYNCSTORE_NEW_KEY")}
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(base, **(env or {})))


class Served:
    """`syncstore-cli serve --json` as a process."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([CLI, "serve", "--json", "--token", TOKEN, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"serve printed nothing: {self.proc.stderr.read()}"
        self.info = json.loads(line)
        self.url = self.info["url"]

    def request(self, method, path, body=None, context=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + "/services/data/v62.0/" + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30, context=context) as r:
            text = r.read().decode()
            return json.loads(text) if text else None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server():
    s = Served("--seed", "Contact=30")
    yield s
    s.stop()


@pytest.fixture
def configs(tmp_path):
    store = tmp_path / "userstore.json"
    syncs = tmp_path / "usersyncs.json"
    store.write_text(json.dumps(USERSTORE))
    syncs.write_text(json.dumps(USERSYNCS))
    return str(store), str(syncs)


def remote(server):
    return ["--url", server.url, "--token", TOKEN]


def synced(tmp_path, server, configs):
    """A store under tmp_path/stores with both syncs run once."""
    root = str(tmp_path / "stores")
    r = cli("sync", "--root", root, *remote(server), "--store-config", configs[0], "--sync-config", configs[1], "--json")
    assert r.returncode == 0, r.stderr
    return root


def test_help_teaches_with_examples():
    r = cli("--help")
    assert r.returncode == 0
    for sub in ["demo", "serve", "sync", "status", "soup", "soups", "query", "upsert", "watch", "ghosts", "rekey", "inspect"]:
        assert sub in r.stdout
    assert "Exit codes" in r.stdout
    for sub in ["sync", "query", "upsert", "watch", "serve", "ghosts", "status", "soups", "demo", "rekey", "inspect"]:
        r = cli(sub, "--help")
        assert r.returncode == 0 and "Examples" in r.stdout, f"{sub} --help has no examples"


def test_serve_announces_a_reachable_server_and_a_remote_config(server):
    assert server.url.startswith("http://127.0.0.1:")
    assert server.info["token"] == TOKEN
    assert server.info["remote"] == {"instanceUrl": server.url, "accessToken": TOKEN}
    assert server.request("GET", "query?q=SELECT+COUNT()+FROM+Contact")["totalSize"] == 30


def test_serve_text_mode_prints_url_first_and_a_random_token():
    proc = subprocess.Popen([CLI, "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert lines[0].startswith("http://127.0.0.1:")
    token = lines[1].split()[-1]
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert json.loads(lines[2].split(":", 1)[1]) == {"instanceUrl": lines[0].strip(), "accessToken": token}


def test_serve_tls_self_signed_gives_a_ca_clients_can_trust(tmp_path):
    s = Served("--tls", "self-signed", "--tls-dir", str(tmp_path / "tls"))
    try:
        assert s.url.startswith("https://127.0.0.1:")
        ca = s.info["caBundle"]
        assert Path(ca).exists() and s.info["remote"]["caBundle"] == ca
        context = ssl.create_default_context(cafile=ca)
        assert s.request("GET", "limits", context=context) is not None
        with pytest.raises(urllib.error.URLError):
            s.request("GET", "limits", context=ssl.create_default_context())
        # The engine trusts it through --ca-bundle.
        r = cli("sync", "--root", str(tmp_path / "stores"), "--url", s.url, "--token", TOKEN, "--ca-bundle", ca,
                "--soql", "SELECT Id, LastName FROM Contact", "--soup", "c")
        assert r.returncode == 66 or r.returncode == 0, r.stderr   # no soup 'c' registered: NOT_FOUND is right
    finally:
        s.stop()


def test_sync_status_soups_query_ghosts_flow(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)

    r = cli("status", "--root", root, "--json")
    assert r.returncode == 0, r.stderr
    states = {s["name"]: s for s in json.loads(r.stdout)}
    assert states["contacts-down"]["status"] == "DONE" and states["contacts-down"]["totalSize"] == 30
    assert states["contacts-up"]["status"] == "DONE"
    table = cli("status", "--root", root).stdout
    assert "contacts-down" in table and "DONE" in table

    r = cli("soups", "--root", root, "--json")
    soups = json.loads(r.stdout)
    counts = {s["soupName"]: (s["entries"], s["dirty"]) for s in soups}
    assert counts["contacts"] == (30, 0)
    assert counts["syncs_soup"] == (2, 0), "the sync states' own soup (as in the SDK)"
    assert {"path": "LastName", "type": "string"} in next(s for s in soups if s["soupName"] == "contacts")["indexes"]
    assert "LastName:string" in cli("soups", "--root", root).stdout

    r = cli("query", "--root", root, "select count(*) from {contacts}", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [[30]]
    r = cli("query", "--root", root, "--soup", "contacts", "--spec",
            json.dumps({"queryType": "range", "indexPath": "LastName", "order": "ascending", "pageSize": 7}), "--json")
    rows = json.loads(r.stdout)
    assert len(rows) == 30, "the cursor was not paged to the end"
    assert [e["LastName"] for e in rows] == sorted(e["LastName"] for e in rows)
    r = cli("query", "--root", root, "select {contacts:LastName} from {contacts}", "--max-rows", "5")
    assert r.returncode == 0 and "(5 of 30 rows" in r.stdout

    # A record deleted on the server is a ghost locally until cleanResyncGhosts.
    victim = json.loads(cli("query", "--root", root, "select {contacts:Id} from {contacts} limit 1", "--json").stdout)[0][0]
    server.request("DELETE", f"sobjects/Contact/{victim}")
    r = cli("ghosts", "--root", root, *remote(server), "contacts-down")
    assert r.returncode == 0, r.stderr
    assert "1 ghost removed" in r.stdout
    assert json.loads(cli("query", "--root", root, "select count(*) from {contacts}", "--json").stdout) == [[29]]


def test_adhoc_soql_sync_and_incremental_rerun(tmp_path, server, configs):
    root = str(tmp_path / "stores")
    args = ["sync", "--root", root, *remote(server), "--store-config", configs[0],
            "--soql", "SELECT Id, LastName, LastModifiedDate FROM Contact", "--soup", "contacts", "--name", "adhoc", "--json"]
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)[0]["totalSize"] == 30
    server.request("PATCH", "sobjects/Contact/" + json.loads(
        cli("query", "--root", root, "select {contacts:Id} from {contacts} limit 1", "--json").stdout)[0][0], {"LastName": "Changed"})
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["totalSize"] < 30, "the rerun of a named sync was not incremental"
    assert json.loads(cli("query", "--root", root, "select count(*) from {contacts} where {contacts:LastName} = 'Changed'", "--json").stdout) == [[1]]


def test_progress_lines_when_not_a_terminal(tmp_path, server, configs):
    r = cli("sync", "--root", str(tmp_path / "s"), *remote(server), "--store-config", configs[0], "--sync-config", configs[1])
    assert r.returncode == 0, r.stderr
    assert "contacts-down: DONE 100% (30/30 records)" in r.stderr
    assert "contacts-down (down, soup contacts): DONE, 30 records" in r.stdout


def test_a_conflict_is_exit_code_3_with_the_entry_named(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    entry = json.loads(cli("query", "--root", root, "select {contacts:_soup} from {contacts} limit 1", "--json").stdout)[0][0]
    server.request("PATCH", f"sobjects/Contact/{entry['Id']}", {"Title": "server side"})
    entry.update({"Title": "local side", "__local__": True, "__locally_updated__": True})
    r = cli("upsert", "--root", root, "--soup", "contacts", json.dumps(entry))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["Title"] == "local side"
    r = cli("sync", "--root", root, *remote(server), "contacts-up")
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert f"DONE, 1 record, 1 conflict (entries {entry['_soupEntryId']})" in r.stdout, r.stdout


@pytest.mark.parametrize("args,code,words", [
    (["status", "--store", "nope"], 66, "No user store 'nope'"),
    (["soups", "--store", "nope"], 66, "No user store 'nope'"),
    (["query", "--store", "nope", "select 1"], 66, "No user store 'nope'"),
    (["upsert", "--store", "nope", "--soup", "s", "{}"], 66, "No user store 'nope'"),
    (["status", "--store", "../etc"], 65, "store name"),
])
def test_unknown_or_bad_store_is_a_clear_error(tmp_path, args, code, words):
    r = cli(*args, "--root", str(tmp_path))
    assert r.returncode == code, (r.returncode, r.stderr)
    assert words.lower() in r.stderr.lower()
    assert "Traceback" not in r.stderr and "Fatal error" not in r.stderr


def test_malformed_input_and_hostile_smart_sql(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    before = cli("query", "--root", root, "select count(*) from {contacts}", "--json").stdout
    for args in (["--soup", "contacts", "--spec", "{not json"],
                 ["--soup", "contacts", "--spec", json.dumps({"queryType": "exact"})],
                 ["select 1; delete from soup_attrs"],
                 ["delete from {contacts}"],
                 ["select {contacts:_soup} from {contacts}; drop table soup_attrs"]):
        r = cli("query", "--root", root, *args)
        assert r.returncode == 65, (args, r.returncode, r.stderr)
        assert r.stderr.startswith("syncstore-cli: ") and len(r.stderr) < 2000
    r = cli("upsert", "--root", root, "--soup", "contacts", '[{"LastName": "x"}, {"LastName": ')
    assert r.returncode == 65, r.stderr
    r = cli("query", "--root", root, "--soup", "nosuchsoup", "--spec", json.dumps({"queryType": "range", "indexPath": "Id"}))
    assert r.returncode == 66 and "nosuchsoup" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{\"syncs\": [")
    r = cli("sync", "--root", root, *remote(server), "--sync-config", str(bad))
    assert r.returncode == 65, r.stderr
    assert cli("query", "--root", root, "select count(*) from {contacts}", "--json").stdout == before, "the store changed"


def test_unreachable_server_and_missing_credentials(tmp_path, configs):
    root = str(tmp_path / "stores")
    r = cli("sync", "--root", root, "--url", "http://127.0.0.1:9", "--token", "T", "--store-config", configs[0],
            "--sync-config", configs[1], timeout=180)
    assert r.returncode == 69, (r.returncode, r.stdout, r.stderr)
    assert "FAILED" in r.stdout
    r = cli("sync", "--root", root, "--url", "http://127.0.0.1:9", "contacts-down", env={"SYNCSTORE_TOKEN": ""})
    assert r.returncode == 64 and "token" in r.stderr
    r = cli("sync", "--root", root, "contacts-down")
    assert r.returncode == 64 and "--url" in r.stderr
    r = cli("sync", "--root", root, "--url", "http://127.0.0.1:9", "--token", "T", "no-such-sync")
    assert r.returncode == 66 and "no-such-sync" in r.stderr
    r = cli("ghosts", "--root", root, "--url", "http://127.0.0.1:9", "--token", "T", "no-such-sync")
    assert r.returncode == 66


def test_demo_runs_every_step_and_cleans_up():
    started = time.time()
    r = cli("demo", "--records", "3000", timeout=300)
    elapsed = time.time() - started
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    steps = ["1. Server", "2. Store", "3. Sync down", "4. Offline", "5. Local changes while offline", "6. Back online",
             "7. Sync up", "8. Sync down again", "9. Clean ghosts", "10. Encryption at rest", "Summary"]
    positions = [out.find(s) for s in steps]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), out
    assert "created 3, edited 2, deleted 1; the soup now has 6 dirty entries" in out
    assert "DONE: 5 of 6 changes sent, 1 conflict" in out
    assert "CONFLICT" in out
    summary = out[out.index("Summary"):].splitlines()
    values = summary[-1].split()
    down, up, conflicts, ghosts = (int(v) for v in values[:4])
    assert down >= 3000 + 5 and up == 5 and conflicts == 1 and ghosts == 1, summary
    encryption = out[out.index("10. Encryption at rest"):out.index("Summary")]
    before, after = (int(n) for n in re.search(r"'Okafor' in the bytes of demo\.db and its WAL: (\d+) times before, (\d+) after",
                                               encryption).groups())
    assert before > 0 and after == 0, encryption
    assert "opened without the key: AUTH (the CLI exits 77)" in encryption
    assert "opened with another key: AUTH (the CLI exits 77)" in encryption
    assert re.search(r"opened with the key: \d+ entries, 1 dirty, the same as before", encryption), encryption
    assert elapsed < 30, f"the demo took {elapsed:.1f} s"
    store_path = re.search(r"^   (/\S+/user/demo\.db)$", out, re.M).group(1)
    assert not Path(store_path).parent.parent.exists(), "the demo left its temporary directory behind"


def test_status_reads_a_store_whose_syncs_another_process_runs(tmp_path, configs):
    slow = Served("--seed", "Contact=10", "--faults", "GET */query* latency=4000")
    try:
        root = str(tmp_path / "stores")
        running = subprocess.Popen([CLI, "sync", "--root", root, "--url", slow.url, "--token", TOKEN,
                                    "--store-config", configs[0], "--sync-config", configs[1]],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        seen = None
        while time.time() < deadline and running.poll() is None:
            r = cli("status", "--root", root, "--json")
            if r.returncode == 0 and r.stdout.strip() not in ("", "[]"):
                seen = {s["name"]: s["status"] for s in json.loads(r.stdout)}
                if seen.get("contacts-down") == "RUNNING":
                    break
            time.sleep(0.2)
        assert seen and seen.get("contacts-down") == "RUNNING", f"status could not read the running store: {seen}"
        # Syncing needs the engine, which the other process holds: BUSY, retryable.
        r = cli("sync", "--root", root, "--url", slow.url, "--token", TOKEN, "contacts-down")
        assert r.returncode == 75, (r.returncode, r.stderr)
        running.wait(timeout=60)
        assert running.returncode == 0, running.stderr.read()
    finally:
        slow.stop()


# ---- Encryption at rest: keys from a file or the environment, never the command line; rekey.

KEY1 = "first passphrase, Kx7-q2"
KEY2 = "x'" + "3f" * 32 + "'"          # a raw 256-bit key (no KDF)
WRONG = "not-the-key-9v4Zt"
SQLITE_HEADER = b"SQLite format 3\x00"
STORE_OPENERS = [["status"], ["soups"], ["query", "select count(*) from {contacts}"],
                 ["upsert", "--soup", "contacts", '{"LastName": "Added"}']]


def key_file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def count(root, *key_args, env=None):
    r = cli("query", "--root", root, *key_args, "select count(*) from {contacts}", "--json", env=env)
    assert r.returncode == 0, (r.returncode, r.stderr)
    return json.loads(r.stdout)[0][0]


def store_file(root):
    return Path(root) / "user" / "smartstore.db"


def store_bytes(root):
    """The store's file and its WAL, if any."""
    wal = Path(str(store_file(root)) + "-wal")
    return store_file(root).read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def rekey(root, *args, env=None):
    r = cli("rekey", "--root", root, *args, "--json", env=env)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return json.loads(r.stdout)


def test_a_key_from_the_environment_or_a_key_file_opens_an_encrypted_store(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    last_name = json.loads(cli("query", "--root", root, "select {contacts:LastName} from {contacts} limit 1",
                               "--json").stdout)[0][0]
    assert last_name.encode() in store_bytes(root)
    k1 = key_file(tmp_path, "k1", KEY1 + "\n")   # one trailing newline: not part of the key
    done = rekey(root, "--new-key-file", k1)
    assert done == {"store": "smartstore", "global": False, "path": str(store_file(root)), "wasEncrypted": False,
                    "encrypted": True, "kdfIter": 256000, "changed": True, "seconds": done["seconds"]}

    data = store_bytes(root)
    assert not data.startswith(SQLITE_HEADER) and last_name.encode() not in data and b"contacts" not in data

    assert count(root, env={"SYNCSTORE_KEY": KEY1}) == 30
    assert count(root, "--key-file", k1) == 30
    assert count(root, "--key-file", key_file(tmp_path, "k1crlf", KEY1 + "\r\n")) == 30
    # --key-file wins over $SYNCSTORE_KEY.
    assert count(root, "--key-file", k1, env={"SYNCSTORE_KEY": WRONG}) == 30
    for args in STORE_OPENERS:
        r = cli(*args, "--root", root, env={"SYNCSTORE_KEY": KEY1})
        assert r.returncode == 0, (args, r.stderr)
    r = cli("status", "--root", root, "--key-file", k1)
    assert "encrypted: yes (kdfIter 256000)" in r.stdout.splitlines()[0] and "contacts-down" in r.stdout
    assert "encrypted: yes" in cli("soups", "--root", root, "--key-file", k1).stdout.splitlines()[0]
    # --json stays what it was: the states and the soups only.
    assert isinstance(json.loads(cli("status", "--root", root, "--key-file", k1, "--json").stdout), list)

    # Syncs run on the encrypted store; a new store created by a sync with a key is encrypted from the start.
    r = cli("sync", "--root", root, *remote(server), "contacts-up", "contacts-down", env={"SYNCSTORE_KEY": KEY1})
    assert r.returncode == 0, r.stderr
    other = str(tmp_path / "other")
    r = cli("sync", "--root", other, *remote(server), "--store-config", configs[0], "--sync-config", configs[1],
            "--key-file", k1, "--kdf-iter", "4000")
    assert r.returncode == 0, r.stderr
    assert not store_file(other).read_bytes().startswith(SQLITE_HEADER)
    assert count(other, "--key-file", k1, "--kdf-iter", "4000") == 30
    assert "encrypted: yes (kdfIter 4000)" in cli("soups", "--root", other, "--key-file", k1, "--kdf-iter", "4000").stdout
    assert cli("soups", "--root", other, "--key-file", k1).returncode == 77, "the wrong kdfIter opened the store"


def test_a_key_that_does_not_open_the_store_exits_77_and_is_never_shown(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    plain = str(tmp_path / "plain")
    assert cli("sync", "--root", plain, *remote(server), "--store-config", configs[0], "--sync-config", configs[1]).returncode == 0
    rekey(root, env={"SYNCSTORE_NEW_KEY": KEY1})
    before = store_file(root).read_bytes()
    wrong = key_file(tmp_path, "wrong", WRONG + "\n")
    commands = STORE_OPENERS + [["sync", *remote(server), "contacts-down"], ["ghosts", *remote(server), "contacts-down"],
                                ["rekey", "--decrypt"], ["rekey", "--new-key-file", wrong]]
    variants = [([], {"SYNCSTORE_KEY": WRONG}), (["--key-file", wrong], {}), ([], {}),
                (["--kdf-iter", "4000"], {"SYNCSTORE_KEY": KEY1})]
    for args in commands:
        json_variant = [] if args[0] == "upsert" else [(["--json"], {"SYNCSTORE_KEY": WRONG})]
        for key_args, env in variants + json_variant:
            r = cli(*args, "--root", root, *key_args, env=env)
            assert r.returncode == 77, (args, key_args, r.returncode, r.stdout, r.stderr)
            assert r.stdout == "", (args, r.stdout)
            if "--json" in key_args:
                # --json: the error is one JSON object on stderr.
                assert json.loads(r.stderr)["error"]["exitCode"] == 77, r.stderr
            else:
                assert r.stderr.startswith("syncstore-cli: ") and "Traceback" not in r.stderr
            for secret in (WRONG, KEY1):
                assert secret not in r.stdout + r.stderr, (args, key_args, r.stderr)
            if env or "--key-file" in key_args:
                assert "does not open" in r.stderr and "--kdf-iter" in r.stderr, r.stderr
            else:
                assert "is encrypted" in r.stderr and "--key-file" in r.stderr, r.stderr
    # A key for a store that is not encrypted is refused too, saying so.
    r = cli("soups", "--root", plain, env={"SYNCSTORE_KEY": WRONG})
    assert r.returncode == 77 and "not encrypted" in r.stderr and "$SYNCSTORE_KEY" in r.stderr and WRONG not in r.stderr
    assert store_file(root).read_bytes() == before, "a refused key changed the store file"
    assert count(root, env={"SYNCSTORE_KEY": KEY1}) == 30


def test_rekey_plaintext_to_k1_to_k2_to_decrypted_keeps_every_entry(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    entry = {"LastName": "Offline", "__local__": True, "__locally_created__": True}
    assert cli("upsert", "--root", root, "--soup", "contacts", json.dumps(entry)).returncode == 0
    dirty = "select count(*) from {contacts} where {contacts:__local__} in ('1', 'true')"

    def check(*key_args, env=None):
        assert count(root, *key_args, env=env) == 31
        r = cli("query", "--root", root, *key_args, dirty, "--json", env=env)
        assert r.returncode == 0 and json.loads(r.stdout) == [[1]], r.stderr
        r = cli("status", "--root", root, *key_args, "--json", env=env)
        assert {s["name"] for s in json.loads(r.stdout)} == {"contacts-down", "contacts-up"}

    k1 = key_file(tmp_path, "k1", KEY1 + "\n")
    k2 = key_file(tmp_path, "k2", KEY2)
    # --decrypt on a store that is not encrypted changes nothing.
    r = cli("rekey", "--root", root, "--decrypt")
    assert r.returncode == 0 and "not encrypted, nothing to decrypt; encrypted: no" in r.stdout, r.stdout + r.stderr

    # plaintext -> K1 (4000 iterations, as the Mobile SDK)
    r = cli("rekey", "--root", root, "--new-key-file", k1, "--new-kdf-iter", "4000")
    assert r.returncode == 0, r.stderr
    assert re.search(r"encrypted in \d+\.\d\d s; encrypted: yes \(kdfIter 4000\)$", r.stdout.strip()), r.stdout
    assert cli("soups", "--root", root).returncode == 77
    assert cli("soups", "--root", root, "--key-file", k1).returncode == 77, "4000 iterations are not the default"
    check("--key-file", k1, "--kdf-iter", "4000")

    # K1 -> K2 (a raw key), the new key from the environment
    done = rekey(root, "--kdf-iter", "4000", env={"SYNCSTORE_KEY": KEY1, "SYNCSTORE_NEW_KEY": KEY2})
    assert done["wasEncrypted"] and done["encrypted"] and "kdfIter" not in done, done
    assert cli("soups", "--root", root, "--key-file", k1, "--kdf-iter", "4000").returncode == 77, "the old key still opens it"
    check("--key-file", k2)
    assert "encrypted: yes (raw 256-bit key)" in cli("soups", "--root", root, "--key-file", k2).stdout

    # K2 -> decrypted: a plain SQLite file again, which a key no longer opens
    r = cli("rekey", "--root", root, "--key-file", k2, "--decrypt")
    assert r.returncode == 0 and re.search(r"decrypted in \d+\.\d\d s; encrypted: no$", r.stdout.strip()), r.stdout + r.stderr
    assert store_file(root).read_bytes().startswith(SQLITE_HEADER)
    assert cli("soups", "--root", root, "--key-file", k2).returncode == 77
    check()
    assert "encrypted: no" in cli("status", "--root", root).stdout.splitlines()[0]
    assert not list(Path(root, "user").glob("*.rekey*")), "rekey left its temporary copy"
    for secret in (KEY1, KEY2):
        assert secret not in r.stdout + r.stderr


def test_rekey_usage_errors_and_unreadable_key_files(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    k1 = key_file(tmp_path, "k1", KEY1)
    cases = [
        (["rekey"], 64, "--new-key-file"),
        (["rekey", "--decrypt", "--new-key-file", k1], 64, "not both"),
        (["rekey", "--decrypt", "--new-kdf-iter", "4000"], 64, "--new-kdf-iter"),
        (["rekey", "--new-key-file", k1, "--new-kdf-iter", "0"], 64, "--new-kdf-iter"),
        (["soups", "--kdf-iter", "4000"], 64, "--kdf-iter"),
        (["soups", "--key-file", str(tmp_path / "missing")], 66, "no such file"),
        (["soups", "--key-file", key_file(tmp_path, "empty", "\n")], 65, "empty"),
        (["rekey", "--new-key-file", str(tmp_path)], 66, "directory"),
        (["status", "--store", "nope", "--key-file", k1], 66, "No user store 'nope'"),
    ]
    for args, code, words in cases:
        r = cli(*args, "--root", root)
        assert r.returncode == code, (args, r.returncode, r.stderr)
        assert words in r.stderr, (args, r.stderr)
        assert KEY1 not in r.stdout + r.stderr
    r = cli("rekey", "--root", root, "--decrypt", env={"SYNCSTORE_NEW_KEY": KEY1})
    assert r.returncode == 64 and "SYNCSTORE_NEW_KEY" in r.stderr and KEY1 not in r.stderr
    assert store_file(root).read_bytes().startswith(SQLITE_HEADER), "a refused rekey changed the store"


def test_no_key_is_accepted_on_the_command_line(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    secret = "cmdline-secret-Q81"
    attempts = [[*sub, "--key", secret] for sub in STORE_OPENERS] + [[*sub, f"--key={secret}"] for sub in STORE_OPENERS]
    attempts += [["sync", *remote(server), "contacts-down", "--key", secret],
                 ["rekey", "--key", secret, "--decrypt"],
                 ["rekey", "--new-key", secret], [f"--new-key={secret}", "rekey"]]
    for args in attempts:
        r = cli(*args, "--root", root)
        assert r.returncode == 64, (args, r.returncode, r.stderr)
        assert secret not in r.stdout + r.stderr, (args, r.stderr)
    r = cli("soups", "--root", root, "--key", secret)
    assert "--key is not accepted" in r.stderr and "--key-file" in r.stderr
    r = cli("rekey", "--root", root, "--new-key", secret)
    assert "--new-key is not accepted" in r.stderr and "--new-key-file" in r.stderr
    assert store_file(root).read_bytes().startswith(SQLITE_HEADER)
    for sub in ("soups", "rekey", "sync"):
        assert "--key <" not in cli(sub, "--help").stdout and "--key-file" in cli(sub, "--help").stdout


def test_rekey_is_busy_while_another_process_has_the_store_open(tmp_path, configs):
    slow = Served("--seed", "Contact=10", "--faults", "GET */query* latency=4000")
    try:
        root = str(tmp_path / "stores")
        k1 = key_file(tmp_path, "k1", KEY1)
        running = subprocess.Popen([CLI, "sync", "--root", root, "--url", slow.url, "--token", TOKEN,
                                    "--store-config", configs[0], "--sync-config", configs[1]],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while time.time() < deadline and running.poll() is None:
            r = cli("status", "--root", root, "--json")
            if r.returncode == 0 and any(s["status"] == "RUNNING" for s in json.loads(r.stdout or "[]")):
                break
            time.sleep(0.2)
        assert running.poll() is None, "the sync ended before rekey could race it"
        r = cli("rekey", "--root", root, "--new-key-file", k1)
        assert r.returncode == 75, (r.returncode, r.stdout, r.stderr)
        assert "another process" in r.stderr.lower() and KEY1 not in r.stderr
        assert store_file(root).read_bytes().startswith(SQLITE_HEADER), "a busy rekey changed the store"
        running.wait(timeout=60)
        assert running.returncode == 0, running.stderr.read()
        assert count(root) == 10
    finally:
        slow.stop()
    # Another process with a plain SQLite connection to the file: busy as well, until it closes.
    import sqlite3
    reader = sqlite3.connect(str(store_file(root)))
    try:
        reader.execute("select count(*) from sqlite_master").fetchall()
        r = cli("rekey", "--root", root, "--new-key-file", k1)
        assert r.returncode == 75, (r.returncode, r.stderr)
    finally:
        reader.close()
    assert rekey(root, "--new-key-file", k1)["encrypted"] is True
    assert count(root, "--key-file", k1) == 10


def test_demo_keep_leaves_an_encrypted_store_and_its_key_file():
    r = cli("demo", "--records", "50", "--keep", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    kept = re.search(r"^Kept (\S+) ", r.stdout, re.M).group(1)
    try:
        key_path = Path(kept) / "demo.key"
        assert key_path.stat().st_mode & 0o777 == 0o600
        key = key_path.read_text().strip()
        assert key not in r.stdout + r.stderr, "the demo printed its key"
        assert f"--key-file {key_path}" in r.stdout
        db = Path(kept) / "user" / "demo.db"
        assert not db.read_bytes().startswith(SQLITE_HEADER) and b"Okafor" not in db.read_bytes()
        assert cli("soups", "--root", kept, "--store", "demo").returncode == 77
        s = cli("soups", "--root", kept, "--store", "demo", "--key-file", str(key_path))
        assert s.returncode == 0 and "encrypted: yes (raw 256-bit key)" in s.stdout, s.stderr
    finally:
        subprocess.run(["rm", "-rf", kept], check=True)


def test_readers_racing_changes_of_key_get_data_auth_or_busy_never_storage(tmp_path, server, configs):
    """One process flips a store between plaintext and encrypted with `rekey` while another keeps
    opening it without a key: each read is the data (plaintext), 77 (encrypted) or 75 (busy),
    never a storage error from a file renamed over it while it opened, and no change fails."""
    root = synced(tmp_path, server, configs)
    k = key_file(tmp_path, "k", KEY1)
    flips = subprocess.Popen(["sh", "-c", f'for i in 1 2 3 4 5 6 7 8; do "$0" rekey --root "$1" --new-key-file "$2" >/dev/null || exit 1;'
                              f' "$0" rekey --root "$1" --key-file "$2" --decrypt >/dev/null || exit 2; done',
                              CLI, root, k], stderr=subprocess.PIPE, text=True,
                             env={k2: v for k2, v in os.environ.items() if k2 not in ("SYNCSTORE_KEY", "SYNCSTORE_NEW_KEY")})
    codes = {}
    while flips.poll() is None:
        r = cli("query", "--root", root, "select count(*) from {contacts}", "--json")
        codes[r.returncode] = codes.get(r.returncode, 0) + 1
        assert r.returncode in (0, 75, 77), (r.returncode, r.stderr)
        if r.returncode == 0:
            assert json.loads(r.stdout)[0][0] == 30
    assert flips.wait() == 0, flips.stderr.read()
    assert sum(codes.values()) > 5, codes
    assert count(root) == 30


# ---- The first hour: a fresh root, soups, installable form, errors a newcomer meets.

def serve_text(*args):
    """`syncstore-cli serve` in text mode: the process and its announcement lines up to `Try:`."""
    proc = subprocess.Popen([CLI, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    while not lines or not lines[-1].startswith("Try:"):
        line = proc.stdout.readline()
        assert line, f"serve ended: {proc.stderr.read()}"
        lines.append(line.rstrip("\n"))
    return proc, lines


def test_the_try_line_of_serve_works_on_a_fresh_root(tmp_path):
    proc, lines = serve_text("--seed", "Contact=25")
    try:
        words = shlex.split(lines[-1][len("Try:"):])
        assert words[0] == "syncstore-cli"
        root = str(tmp_path / "fresh")
        r = cli(*words[1:], "--root", root)
        assert r.returncode == 0, (lines[-1], r.stdout, r.stderr)
        assert json.loads(cli("query", "--root", root, "select count(*) from {contacts}", "--json").stdout) == [[25]]
        # Named, so the same line again is incremental.
        assert cli(*words[1:], "--root", root).returncode == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_soql_sync_into_a_missing_soup_says_create_soup_and_leaves_no_store(tmp_path, server):
    root = tmp_path / "fresh"
    r = cli("sync", "--root", str(root), *remote(server), "--soql", "SELECT Id, LastName FROM Contact", "--soup", "contacts")
    assert r.returncode == 66, r.stderr
    assert "--create-soup" in r.stderr and "soup register" in r.stderr
    assert not (root / "user" / "smartstore.db").exists(), "a refused first sync left an empty store"
    r = cli("sync", "--root", str(root), *remote(server), "--soql", "SELECT Id, LastName, LastModifiedDate FROM Contact",
            "--soup", "contacts", "--create-soup", "--json")
    assert r.returncode == 0, r.stderr
    soups = {s["soupName"]: s for s in json.loads(cli("soup", "list", "--root", str(root), "--json").stdout)}
    assert soups["contacts"]["entries"] == 30
    paths = [i["path"] for i in soups["contacts"]["indexes"]]
    assert {"Id", "LastModifiedDate", "__local__", "__locally_created__", "__locally_updated__", "__locally_deleted__"} <= set(paths)


def test_soup_register_list_remove(tmp_path, configs):
    root = str(tmp_path / "stores")
    specs = '[{"path":"Id","type":"string"},{"path":"__local__","type":"string"}]'
    r = cli("soup", "register", "--root", root, "contacts", specs)
    assert r.returncode == 0 and "Registered soup 'contacts' (Id:string, __local__:string)" in r.stdout, r.stdout + r.stderr
    r = cli("soup", "register", "--root", root, "contacts", specs)
    assert r.returncode == 0 and "already exists" in r.stdout
    r = cli("soup", "register", "--root", root, "contacts", '[{"path":"Name","type":"string"}]')
    assert r.returncode == 73 and "other indexes" in r.stderr and "soup remove contacts" in r.stderr
    r = cli("soup", "register", "--root", root, "bad", "[{")
    assert r.returncode == 65, r.stderr
    r = cli("soup", "register", "--root", root, "--store-config", configs[0], "--store", "other", "--json")
    assert r.returncode == 0, r.stderr
    assert [(s["soupName"], s["registered"]) for s in json.loads(r.stdout)] == [("contacts", True)]
    assert "contacts" in cli("soups", "--root", root, "--store", "other").stdout, "soups stays the listing alias"
    listed = cli("soup", "list", "--root", root)
    assert listed.returncode == 0 and "Id:string, __local__:string" in listed.stdout
    assert cli("upsert", "--root", root, "--soup", "contacts", '{"Id":"1","__local__":true}').returncode == 0
    r = cli("soup", "remove", "--root", root, "contacts")
    assert r.returncode == 70 and "--force" in r.stderr and "1 entry" in r.stderr, r.stderr
    r = cli("soup", "remove", "--root", root, "contacts", "--force")
    assert r.returncode == 0 and "Removed soup 'contacts' and its 1 entry" in r.stdout, r.stdout + r.stderr
    r = cli("soup", "remove", "--root", root, "contacts")
    assert r.returncode == 66 and "does not exist" in r.stderr


def help_text(*args, columns):
    r = cli(*args, "--help", env={"COLUMNS": str(columns)})
    assert r.returncode == 0, r.stderr
    return r.stdout


def all_commands():
    commands = [[]]
    for sub in ["demo", "serve", "sync", "status", "soup", "soups", "query", "upsert", "watch", "ghosts", "rekey"]:
        commands.append([sub])
    commands += [["soup", "list"], ["soup", "register"], ["soup", "remove"]]
    return commands


def test_help_examples_are_not_split_at_80_columns():
    """The help's preformatted lines (examples, JSON) come out the same at 80 columns as on a wide
    terminal, none longer than 80; prose is not pre-wrapped (one line per paragraph when wide)."""
    for command in all_commands():
        narrow, wide = help_text(*command, columns=80), help_text(*command, columns=1000)
        discussion = lambda text: text.split("\nUSAGE:")[0]  # noqa: E731
        pre = lambda text: [l for l in discussion(text).splitlines() if l.startswith("  ")]  # noqa: E731
        assert pre(narrow) == pre(wide), (command, [l for l in pre(narrow) if l not in pre(wide)])
        assert pre(wide), f"{command}: no examples"
        assert all(len(line) <= 80 for line in discussion(narrow).splitlines()), command
        paragraphs = [p for p in discussion(wide).split("\n\n") if p and not p.startswith(" ")]
        for paragraph in paragraphs:
            prose = [l for l in paragraph.splitlines() if not l.startswith(" ")]
            assert len(prose) == 1, f"{command}: pre-wrapped paragraph: {prose}"


def test_help_shows_a_userstore_and_usersyncs_that_work(tmp_path, server):
    text = help_text("sync", columns=1000)

    def block(start):
        lines = text.splitlines()
        first = next(i for i, l in enumerate(lines) if l.strip().startswith(start))
        end = first
        while end < len(lines) and lines[end].startswith("  "):
            end += 1
        return json.loads("\n".join(lines[first:end]))

    store, syncs = tmp_path / "userstore.json", tmp_path / "usersyncs.json"
    store.write_text(json.dumps(block('{"soups"')))
    syncs.write_text(json.dumps(block('{"syncs"')))
    r = cli("sync", "--root", str(tmp_path / "s"), *remote(server), "--store-config", str(store), "--sync-config", str(syncs), "--json")
    assert r.returncode == 0, r.stderr
    assert [(s["name"], s["status"]) for s in json.loads(r.stdout)] == [("contacts-down", "DONE"), ("contacts-up", "DONE")]
    readme = (ROOT / "README.md").read_text()
    assert json.dumps(block('{"soups"'), indent=None) and '"soupName": "contacts"' in readme and '"syncType": "syncUp"' in readme


def test_version_and_completions():
    version = re.search(r'#define SYNCSTORE_VERSION "([^"]+)"', (ROOT / "include/syncstore.h").read_text()).group(1)
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == version
    for shell in ("bash", "zsh", "fish"):
        r = cli("--generate-completion-script", shell)
        assert r.returncode == 0 and "soup" in r.stdout and "register" in r.stdout, shell


def test_progress_bar_leaves_no_stale_characters_on_a_terminal(tmp_path):
    import pty
    # Pages of 10 records: the bar is redrawn with an ETA, longer than the final line.
    paged = Served("--seed", "Contact=200", "--min-batch-size", "1", "--default-batch-size", "10")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([CLI, "sync", "--root", str(tmp_path / "s"), *remote(paged), "--soup", "contacts",
                                 "--create-soup", "--soql", "SELECT Id, LastName, LastModifiedDate FROM Contact"],
                                stdout=subprocess.PIPE, stderr=slave, text=True)
        out, _ = proc.communicate(timeout=120)
        os.close(slave)
        slave = -1
        raw = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            raw += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
        paged.stop()
    assert proc.returncode == 0, out
    assert b"ETA" in raw, "no bar with an ETA was drawn: the test did not reproduce the case"
    # What a terminal shows: \r returns to column 0, ESC[K erases to the end of the line.
    screen, line, col = [], [], 0
    for part in re.split(rb"(\r\n|\n|\r|\x1b\[K)", raw):
        if part in (b"\n", b"\r\n"):
            screen.append(bytes(line).decode())
            line, col = [], 0
        elif part == b"\r":
            col = 0
        elif part == b"\x1b[K":
            del line[col:]
        else:
            for byte in part:
                if col < len(line):
                    line[col] = byte
                else:
                    line.append(byte)
                col += 1
    bars = [l for l in screen if "[" in l and "%" in l]
    assert bars, raw
    for bar in bars:
        assert re.fullmatch(r"sync down contacts \[#{30}\] 100%  200/200 records  \d+ rec/s", bar.strip()), repr(bar)


def test_a_store_the_user_cannot_write_is_read_and_errors_name_the_file(tmp_path, server, configs):
    """Read-only commands work on a store whose file and directory this user cannot write, both
    closed (no -wal) and while another process has it open (its -wal and -shm there); a write
    names the file and says what to do. As root, the commands run as nobody (setpriv)."""
    import shutil
    import stat
    import tempfile
    shared = Path(tempfile.mkdtemp(prefix="syncstore-ro-"))
    try:
        root = shared / "stores"
        r = cli("sync", "--root", str(root), *remote(server), "--store-config", configs[0], "--sync-config", configs[1])
        assert r.returncode == 0, r.stderr
        db = root / "user" / "smartstore.db"
        assert not Path(str(db) + "-wal").exists()
        for path in (shared, root, root / "user"):
            path.chmod(0o755)
        db.chmod(0o644)
        if os.geteuid() == 0:
            as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        else:
            (root / "user").chmod(0o555)
            db.chmod(0o444)
            as_user = []
        before = db.read_bytes()

        def run(*args):
            return subprocess.run([*as_user, CLI, *args, "--root", str(root)], capture_output=True, text=True, timeout=60,
                                  env={"PATH": os.environ["PATH"], "HOME": str(shared)})

        def reads_everything():
            r = run("query", "select count(*) from {contacts}", "--json")
            assert r.returncode == 0 and json.loads(r.stdout) == [[30]], (r.returncode, r.stderr)
            r = run("soup", "list")
            assert r.returncode == 0 and "contacts" in r.stdout, r.stderr
            r = run("status", "--json")
            assert r.returncode == 0 and {s["name"] for s in json.loads(r.stdout)} == {"contacts-down", "contacts-up"}, r.stderr

        reads_everything()
        # Another process has the store open (its -wal and -shm exist, owned by it).
        import sqlite3
        other = sqlite3.connect(str(db))
        try:
            other.execute("select count(*) from sqlite_master").fetchall()
            assert Path(str(db) + "-wal").exists()
            reads_everything()
        finally:
            other.close()
        r = run("upsert", "--soup", "contacts", '{"LastName": "x"}')
        assert r.returncode == 74, (r.returncode, r.stderr)
        assert str(db) in r.stderr and "writable" in r.stderr and "query" in r.stderr, r.stderr
        assert db.read_bytes() == before, "the store changed"
    finally:
        for path in shared.rglob("*"):
            if path.is_dir():
                path.chmod(stat.S_IRWXU)
        shutil.rmtree(shared, ignore_errors=True)


def test_serve_errors_have_the_documented_exit_codes(tmp_path, server):
    port = server.url.rsplit(":", 1)[1]
    r = cli("serve", "--port", port, timeout=30)
    assert r.returncode == 75, (r.returncode, r.stderr)
    assert f"Port {port} on 127.0.0.1 is already in use" in r.stderr and "--port" in r.stderr, r.stderr
    r = cli("serve", "--port", port, "--json", timeout=30)
    assert r.returncode == 75 and json.loads(r.stderr)["error"]["code"] == "BUSY", r.stderr
    r = cli("serve", "--port", "0", "--schema", str(tmp_path / "missing.json"), timeout=30)
    assert r.returncode == 66 and "missing.json" in r.stderr, (r.returncode, r.stderr)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = cli("serve", "--port", "0", "--schema", str(bad), timeout=30)
    assert r.returncode == 65 and "bad.json" in r.stderr, (r.returncode, r.stderr)


def test_an_untrusted_certificate_says_ca_bundle(tmp_path):
    s = Served("--tls", "self-signed", "--tls-dir", str(tmp_path / "tls"))
    try:
        r = cli("sync", "--root", str(tmp_path / "stores"), "--url", s.url, "--token", TOKEN,
                "--soql", "SELECT Id FROM Contact", "--soup", "c", "--create-soup")
        assert r.returncode == 69, (r.returncode, r.stdout, r.stderr)
        assert "--ca-bundle" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        s.stop()


def test_json_errors_tables_and_counts(tmp_path, server, configs):
    root = synced(tmp_path, server, configs)
    # --json: every error is one JSON object on stderr, also outside sync runs.
    for args, code in ((["status", "--store", "nope"], 66), (["query"], 64), (["query", "--soup", "contacts", "--spec", "{x"], 65),
                       (["soup", "remove", "nosuch"], 66)):
        r = cli(*args, "--root", root, "--json")
        assert r.returncode == code, (args, r.returncode, r.stderr)
        error = json.loads(r.stderr)["error"]
        assert error["exitCode"] == code and error["message"] and error["code"], error
        assert r.stdout == ""
    # A missing store's error names those that exist.
    assert cli("soup", "register", "--root", root, "--store", "main", "s", '[{"path":"a","type":"string"}]').returncode == 0
    r = cli("status", "--root", root, "--store", "nope")
    assert r.returncode == 66 and "main, smartstore" in r.stderr, r.stderr
    # Smart SQL tables are headed by the selected expressions.
    r = cli("query", "--root", root, "select {contacts:LastName}, count(*) as n from {contacts} group by {contacts:LastName}")
    assert r.stdout.splitlines()[0].split() == ["LastName", "n"], r.stdout
    # A FAILED run does not report the previous run's count.
    r = cli("sync", "--root", root, "--url", server.url, "--token", "not-the-token", "contacts-down")
    assert r.returncode == 77 and "FAILED" in r.stdout, (r.returncode, r.stdout)
    assert "30 records" not in r.stdout, r.stdout


def test_ctrl_c_stops_the_sync_and_says_how_to_resume(tmp_path, configs):
    slow = Served("--seed", "Contact=10", "--faults", "GET */query* latency=3000")
    try:
        root = str(tmp_path / "stores")
        args = ["sync", "--root", root, "--url", slow.url, "--token", TOKEN, "--store-config", configs[0], "--sync-config", configs[1]]
        proc = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        while "RUNNING" not in seen:
            line = proc.stderr.readline()
            assert line, seen
            seen += line
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (proc.returncode, out, err)
        assert "STOPPED" in out and "stopped by Ctrl-C" in err and "run the same command again" in err, (out, err)
        states = {s["name"]: s["status"] for s in json.loads(cli("status", "--root", root, "--json").stdout)}
        assert states["contacts-down"] == "STOPPED", states
        r = cli(*args)
        assert r.returncode == 0, r.stderr
    finally:
        slow.stop()


def test_ctrl_c_stops_ghost_cleaning(tmp_path, configs):
    """Ctrl-C during `ghosts` printed nothing (the command was killed where it stood)."""
    slow = Served("--seed", "Contact=10", "--faults", "GET */query* latency=4000 after=1")
    try:
        root = str(tmp_path / "stores")
        down = cli("sync", "--root", root, "--url", slow.url, "--token", TOKEN, "--store-config", configs[0], "--sync-config", configs[1], "contacts-down")
        assert down.returncode == 0, down.stderr
        proc = subprocess.Popen([CLI, "ghosts", "contacts-down", "--root", root, "--url", slow.url, "--token", TOKEN],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # inside the slow query for the server's ids
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, (proc.returncode, out, err)
        assert "stopped by Ctrl-C" in err and "run the same command again" in err.lower(), (out, err)
    finally:
        slow.stop()
