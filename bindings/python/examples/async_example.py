"""Sync with asyncio: await runs, follow progress. Usage: async_example.py URL TOKEN"""

import asyncio
import sys
import tempfile

import syncstore


async def main(url: str, token: str) -> None:
    with tempfile.TemporaryDirectory() as root, syncstore.Store(root) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}])
        store.set_remote({"instanceUrl": url, "accessToken": token, "apiVersion": "v62.0"})

        run = store.sync_down({"type": "soql", "query": "SELECT Id, LastName FROM Contact"}, "contacts")
        async for state in run.progress():  # every state, without blocking the loop
            print("progress", state["status"], state["progress"])
        final = await run                   # the final state
        print("down", final["status"], final["totalSize"])

        again = await store.resync(run)               # the same sync, run again
        report = await store.clean_resync_ghosts(run)
        print("reSync", again["status"], "ghosts removed", report["removed"])


asyncio.run(main(sys.argv[1], sys.argv[2]))
