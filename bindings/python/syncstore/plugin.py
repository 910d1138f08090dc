"""The hybrid plugins' dispatcher: the native half of Cordova's and React Native's SmartStore and
MobileSync (``syncstore_plugin_*`` in ``syncstore.h``).

A :class:`Plugin` answers the calls the Mobile SDK's hybrid JavaScript makes: the service
(:data:`SMARTSTORE`, :data:`MOBILESYNC`), the action (the library's table names the action of each
Cordova function: :mod:`syncstore.smartstore` and :mod:`syncstore.mobilesync` send them) and the
args array ``cordova.exec`` receives. The answers, cursor objects, error messages and "sync"
events are the plugins' own, decided by the library; this class only carries them::

    with Plugin("/tmp/stores", remote={"instanceUrl": url, "accessToken": token}) as plugin:
        plugin.on_event(lambda name, detail: print(name, detail["status"]))
        state = plugin.exec(MOBILESYNC, "syncDown", [{"soupName": "contacts", "options": {},
                                                      "target": {"type": "soql", "query": "SELECT Id FROM Contact"}}])

Stores are opened under the root on first use and stay open until :meth:`Plugin.close`.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import itertools
import json
import os
import threading
import weakref
from types import TracebackType
from typing import Any, Callable, Dict, Mapping, Optional, Set, Tuple, Type, Union

from . import _callbacks, _cordova_api, _lib
from .errors import ArgumentError, AuthError, StateError, SyncStoreError, error_for_code
from .store import _object_json, _path, store_config_json
from .sync import WaitTimeout
from .types import PathLike, StoreConfig

__all__ = ["Plugin", "SMARTSTORE", "MOBILESYNC", "EventListener", "KeyProvider"]

#: The SmartStore plugin's service name (the library's).
SMARTSTORE: str = _cordova_api.table()["services"]["smartstore"]["service"]
#: The MobileSync plugin's service name (the library's).
MOBILESYNC: str = _cordova_api.table()["services"]["mobilesync"]["service"]

#: ``listener(event_name, detail)``: a document event of the plugins ("sync" with the sync state,
#: plus ``isGlobalStore`` and ``storeName``, as detail).
EventListener = Callable[[str, Dict[str, Any]], object]
#: ``provider({"storeName", "isGlobalStore"})`` -> the store's key (a passphrase or
#: ``"x'<64 hex>'"``), ``(key, kdf_iter)``, or None for a plaintext store.
KeyProvider = Callable[[Dict[str, Any]], Union[None, str, Tuple[Optional[str], Optional[int]]]]


class _Hooks:
    """A plugin's host functions, found by the C thunks through the plugin's registry key."""

    def __init__(self) -> None:
        self.listener: Optional[EventListener] = None
        self.key_provider: Optional[KeyProvider] = None
        #: exec keys whose call returned without an answer yet (cleanResyncGhosts): failed when
        #: the plugin is freed. A call still inside syncstore_plugin_exec is answered by it.
        self.pending: Set[int] = set()
        #: True once the plugin is freed.
        self.freed = False


# The C library gets integer keys as contexts, never Python objects: a late or unexpected call
# finds nothing and is ignored, never a freed object.
_lock = threading.Lock()
_keys = itertools.count(1)
_answers: Dict[int, Tuple["concurrent.futures.Future[Any]", _Hooks]] = {}
_hooks: Dict[int, _Hooks] = {}
# The exception a key provider raised on this thread, chained to the error answer it caused (the
# provider runs on the thread that called exec, and so does that answer).
_provider_error = threading.local()


def _decode(status: int, text: Optional[bytes]) -> Tuple[bool, Any]:
    """(ok, value): the success value (None without one), or the exception of an error answer."""
    value = None if text is None else json.loads(text.decode("utf-8"))
    if status == 0:
        return True, value
    message = value if isinstance(value, str) else "the plugin failed without a message"
    error = error_for_code(status, message, _cordova_api.retryable(status))
    cause = getattr(_provider_error, "value", None)
    if cause is not None:
        _provider_error.value = None
        error.__cause__ = cause
    return False, error


def _on_answer(context: Optional[int], status: int, text: Optional[bytes]) -> None:
    # Never raises into C.
    try:
        with _callbacks.worker_scope():
            with _lock:
                found = _answers.pop(context or 0, None)
                if found is not None:
                    found[1].pending.discard(context or 0)
            if found is None:
                return
            future = found[0]
            try:
                ok, value = _decode(status, text)
            except BaseException as e:  # noqa: BLE001 - an answer that is not JSON fails its call
                ok, value = False, e
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
    except BaseException:  # noqa: BLE001
        _log_quietly("syncstore: error while delivering a plugin answer")


def _on_event(context: Optional[int], event: Optional[bytes], detail: Optional[bytes]) -> None:
    try:
        with _callbacks.worker_scope():
            with _lock:
                hooks = _hooks.get(context or 0)
            listener = hooks.listener if hooks is not None else None
            if listener is None or event is None or detail is None:
                return
            listener(event.decode("utf-8"), json.loads(detail.decode("utf-8")))
    except BaseException:  # noqa: BLE001 - a listener must never unwind into the engine
        _log_quietly("syncstore: a plugin event listener raised")


_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]


def _provide_key(context: Optional[int], store_json: Optional[bytes], out_key: Any, out_kdf_iter: Any,
                 err: Any) -> int:
    try:
        with _lock:
            hooks = _hooks.get(context or 0)
        provider = hooks.key_provider if hooks is not None else None
        if provider is None or store_json is None:
            return 0
        given = provider(json.loads(store_json.decode("utf-8")))
        key, kdf_iter = given if isinstance(given, tuple) else (given, None)
        if key is not None and not isinstance(key, str) or kdf_iter is not None and not isinstance(kdf_iter, int):
            raise ArgumentError("a key provider returns a key (str), (key, kdf_iter) or None, not "
                                f"{type(given).__name__}")
        if kdf_iter is not None:
            out_kdf_iter[0] = kdf_iter
        if key is not None:
            if "\x00" in key:
                raise ArgumentError("a key provider's key cannot contain NUL characters")
            raw = key.encode("utf-8")
            # The library frees the key with free(): it must come from the C allocator.
            buffer = _libc.malloc(len(raw) + 1)
            if not buffer:
                raise MemoryError("no memory for the store key")
            ctypes.memmove(buffer, raw + b"\0", len(raw) + 1)
            out_key[0] = buffer
        return 0
    except BaseException as e:  # noqa: BLE001 - reported as the action's error, never unwound into C
        _provider_error.value = e
        # Anything but a SyncStoreError: the store's key could not be had.
        code = e.code if isinstance(e, SyncStoreError) else AuthError.code_value
        message = f"{type(e).__name__}: {e}".encode("utf-8", "replace")[:_lib.ERROR_MESSAGE_SIZE - 1]
        try:
            err[0].code, err[0].retryable, err[0].message = code, 0, message
        except BaseException:  # noqa: BLE001
            pass
        return code


def _log_quietly(message: str) -> None:
    try:
        _callbacks.log.exception(message)
    except BaseException:  # noqa: BLE001 - logging itself may fail at interpreter exit
        pass


#: The thunks handed to C by every plugin; never freed (one extra reference nothing releases, so
#: they outlive module teardown at exit).
ANSWER_THUNK = _lib.PLUGIN_ANSWER(_on_answer)
EVENT_THUNK = _lib.PLUGIN_EVENT(_on_event)
KEY_THUNK = _lib.PLUGIN_KEY_PROVIDER(_provide_key)
for _thunk in (ANSWER_THUNK, EVENT_THUNK, KEY_THUNK):
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_thunk))


class _State:
    """What the finalizer of a plugin needs (it must not hold the plugin itself)."""

    def __init__(self, ptr: int, key: int, hooks: _Hooks, label: str) -> None:
        self.ptr: Optional[int] = ptr
        self.key = key
        self.hooks = hooks
        self.label = label
        self.lock = threading.Lock()

    def get(self) -> int:
        ptr = self.ptr
        if ptr is None:
            raise StateError(f"the plugin of {self.label} is closed")
        return ptr

    def free(self) -> None:
        with self.lock:
            ptr, self.ptr = self.ptr, None
        if ptr is None:
            return
        try:
            _lib.call(_lib.lib().syncstore_plugin_free, ctypes.c_void_p(ptr))
        finally:
            # Freed: the library calls none of this plugin's functions again.
            with _lock:
                self.hooks.freed = True
                _hooks.pop(self.key, None)
                left = [_answers.pop(k) for k in list(self.hooks.pending) if k in _answers]
                self.hooks.pending.clear()
            for future, _ in left:
                future.set_exception(StateError("the plugin was closed before this call was answered"))

    def free_quietly(self) -> None:
        """The finalizer: never raises; from a callback thread the free runs on a helper thread."""
        if _callbacks.in_worker_thread():
            threading.Thread(target=self._free_logged, name="syncstore-plugin-close").start()
        else:
            self._free_logged()

    def _free_logged(self) -> None:
        try:
            self.free()
        except BaseException:  # noqa: BLE001 - finalizers must not raise
            _log_quietly(f"syncstore: freeing the unclosed plugin of {self.label} failed")


def _json_of(value: Any) -> bytes:
    """JSON text of an args value: a list/tuple/mapping, or JSON text already written (str)."""
    return _lib.dump(list(value) if isinstance(value, tuple) else value)


class Plugin:
    """One dispatcher: ``Plugin(root_dir, remote=None)``, a context manager that closes it.

    ``remote`` (a mapping or JSON text, :meth:`syncstore.Store.set_remote`'s) is the default
    remote of every store the plugin opens (the logged-in user's credentials). Every method may
    be called from any thread, but :meth:`close` not from one of the plugin's callbacks. A plugin
    that is never closed is closed when garbage collected or at interpreter exit.
    """

    def __init__(self, root_dir: PathLike, remote: Union[None, Mapping[str, Any], str] = None) -> None:
        options = None if remote is None else b'{"remote":' + _object_json(remote, "remote") + b"}"
        out = ctypes.c_void_p()
        _lib.call(_lib.lib().syncstore_plugin_new, _path(root_dir), options, ctypes.byref(out))
        assert out.value is not None
        hooks = _Hooks()
        with _lock:
            key = next(_keys)
            _hooks[key] = hooks
        self._state = _State(out.value, key, hooks, os.fspath(root_dir))
        self._finalizer = weakref.finalize(self, self._state.free_quietly)
        # The thunks are set once; the host functions behind them change in _hooks.
        ptr = ctypes.c_void_p(out.value)
        _lib.call(_lib.lib().syncstore_plugin_set_listener, ptr, EVENT_THUNK, ctypes.c_void_p(key))
        _lib.call(_lib.lib().syncstore_plugin_set_key_provider, ptr, KEY_THUNK, ctypes.c_void_p(key))

    def __repr__(self) -> str:
        return f"<Plugin {self._state.label}{' closed' if self.closed else ''}>"

    def __enter__(self) -> Plugin:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._state.ptr is None

    @property
    def root(self) -> str:
        """The directory the plugin's stores live in."""
        return self._state.label

    def close(self) -> None:
        """Closes the stores the plugin opened (their runs stop) and frees it; calls still waiting
        for an answer raise :class:`StateError`. Closing again is a no-op. Not from one of the
        plugin's callbacks (StateError)."""
        if _callbacks.in_worker_thread():
            raise StateError("a plugin cannot be closed from inside one of its callbacks")
        self._finalizer.detach()
        self._state.free()

    # -- host settings --

    def set_remote(self, remote: Union[Mapping[str, Any], str], store: StoreConfig = None) -> None:
        """Sets the remote (a mapping or JSON text) of one store (a storeConfig: ``{"storeName",
        "isGlobalStore"}``, a bool or a store name) or, with ``store`` None, the default of every
        store without its own. Applies at once to the open stores it concerns."""
        _lib.call(_lib.lib().syncstore_plugin_set_remote, ctypes.c_void_p(self._state.get()),
                  store_config_json(store), _object_json(remote, "remote"))

    def set_key_provider(self, provider: Optional[KeyProvider]) -> None:
        """Sets the function giving the key of each store the plugin opens (None: stores open
        without a key): ``provider({"storeName", "isGlobalStore"})`` returns the key (a passphrase
        or ``"x'<64 hex digits>'"``), ``(key, kdf_iter)`` (the Mobile SDK uses 4000), or None for
        a plaintext store. It runs on the thread that called :meth:`exec`, once per open; what it
        raises fails that call (a :class:`SyncStoreError` with its own class, anything else as
        :class:`AuthError`), with the provider's exception as ``__cause__``. Stores already open
        keep their key."""
        self._state.get()
        self._state.hooks.key_provider = provider

    def on_event(self, listener: Optional[EventListener]) -> None:
        """Sets the listener of the plugins' document events (None removes it):
        ``listener(event_name, detail)``, e.g. ``("sync", {...state, "isGlobalStore": False,
        "storeName": "smartstore"})`` for every state change of every run started through the
        plugin. It is called on the library's sync worker threads: keep it short, do not
        :meth:`close` the plugin from it, and do not wait there for an answer that the same
        worker must give (e.g. ``exec(MOBILESYNC, "cleanResyncGhosts", ...)``; use
        :meth:`exec_async`). Its exceptions are logged on the ``syncstore`` logger."""
        self._state.get()
        self._state.hooks.listener = listener

    # -- calls --

    def exec_async(self, service: str, action: str, args: Any) -> "concurrent.futures.Future[Any]":
        """Runs one action; the future gets its answer: the success value (None when the plugin
        answers without one), or the exception of its error (the class of its status code, the
        plugin's message). Most actions are answered before this returns; cleanResyncGhosts
        later, from the store's sync worker thread (done-callbacks then run there). ``args`` is
        the array ``cordova.exec`` receives (a list, a mapping for its one object, or JSON text).
        Raises at once only when the call cannot be made (a closed plugin: StateError)."""
        ptr = self._state.get()
        payload = _json_of(args)
        _provider_error.value = None
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        hooks = self._state.hooks
        with _lock:
            key = next(_keys)
            _answers[key] = (future, hooks)
        err = _lib.Error()
        status = _lib.lib().syncstore_plugin_exec(ctypes.c_void_p(ptr), _lib.enc(service), _lib.enc(action), payload,
                                                  ANSWER_THUNK, ctypes.c_void_p(key), ctypes.byref(err))
        with _lock:
            if status != 0:
                _answers.pop(key, None)
            elif key in _answers:  # answered later (or never, when the plugin is freed meanwhile)
                if hooks.freed:
                    _answers.pop(key, None)
                    future.set_exception(StateError("the plugin was closed before this call was answered"))
                else:
                    hooks.pending.add(key)
        if status != 0:
            raise error_for_code(status, err.message.decode("utf-8", "replace") or "no message", bool(err.retryable))
        return future

    def exec(self, service: str, action: str, args: Any, timeout: Optional[float] = None) -> Any:
        """Runs one action and returns its success value (None when the plugin answers without
        one), or raises its error (the class of its status code, the plugin's message). Waits
        for an answer that comes later (cleanResyncGhosts) up to ``timeout`` seconds (None: no
        limit), then raises :class:`WaitTimeout` (the action goes on)."""
        future = self.exec_async(service, action, args)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise WaitTimeout(f"{action} was not answered within {timeout} s", retryable=True) from None
