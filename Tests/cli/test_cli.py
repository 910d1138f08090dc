"""syncstore-cli as a user runs it: every subcommand against a real server process it serves,
bad input (unknown store, malformed JSON, hostile Smart SQL, unreachable server), exit codes by
error class, and the demo with its output checked step by step.

The binary is $SYNCSTORE_CLI, else .build/debug/syncstore-cli (scripts/test.sh builds it).
"""
import json
import os
import re
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
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


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
    for sub in ["demo", "serve", "sync", "status", "soups", "query", "upsert", "ghosts"]:
        assert sub in r.stdout
    assert "Exit codes" in r.stdout
    for sub in ["sync", "query", "upsert", "serve", "ghosts", "status", "soups", "demo"]:
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
    assert f"1 conflicts (entries {entry['_soupEntryId']})" in r.stdout


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
             "7. Sync up", "8. Sync down again", "9. Clean ghosts", "Summary"]
    positions = [out.find(s) for s in steps]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), out
    assert "created 3, edited 2, deleted 1; the soup now has 6 dirty entries" in out
    assert "DONE: 5 of 6 changes sent, 1 conflict" in out
    assert "CONFLICT" in out
    summary = out[out.index("Summary"):].splitlines()
    values = summary[-1].split()
    down, up, conflicts, ghosts = (int(v) for v in values[:4])
    assert down >= 3000 + 5 and up == 5 and conflicts == 1 and ghosts == 1, summary
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
