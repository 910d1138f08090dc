"""asyncio support: awaiting a :class:`SyncRun` and iterating its progress.

No thread is blocked for the event loop: the engine's callbacks (on its worker thread) wake the
loop with ``call_soon_threadsafe``; the final check that the sync has left the worker polls the
engine without blocking. Used through ``await run`` and ``async for state in run.progress()``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, AsyncIterator

from .types import SyncState

if TYPE_CHECKING:
    from .sync import SyncRun

__all__ = ["wait", "progress"]

# Delay between polls while the run's terminal callback is delivered but the run has not yet left
# the sync worker (a few milliseconds at most).
_IDLE_POLL_S = 0.005


async def wait(run: SyncRun) -> SyncState:
    """The final state of ``run``, awaited on the running loop (raises CallbackError like wait())."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    entry = run._subscribe(loop, event.set)
    try:
        while not run._snapshot(0)[1]:
            await event.wait()
            event.clear()
    finally:
        run._unsubscribe(entry)
    while True:
        idle, state = run._poll_idle()
        if idle:
            return run._final(state)
        await asyncio.sleep(_IDLE_POLL_S)


async def progress(run: SyncRun) -> AsyncIterator[SyncState]:
    """Every state of ``run``, those already received first, until the terminal one."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    entry = run._subscribe(loop, event.set)
    seen = 0
    try:
        while True:
            fresh, finished = run._snapshot(seen)
            seen += len(fresh)
            for state in fresh:
                yield state
            if finished and not run._snapshot(seen)[0]:
                return
            await event.wait()
            event.clear()
    finally:
        run._unsubscribe(entry)
