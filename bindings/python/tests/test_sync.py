"""Sync through the package against a real syncstore-devserver process on 127.0.0.1."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable, List

import pytest

import syncstore

from package_support import DevServer

QUERY = "SELECT Id, LastName, LastModifiedDate FROM Contact"
INDEXES = [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"},
           {"path": "__local__", "type": "string"}]


def by_name(store: syncstore.Store, last_name: str) -> List[syncstore.Entry]:
    return store.query("contacts", {"queryType": "exact", "indexPath": "LastName", "matchKey": last_name,
                                    "pageSize": 10})


def test_sync_down_offline_edits_sync_up_resync_and_ghosts(server: DevServer, tmp_path: Path) -> None:
    states: List[syncstore.SyncState] = []
    with syncstore.Store(tmp_path, {"storeName": "flow"}) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(server.remote)
        down = store.sync_down({"type": "soql", "query": QUERY}, "contacts", {"mergeMode": "LEAVE_IF_CHANGED"},
                               "down", states.append)
        final = down.wait(60)
        assert final["status"] == "DONE" and final["totalSize"] == 250 and down.done and down.error is None
        assert states[0]["status"] == "RUNNING" and states[-1]["status"] == "DONE"
        assert down.sync_id == final["_soupEntryId"] and down.state is not None
        entries = store.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 100})
        assert len(entries) == 250

        # Offline edits: an update, a delete and a create.
        edited, deleted = entries[0], entries[1]
        store.upsert("contacts", [dict(edited, LastName="EditedOffline", __local__=True, __locally_updated__=True),
                                  dict(deleted, __local__=True, __locally_deleted__=True),
                                  {"attributes": {"type": "Contact"}, "LastName": "CreatedOffline",
                                   "__local__": True, "__locally_created__": True}])
        up = store.sync_up("contacts", None, {"fieldlist": ["LastName"], "mergeMode": "LEAVE_IF_CHANGED"}, "up")
        assert up.wait(60)["status"] == "DONE"
        assert server.query(f"SELECT LastName FROM Contact WHERE Id = '{edited['Id']}'")[0]["LastName"] == \
            "EditedOffline"
        assert server.query(f"SELECT Id FROM Contact WHERE Id = '{deleted['Id']}'") == []
        created = server.query("SELECT Id FROM Contact WHERE LastName = 'CreatedOffline'")
        assert len(created) == 1 and by_name(store, "CreatedOffline")[0]["Id"] == created[0]["Id"]
        assert by_name(store, "CreatedOffline")[0]["__local__"] is False

        # A change made on the server comes down with reSync (by name).
        other = entries[2]
        server.request("PATCH", f"sobjects/Contact/{other['Id']}", {"LastName": "ChangedOnServer"})
        again = store.resync("down")
        assert again.wait(60)["status"] == "DONE" and again.sync_id == down.sync_id
        assert by_name(store, "ChangedOnServer")[0]["Id"] == other["Id"]

        # A record deleted on the server is a ghost: cleanResyncGhosts removes it locally.
        ghost = entries[3]
        server.request("DELETE", f"sobjects/Contact/{ghost['Id']}")
        report = store.clean_resync_ghosts("down").wait(60)
        assert report["type"] == "cleanResyncGhosts" and report["status"] == "DONE" and report["removed"] == 1
        assert store.query("contacts", {"queryType": "exact", "indexPath": "Id", "matchKey": ghost["Id"],
                                        "pageSize": 1}) == []

        # Syncs created without running, re-run by id, deleted by id and by name.
        up_id = store.create_sync_up("contacts", {"type": "single"}, {"fieldlist": ["LastName"]}, "up-single")
        assert store.get_sync_status(up_id)["status"] == "NEW"  # type: ignore[index]
        assert store.resync(up_id).wait(60)["status"] == "DONE"
        down_id = store.create_sync_down({"type": "soql", "query": QUERY}, "contacts", None, None)
        assert store.wait_sync(store.resync(down_id), 60_000)["status"] == "DONE"
        store.delete_sync(down_id)
        store.delete_sync("up-single")
        assert store.get_sync_status(up_id) is None and store.get_sync_status("up-single") is None
        with pytest.raises(syncstore.ExistsError):
            store.sync_down({"type": "soql", "query": QUERY}, "contacts", name="down")
        with pytest.raises(syncstore.NotFoundError):
            store.resync("no-such-sync")


def test_failed_run_carries_an_exception_of_its_code(server: DevServer, tmp_path: Path) -> None:
    with syncstore.Store(tmp_path) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(dict(server.remote, accessToken="wrong"))
        run = store.sync_down({"type": "soql", "query": QUERY}, "contacts")
        state = run.wait(60)
        assert state["status"] == "FAILED" and state["errorCode"] == 6
        assert isinstance(run.error, syncstore.AuthError)
        assert state["errorRetryable"] is False and not run.error.retryable


def test_callback_exceptions_are_logged_and_surfaced(server: DevServer, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    def broken(state: syncstore.SyncState) -> None:
        raise RuntimeError(f"boom at {state['status']}")

    with syncstore.Store(tmp_path) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(server.remote)
        with caplog.at_level(logging.ERROR, logger="syncstore"):
            run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", callback=broken)
            with pytest.raises(syncstore.CallbackError) as info:
                run.wait(60)
        assert isinstance(info.value.__cause__, RuntimeError)
        assert info.value.state is not None and info.value.state["status"] == "DONE"
        assert len(run.callback_errors) == len(run.states) >= 2
        assert any("boom at RUNNING" in r.getMessage() or "boom at RUNNING" in (r.exc_text or "")
                   or (r.exc_info and "boom" in str(r.exc_info[1])) for r in caplog.records)
        # The store is fine afterwards.
        assert len(store.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 500})) == 250


def test_stop_a_running_sync_and_restart(tmp_path: Path) -> None:
    slow = DevServer("--seed", "Contact=300", "--min-batch-size", "1", "--default-batch-size", "10",
                     "--faults", "GET */query* latency=150")
    try:
        with syncstore.Store(tmp_path) as store:
            store.register_soup("contacts", INDEXES)
            store.set_remote(slow.remote)
            seen = threading.Event()
            run = store.sync_down({"type": "soql", "query": QUERY}, "contacts", None, "slow",
                                  lambda s: seen.set() if s["status"] == "RUNNING" else None)
            assert seen.wait(30)
            with pytest.raises(syncstore.WaitTimeout):
                run.wait(0.2)
            assert run.stop()["status"] == "STOPPED"
            assert store.get_sync_status("slow")["status"] == "STOPPED"  # type: ignore[index]
            restarted: List[syncstore.SyncState] = []
            store.restart_syncs(True, restarted.append)
            assert store.wait_sync("slow", 120_000)["status"] == "DONE"
            assert restarted[-1]["status"] == "DONE"
            store.stop_syncs()
            with pytest.raises(syncstore.StateError):
                store.resync("slow")
            store.restart_syncs(False)
            assert store.resync("slow").wait(120)["status"] == "DONE"
    finally:
        slow.stop()


def test_an_html_error_page_is_summed_up_without_markup(tmp_path: Path) -> None:
    # A proxy's or web server's HTML error page: the run fails SERVER, retryable, and its message
    # names the status and the page's heading, never its markup (docs/errors.md).
    broken = DevServer("--seed", "Contact=5", "--faults", "* html=500")
    try:
        with syncstore.Store(tmp_path) as store:
            store.register_soup("contacts", INDEXES)
            store.set_remote(dict(broken.remote, maxAttempts=1))
            run = store.sync_down({"type": "soql", "query": QUERY}, "contacts")
            state = run.wait(60)
            assert state["status"] == "FAILED"
            assert isinstance(run.error, syncstore.ServerError)
            assert state["errorRetryable"] is True and run.error.retryable  # a 5xx: the library says so
            message = state["error"]
            assert "HTTP 500" in message and "500 Internal Server Error" in message, message
            assert "<" not in message and ">" not in message and "nginx" not in message, message
            assert len(message) < 300, message
    finally:
        broken.stop()


def test_live_sync_catches_up_pushes_a_write_and_stops(server: DevServer, tmp_path: Path) -> None:
    import time
    events: List[syncstore.LiveSyncEvent] = []
    lock = threading.Lock()
    live, stopped = threading.Event(), threading.Event()

    def on_event(event: syncstore.LiveSyncEvent) -> None:
        with lock:
            events.append(event)
        if event.get("event") == "state":
            {"live": live, "stopped": stopped}.get(event.get("state", ""), threading.Event()).set()

    with syncstore.Store(tmp_path, {"storeName": "live"}) as store:
        store.register_soup("contacts", INDEXES)
        store.set_remote(server.remote)
        store.create_sync_down({"type": "soql", "query": QUERY}, "contacts", name="down")
        store.create_sync_up("contacts", options={"fieldlist": ["LastName"]}, name="up")
        assert store.live_sync_state()["state"] == "stopped"
        with pytest.raises(syncstore.NotFoundError):
            store.start_live_sync({"syncs": ["nope"]})
        with pytest.raises(syncstore.ArgumentError):
            store.start_live_sync({"debounceMs": -1})
        store.start_live_sync({"syncs": ["up", "down"], "debounceMs": 50}, on_event)
        assert live.wait(60), events
        with pytest.raises(syncstore.StateError):
            store.start_live_sync()  # on already
        assert store.live_sync_state()["state"] == "live"
        assert len(store.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 100})) == 250
        # A local create goes up by itself once writes pause.
        store.upsert("contacts", [{"attributes": {"type": "Contact"}, "LastName": "Livewire", "__local__": True,
                                   "__locally_created__": True}])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and by_name(store, "Livewire")[0]["__local__"]:
            time.sleep(0.05)
        pushed = by_name(store, "Livewire")[0]
        with lock:
            recent = events[-12:]
        assert not pushed["__local__"] and pushed["Id"], (pushed, store.live_sync_state(), recent)
        store.stop_live_sync()
        assert stopped.wait(10) and store.live_sync_state()["state"] == "stopped"
        store.stop_live_sync()  # off already: nothing
    with lock:
        runs = [e["sync"] for e in events if e.get("event") == "run"]
    assert {(r["name"], r["status"]) for r in runs} >= {("down", "DONE"), ("up", "DONE")}, runs


def test_live_sync_brings_server_changes_in_through_change_events(tmp_path: Path) -> None:
    """docs/sync.md, "Change events": with no pull set, a server create, update and delete reach
    the soup through the Streaming API; the state tells of the stream."""
    import time
    server = DevServer("--seed", "Contact=3", "--cometd-timeout-ms", "3000")
    try:
        with syncstore.Store(tmp_path, {"storeName": "events"}) as store:
            store.register_soup("contacts", INDEXES)
            store.set_remote(server.remote)
            store.create_sync_down({"type": "soql", "query": QUERY}, "contacts", name="down")
            with pytest.raises(syncstore.ArgumentError):
                store.start_live_sync({"changeEvents": "on"})
            store.start_live_sync({"debounceMs": 50})

            def wait(done: Callable[[], bool]) -> bool:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not done():
                    time.sleep(0.02)
                return done()

            assert wait(lambda: store.live_sync_state().get("changeEvents", {}).get("state") == "live"), store.live_sync_state()
            assert store.live_sync_state()["changeEvents"]["channels"] == ["/data/ContactChangeEvent"]
            created = server.request("POST", "sobjects/Contact", {"LastName": "Pushedin"})
            assert wait(lambda: len(by_name(store, "Pushedin")) == 1)
            server.request("PATCH", f"sobjects/Contact/{created['id']}", {"LastName": "Renamed"})
            assert wait(lambda: len(by_name(store, "Renamed")) == 1 and not by_name(store, "Pushedin"))
            server.request("DELETE", f"sobjects/Contact/{created['id']}")
            assert wait(lambda: not by_name(store, "Renamed"))
            assert store.live_sync_state()["changeEvents"]["events"] >= 3
            store.stop_live_sync()
    finally:
        server.stop()


def test_a_hostile_streaming_api_never_spins_or_corrupts_the_soup(tmp_path: Path) -> None:
    """docs/sync.md, "Change events": a server whose long polls answer at once, forever, with
    unreadable events and events naming records it does not have. The stream backs off (a
    bounded number of connects), counts what it skipped, and the soup is untouched."""
    import http.server
    import json as jsonlib
    import time

    connects = []
    UNTOUCHED = {"Id": "003000000000000AAA", "LastName": "Untouched", "LastModifiedDate": "2026-01-01T00:00:00.000+0000"}

    class Hostile(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self, body: object, status: int = 200) -> None:
            data = jsonlib.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if "/deleted" in self.path:  # a ghost cleaning's window: nothing deleted
                self.answer({"deletedRecords": [], "earliestDateAvailable": "2026-01-01T00:00:00.000+0000",
                             "latestDateCovered": "2026-01-01T00:00:00.000+0000"})
            else:  # a query: the one record, as the store has it
                self.answer({"totalSize": 1, "done": True, "records": [dict(UNTOUCHED, attributes={"type": "Contact"})]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            messages = jsonlib.loads(self.rfile.read(length) or b"[]")
            if "/composite/sobjects/" in self.path:  # a retrieve: none of the ids exist
                self.answer([None for _ in messages.get("ids", [])])
                return
            replies: list = []
            for m in messages:
                channel = m.get("channel")
                if channel == "/meta/handshake":
                    replies.append({"channel": channel, "clientId": "c1", "successful": True, "version": "1.0",
                                    "ext": {"replay": True}, "advice": {"reconnect": "retry", "interval": 0, "timeout": 110000}})
                elif channel == "/meta/subscribe":
                    replies.append({"channel": channel, "subscription": m.get("subscription"), "successful": True})
                elif channel == "/meta/connect":
                    connects.append(time.monotonic())
                    replies += [
                        {"channel": "/data/ContactChangeEvent", "data": {"payload": {}, "event": {"replayId": len(connects)}}},
                        {"channel": "/data/ContactChangeEvent", "data": {"event": {"replayId": 10_000 + len(connects)}, "payload": {
                            "ChangeEventHeader": {"entityName": "Contact", "changeType": "UPDATE",
                                                  "recordIds": ["003000000000000AAA"], "changeOrigin": ""}}}},
                        {"channel": "/meta/connect", "successful": True, "advice": {"reconnect": "retry", "interval": 0}},
                    ]
            self.answer(replies)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with syncstore.Store(tmp_path, {"storeName": "hostile"}) as store:
            store.register_soup("contacts", INDEXES)
            store.upsert("contacts", [UNTOUCHED])
            store.set_remote({"instanceUrl": f"http://127.0.0.1:{server.server_address[1]}", "accessToken": "t", "apiVersion": "v62.0"})
            store.create_sync_down({"type": "soql", "query": QUERY}, "contacts", name="down")
            store.start_live_sync({"retryMinMs": 100, "retryMaxMs": 400})
            time.sleep(3)
            state = store.live_sync_state()
            store.stop_live_sync()
        # Answered at once forever: backed off to one connect per 50-400 ms, not thousands.
        assert 3 <= len(connects) <= 60, len(connects)
        assert state["changeEvents"]["skipped"] >= 1, state
        assert "ChangeEventHeader" in state["changeEvents"]["error"] or "replayId" in state["changeEvents"]["error"], state
        with syncstore.Store(tmp_path, {"storeName": "hostile"}) as store:
            assert [e["LastName"] for e in store.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 10})] == ["Untouched"]
    finally:
        server.shutdown()
