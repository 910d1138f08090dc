"""`syncstore-cli sync --live` as a user runs it: a subprocess in live sync against a real dev
server process (`syncstore-cli serve`) while another process (the CLI's `upsert`) writes the
store; the JSON events, the text lines and the status line on a terminal, an unreachable server,
Ctrl-C and SIGTERM, --for, bad options.

The binary is $SYNCSTORE_CLI, else .build/debug/syncstore-cli (scripts/test.sh builds it).
"""
import json
import os
import pty
import queue
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("SYNCSTORE_CLI", str(ROOT / ".build" / "debug" / "syncstore-cli"))
TOKEN = "cli-live-token"
WAIT = 30.0

USERSTORE = {"soups": [{"soupName": "contacts", "indexes": [
    {"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "__local__", "type": "string"}]}]}
USERSYNCS = {"syncs": [
    {"syncName": "contacts-down", "syncType": "syncDown", "soupName": "contacts",
     "target": {"type": "soql", "query": "SELECT Id, LastName, LastModifiedDate FROM Contact"},
     "options": {"mergeMode": "LEAVE_IF_CHANGED"}},
    {"syncName": "contacts-up", "syncType": "syncUp", "soupName": "contacts",
     "options": {"fieldlist": ["LastName"], "mergeMode": "LEAVE_IF_CHANGED"}},
]}


def env():
    return {k: v for k, v in os.environ.items() if k not in ("SYNCSTORE_KEY", "SYNCSTORE_NEW_KEY", "SYNCSTORE_TOKEN")}


def cli(*args, timeout=120):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, env=env())


class Served:
    """`syncstore-cli serve --json` as a process."""

    def __init__(self):
        self.proc = subprocess.Popen([CLI, "serve", "--json", "--token", TOKEN, "--seed", "Contact=5"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"serve printed nothing: {self.proc.stderr.read()}"
        self.url = json.loads(line)["url"]

    def last_names(self):
        import urllib.parse
        import urllib.request
        q = urllib.parse.quote("SELECT Id, LastName FROM Contact")
        req = urllib.request.Request(f"{self.url}/services/data/v62.0/query?q={q}",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return [rec["LastName"] for rec in json.loads(r.read())["records"]]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server():
    s = Served()
    yield s
    s.stop()


@pytest.fixture
def configs(tmp_path):
    store = tmp_path / "userstore.json"
    syncs = tmp_path / "usersyncs.json"
    store.write_text(json.dumps(USERSTORE))
    syncs.write_text(json.dumps(USERSYNCS))
    return ["--store-config", str(store), "--sync-config", str(syncs)]


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Live:
    """`syncstore-cli sync --live ...` as a process; its stdout lines in a queue."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([CLI, "sync", "--live", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env())
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def event(self, timeout=WAIT):
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"the process ended: {self.proc.wait()} {self.proc.stderr.read()}"
        event = json.loads(line)
        self.seen.append(event)
        return event

    def until(self, match, timeout=WAIT):
        """The first event (from now) for which match(event) holds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no such event; seen: {self.seen[-10:]}"
            event = self.event(left)
            if match(event):
                return event

    def end(self, timeout=WAIT):
        """(exit code, the events not read yet, stderr)."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("sync --live did not end")
        rest = []
        while True:
            line = self.lines.get(timeout=timeout)
            if line is None:
                break
            rest.append(json.loads(line))
        return code, rest, self.proc.stderr.read()


def state(name):
    return lambda e: e.get("event") == "state" and e.get("state") == name


def test_json_events_connecting_then_live_and_another_process_write_reaches_the_server(tmp_path, server, configs):
    root = str(tmp_path / "stores")
    live = Live("--root", root, "--url", server.url, "--token", TOKEN, *configs, "--debounce", "100", "--json")
    try:
        first = live.event()
        assert first["event"] == "state" and first["state"] == "connecting", first
        assert len(first["syncs"]) == 2
        live.until(state("live"))
        # Catching up ran both syncs: the server's 5 contacts are in the store.
        runs = [e["sync"] for e in live.seen if e["event"] == "run" and e["sync"]["status"] == "DONE"]
        assert {r["name"] for r in runs} == {"contacts-up", "contacts-down"}, runs
        r = cli("query", "--root", root, "select count(*) from {contacts}", "--json")
        assert r.returncode == 0 and json.loads(r.stdout) == [[5]], (r.stdout, r.stderr)

        # Another process writes: live sync pushes it.
        entry = {"LastName": "Livewire", "attributes": {"type": "Contact"}, "__local__": True, "__locally_created__": True}
        r = cli("upsert", "--root", root, "--soup", "contacts", json.dumps(entry))
        assert r.returncode == 0, r.stderr
        live.until(lambda e: e["event"] == "run" and e["sync"]["name"] == "contacts-up" and e["sync"]["status"] == "DONE")
        deadline = time.monotonic() + WAIT
        while "Livewire" not in server.last_names():
            assert time.monotonic() < deadline, "the write never reached the server"
            time.sleep(0.2)
        r = cli("query", "--root", root, "select {contacts:Id}, {contacts:__local__} from {contacts} where {contacts:LastName} = 'Livewire'", "--json")
        row = json.loads(r.stdout)[0]
        assert row[0] and row[1] in (False, "false", "0", 0), row
    finally:
        live.proc.send_signal(signal.SIGINT)
    code, rest, err = live.end()
    assert code == 0, (code, err)
    assert rest and rest[-1]["event"] == "state" and rest[-1]["state"] == "stopped", rest[-3:]
    info = json.loads(err.splitlines()[0])["live"]
    assert info["syncs"] == ["contacts-down", "contacts-up"] and info["options"]["debounceMs"] == 100


def test_unreachable_server_is_offline_with_the_next_retry_then_for_ends_it(tmp_path, configs):
    root = str(tmp_path / "stores")
    started = int(time.time() * 1000)
    live = Live("--root", root, "--url", f"http://127.0.0.1:{closed_port()}", "--token", TOKEN, *configs,
                "--retry-min", "200", "--retry-max", "400", "--for", "4", "--json")
    code, rest, err = live.end()
    assert code == 0, (code, err)
    states = [e for e in rest if e["event"] == "state"]
    assert states[0]["state"] == "connecting"
    offline = [e for e in states if e["state"] == "offline"]
    assert len(offline) >= 2, states   # retried: 100-400 ms apart, over 4 s
    for e in offline:
        assert started < e["nextRetryAt"] < int(time.time() * 1000) + 1000, e
        assert e["error"], e
    assert "live" not in [e["state"] for e in states]
    assert states[-1]["state"] == "stopped" and rest[-1] == states[-1]


def test_text_lines_when_not_a_terminal_and_sigterm_exits_0(tmp_path, server, configs):
    root = str(tmp_path / "stores")
    proc = subprocess.Popen([CLI, "sync", "--live", "--root", root, "--url", server.url, "--token", TOKEN, *configs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    lines = []
    deadline = time.monotonic() + WAIT
    while not any(" live · 2 syncs" in line for line in lines):
        assert time.monotonic() < deadline, lines
        line = proc.stdout.readline()
        assert line, (lines, proc.stderr.read())
        lines.append(line)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    lines += out.splitlines()
    assert "connecting · 2 syncs" in lines[0], lines
    assert any("run contacts-down DONE (5 records)" in line for line in lines), lines
    assert "stopped · 2 syncs" in lines[-1], lines
    assert "Live sync of store 'smartstore': contacts-down (down), contacts-up (up)" in err, err


def test_status_line_rewritten_in_place_on_a_terminal(tmp_path, configs):
    root = str(tmp_path / "stores")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(CLI, [CLI, "sync", "--live", "--root", root, "--url", f"http://127.0.0.1:{closed_port()}", "--token", TOKEN,
                        *configs, "--retry-min", "2000", "--for", "3"], dict(env(), COLUMNS="200"))
    out = b""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, out
    text = out.decode()
    assert "\rconnecting · 2 syncs" in text, text
    assert "\roffline · 2 syncs · retry in " in text and "\x1b[K" in text, text
    # The countdown moves on between events: several drawings of the offline line.
    assert text.count("\roffline · ") >= 3, text
    assert "\rstopped · 2 syncs" in text and text.rstrip("\r\n").endswith("\x1b[K"), text


@pytest.mark.parametrize("args,words", [
    (["--debounce=-1"], "--debounce must be from 0"), (["--debounce", "3600001"], "--debounce must be from 0"),
    (["--retry-min", "5"], "--retry-min must be from 10"),
    (["--retry-min", "500", "--retry-max", "100"], "--retry-max must not be less"),
    (["--pull-interval", "x"], "pull-interval"),
    (["--for", "0"], "--for must be"),
    (["--soql", "SELECT Id FROM Contact", "--soup", "contacts"], "--live runs named syncs"),
    (["--syncs", "a", "b"], "not both"),
    (["--syncs", ","], "--syncs needs sync names"),
])
def test_bad_live_options_are_a_usage_error(tmp_path, args, words):
    r = cli("sync", "--live", "--root", str(tmp_path / "s"), "--url", "http://127.0.0.1:9", "--token", TOKEN, *args)
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert words in r.stderr, r.stderr
    assert not (tmp_path / "s").exists()


def test_live_options_without_live_are_a_usage_error(tmp_path):
    r = cli("sync", "--root", str(tmp_path / "s"), "--url", "http://127.0.0.1:9", "--token", TOKEN, "a", "--debounce", "100")
    assert r.returncode == 64 and "--debounce goes with --live" in r.stderr, r.stderr


def test_unknown_sync_store_without_syncs_and_no_server(tmp_path, configs):
    root = str(tmp_path / "stores")
    remote = ["--url", f"http://127.0.0.1:{closed_port()}", "--token", TOKEN]
    r = cli("sync", "--live", "--root", root, *remote, "--json")
    assert r.returncode == 66 and "No user store 'smartstore'" in r.stderr, r.stderr
    assert json.loads(r.stderr)["error"]["code"] == "NOT_FOUND"
    r = cli("soup", "register", "--root", root, "contacts", '[{"path":"Id","type":"string"}]')
    assert r.returncode == 0, r.stderr
    r = cli("sync", "--live", "--root", root, *remote)
    assert r.returncode == 65 and "no sync to run" in r.stderr, r.stderr
    r = cli("sync", "--live", "--root", root, *remote, *configs, "--syncs", "contacts-up,nope", "--for", "1")
    assert r.returncode == 66 and "No sync named 'nope'" in r.stderr, r.stderr
    r = cli("sync", "--live", "--root", root, "--for", "1")
    assert r.returncode == 64 and "--url and --token" in r.stderr, r.stderr
