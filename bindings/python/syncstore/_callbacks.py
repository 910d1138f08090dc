"""The one C sync callback of the package, and the registry it dispatches through.

The engine calls sync callbacks on its worker threads, possibly late (a dropped store, an exiting
interpreter). So no per-run ctypes thunk is ever handed to C: every run passes the same
module-level thunk, kept alive for the whole process, with an integer key as its ``context``. The
key finds a :class:`Listener` in a registry; a key that is gone is ignored. A listener stays
registered until its run's terminal callback or until the store handle that started it has closed
(after which, by the C ABI, no callback of that handle comes).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import logging
import threading
from typing import Any, Dict, Iterator, Optional

from . import _cordova_api, _lib

__all__ = ["Listener", "register", "unregister", "SYNC_THUNK", "READY_THUNK", "in_worker_thread", "worker_scope", "log"]

#: The package's logger: exceptions raised in user callbacks are logged here.
log = logging.getLogger("syncstore")

TERMINAL = _cordova_api.terminal_statuses()  # DONE, FAILED, STOPPED: the library's


class Listener:
    """Receives the states of runs started with one callback registration (override deliver)."""

    key: int = 0

    def deliver(self, state: Dict[str, Any]) -> bool:
        """Handles one state; returns True when no more states are expected (terminal)."""
        raise NotImplementedError

    def ready(self) -> None:
        """A buffered handle has notices to send (``syncstore_notifications_ready``); the
        default ignores it."""


_lock = threading.Lock()
_registry: Dict[int, Listener] = {}
_keys = itertools.count(1)
_worker = threading.local()


def register(listener: Listener) -> int:
    """Registers a listener; returns the key to pass to C as ``context``."""
    with _lock:
        key = next(_keys)
        listener.key = key
        _registry[key] = listener
    return key


def unregister(key: int) -> None:
    """Forgets a listener (its later callbacks, if any, are ignored)."""
    with _lock:
        _registry.pop(key, None)


def in_worker_thread() -> bool:
    """True while the calling thread is inside an engine callback."""
    return bool(getattr(_worker, "active", False))


@contextlib.contextmanager
def worker_scope() -> Iterator[None]:
    """Marks the calling thread as inside an engine callback while the block runs."""
    outer = in_worker_thread()
    _worker.active = True
    try:
        yield
    finally:
        _worker.active = outer


def _dispatch(state_json: Optional[bytes], context: Optional[int]) -> None:
    # Never raises into C: everything is caught and logged. A change callback may run on a host
    # thread (syncstore_send_notifications), maybe inside another callback: that flag is restored.
    outer = in_worker_thread()
    try:
        _worker.active = True
        with _lock:
            listener = _registry.get(context or 0)
        if listener is None or state_json is None:
            return
        state = json.loads(state_json.decode("utf-8"))
        if listener.deliver(state):
            unregister(listener.key)
    except BaseException:  # noqa: BLE001 - a callback must never unwind into the engine
        try:
            log.exception("syncstore: error while dispatching a sync callback")
        except BaseException:  # noqa: BLE001 - logging itself may fail at interpreter exit
            pass
    finally:
        _worker.active = outer


def _dispatch_ready(context: Optional[int]) -> None:
    # On the store's notifier thread; never raises into C.
    try:
        with _lock:
            listener = _registry.get(context or 0)
        if listener is not None:
            listener.ready()
    except BaseException:  # noqa: BLE001 - a callback must never unwind into the engine
        try:
            log.exception("syncstore: error while dispatching a notifications-ready callback")
        except BaseException:  # noqa: BLE001 - logging itself may fail at interpreter exit
            pass


#: The single thunk handed to C for every sync callback; never freed.
SYNC_THUNK = _lib.SYNC_CALLBACK(_dispatch)
# One extra reference that nothing releases: the thunk outlives module teardown at exit.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(SYNC_THUNK))

#: The single ``syncstore_notifications_ready`` thunk (buffered handles); never freed.
READY_THUNK = _lib.READY_CALLBACK(_dispatch_ready)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(READY_THUNK))
