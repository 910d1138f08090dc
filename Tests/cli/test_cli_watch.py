"""`syncstore-cli watch` as a user runs it: a subprocess watching a real store file while other
processes (the CLI's `upsert`, the Python package) write it; JSON lines, the text form, --count,
Ctrl-C and SIGTERM, bad input.

The binary is $SYNCSTORE_CLI, else .build/debug/syncstore-cli (scripts/test.sh builds it).
"""
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("SYNCSTORE_CLI", str(ROOT / ".build" / "debug" / "syncstore-cli"))
SPECS = '[{"path":"Id","type":"string"},{"path":"LastName","type":"string"}]'
WAIT = 20.0


def cli(*args, stdin=None):
    env = {k: v for k, v in os.environ.items() if k not in ("SYNCSTORE_KEY", "SYNCSTORE_NEW_KEY")}
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, input=stdin, env=env)


def ok(*args, stdin=None):
    r = cli(*args, stdin=stdin)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


@pytest.fixture
def root(tmp_path):
    root = str(tmp_path / "stores")
    ok("soup", "register", "--root", root, "--store", "w", "contacts", SPECS)
    ok("soup", "register", "--root", root, "--store", "w", "other", SPECS)
    return root


class Watching:
    """`syncstore-cli watch ...` as a process, once its listener is in place (the first stderr line)."""

    def __init__(self, root, *args):
        self.proc = subprocess.Popen([CLI, "watch", "--root", root, "--store", "w", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = self.proc.stderr.readline()
        assert self.first, f"watch said nothing: {self.proc.stdout.read()}"
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self, timeout=WAIT):
        """The next stdout line, or None when none comes within timeout (or at the end)."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def notice(self):
        line = self.line()
        assert line, "no notice came"
        return json.loads(line)

    def end(self, timeout=WAIT):
        """(exit code, the stdout lines not read yet, stderr after the first line) once it exits."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("watch did not end")
        self.reader.join(timeout)
        rest = []
        while (line := self.lines.get_nowait()) is not None:
            rest.append(line)
        return self.proc.returncode, "".join(rest), self.proc.stderr.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def upsert(root, soup, entries):
    return json.loads(ok("upsert", "--root", root, "--store", "w", "--soup", soup, json.dumps(entries)))


def test_soup_watch_prints_json_lines_of_other_processes_commits_and_exits_after_count(root):
    w = Watching(root, "--soup", "contacts", "--json", "--count", "3")
    try:
        assert json.loads(w.first)["watching"]["soup"] == "contacts"
        stored = upsert(root, "contacts", [{"Id": "1", "LastName": "Ng"}, {"Id": "2"}])
        first = w.notice()
        upsert(root, "other", [{"Id": "x"}])  # another soup: not printed
        # The Python package, from this process: another process for the CLI.
        import syncstore
        with syncstore.Store(root, {"storeName": "w"}) as store:
            store.remove("contacts", [stored[0]["_soupEntryId"]])
            second = w.notice()
            store.upsert("contacts", [{"Id": "3"}])
            third = w.notice()
        code, out, err = w.end()
        assert code == 0 and out == "", (code, out, err)
    finally:
        w.kill()
    for notice in (first, second, third):
        assert notice["origin"]["kind"] == "otherProcess", notice
        assert [p["soup"] for p in notice["soups"]] == ["contacts"], notice
    part = first["soups"][0]
    assert part.get("unknown") or part["inserted"]["ids"] == [e["_soupEntryId"] for e in stored], part


def test_every_soup_in_text_form(root):
    w = Watching(root, "--all", "--count", "1")
    try:
        assert w.first.startswith("Watching every soup. Store 'w' (user) at "), w.first
        upsert(root, "other", [{"Id": "x"}, {"Id": "y"}])
        code, out, err = w.end()
    finally:
        w.kill()
    assert code == 0, err
    assert "  other: " in out and "[another process" in out, out


def test_ctrl_c_and_sigterm_stop_it_cleanly(root):
    for number in (signal.SIGINT, signal.SIGTERM):
        w = Watching(root, "--soup", "contacts", "--json")
        try:
            upsert(root, "contacts", [{"Id": "s"}])
            assert w.notice()["soups"][0]["soup"] == "contacts"
            started = time.monotonic()
            w.proc.send_signal(number)
            code, out, err = w.end()
        finally:
            w.kill()
        assert code == 0 and out == "" and err == "", (number, code, out, err)
        assert time.monotonic() - started < 5
    # Stopped cleanly: the store opens, no lock or WAL left behind by the watch.
    assert json.loads(ok("query", "--root", root, "--store", "w", "select count(*) from {contacts}", "--json")) == [[2]]


def test_query_watch_prints_the_result_then_each_change(root):
    upsert(root, "contacts", [{"Id": "1", "LastName": "Ng"}, {"Id": "2", "LastName": "Li"}])
    sql = "select {contacts:LastName}, count(*) from {contacts} group by {contacts:LastName} order by 1"
    w = Watching(root, sql, "--json", "--count", "2")
    try:
        initial = w.notice()
        assert initial["origin"]["kind"] == "initial" and initial["currentPageOrderedEntries"] == [["Li", 1], ["Ng", 1]]
        upsert(root, "other", [{"Id": "o"}])  # a soup the query does not name: no notice
        upsert(root, "contacts", [{"Id": "3", "LastName": "Ng"}])
        change = w.notice()
        code, _, err = w.end()
    finally:
        w.kill()
    assert code == 0, err
    assert change["currentPageOrderedEntries"] == [["Li", 1], ["Ng", 2]]
    assert change["added"]["rows"] == [["Ng", 2]] and change["removed"]["rows"] == [["Ng", 1]]


def test_spec_watch_in_text_form_shows_the_page(root):
    stored = upsert(root, "contacts", [{"Id": "1", "LastName": "Ng"}])
    w = Watching(root, "--soup", "contacts", "--spec", '{"queryType":"exact","indexPath":"LastName","matchKey":"Ng"}',
                 "--count", "2")
    try:
        assert w.line().rstrip().endswith("1 row: 1 added  [current result]")
        upsert(root, "contacts", [{"Id": "2", "LastName": "Ng"}])
        code, out, err = w.end()
    finally:
        w.kill()
    assert code == 0, err
    assert "2 rows: 1 added  [another process]" in out, out
    assert "Id" in out and f"{stored[0]['_soupEntryId']}" in out, out


@pytest.mark.parametrize("args, code, words", [
    (["--soup", "nope"], 66, "nope"),
    (["--soup", "contacts", "--spec", "{not json"], 65, "query spec"),
    (["--soup", "contacts", "--spec", '{"queryType":"bogus","indexPath":"Id","matchKey":"x"}'], 65, "bogus"),
    (["delete from {contacts}"], 65, ""),
    ([], 64, "Say what to watch"),
    (["--all", "--soup", "contacts"], 64, ""),
    (["select 1", "--soup", "contacts"], 64, ""),
    (["--spec", "{}"], 64, "--spec needs --soup"),
    (["--all", "--count", "0"], 64, "--count"),
    (["--all", "--min-interval", "-1"], 64, "--min-interval"),
])
def test_bad_input_is_a_clear_error(root, args, code, words):
    r = cli("watch", "--root", root, "--store", "w", *args)
    assert r.returncode == code, (args, r.returncode, r.stdout, r.stderr)
    assert words in r.stderr, r.stderr
    r = cli("watch", "--root", root, "--store", "w", *args, "--json")
    assert r.returncode == code and json.loads(r.stderr.splitlines()[-1])["error"]["exitCode"] == code, r.stderr


def test_an_unknown_store_is_not_found(tmp_path):
    r = cli("watch", "--root", str(tmp_path), "--store", "none", "--all")
    assert r.returncode == 66 and "No user store 'none'" in r.stderr, r.stderr
    assert not (tmp_path / "user" / "none.db").exists()

