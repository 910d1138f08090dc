"""The Cordova ``mobilesync`` API: same function names and argument orders, returning values.

``syncDown``/``syncUp``/``reSync``/``cleanResyncGhosts`` return the :class:`SyncRun` (instead of
calling success with the RUNNING state): ``.wait()`` or ``await`` it for the final state. Every
state is also sent to the listeners added with :func:`addSyncListener`, as the JS "sync" event
detail: the state plus ``isGlobalStore`` and ``storeName``. Stores are those of
:mod:`syncstore.smartstore` (call ``smartstore.init(root)``); set each store's remote with
:func:`setRemote`.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

from .cordova import config_key, split_config, store_for
from .sync import SyncRun
from .types import SyncState

__all__ = ["MERGE_MODE", "setRemote", "syncDown", "syncUp", "reSync", "cleanResyncGhosts", "getSyncStatus",
           "deleteSync", "addSyncListener", "removeSyncListener"]


class MERGE_MODE:
    """Merge modes of sync options."""

    OVERWRITE = "OVERWRITE"
    LEAVE_IF_CHANGED = "LEAVE_IF_CHANGED"


SyncEventListener = Callable[[Dict[str, Any]], object]
_listeners: List[SyncEventListener] = []
_lock = threading.Lock()


def addSyncListener(listener: SyncEventListener) -> None:
    """Adds a listener of "sync" events (called on the sync worker thread)."""
    with _lock:
        _listeners.append(listener)


def removeSyncListener(listener: SyncEventListener) -> None:
    """Removes a listener added with :func:`addSyncListener`."""
    with _lock:
        _listeners.remove(listener)


def _emitter(config: Any) -> Callable[[SyncState], None]:
    is_global, name = config_key(config)

    def emit(state: SyncState) -> None:
        detail: Dict[str, Any] = dict(state)
        detail.update(isGlobalStore=is_global, storeName=name)
        with _lock:
            listeners = list(_listeners)
        for listener in listeners:
            listener(detail)
    return emit


def setRemote(*args: Any) -> None:
    """setRemote([storeConfig,] remote): the store's instanceUrl, accessToken, apiVersion... (a
    mapping or its JSON text)."""
    config, (remote,) = split_config(args, 1)
    store_for(config).set_remote(remote)


def syncDown(*args: Any) -> SyncRun:
    """syncDown([storeConfig,] target, soupName, options, [syncName]) -> the run."""
    config, rest = split_config(args, 3)
    target, soup, options = rest[0], rest[1], rest[2]
    name: Optional[str] = rest[3] if len(rest) > 3 else None
    return store_for(config).sync_down(target, soup, options, name, _emitter(config))


def syncUp(*args: Any) -> SyncRun:
    """syncUp([storeConfig,] [target,] soupName, options, [syncName]) -> the run."""
    config, rest = split_config(args, 2)
    target: Optional[Dict[str, Any]] = None
    if rest and not isinstance(rest[0], str):
        target, rest = rest[0], rest[1:]
    soup, options = rest[0], rest[1]
    name: Optional[str] = rest[2] if len(rest) > 2 else None
    return store_for(config).sync_up(soup, target, options, name, _emitter(config))


def reSync(*args: Any) -> SyncRun:
    """reSync([storeConfig,] idOrName) -> the run."""
    config, (sync,) = split_config(args, 1)
    return store_for(config).resync(sync, _emitter(config))


def cleanResyncGhosts(*args: Any) -> SyncRun:
    """cleanResyncGhosts([storeConfig,] syncId) -> the run (its final state is the ghost report)."""
    config, (sync,) = split_config(args, 1)
    return store_for(config).clean_resync_ghosts(sync, _emitter(config))


def getSyncStatus(*args: Any) -> Optional[SyncState]:
    """getSyncStatus([storeConfig,] idOrName) -> state, or None."""
    config, (sync,) = split_config(args, 1)
    return store_for(config).get_sync_status(sync)


def deleteSync(*args: Any) -> None:
    """deleteSync([storeConfig,] idOrName)."""
    config, (sync,) = split_config(args, 1)
    store_for(config).delete_sync(sync)
