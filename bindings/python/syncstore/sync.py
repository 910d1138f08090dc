"""Sync runs: objects for one run of a sync (down, up, reSync, cleanResyncGhosts)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Generator, List, Optional, Tuple, cast

from . import _callbacks, _lib
from ._handle import Handle
from .errors import BusyError, CallbackError, StateError, SyncStoreError, error_for_code
from .types import SyncCallback, SyncState

if TYPE_CHECKING:  # asyncio is imported only by code that awaits (see syncstore.aio)
    import asyncio

__all__ = ["SyncRun", "WaitTimeout", "RestartListener", "wait_sync"]

# How long one blocking C wait lasts before Python gets a chance to handle Ctrl-C.
_WAIT_SLICE_MS = 100


class WaitTimeout(BusyError, TimeoutError):
    """A wait ended at its timeout with the run still queued or running (SYNCSTORE_ERR_BUSY)."""


def _wait_slice(handle: Handle, sync_id: int, timeout_ms: int) -> Optional[SyncState]:
    """One ``syncstore_wait_sync`` call: the state, or None when it timed out (BUSY)."""
    try:
        state = _lib.call_json(_lib.lib().syncstore_wait_sync, handle.arg(), sync_id, timeout_ms)
    except BusyError:
        return None
    return cast(SyncState, state)


def wait_sync(handle: Handle, sync_id: int, timeout: Optional[float]) -> SyncState:
    """Waits (in slices, so Ctrl-C interrupts it) until the sync has no queued or running run."""
    deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
    while True:
        if deadline is None:
            slice_ms = _WAIT_SLICE_MS
        else:
            slice_ms = max(0, min(_WAIT_SLICE_MS, int((deadline - time.monotonic()) * 1000)))
        state = _wait_slice(handle, sync_id, slice_ms)
        if state is not None:
            return state
        if deadline is not None and time.monotonic() >= deadline:
            raise WaitTimeout(f"sync {sync_id} is still running after {timeout} s", retryable=True)


class SyncRun(_callbacks.Listener):
    """One run of a sync, started by :meth:`Store.sync_down`, :meth:`Store.sync_up`,
    :meth:`Store.resync` or :meth:`Store.clean_resync_ghosts`.

    ``run.wait(timeout)`` blocks until the run is over and returns the final state;
    ``await run`` does the same without blocking the event loop; ``async for state in
    run.progress()`` yields each state as it comes. ``run.state`` is the latest state,
    ``run.stop()`` stops it. Exceptions raised by the user callback are logged on the
    ``syncstore`` logger, kept in ``run.callback_errors`` and raised by ``wait``/``await`` as
    :class:`CallbackError` once the run is over.
    """

    def __init__(self, handle: Handle, kind: str, callback: Optional[SyncCallback]) -> None:
        self._handle = handle
        #: "syncDown", "syncUp", "reSync" or "cleanResyncGhosts".
        self.kind = kind
        #: The sync's id (set once the run has started).
        self.sync_id = 0
        self._callback = callback
        self._cond = threading.Condition()
        self._states: List[SyncState] = []
        self._done = False
        self._waiters: List[Tuple["asyncio.AbstractEventLoop", Callable[[], None]]] = []
        #: Exceptions raised by the user callback, in order.
        self.callback_errors: List[BaseException] = []

    def __repr__(self) -> str:
        status = self._states[-1].get("status") if self._states else "starting"
        return f"<SyncRun {self.kind} sync_id={self.sync_id} {status}>"

    # -- engine side (worker thread) --

    def deliver(self, state: Dict[str, Any]) -> bool:
        """Records a state from the engine and calls the user callback (worker thread)."""
        typed = cast(SyncState, state)
        terminal = state.get("status") in _callbacks.TERMINAL
        with self._cond:
            self._states.append(typed)
        if self._callback is not None:
            try:
                self._callback(typed)
            except Exception as e:  # noqa: BLE001 - reported, never unwound into C
                _callbacks.log.exception("syncstore: the callback of %r raised", self)
                self.callback_errors.append(e)
        with self._cond:
            if terminal:
                self._done = True
            waiters = list(self._waiters)
            self._cond.notify_all()
        for loop, wake in waiters:
            try:
                loop.call_soon_threadsafe(wake)
            except RuntimeError:  # the loop was closed meanwhile
                pass
        return terminal

    # -- host side --

    @property
    def done(self) -> bool:
        """True once the terminal state (DONE, FAILED or STOPPED) has arrived."""
        return self._done

    @property
    def states(self) -> List[SyncState]:
        """Every state received so far, oldest first."""
        with self._cond:
            return list(self._states)

    @property
    def state(self) -> Optional[SyncState]:
        """The latest state received (for a sync run, the stored status when none came yet)."""
        with self._cond:
            if self._states:
                return self._states[-1]
        if self.kind == "cleanResyncGhosts" or not self.sync_id:
            return None
        return cast(Optional[SyncState], _lib.call_json(_lib.lib().syncstore_get_sync_status,
                                                        self._handle.arg(), self.sync_id))

    @property
    def error(self) -> Optional[SyncStoreError]:
        """For a run that ended FAILED, its error as an exception instance of the class of its
        ``errorCode`` (e.g. :class:`AuthError`), to raise or inspect; otherwise None."""
        with self._cond:
            last = self._states[-1] if self._states else None
        if last is None or last.get("status") != "FAILED":
            return None
        code = int(last.get("errorCode") or 10)
        return error_for_code(code, str(last.get("error") or "sync failed"), last.get("errorRetryable") is True)

    def _final(self, waited: Optional[SyncState]) -> SyncState:
        with self._cond:
            last = self._states[-1] if self._states else None
        final = last if self.kind == "cleanResyncGhosts" and last is not None else (waited or last)
        if final is None:
            raise StateError(f"sync {self.sync_id} has no state")
        if self.callback_errors:
            error = CallbackError(list(self.callback_errors), cast(Dict[str, object], final))
            error.__cause__ = self.callback_errors[0]
            raise error
        return final

    def wait(self, timeout: Optional[float] = None) -> SyncState:
        """Blocks until the run is over; returns the final state (a ghost report for
        cleanResyncGhosts). ``timeout`` in seconds (None: no limit) raises :class:`WaitTimeout`.
        Ctrl-C interrupts the wait (KeyboardInterrupt); the run goes on."""
        started = time.monotonic()
        try:
            waited: Optional[SyncState] = wait_sync(self._handle, self.sync_id, timeout)
        except StateError:
            # The store is closed or closing: the close stops its runs and delivers their terminal
            # states before it returns.
            if not self._handle.closed:
                raise
            self._wait_terminal(None if timeout is None else max(0.0, timeout - (time.monotonic() - started)))
            waited = None
        return self._final(waited)

    def _wait_terminal(self, timeout: Optional[float]) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._done:
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeout(f"sync {self.sync_id} is still running after {timeout} s",
                                      retryable=True)
                self._cond.wait(_WAIT_SLICE_MS / 1000.0)

    def stop(self, timeout: Optional[float] = 60.0) -> SyncState:
        """Stops the run and returns its final state.

        The C library stops syncs per store (``syncstore_stop_syncs``): every queued or running
        sync of the store ends STOPPED; new runs are accepted again afterwards (the other stopped
        syncs can be re-run with :meth:`Store.restart_syncs`)."""
        ptr = self._handle.arg()
        _lib.call(_lib.lib().syncstore_stop_syncs, ptr)
        try:
            state = wait_sync(self._handle, self.sync_id, timeout)
        finally:
            _lib.call(_lib.lib().syncstore_restart_syncs, ptr, 0, _lib.SYNC_CALLBACK(), None)
        return self._final(state)

    def __await__(self) -> Generator[Any, None, SyncState]:
        from . import aio
        return aio.wait(self).__await__()

    def progress(self) -> AsyncIterator[SyncState]:
        """Yields every state of the run (those already received first) until the terminal one."""
        from . import aio
        return aio.progress(self)

    # -- for syncstore.aio --

    def _subscribe(self, loop: asyncio.AbstractEventLoop, wake: Callable[[], None]) -> Tuple[Any, ...]:
        entry = (loop, wake)
        with self._cond:
            self._waiters.append(entry)
        return entry

    def _unsubscribe(self, entry: Tuple[Any, ...]) -> None:
        with self._cond:
            self._waiters.remove(cast("Tuple[asyncio.AbstractEventLoop, Callable[[], None]]", entry))

    def _snapshot(self, seen: int) -> Tuple[List[SyncState], bool]:
        with self._cond:
            return self._states[seen:], self._done

    def _poll_idle(self) -> Tuple[bool, Optional[SyncState]]:
        """Non-blocking check that the sync left the worker: (idle, state)."""
        if self._handle.closed:
            return True, None
        try:
            state = _wait_slice(self._handle, self.sync_id, 0)
        except StateError:
            return True, None
        return state is not None, state


class RestartListener(_callbacks.Listener):
    """Forwards the states of the syncs re-run by :meth:`Store.restart_syncs` to one callback."""

    def __init__(self, callback: SyncCallback, errors: List[BaseException]) -> None:
        self._callback = callback
        self._errors = errors

    def deliver(self, state: Dict[str, Any]) -> bool:
        """Calls the user callback; stays registered until the store closes."""
        try:
            self._callback(cast(SyncState, state))
        except Exception as e:  # noqa: BLE001 - reported, never unwound into C
            _callbacks.log.exception("syncstore: a restart_syncs callback raised")
            self._errors.append(e)
        return False
