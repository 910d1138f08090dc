"""The hybrid plugins' dispatcher from Python (syncstore.plugin): the shared case table
Tests/plugin/cases.json, driven as Tests/c/test_plugin.c drives it (its "about" says how), one
pytest item per step in the table's order; then what the Python host adds (futures, key
provider, closing)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import syncstore
from syncstore.plugin import MOBILESYNC, SMARTSTORE, Plugin

from package_support import REPO, DevServer

TABLE = json.loads((REPO / "Tests" / "plugin" / "cases.json").read_text())
STEPS: List[Dict[str, Any]] = TABLE["steps"]
SERVICES = {"smartstore": SMARTSTORE, "mobilesync": MOBILESYNC}


class Run:
    """One pass over the table: its dev server, plugin, recorded events and saved values."""

    def __init__(self, root: Path) -> None:
        self.server = DevServer(*TABLE["server"]["args"])
        self.plugin = Plugin(root, remote=self.server.remote)
        self.lock = threading.Lock()
        self.events: List[Dict[str, Any]] = []
        self.odd_events: List[Tuple[str, Any]] = []
        self.events_seen = 0  # events up to the one the last waitEvent matched
        self.saved: Dict[str, Any] = {}
        self.plugin.on_event(self.record)

    def record(self, name: str, detail: Dict[str, Any]) -> None:
        with self.lock:
            if name == "sync" and isinstance(detail, dict):
                self.events.append(detail)
            else:
                self.odd_events.append((name, detail))

    def close(self) -> None:
        self.plugin.close()
        self.server.stop()

    # -- the table's language --

    def lookup(self, reference: str) -> Any:
        name, *parts = reference[1:].split(".")
        if name not in self.saved:
            pytest.fail(f"unknown reference {reference} (did an earlier step fail?)")
        value = self.saved[name]
        for part in parts:
            value = value[int(part)] if isinstance(value, list) else value.get(part)
        return value

    def substitute(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            return self.lookup(value)
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        return value

    def event_like(self, want: Any, start: int) -> int:
        with self.lock:
            return next((i for i in range(start, len(self.events)) if like(self.events[i], want)), -1)


def json_equal(got: Any, want: Any) -> bool:
    """JSON equality (jansson's): true is not 1, 1 is not 1.0."""
    if type(got) is not type(want):
        return False
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(json_equal(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return len(got) == len(want) and all(json_equal(g, w) for g, w in zip(got, want))
    return bool(got == want)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def like(got: Any, want: Any) -> bool:
    """got "contains" want: objects by their members, arrays element by element (same length),
    numbers by value."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and like(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(like(g, w) for g, w in zip(got, want))
    if is_number(want) and is_number(got):
        return bool(got == want)
    return json_equal(got, want)


def check_answer(run: Run, step: Dict[str, Any], ok: bool, value: Any) -> Optional[str]:
    """What is wrong with an answer (None: it is as the step expects)."""
    expect = run.substitute(step["expect"])
    if "error" in expect:
        if ok:
            return f"succeeded with {value!r}, expected {expect['error']}"
        if not isinstance(value, syncstore.SyncStoreError) or value.name not in (expect["error"],
                                                                                f"SYNCSTORE_ERR_{expect['error']}"):
            return f"wrong status: {value!r}"
        if not isinstance(value.message, str) or expect.get("message", "") not in value.message:
            return f"the message does not name the problem: {value.message!r}"
        return None
    if not ok:
        return f"failed: {value!r}"
    problems = []
    if value is None:
        problems.append("no value: every success has one (\"OK\" where the platforms say nothing else)")
    if "ok" in expect and (value is None or not json_equal(value, expect["ok"])):
        problems.append(f"not equal to {expect['ok']!r}")
    if "okLike" in expect and not like(value, expect["okLike"]):
        problems.append(f"not like {expect['okLike']!r}")
    if expect.get("okPositive") and not (is_number(value) and value > 0):
        problems.append("not a number > 0")
    missing = [k for k in expect.get("okHas", []) if not isinstance(value, dict) or k not in value]
    if missing:
        problems.append(f"without {missing}")
    return f"unexpected value {value!r}: {'; '.join(problems)}" if problems else None


def run_exec(run: Run, step: Dict[str, Any]) -> Optional[str]:
    args = run.substitute(step["args"])
    future = run.plugin.exec_async(SERVICES.get(step["service"], step["service"]), step["action"], args)
    try:
        ok, value = True, future.result(30)
    except syncstore.SyncStoreError as e:
        ok, value = False, e
    problem = check_answer(run, step, ok, value)
    if problem is None and "save" in step and value is not None:
        run.saved[step["save"]] = value
    return problem


def run_wait_event(run: Run, step: Dict[str, Any]) -> Optional[str]:
    want = run.substitute(step["like"])
    deadline = time.monotonic() + step["timeoutMs"] / 1000
    while (found := run.event_like(want, run.events_seen)) < 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if found < 0:
        return f"no event like {want!r} among {run.events[run.events_seen:]!r}"
    run.events_seen = found + 1
    return None


def run_no_event(run: Run, step: Dict[str, Any]) -> Optional[str]:
    want = run.substitute(step["like"])
    found = run.event_like(want, 0)
    return None if found < 0 else f"an event it should not fire: {run.events[found]!r}"


def run_http(run: Run, step: Dict[str, Any]) -> Optional[str]:
    path = run.substitute(step["path"])
    if isinstance(path, list):
        path = "".join(str(p) for p in path)
    try:
        got = run.server.request(step["method"], path, step.get("body"))
    except OSError as e:  # urllib's HTTPError for an answer >= 400
        return f"the server refused: {e}"
    if "expect" in step and not like(got, step["expect"]):
        return f"unexpected answer {got!r}"
    if "save" in step and got is not None:
        run.saved[step["save"]] = got
    return None


KINDS = {"exec": run_exec, "waitEvent": run_wait_event, "noEvent": run_no_event, "http": run_http}


@pytest.fixture(scope="module")
def table_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    run = Run(tmp_path_factory.mktemp("plugin-table"))
    yield run
    run.close()


@pytest.mark.parametrize("step", STEPS, ids=[s["name"] for s in STEPS])
def test_case_table(table_run: Run, step: Dict[str, Any]) -> None:
    """One step of the shared table (steps depend on the earlier ones: run the whole table)."""
    kind = KINDS.get(step["kind"])
    assert kind is not None, f"unknown step kind {step['kind']}"
    problem = kind(table_run, step)
    assert problem is None, f"step '{step['name']}': {problem}"


def test_the_table_fired_sync_events_only(table_run: Run) -> None:
    assert table_run.events and table_run.odd_events == []


# -- what the Python host adds ------------------------------------------------------------------

INDEXES = [{"path": "Id", "type": "string"}]


def test_a_call_that_is_not_json_is_the_actions_error(tmp_path: Path) -> None:
    with Plugin(tmp_path) as plugin:
        with pytest.raises(syncstore.ArgumentError):
            plugin.exec(SMARTSTORE, "pgGetAllStores", "[{")
        # A mapping is the args array's one object.
        assert plugin.exec(SMARTSTORE, "pgRegisterSoup", {"soupName": "s", "indexes": INDEXES}) == "s"


def test_a_closed_plugin_refuses_calls_and_settings(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path)
    plugin.close()
    plugin.close()  # a no-op
    assert plugin.closed
    for call in (lambda: plugin.exec(SMARTSTORE, "pgGetAllStores", [{}]), lambda: plugin.on_event(None),
                 lambda: plugin.set_key_provider(None),
                 lambda: plugin.set_remote({"instanceUrl": "http://127.0.0.1:1"})):
        with pytest.raises(syncstore.StateError):
            call()


def test_bad_plugin_arguments_are_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(syncstore.ArgumentError):
        Plugin(tmp_path, remote="not json")
    with Plugin(tmp_path) as plugin:
        with pytest.raises(syncstore.ArgumentError):
            plugin.set_remote({"accessToken": "t"}, store={"storeName": "x"})  # no instanceUrl
        with pytest.raises(ValueError):
            plugin.exec(SMARTSTORE, "pg\x00Fly", [{}])


def test_the_key_provider_opens_encrypted_stores_and_its_errors_fail_the_call(tmp_path: Path) -> None:
    asked: List[Dict[str, Any]] = []

    def provider(config: Dict[str, Any]) -> Any:
        asked.append(config)
        if config["storeName"] == "broken":
            raise KeyError("no such key in the keychain")
        if config["storeName"] == "odd":
            return 42
        if config["storeName"] == "nul":
            return "a\x00b"
        return ("a passphrase", 4000) if config["storeName"] == "vault" else None

    with Plugin(tmp_path) as plugin:
        plugin.set_key_provider(provider)
        vault = {"soupName": "notes", "indexes": INDEXES, "storeName": "vault"}
        assert plugin.exec(SMARTSTORE, "pgRegisterSoup", [vault]) == "notes"
        assert plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "notes", "indexes": INDEXES}]) == "notes"
        with pytest.raises(syncstore.AuthError, match="no such key") as raised:
            plugin.exec(SMARTSTORE, "pgSoupExists", [{"soupName": "notes", "storeName": "broken"}])
        assert isinstance(raised.value.__cause__, KeyError)
        with pytest.raises(syncstore.ArgumentError, match="int"):
            plugin.exec(SMARTSTORE, "pgSoupExists", [{"soupName": "notes", "storeName": "odd"}])
        with pytest.raises(syncstore.ArgumentError, match="NUL"):
            plugin.exec(SMARTSTORE, "pgSoupExists", [{"soupName": "notes", "storeName": "nul"}])
    assert {"storeName": "vault", "isGlobalStore": False} in asked
    with pytest.raises(syncstore.AuthError):  # the vault was created encrypted
        syncstore.Store(tmp_path, {"storeName": "vault"})
    with syncstore.Store(tmp_path, {"storeName": "vault", "key": "a passphrase", "kdfIter": 4000}) as store:
        assert store.soup_exists("notes")
    with syncstore.Store(tmp_path, None) as store:  # the provider said plaintext
        assert store.soup_exists("notes")


def test_a_later_answer_comes_to_the_future_and_per_store_remotes_apply(tmp_path: Path,
                                                                         shared_server: DevServer) -> None:
    """cleanResyncGhosts answers from the sync worker: exec waits for it, exec_async's future gets
    it. A store with its own remote syncs with it, the others with the default (none here)."""
    events: List[Tuple[str, Dict[str, Any]]] = []
    with Plugin(tmp_path) as plugin:
        plugin.on_event(lambda name, detail: events.append((name, detail)))
        plugin.set_remote(shared_server.remote, store={"storeName": "crm"})
        crm = {"storeName": "crm", "isGlobalStore": False}
        plugin.exec(SMARTSTORE, "pgRegisterSoup", [dict(crm, soupName="contacts", indexes=INDEXES)])
        plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "contacts", "indexes": INDEXES}])
        target = {"type": "soql", "query": "SELECT Id, LastModifiedDate FROM Contact"}
        down = plugin.exec(MOBILESYNC, "syncDown", [dict(crm, soupName="contacts", target=target, options={},
                                                         syncName="d")])
        assert down["status"] in ("NEW", "RUNNING", "DONE")
        deadline = time.monotonic() + 30
        while plugin.exec(MOBILESYNC, "getSyncStatus", [dict(crm, syncName="d")])["status"] != "DONE":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        future = plugin.exec_async(MOBILESYNC, "cleanResyncGhosts", [dict(crm, syncId=down["_soupEntryId"])])
        assert future.result(30) == 0
        assert plugin.exec(MOBILESYNC, "cleanResyncGhosts", [dict(crm, syncName="d")], timeout=30) == 0
        # The default store has no remote: its sync fails, and says why.
        plugin.exec(MOBILESYNC, "syncDown", [{"soupName": "contacts", "target": target, "options": {}}])
        deadline = time.monotonic() + 30
        while not any(d.get("storeName") == "smartstore" and d["status"] == "FAILED" for _, d in events):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert {name for name, _ in events} == {"sync"}
    assert all(d["type"] != "cleanResyncGhosts" for _, d in events)


def test_listener_exceptions_are_logged_and_the_plugin_cannot_close_from_a_callback(
        tmp_path: Path, shared_server: DevServer, caplog: pytest.LogCaptureFixture) -> None:
    refused: List[BaseException] = []
    with Plugin(tmp_path, remote=shared_server.remote) as plugin:
        def listener(name: str, detail: Dict[str, Any]) -> None:
            try:
                plugin.close()
            except syncstore.StateError as e:
                refused.append(e)
            raise RuntimeError("a listener's bug")

        plugin.on_event(listener)
        plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "contacts", "indexes": INDEXES}])
        plugin.exec(MOBILESYNC, "syncDown", [{"soupName": "contacts", "syncName": "d", "options": {},
                                             "target": {"type": "soql", "query": "SELECT Id FROM Contact"}}])
        deadline = time.monotonic() + 30
        while plugin.exec(MOBILESYNC, "getSyncStatus", [{"syncName": "d"}])["status"] != "DONE":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert not plugin.closed
    assert refused and "a listener's bug" in caplog.text


def test_threads_call_one_plugin_while_it_closes(tmp_path: Path) -> None:
    """Calls from several threads share the plugin's stores; a close among them makes the later
    calls StateErrors, never a crash or a lost answer (an upsert answered is stored, one refused
    is not)."""
    for round_ in range(8):
        root = tmp_path / str(round_)
        plugin = Plugin(root)
        plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "s", "indexes": INDEXES}])
        barrier = threading.Barrier(5)
        outcomes: List[str] = []
        counts: List[int] = []

        def worker(n: int) -> None:
            barrier.wait()
            done = 0
            try:
                while True:
                    saved = plugin.exec(SMARTSTORE, "pgUpsertSoupEntries", [{
                        "soupName": "s", "externalIdPath": "_soupEntryId", "entries": [{"Id": f"{n}-{done}"}]}])
                    assert saved[0]["Id"] == f"{n}-{done}"
                    done += 1
            except syncstore.StateError:
                outcomes.append("closed")
            except BaseException as e:  # noqa: BLE001 - reported below
                outcomes.append(repr(e))
            counts.append(done)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        barrier.wait()
        time.sleep(0.02 + 0.02 * round_)
        plugin.close()
        for t in threads:
            t.join(30)
        assert outcomes == ["closed"] * 4, f"round {round_}"
        with syncstore.Store(root) as store:
            assert store.run_smart_query("select count(*) from {s}").entries == [[sum(counts)]], f"round {round_}"


def test_an_unclosed_plugin_is_freed_when_collected(tmp_path: Path) -> None:
    import gc

    plugin = Plugin(tmp_path)
    plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "s", "indexes": INDEXES}])
    with pytest.raises(syncstore.BusyError):  # the plugin has the store open
        syncstore.remove_store(tmp_path, None)
    del plugin
    gc.collect()
    syncstore.remove_store(tmp_path, None)


def test_a_slow_later_answer_times_out_and_a_close_ends_the_wait(tmp_path: Path) -> None:
    """exec's timeout ends the wait for cleanResyncGhosts (the clean goes on); a clean still
    running when the plugin closes fails its future, never leaves it waiting."""
    import urllib.request

    server = DevServer("--seed", "Contact=5", "--admin")
    try:
        plugin = Plugin(tmp_path, remote=server.remote)
        plugin.exec(SMARTSTORE, "pgRegisterSoup", [{"soupName": "contacts", "indexes": INDEXES}])
        for name in ("d1", "d2"):
            plugin.exec(MOBILESYNC, "syncDown", [{"soupName": "contacts", "syncName": name, "options": {},
                                                 "target": {"type": "soql", "query": "SELECT Id FROM Contact"}}])
        deadline = time.monotonic() + 30
        while any(plugin.exec(MOBILESYNC, "getSyncStatus", [{"syncName": name}])["status"] != "DONE"
                  for name in ("d1", "d2")):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        slow = urllib.request.Request(f"{server.url}/__devserver/faults", data=b"latency=1000", method="PUT",
                                      headers={"Authorization": f"Bearer {server.remote['accessToken']}"})
        urllib.request.urlopen(slow, timeout=10).read()
        started = time.monotonic()
        with pytest.raises(syncstore.WaitTimeout):
            plugin.exec(MOBILESYNC, "cleanResyncGhosts", [{"syncName": "d1"}], timeout=0.2)
        assert time.monotonic() - started < 0.9
        with pytest.raises(syncstore.BusyError):  # the clean goes on
            plugin.exec(MOBILESYNC, "cleanResyncGhosts", [{"syncName": "d1"}])
        pending = plugin.exec_async(MOBILESYNC, "cleanResyncGhosts", [{"syncName": "d2"}])
        assert not pending.done()
        plugin.close()
        assert isinstance(pending.exception(timeout=10), syncstore.SyncStoreError)
    finally:
        server.stop()
