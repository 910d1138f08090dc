"""Shared state of the Cordova-style modules :mod:`syncstore.smartstore` and :mod:`syncstore.mobilesync`:
the JavaScript half of ``cordova.force.js``, over the library's plugin dispatcher.

Each function of those modules does what the hybrid JS does before ``cordova.exec``: it takes the
optional leading storeConfig, builds the action's argument object and calls :func:`call`. Every
rule (which store, opening it, answers, error messages, sync events) is the dispatcher's: one
:class:`syncstore.plugin.Plugin` per root directory (set with :func:`init`), created on first use
and kept until :func:`close_all` (or interpreter exit). :func:`plugin` gives it, e.g. to set
remotes or listen to its events.

Hybrid JS passes no encryption key: the host registers a key provider with
:func:`set_encryption_key_provider`, asked for each store these modules open (as the Mobile SDK
gives SmartStore the app's key), e.g.::

    cordova.set_encryption_key_provider(lambda config: keychain_lookup(config["storeName"]), kdf_iter=4000)
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from . import _callbacks
from .errors import ArgumentError, StateError
from .plugin import Plugin
from .types import PathLike, StoreConfigDict

__all__ = ["init", "close_all", "plugin", "call", "exec_args", "store_fields", "split_config", "set_encryption_key_provider",
           "add_event_listener", "remove_event_listener", "KeyProvider", "RootEventListener"]

#: Called with ``{"isGlobalStore": bool, "storeName": str}`` when a store is opened; returns the
#: store's key (a passphrase or ``"x'<64 hex digits>'"``), or None for a plaintext store.
KeyProvider = Callable[[StoreConfigDict], Optional[str]]
#: ``listener(root_dir, event_name, detail)``: an event of the plugin of one root (worker thread).
RootEventListener = Callable[[str, str, Dict[str, Any]], object]

_lock = threading.Lock()
_root: Optional[str] = None
_plugins: Dict[str, Plugin] = {}
_key_provider: Optional[KeyProvider] = None
_kdf_iter: Optional[int] = None
_listeners: List[RootEventListener] = []


def init(root_dir: PathLike) -> None:
    """Sets the directory under which the Cordova-style modules open their stores."""
    global _root
    with _lock:
        _root = os.fspath(root_dir)


def set_encryption_key_provider(provider: Optional[KeyProvider], kdf_iter: Optional[int] = None) -> None:
    """Sets the function that gives the key of each store the Cordova-style modules open (None:
    stores are opened without a key). ``kdf_iter``: PBKDF2 iterations of passphrase keys (None:
    the library's default, 256000; the Mobile SDK uses 4000). Stores already open keep the key
    they were opened with until :func:`close_all`. What the provider raises fails the call that
    opened the store (see :meth:`syncstore.plugin.Plugin.set_key_provider`)."""
    global _key_provider, _kdf_iter
    with _lock:
        _key_provider, _kdf_iter = provider, kdf_iter


def _provide_key(config: Dict[str, Any]) -> Union[None, str, Tuple[Optional[str], Optional[int]]]:
    with _lock:
        provider, kdf_iter = _key_provider, _kdf_iter
    if provider is None:
        return None
    key = provider(cast(StoreConfigDict, config))
    return key if key is None or kdf_iter is None else (key, kdf_iter)


def add_event_listener(listener: RootEventListener) -> None:
    """Adds a listener of the events of every root's plugin: ``listener(root_dir, event_name,
    detail)``, called on the library's sync worker threads (``document.addEventListener``'s
    counterpart; :func:`syncstore.mobilesync.addSyncListener` is the JS-shaped one)."""
    with _lock:
        _listeners.append(listener)


def remove_event_listener(listener: RootEventListener) -> None:
    """Removes a listener added with :func:`add_event_listener`."""
    with _lock:
        _listeners.remove(listener)


def _on_event(root: str, name: str, detail: Dict[str, Any]) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(root, name, detail)
        except Exception:  # noqa: BLE001 - one listener's bug does not starve the others
            _callbacks.log.exception("syncstore: a plugin event listener raised")


def plugin() -> Plugin:
    """The plugin of the current root (created on first use; :class:`StateError` before
    :func:`init`)."""
    with _lock:
        if _root is None:
            raise StateError("call syncstore.smartstore.init(root_dir) first")
        found = _plugins.get(_root)
        if found is None or found.closed:
            found = Plugin(_root)
            found.on_event(functools.partial(_on_event, _root))
            found.set_key_provider(_provide_key)
            _plugins[_root] = found
        return found


def close_all() -> None:
    """Closes every store the Cordova-style modules opened (the plugin of each root)."""
    with _lock:
        plugins = list(_plugins.values())
        _plugins.clear()
    for each in plugins:
        each.close()


def store_fields(config: Any) -> Dict[str, Any]:
    """The storeConfig members cordova.force.js puts in an action's argument object
    (``isGlobalStore``, ``storeName``) for a storeConfig: a mapping, a bool (isGlobalStore) or
    None (the default user store)."""
    if config is None or isinstance(config, bool):
        return {"isGlobalStore": bool(config)}
    if isinstance(config, Mapping):
        return {k: config[k] for k in ("isGlobalStore", "storeName") if k in config}
    raise ArgumentError(f"a storeConfig is a mapping ({{\"storeName\", \"isGlobalStore\"}}), a bool or None, "
                        f"not {type(config).__name__}")


def call(service: str, action: str, config: Any, fields: Mapping[str, Any], timeout: Optional[float] = None) -> Any:
    """``cordova.exec`` of one action on the current root's plugin: the argument object is
    ``fields`` with the storeConfig's members; returns the success value (None without one) or
    raises the error's :class:`SyncStoreError`."""
    return plugin().exec(service, action, exec_args(config, fields), timeout=timeout)


def exec_args(config: Any, fields: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The args array of one action: ``fields`` with the storeConfig's members, as
    cordova.force.js builds it."""
    args = dict(fields)
    args.update(store_fields(config))
    return [args]


def _is_config(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    return isinstance(value, Mapping) and ("storeName" in value or "isGlobalStore" in value) \
        and "cursorId" not in value


def split_config(args: Sequence[Any], required: int) -> Tuple[Any, Sequence[Any]]:
    """Splits Cordova arguments into (storeConfig or None, the rest): the first argument is a
    storeConfig when there are more than ``required`` arguments and it looks like one (a bool,
    None, or a mapping with storeName / isGlobalStore that is not a cursor)."""
    if len(args) > required and _is_config(args[0]):
        return args[0], args[1:]
    return None, args
