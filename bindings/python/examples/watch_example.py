"""Change notices: a watch as an iterator and as an async iterator, and a listener callback.
Usage: watch_example.py [ROOT] (default: a scratch directory, removed at the end)"""

import asyncio
import sys
import tempfile
import threading

import syncstore
from syncstore.smartstore import buildExactQuerySpec


def follow_soup(store: syncstore.Store) -> None:
    with store.watch_soup("contacts") as watch:          # None: every soup
        store.upsert("contacts", [{"Id": "1", "LastName": "Ng"}])   # or a sync, or another process
        for notice in watch:                             # blocks until the next commit
            for part in notice["soups"]:
                print(part["soup"], "inserted", part["inserted"]["ids"], "by", notice["origin"]["kind"])
            break


async def follow_query(store: syncstore.Store) -> None:
    spec = buildExactQuerySpec("LastName", "Ng", pageSize=20)
    async with store.watch(spec, soup="contacts") as watch:
        async for notice in watch:                       # the result now, then each change of it
            print("rows", notice["totalEntries"], "added", notice["added"]["count"])
            if notice["totalEntries"] == 2:
                break
            await asyncio.to_thread(store.upsert, "contacts", [{"Id": "2", "LastName": "Ng"}])


def callback(store: syncstore.Store) -> None:
    heard = threading.Event()
    token = store.add_soup_listener("contacts", lambda notice: heard.set())   # on the notifier thread
    store.upsert("contacts", [{"Id": "3", "LastName": "Li"}])
    print("callback heard", heard.wait(10))
    store.remove_listener(token)


def main(root: str) -> None:
    with syncstore.Store(root) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}])
        follow_soup(store)
        asyncio.run(follow_query(store))
        callback(store)


if len(sys.argv) > 1:
    main(sys.argv[1])
else:
    with tempfile.TemporaryDirectory() as scratch:
        main(scratch)
