"""The C store handle and its safe closing (explicit, by finalizer, or at interpreter exit)."""

from __future__ import annotations

import ctypes
import threading
from typing import Optional, Set

from . import _callbacks, _lib
from .errors import StateError

__all__ = ["Handle"]


class Handle:
    """Owns one ``syncstore_store *`` and the callback listeners of the runs started through it."""

    def __init__(self, ptr: int, label: str) -> None:
        self._ptr: Optional[int] = ptr
        self._arg: Optional[ctypes.c_void_p] = ctypes.c_void_p(ptr)
        self.label = label
        self._lock = threading.Lock()
        self._listeners: Set[int] = set()

    @property
    def closed(self) -> bool:
        """True once the handle is closed (or closing)."""
        return self._ptr is None

    def arg(self) -> ctypes.c_void_p:
        """The C pointer as a call's argument (one object, made once); raises
        :class:`StateError` when the store is closed."""
        arg = self._arg
        if arg is None:
            raise StateError(f"the store {self.label} is closed")
        return arg

    def track(self, key: int) -> None:
        """Remembers a listener to drop when this handle closes."""
        with self._lock:
            self._listeners.add(key)

    def close(self) -> None:
        """Closes the handle: the engine stops this handle's runs and waits for their last callbacks.

        From inside a sync callback the engine refuses (it would wait for itself):
        :class:`StateError` is raised and the handle stays open.
        """
        if _callbacks.in_worker_thread():
            raise StateError("a store cannot be closed from inside one of its sync callbacks")
        with self._lock:
            ptr, self._ptr, self._arg = self._ptr, None, None
        if ptr is not None:
            self._close_ptr(ptr)

    def _close_ptr(self, ptr: int) -> None:
        _lib.call(_lib.lib().syncstore_close, ctypes.c_void_p(ptr))
        # syncstore_close returned: none of this handle's runs calls back again.
        with self._lock:
            keys, self._listeners = self._listeners, set()
        for key in keys:
            _callbacks.unregister(key)

    def close_quietly(self) -> None:
        """Finalizer form of :meth:`close`: never raises; from a callback thread it hands the close
        to a helper thread (so a store collected there still closes, after the callback returns)."""
        with self._lock:
            ptr, self._ptr, self._arg = self._ptr, None, None
        if ptr is None:
            return
        if _callbacks.in_worker_thread():
            threading.Thread(target=self._close_logged, args=(ptr,), name="syncstore-close").start()
        else:
            self._close_logged(ptr)

    def _close_logged(self, ptr: int) -> None:
        try:
            self._close_ptr(ptr)
        except BaseException:  # noqa: BLE001 - finalizers must not raise
            _callbacks.log.exception("syncstore: closing the unclosed store %s failed", self.label)
