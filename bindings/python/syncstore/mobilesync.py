"""The Cordova ``mobilesync`` API: same function names and argument orders, returning values.

``syncDown``/``syncUp``/``reSync`` return a :class:`CordovaSyncRun`: ``.started`` is the state the
plugin answers (the success callback's value), ``.wait()`` or ``await`` it for the final state.
Every state change is a "sync" event, given to the listeners added with :func:`addSyncListener`
as the JS event's detail: the state plus ``isGlobalStore`` and ``storeName``.
``cleanResyncGhosts`` returns the number of entries it removed, and fires no event (as the
plugin). Stores are those of :mod:`syncstore.smartstore` (call ``smartstore.init(root)``);
:func:`setRemote` sets the remote of every store, or of one. Answers, errors and events are the
library's dispatcher's (:mod:`syncstore.cordova`), and so are the actions and argument objects of
the functions below (typed facades over the library's table, ``syncstore_plugin_api()``).
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Dict, Generator, List, Optional, Sequence, cast

from . import _callbacks, _cordova_api, cordova
from .cordova import split_config, store_fields
from .errors import NotFoundError
from .plugin import Plugin
from .sync import WaitTimeout
from .types import SyncState

__all__ = ["MERGE_MODE", "CordovaSyncRun", "setRemote", "syncDown", "syncUp", "reSync", "cleanResyncGhosts",
           "getSyncStatus", "deleteSync", "addSyncListener", "removeSyncListener"]

_API = _cordova_api.Service("mobilesync")
#: The statuses a run ends with (the library's).
TERMINAL = _cordova_api.terminal_statuses()


class MERGE_MODE:
    """Merge modes of sync options."""

    OVERWRITE = "OVERWRITE"
    LEAVE_IF_CHANGED = "LEAVE_IF_CHANGED"


SyncEventListener = Callable[[Dict[str, Any]], object]
_listeners: List[SyncEventListener] = []
_lock = threading.Lock()
# Bumped by every "sync" event: waiting runs look at their sync's status again.
_changed = threading.Condition()
_generation = 0
# The last terminal states the events carried (without the store's members): a run's wait returns
# once its final state is also among them, i.e. the listeners got it too.
_finished: "collections.deque[Dict[str, Any]]" = collections.deque(maxlen=256)
# How long a wait waits for the event of a final state it already read.
_EVENT_GRACE_S = 5.0


def addSyncListener(listener: SyncEventListener) -> None:
    """Adds a listener of "sync" events: ``listener(detail)``, called on the library's sync worker
    thread for every state change of every run (its exceptions are logged)."""
    with _lock:
        _listeners.append(listener)


def removeSyncListener(listener: SyncEventListener) -> None:
    """Removes a listener added with :func:`addSyncListener`."""
    with _lock:
        _listeners.remove(listener)


def _on_event(root: str, name: str, detail: Dict[str, Any]) -> None:
    global _generation
    if name != "sync":
        return
    # Taken before the listeners run: they may change the detail they get.
    state = {k: v for k, v in detail.items() if k not in ("isGlobalStore", "storeName")}
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(detail)
        except Exception:  # noqa: BLE001 - one listener's bug does not starve the others
            _callbacks.log.exception("syncstore: a sync listener raised")
    with _changed:
        _generation += 1
        if state.get("status") in TERMINAL:
            _finished.append(state)
        _changed.notify_all()


cordova.add_event_listener(_on_event)


class CordovaSyncRun:
    """A run started by :func:`syncDown`, :func:`syncUp` or :func:`reSync`."""

    def __init__(self, plugin: Plugin, config: Any, started: SyncState) -> None:
        self._plugin = plugin
        self._config = config
        #: The state the plugin answered when the run started (the success callback's value).
        self.started = started
        #: The sync's id.
        self.sync_id = int(started["_soupEntryId"])
        #: "syncDown" or "syncUp".
        self.kind = str(started.get("type"))

    def __repr__(self) -> str:
        return f"<CordovaSyncRun {self.kind} sync_id={self.sync_id}>"

    @property
    def state(self) -> SyncState:
        """The sync's current state (the plugin's getSyncStatus)."""
        status = _API.function("getSyncStatus")
        return cast(SyncState, self._plugin.exec(_API.service, status.action,
                                                 cordova.exec_args(self._config, status.fields([self.sync_id]))))

    def wait(self, timeout: Optional[float] = None) -> SyncState:
        """Blocks until the sync is DONE, FAILED or STOPPED and returns that state, once the sync
        listeners got it too; ``timeout`` in seconds (None: no limit) raises :class:`WaitTimeout`
        (the run goes on). Woken by the plugin's "sync" events."""
        deadline = None if timeout is None else time.monotonic() + timeout
        final: Optional[SyncState] = None
        grace = 0.0
        while True:
            with _changed:
                seen = _generation
                if final is not None and (final in _finished or time.monotonic() > grace):
                    return final
            if final is None:
                state = self.state
                if "_soupEntryId" not in state:
                    raise NotFoundError(f"sync {self.sync_id} was deleted while it was waited for")
                if state.get("status") in TERMINAL:
                    final, grace = state, time.monotonic() + _EVENT_GRACE_S
                    continue
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if final is not None:
                    return final
                raise WaitTimeout(f"sync {self.sync_id} is still running after {timeout} s", retryable=True)
            with _changed:
                if _generation == seen:
                    # Bounded: a status may change without an event reaching here (e.g. a close).
                    _changed.wait(0.1 if left is None else min(0.1, left))

    def __await__(self) -> Generator[Any, None, SyncState]:
        """``await run``: :meth:`wait` on the event loop's default executor."""
        import asyncio
        return asyncio.get_running_loop().run_in_executor(None, self.wait).__await__()


def _call(name: str, args: Sequence[Any], timeout: Optional[float] = None) -> Any:
    """A Cordova function of the table: its action with the args object of these arguments."""
    fn, config, fields = _cordova_api.split(_API, name, args)
    answer = cordova.call(_API.service, fn.action, config, fields, timeout=timeout)
    if fn.null_unless is not None and (not isinstance(answer, dict) or fn.null_unless not in answer):
        return None  # the plugin answers {} where cordova.force.js gives null
    return answer


def _start(name: str, args: Sequence[Any]) -> CordovaSyncRun:
    fn, config, fields = _cordova_api.split(_API, name, args)
    plugin = cordova.plugin()  # the run asks this plugin for its state, whatever init() does later
    return CordovaSyncRun(plugin, config, plugin.exec(_API.service, fn.action, cordova.exec_args(config, fields)))


def setRemote(*args: Any) -> None:
    """setRemote([storeConfig,] remote): the instanceUrl, accessToken, apiVersion... (a mapping or
    its JSON text) of one store, or without a storeConfig of every store of the root that has
    none of its own (the logged-in user's credentials)."""
    config, (remote,) = split_config(args, 1)
    cordova.plugin().set_remote(remote, None if config is None else store_fields(config))


def syncDown(*args: Any) -> CordovaSyncRun:
    """syncDown([storeConfig,] target, soupName, options, [syncName]) -> the run."""
    return _start("syncDown", args)


def syncUp(*args: Any) -> CordovaSyncRun:
    """syncUp([storeConfig,] [target,] soupName, options, [syncName]) -> the run."""
    return _start("syncUp", args)


def reSync(*args: Any) -> CordovaSyncRun:
    """reSync([storeConfig,] idOrName) -> the run."""
    return _start("reSync", args)


def cleanResyncGhosts(*args: Any, timeout: Optional[float] = None) -> int:
    """cleanResyncGhosts([storeConfig,] syncId) -> the number of entries removed, when the clean
    ends (``timeout`` in seconds: :class:`WaitTimeout`, the clean goes on). No "sync" event."""
    return cast(int, _call("cleanResyncGhosts", args, timeout=timeout))


def getSyncStatus(*args: Any) -> Optional[SyncState]:
    """getSyncStatus([storeConfig,] idOrName) -> state, or None for an unknown sync (the plugin
    answers {}, which cordova.force.js turns into null: no ``_soupEntryId``)."""
    return cast(Optional[SyncState], _call("getSyncStatus", args))


def deleteSync(*args: Any) -> str:
    """deleteSync([storeConfig,] idOrName) -> "OK" (an unknown sync has nothing to delete)."""
    return cast(str, _call("deleteSync", args))


# Every facade above is a row of the library's table (an ImportError names any that is not).
_API.check(["syncDown", "syncUp", "reSync", "cleanResyncGhosts", "getSyncStatus", "deleteSync"])
