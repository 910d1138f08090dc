"""Watches: a store's change notices as an iterator, an async iterator, or both.

:meth:`Store.watch_soup` and :meth:`Store.watch` return a :class:`Watch`. It pulls notices rather
than having them pushed: the watch opens a handle of its own on the same store (the one
``SmartStore`` of the file in this process, so it costs no second database), makes it a buffered
handle (``syncstore_buffer_notifications``) and adds its one listener there. The library then
keeps the listener's next notice, merging every later commit into it, until the consumer asks
(``syncstore_send_notifications``, called by ``next()`` on the consumer's own thread, and for
``async for`` on a thread of the event loop's default executor: a query's notice is judged during
the send). So however slow the consumer, the watch holds only what the last send handed it (one
notice; a query's first notice and a change at most), and the library one more: nothing queues
up, and a notice that waited tells of every commit since the one before (``"commits"`` > 1; the
ids of all of them, the first 1000 of each kind).

The cost of a handle of its own: a commit made through the :class:`Store` the watch came from is
``"otherHandle"`` in its notices, not ``"handle"`` (the watch's handle never writes).
"""

from __future__ import annotations

import collections
import ctypes
import threading
import time
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, Generic, List, Optional, Tuple, Type, TypeVar, cast

from . import _callbacks, _lib
from ._handle import Handle
from .errors import StateError

if TYPE_CHECKING:  # asyncio is imported only by code that iterates asynchronously
    import asyncio

    from .store import Store

__all__ = ["Watch"]

N = TypeVar("N")

# How long a blocking wait sleeps before it checks the watch again (close, Ctrl-C).
_WAIT_SLICE_S = 0.25


class _Sink(_callbacks.Listener):
    """What the library's callbacks reach: a weak link to the watch, so that a watch nobody holds
    is collected (and its handle closed) although the callback registry holds this."""

    def __init__(self, watch: Watch[Any]) -> None:
        self._watch = weakref.ref(watch)

    def deliver(self, state: Dict[str, Any]) -> bool:
        watch = self._watch()
        if watch is not None:
            watch._deliver(state)
        return False

    def ready(self) -> None:
        watch = self._watch()
        if watch is not None:
            watch._ready()


class Watch(Generic[N]):
    """A store's change notices for one soup, every soup, or one query, pulled by the consumer.

    Made by :meth:`Store.watch_soup` (``Watch[SoupNotice]``) and :meth:`Store.watch`
    (``Watch[QueryNotice]``). Iterate it (``for notice in watch``: blocks until the next notice),
    iterate it asynchronously (``async for notice in watch``: awaits, never blocking the event
    loop), or call :meth:`get` with a timeout. Iteration ends once the watch is closed:
    :meth:`close`, the end of a ``with`` / ``async with`` block, or the close of its store. A
    watch nobody references is closed when it is garbage collected.

    A slow consumer never makes notices pile up: the library merges the commits made meanwhile
    into one notice (see the module's docstring). ``min_interval_ms`` (> 0) is the least time
    between two notices (``syncstore_set_listener_interval``).
    """

    def __init__(self, store: Store, handle_ptr: int, label: str) -> None:
        #: The store this watch was made from (kept open by it).
        self.store = store
        self._handle = Handle(handle_ptr, label)
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._pending: Deque[N] = collections.deque()
        self._is_ready = False
        self._closed = False
        self._waiters: List[Tuple["asyncio.AbstractEventLoop", Callable[[], None]]] = []
        self._token = 0
        self._sink = _Sink(self)
        self._key = _callbacks.register(self._sink)
        self._handle.track(self._key)
        self._finalizer = weakref.finalize(self, self._handle.close_quietly)

    @classmethod
    def _open(cls, store: Store, add: Callable[[ctypes.c_void_p, int], int], min_interval_ms: int,
              what: str) -> Watch[N]:
        """A watch on a new buffered handle of ``store``, its listener added by
        ``add(handle, key) -> token``."""
        interval = _interval(min_interval_ms)
        root, config, label = store._reopen_args()
        ptr = ctypes.c_void_p()
        _lib.call(_lib.lib().syncstore_open, root, config, ctypes.byref(ptr))
        assert ptr.value is not None
        watch: Watch[N] = cls(store, ptr.value, f"{label} (watch of {what})")
        try:
            p = watch._p()
            _lib.call(_lib.lib().syncstore_buffer_notifications, p, _callbacks.READY_THUNK, watch._key)
            watch._token = add(p, watch._key)
            if interval:
                _lib.call(_lib.lib().syncstore_set_listener_interval, p, ctypes.c_void_p(watch._token), interval)
        except BaseException:
            watch._closed = True
            watch._handle.close_quietly()
            watch._finalizer.detach()
            raise
        return watch

    def _p(self) -> ctypes.c_void_p:
        return self._handle.arg()

    def __repr__(self) -> str:
        return f"<Watch {self._handle.label}{' closed' if self._closed else ''}>"

    # -- library side: send (any consumer thread) and ready (the notifier thread) --

    def _deliver(self, notice: Dict[str, Any]) -> None:
        with self._cond:
            self._pending.append(cast(N, notice))
            self._cond.notify_all()

    def _ready(self) -> None:
        with self._cond:
            self._is_ready = True
            self._cond.notify_all()
            waiters = list(self._waiters)
        _wake(waiters)

    # -- consumer side --

    @property
    def closed(self) -> bool:
        """True once the watch is closed (iteration then ends)."""
        return self._closed

    def close(self) -> None:
        """Removes the listener and closes the watch's handle; notices not taken yet are dropped,
        and iterations waiting for one end. Closing again is a no-op. Any thread; inside a
        listener or sync callback the handle is closed on a helper thread, after the callback."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            waiters = list(self._waiters)
        _wake(waiters)
        self._finalizer.detach()
        self.store._forget_watch(self)
        if _callbacks.in_worker_thread():
            self._handle.close_quietly()  # a close here would wait for the callback we are in
        else:
            self._handle.close()

    def __enter__(self) -> Watch[N]:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    async def __aenter__(self) -> Watch[N]:
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.close()

    def _send(self) -> None:
        """Asks the library for the notice it keeps (it comes through :meth:`_deliver`, on this
        thread). A watch closed meanwhile is not an error."""
        with self._send_lock:
            if self._closed:
                return
            try:
                _lib.call(_lib.lib().syncstore_send_notifications, self._p(), None)
            except StateError:
                if not self._closed:
                    raise

    def _poll(self) -> Tuple[bool, Optional[N]]:
        """(True, notice) when one is there, (True, None) when the watch is closed, else
        (False, None) with the ready flag cleared: a send is then due."""
        with self._cond:
            if self._pending:
                return True, self._pending.popleft()
            if self._closed:
                return True, None
            self._is_ready = False
            return False, None

    def _take(self) -> Tuple[bool, Optional[N]]:
        """:meth:`_poll`, and a send when nothing was there."""
        done, notice = self._poll()
        if done:
            return done, notice
        self._send()
        return self._poll_after_send()

    def _poll_after_send(self) -> Tuple[bool, Optional[N]]:
        with self._cond:
            if self._pending:
                return True, self._pending.popleft()
            return self._closed, None

    def get(self, timeout: Optional[float] = None) -> Optional[N]:
        """The next notice, waiting up to ``timeout`` seconds (None: without limit; 0: only one
        that is there already). None at the timeout, or once the watch is closed (see
        :attr:`closed`). Ctrl-C interrupts the wait. Inside an engine callback (a listener's, a
        sync's) only ``timeout=0`` is allowed, and inside a listener callback of this store
        not even that (:class:`StateError`: its notices come through that thread)."""
        if timeout != 0 and _callbacks.in_worker_thread():
            raise StateError("a watch cannot wait inside a listener or sync callback (it would wait for the callback "
                             "itself); use get(timeout=0)")
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            done, notice = self._take()
            if done or (deadline is not None and time.monotonic() >= deadline):
                return notice
            with self._cond:
                while not self._is_ready and not self._closed and not self._pending:
                    left = _WAIT_SLICE_S if deadline is None else min(_WAIT_SLICE_S, deadline - time.monotonic())
                    if left <= 0:
                        break
                    self._cond.wait(left)

    def __iter__(self) -> Watch[N]:
        return self

    def __next__(self) -> N:
        notice = self.get()
        if notice is None:
            raise StopIteration
        return notice

    def __aiter__(self) -> Watch[N]:
        return self

    async def __anext__(self) -> N:
        import asyncio

        loop = asyncio.get_running_loop()
        while True:
            done, notice = self._poll()
            if not done:
                # Off the loop: a query's notice is judged during the send (Smart SQL runs again).
                await loop.run_in_executor(None, self._send)
                done, notice = self._poll_after_send()
            if done:
                if notice is None:
                    raise StopAsyncIteration
                return notice
            event = asyncio.Event()
            entry = (loop, event.set)
            with self._cond:
                if self._is_ready or self._closed or self._pending:
                    continue
                self._waiters.append(entry)
            try:
                await event.wait()
            finally:
                with self._cond:
                    self._waiters.remove(entry)


def _interval(value: int) -> int:
    from .errors import ArgumentError

    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"min_interval_ms must be an int, not {type(value).__name__}")
    return value


def _wake(waiters: List[Tuple["asyncio.AbstractEventLoop", Callable[[], None]]]) -> None:
    for loop, wake in waiters:
        try:
            loop.call_soon_threadsafe(wake)
        except RuntimeError:  # the loop was closed meanwhile
            pass
