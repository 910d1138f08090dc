"""Watches and change listeners: Store.watch_soup / Store.watch as iterators and async iterators,
add_soup_listener / add_query_listener callbacks, on real store files (another thread and another
process writing too)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import syncstore
from syncstore import smartstore

from package_support import run_python

SPECS = [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}]
WAIT = 10.0  # seconds a notice that must come may take (a loaded machine)
QUIET = 0.3  # seconds a notice that must not come is waited for


@pytest.fixture
def contacts(store: syncstore.Store) -> syncstore.Store:
    store.register_soup("contacts", SPECS)
    store.register_soup("other", SPECS)
    return store


def ids(entries: List[syncstore.Entry]) -> List[int]:
    return [int(e["_soupEntryId"]) for e in entries]


def must(watch: syncstore.Watch[Any]) -> Any:
    notice = watch.get(WAIT)
    assert notice is not None, "no notice came"
    return notice


def test_iterator_hears_each_commit_after_it_was_made(contacts: syncstore.Store) -> None:
    contacts.upsert("contacts", [{"Id": "0"}])  # before the watch: not heard
    with contacts.watch_soup("contacts") as watch:
        stored = contacts.upsert("contacts", [{"Id": "1", "LastName": "Ng"}, {"Id": "2"}])
        contacts.upsert("other", [{"Id": "x"}])  # another soup: not heard
        notice = next(watch)
        assert notice["commits"] == 1 and notice["origin"]["kind"] == "otherHandle", notice
        [part] = notice["soups"]
        assert part["soup"] == "contacts"
        assert part["inserted"] == {"count": 2, "ids": ids(stored), "cut": False}
        assert part["updated"]["count"] == 0 and part["deleted"]["count"] == 0
        assert not part["cleared"] and not part["removed"]
        contacts.remove("contacts", [ids(stored)[0]])
        second = next(watch)
        assert second["soups"][0]["deleted"]["ids"] == [ids(stored)[0]]
        assert second["sequence"] > notice["sequence"]
        assert watch.get(QUIET) is None


def test_every_soup_and_a_write_from_another_thread(contacts: syncstore.Store) -> None:
    with contacts.watch_soup(None) as watch:
        writer = threading.Thread(target=lambda: (time.sleep(0.1), contacts.upsert("other", [{"Id": "t"}])))
        writer.start()
        notice = next(watch)  # blocks until the other thread's commit
        writer.join()
        assert [p["soup"] for p in notice["soups"]] == ["other"]
        assert notice["soups"][0]["inserted"]["count"] == 1


def test_a_rolled_back_write_is_not_heard(contacts: syncstore.Store) -> None:
    with contacts.watch_soup("contacts") as watch:
        with pytest.raises(syncstore.ArgumentError):
            contacts.upsert("contacts", [{"Id": "1"}, 7])  # the second entry is not an object: rolled back
        assert watch.get(QUIET) is None
        stored = contacts.upsert("contacts", [{"Id": "2"}])
        notice = must(watch)
        assert notice["commits"] == 1 and notice["soups"][0]["inserted"]["ids"] == ids(stored)


def test_a_slow_consumer_gets_one_merged_notice_not_a_queue(contacts: syncstore.Store) -> None:
    with contacts.watch_soup("contacts") as watch:
        stored: List[syncstore.Entry] = []
        for i in range(25):  # nobody consumes meanwhile
            stored += contacts.upsert("contacts", [{"Id": str(i)}])
        time.sleep(0.2)  # every commit has reached the notifier
        notice = must(watch)
        assert notice["commits"] == 25, notice
        assert notice["soups"][0]["inserted"] == {"count": 25, "ids": ids(stored), "cut": False}
        assert watch.get(QUIET) is None  # nothing else was kept


def test_close_ends_iteration_and_store_close_closes_its_watches(contacts: syncstore.Store, tmp_path: Path) -> None:
    watch = contacts.watch_soup("contacts")
    seen: List[Any] = []
    ended = threading.Event()

    def consume() -> None:
        for notice in watch:
            seen.append(notice)
        ended.set()

    consumer = threading.Thread(target=consume)
    consumer.start()
    contacts.upsert("contacts", [{"Id": "1"}])
    deadline = time.monotonic() + WAIT
    while not seen and time.monotonic() < deadline:
        time.sleep(0.02)
    watch.close()
    assert ended.wait(WAIT), "the iteration did not end at the close"
    consumer.join()
    assert len(seen) == 1 and watch.closed
    watch.close()  # again: nothing
    assert list(watch) == [] and watch.get(0) is None
    contacts.upsert("contacts", [{"Id": "2"}])  # after the close: no error, nobody hears

    with syncstore.Store(tmp_path, {"storeName": "closing"}) as other:
        other.register_soup("s", SPECS)
        left_open = other.watch_soup("s")
    assert left_open.closed and list(left_open) == []
    syncstore.remove_store(tmp_path, "closing")  # no handle of the watch keeps the file open


def test_a_watch_nobody_holds_is_closed_when_collected(tmp_path: Path) -> None:
    store = syncstore.Store(tmp_path, {"storeName": "dropped"})
    store.register_soup("s", SPECS)
    store.watch_soup("s")  # dropped at once
    gc.collect()
    store.close()
    syncstore.remove_store(tmp_path, "dropped")


def test_async_iteration_never_blocks_the_loop(contacts: syncstore.Store) -> None:
    async def main() -> List[Any]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        ticking = asyncio.create_task(ticker())
        loop = asyncio.get_running_loop()
        heard: List[Any] = []
        async with contacts.watch_soup("contacts") as watch:
            async def write() -> None:
                for i in range(3):
                    await asyncio.sleep(0.1)
                    await loop.run_in_executor(None, lambda i=i: contacts.upsert("contacts", [{"Id": f"a{i}"}]))

            writing = asyncio.create_task(write())
            async for notice in watch:
                heard.append(notice)
                if sum(n["soups"][0]["inserted"]["count"] for n in heard) == 3:
                    break
            await writing
        stop.set()
        await ticking
        assert ticks > 20, ticks  # the loop ran while the watch waited
        return heard

    heard = asyncio.run(asyncio.wait_for(main(), WAIT))
    assert sum(n["commits"] for n in heard) == 3


def test_async_iteration_ends_when_another_thread_closes_the_watch(contacts: syncstore.Store) -> None:
    watch = contacts.watch_soup("contacts")

    async def main() -> List[Any]:
        threading.Timer(0.2, watch.close).start()
        return [n async for n in watch]

    assert asyncio.run(asyncio.wait_for(main(), WAIT)) == []


def test_callback_listeners_of_soups_and_queries(contacts: syncstore.Store) -> None:
    lock = threading.Lock()
    soup_notices: List[syncstore.SoupNotice] = []
    query_notices: List[syncstore.QueryNotice] = []

    def on_soup(n: syncstore.SoupNotice) -> None:
        with lock:
            soup_notices.append(n)

    def on_query(n: syncstore.QueryNotice) -> None:
        with lock:
            query_notices.append(n)

    def wait_for(what: List[Any], count: int) -> None:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with lock:
                if len(what) >= count:
                    return
            time.sleep(0.02)
        raise AssertionError(f"{len(what)} notices, not {count}")

    ng = contacts.upsert("contacts", [{"Id": "1", "LastName": "Ng"}])
    spec = smartstore.buildExactQuerySpec("LastName", "Ng", pageSize=5)
    query_token = contacts.add_query_listener(spec, on_query, soup="contacts")
    soup_token = contacts.add_soup_listener("contacts", on_soup)
    wait_for(query_notices, 1)
    initial = query_notices[0]
    assert initial["origin"]["kind"] == "initial" and initial["commits"] == 0
    assert initial["totalEntries"] == 1 and ids(initial["currentPageOrderedEntries"]) == ids(ng)
    assert initial["added"]["ids"] == ids(ng)

    other = contacts.upsert("contacts", [{"Id": "2", "LastName": "Other"}])  # not in the result
    added = contacts.upsert("contacts", [{"Id": "3", "LastName": "Ng"}])

    def commits(notices: List[Any]) -> int:
        with lock:
            return sum(n["commits"] for n in notices)

    deadline = time.monotonic() + WAIT
    while commits(soup_notices) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    wait_for(query_notices, 2)
    time.sleep(QUIET)
    with lock:
        # Each commit told once (two may be merged: the notifier was busy with the other listener).
        assert sum(n["commits"] for n in soup_notices) == 2, soup_notices
        assert [i for n in soup_notices for i in n["soups"][0]["inserted"]["ids"]] == ids(other) + ids(added)
        assert all(n["origin"]["kind"] == "handle" for n in soup_notices)
        assert len(query_notices) == 2, query_notices  # the commit outside the result alone is not told
        change = query_notices[1]
    assert change["origin"]["kind"] == "handle" and change["totalEntries"] == 2
    assert change["added"]["ids"] == ids(added) and change["removed"]["count"] == 0
    assert sorted(ids(change["currentPageOrderedEntries"])) == ids(ng) + ids(added)

    contacts.remove_listener(query_token)
    contacts.remove_listener(soup_token)
    heard = len(soup_notices)
    contacts.upsert("contacts", [{"Id": "4", "LastName": "Ng"}])
    time.sleep(QUIET)
    with lock:
        assert len(soup_notices) == heard and len(query_notices) == 2


def test_query_watch_tells_what_entered_left_and_changed(contacts: syncstore.Store) -> None:
    first = contacts.upsert("contacts", [{"Id": "1", "LastName": "Ng"}, {"Id": "2", "LastName": "Li"}])
    spec = {"queryType": "exact", "indexPath": "LastName", "matchKey": "Ng", "orderPath": "Id", "order": "ascending",
            "pageSize": 10, "soupName": "contacts"}
    with contacts.watch(spec) as watch:
        initial = next(watch)
        assert initial["origin"]["kind"] == "initial" and initial["totalEntries"] == 1
        assert initial["added"]["ids"] == [ids(first)[0]]
        contacts.upsert("contacts", [{"Id": "9", "LastName": "Far"}])  # outside the result: not told
        changed = dict(first[0], Title="Dr")
        contacts.upsert("contacts", [changed])
        notice = next(watch)
        assert notice["changed"]["ids"] == [ids(first)[0]] and notice["added"]["count"] == 0
        assert notice["currentPageOrderedEntries"][0]["Title"] == "Dr"
        contacts.upsert("contacts", [dict(first[1], LastName="Ng")])  # Li becomes Ng: enters
        contacts.remove("contacts", [ids(first)[0]])  # leaves
        merged: Dict[str, List[int]] = {"added": [], "removed": []}
        while merged["added"] != [ids(first)[1]] or merged["removed"] != [ids(first)[0]]:
            n = must(watch)
            merged["added"] += n["added"]["ids"]
            merged["removed"] += n["removed"]["ids"]
        assert n["totalEntries"] == 1 and watch.get(QUIET) is None


def test_smart_sql_watch(contacts: syncstore.Store) -> None:
    sql = "select {contacts:LastName}, count(*) from {contacts} group by {contacts:LastName} order by 1"
    with contacts.watch({"queryType": "smart", "smartSql": sql, "pageSize": 10}) as watch:
        assert next(watch)["totalEntries"] == 0
        contacts.upsert("contacts", [{"Id": "1", "LastName": "Ng"}, {"Id": "2", "LastName": "Ng"}])
        notice = next(watch)
        assert notice["currentPageOrderedEntries"] == [["Ng", 2]]
        assert notice["added"]["rows"] == [["Ng", 2]] and notice["added"]["count"] == 1


def test_min_interval_merges_the_commits_made_within_it(contacts: syncstore.Store) -> None:
    with contacts.watch_soup("contacts", min_interval_ms=400) as watch:
        contacts.upsert("contacts", [{"Id": "0"}])
        first = must(watch)
        told = time.monotonic()
        for i in range(1, 4):
            contacts.upsert("contacts", [{"Id": str(i)}])
        second = must(watch)
        assert time.monotonic() - told > 0.25, "the second notice came before the interval passed"
        assert first["commits"] + second["commits"] == 4 and second["commits"] >= 3, (first, second)


def test_another_process_writing_the_same_file_is_heard(contacts: syncstore.Store, tmp_path: Path) -> None:
    code = ("import sys, syncstore\n"
            "with syncstore.Store(sys.argv[1], {'storeName': 'py'}) as s:\n"
            "    s.upsert('contacts', [{'Id': 'p1'}, {'Id': 'p2'}])\n")
    with contacts.watch_soup("contacts") as watch:
        done = run_python(code, str(tmp_path))
        assert done.returncode == 0, done.stderr
        notice = must(watch)
        assert notice["origin"]["kind"] == "otherProcess", notice
        [part] = notice["soups"]
        assert part["soup"] == "contacts" and (part["unknown"] or part["inserted"]["count"] == 2), part
    assert len(contacts.query("contacts", {"queryType": "range", "indexPath": "Id", "pageSize": 10})) == 2


def test_bad_input_raises_the_packages_errors(contacts: syncstore.Store, tmp_path: Path) -> None:
    with pytest.raises(syncstore.NotFoundError):
        contacts.watch_soup("nope")
    with pytest.raises(syncstore.NotFoundError):
        contacts.watch({"queryType": "exact", "indexPath": "Id", "matchKey": "1"}, soup="nope")
    with pytest.raises(syncstore.ArgumentError):  # no soupName
        contacts.watch({"queryType": "exact", "indexPath": "Id", "matchKey": "1"})
    with pytest.raises(syncstore.ArgumentError):  # a spec query_soup refuses
        contacts.watch({"queryType": "bogus", "indexPath": "Id", "matchKey": "1"}, soup="contacts")
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch('{"queryType": ', soup="contacts")
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch({"queryType": "smart", "smartSql": "delete from {contacts}", "pageSize": 5})
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch(42)  # type: ignore[arg-type]
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch_soup("contacts", min_interval_ms=-1)
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch_soup("contacts", min_interval_ms=3600001)
    with pytest.raises(syncstore.ArgumentError):
        contacts.watch_soup("contacts", min_interval_ms="5")  # type: ignore[arg-type]
    with pytest.raises(syncstore.ArgumentError):
        contacts.add_query_listener({"queryType": "exact", "indexPath": "Id", "matchKey": "1"}, lambda n: None)
    token = contacts.add_soup_listener("contacts", lambda n: None)
    with pytest.raises(syncstore.ArgumentError):
        contacts.set_listener_interval(token, -5)
    contacts.remove_listener(token)
    with pytest.raises(syncstore.StateError):
        contacts.set_listener_interval(token, 5)  # removed already
    closed = syncstore.Store(tmp_path, {"storeName": "closed"})
    closed.register_soup("s", SPECS)
    closed.close()
    with pytest.raises(syncstore.StateError):
        closed.watch_soup("s")
    with pytest.raises(syncstore.StateError):
        closed.add_soup_listener("s", lambda n: None)


def test_a_watch_of_an_encrypted_store_after_a_change_of_key(tmp_path: Path) -> None:
    with syncstore.Store(tmp_path, {"storeName": "secret", "key": "first", "kdfIter": 4000}) as store:
        store.register_soup("s", SPECS)
        store.change_key("second")
        with store.watch_soup("s") as watch:
            store.upsert("s", [{"Id": "1"}])
            assert must(watch)["soups"][0]["inserted"]["count"] == 1


def test_a_sync_is_told_as_its_sync(shared_server: Any, tmp_path: Path) -> None:
    with syncstore.Store(tmp_path, {"storeName": "synced"}) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "__local__", "type": "string"}])
        store.set_remote(shared_server.remote)
        with store.watch_soup("contacts") as watch:
            run = store.sync_down({"type": "soql", "query": "SELECT Id, LastName, LastModifiedDate FROM Contact"},
                                  "contacts", name="contacts-down")
            final = run.wait(60)
            inserted = 0
            while inserted < final["totalSize"]:
                notice = must(watch)
                assert notice["origin"] == {"kind": "sync", "syncId": run.sync_id, "syncName": "contacts-down"}, notice
                inserted += notice["soups"][0]["inserted"]["count"]
            assert inserted == final["totalSize"] == 20


def test_a_buffered_store_calls_its_listeners_where_it_sends(contacts: syncstore.Store, tmp_path: Path) -> None:
    ready = threading.Event()
    threads: List[int] = []
    contacts.buffer_notifications(ready.set)
    token = contacts.add_soup_listener("contacts", lambda n: threads.append(threading.get_ident()))
    with contacts.watch_soup("contacts") as watch:  # a handle of its own: not buffered by the store's
        stored = contacts.upsert("contacts", [{"Id": "1"}])
        assert ready.wait(WAIT)
        assert must(watch)["soups"][0]["inserted"]["ids"] == ids(stored)
    assert threads == []  # nothing called on the notifier thread
    assert contacts.send_notifications() == 1 and threads == [threading.get_ident()]
    assert contacts.send_notifications() == 0
    contacts.remove_listener(token)
    with syncstore.Store(tmp_path, {"storeName": "py"}) as other:
        with pytest.raises(syncstore.StateError):
            other.send_notifications()  # that handle does not buffer
