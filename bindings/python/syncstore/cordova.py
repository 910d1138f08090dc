"""Shared state of the Cordova-style modules :mod:`syncstore.smartstore` and :mod:`syncstore.mobilesync`.

Hybrid apps name a store by an optional leading storeConfig argument; here those stores live under
one root directory set with :func:`init`, are opened on first use and stay open until
:func:`close_all` (or interpreter exit).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from .errors import StateError
from .store import Store
from .types import PathLike

__all__ = ["init", "close_all", "store_for", "split_config", "config_key"]

_lock = threading.Lock()
_root: Optional[str] = None
_stores: Dict[Tuple[bool, str], Store] = {}


def init(root_dir: PathLike) -> None:
    """Sets the directory under which the Cordova-style modules open their stores."""
    global _root
    with _lock:
        _root = os.fspath(root_dir)


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
            store = Store(_root, {"isGlobalStore": key[0], "storeName": key[1]})
            _stores[key] = store
        return store


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
