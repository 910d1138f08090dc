"""Shared state of the Cordova-style modules :mod:`syncstore.smartstore` and :mod:`syncstore.mobilesync`.

Hybrid apps name a store by an optional leading storeConfig argument; here those stores live under
one root directory set with :func:`init`, are opened on first use and stay open until
:func:`close_all` (or interpreter exit).

Hybrid JS passes no encryption key: the host registers a key provider with
:func:`set_encryption_key_provider`, asked for each store these modules open (as the Mobile SDK
gives SmartStore the app's key), e.g.::

    cordova.set_encryption_key_provider(lambda config: keychain_lookup(config["storeName"]), kdf_iter=4000)
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from .errors import StateError
from .store import Store
from .types import PathLike, StoreConfigDict

__all__ = ["init", "close_all", "store_for", "split_config", "config_key", "set_encryption_key_provider",
           "KeyProvider"]

#: Called with ``{"isGlobalStore": bool, "storeName": str}`` when a store is opened; returns the
#: store's key (a passphrase or ``"x'<64 hex digits>'"``), or None for a plaintext store.
KeyProvider = Callable[[StoreConfigDict], Optional[str]]

_lock = threading.Lock()
_root: Optional[str] = None
_stores: Dict[Tuple[bool, str], Store] = {}
_key_provider: Optional[KeyProvider] = None
_kdf_iter: Optional[int] = None


def init(root_dir: PathLike) -> None:
    """Sets the directory under which the Cordova-style modules open their stores."""
    global _root
    with _lock:
        _root = os.fspath(root_dir)


def set_encryption_key_provider(provider: Optional[KeyProvider], kdf_iter: Optional[int] = None) -> None:
    """Sets the function that gives the key of each store the Cordova-style modules open (None:
    stores are opened without a key). ``kdf_iter``: PBKDF2 iterations of passphrase keys (None:
    the library's default, 256000; the Mobile SDK uses 4000). Stores already open keep the key
    they were opened with until :func:`close_all`. The provider's exceptions propagate to the
    call that opened the store."""
    global _key_provider, _kdf_iter
    with _lock:
        _key_provider, _kdf_iter = provider, kdf_iter


def close_all() -> None:
    """Closes every store the Cordova-style modules opened."""
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
    for store in stores:
        store.close()


def config_key(config: Any) -> Tuple[bool, str]:
    """(isGlobalStore, storeName) of a storeConfig value (None: the default user store)."""
    if config is None:
        return False, "smartstore"
    if isinstance(config, bool):
        return config, "smartstore"
    if isinstance(config, Mapping):
        return bool(config.get("isGlobalStore", False)), str(config.get("storeName") or "smartstore")
    raise TypeError(f"a storeConfig is a bool or a mapping, not {type(config).__name__}")


def store_for(config: Any) -> Store:
    """The open store named by a storeConfig (opened on first use)."""
    key = config_key(config)
    with _lock:
        if _root is None:
            raise StateError("call syncstore.smartstore.init(root_dir) first", code=11)
        store = _stores.get(key)
        if store is None or store.closed:
            store = Store(_root, _open_config(key))
            _stores[key] = store
        return store


def _open_config(key: Tuple[bool, str]) -> StoreConfigDict:
    """The storeConfig a store is opened with: its name, and its key from the provider."""
    config: StoreConfigDict = {"isGlobalStore": key[0], "storeName": key[1]}
    if _key_provider is not None:
        secret = _key_provider({"isGlobalStore": key[0], "storeName": key[1]})
        if secret is not None:
            config["key"] = secret
            if _kdf_iter is not None:
                config["kdfIter"] = _kdf_iter
    return config


def _is_config(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    return isinstance(value, Mapping) and ("storeName" in value or "isGlobalStore" in value) \
        and "cursorId" not in value


def split_config(args: Sequence[Any], required: int) -> Tuple[Any, Sequence[Any]]:
    """Splits Cordova arguments into (storeConfig or None, the rest): the first argument is a
    storeConfig when there are more than ``required`` arguments and it looks like one (a bool,
    None, or a mapping with storeName / isGlobalStore)."""
    if len(args) > required and _is_config(args[0]):
        return args[0], args[1:]
    return None, args
