"""Type aliases and the shapes of the JSON values the library returns."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, TypedDict, Union

__all__ = ["Entry", "IndexSpec", "QuerySpec", "StoreConfig", "StoreConfigDict", "PathLike", "SyncState", "SyncCallback",
           "SyncIds", "JSON"]

#: Any JSON value (decoded): dict, list, str, int, float, bool or None.
JSON = Any
#: A soup entry: a JSON object.
Entry = Dict[str, Any]
#: An index spec: ``{"path": "a.b", "type": "string|integer|floating|full_text|json1"}``.
IndexSpec = Mapping[str, str]
#: A query spec (see :mod:`syncstore.cordova` for builders): a JSON object.
QuerySpec = Mapping[str, Any]


class StoreConfigDict(TypedDict, total=False):
    """A storeConfig object; every key is optional.

    ``key``: a passphrase, or ``"x'<64 hex digits>'"`` (a raw 256-bit key; ``"x'<96 hex>'"`` adds
    the salt; any other ``x'...'`` is refused); present and not None, the store is encrypted
    (SQLCipher 4's file format).
    ``kdfIter``: PBKDF2-HMAC-SHA512 iterations deriving a passphrase's key (default 256000,
    SQLCipher 4's; the Mobile SDK uses 4000); it must match the one the store was created with,
    and is the one :meth:`Store.change_key` uses (for a plaintext store too).
    """

    isGlobalStore: bool
    storeName: str
    key: Optional[str]
    kdfIter: int


#: A storeConfig: a :class:`StoreConfigDict` (``{"storeName": ..., "isGlobalStore": ..., "key":
#: ..., "kdfIter": ...}``) or any mapping of that shape, a bool (global or not), a store name, or
#: None for the default user store.
StoreConfig = Union[None, bool, str, StoreConfigDict, Mapping[str, Any]]
#: A filesystem path.
PathLike = Union[str, "os.PathLike[str]"]


class SyncState(TypedDict, total=False):
    """A sync state (or, for cleanResyncGhosts runs, a ghost report) as the engine sends it."""

    _soupEntryId: int
    type: str
    name: str
    target: Dict[str, Any]
    options: Dict[str, Any]
    soupName: str
    status: str
    progress: int
    totalSize: int
    maxTimeStamp: int
    startTime: int
    endTime: int
    error: str
    errorCode: int
    errorRetryable: bool
    conflicts: int
    errors: int
    conflictEntryIds: List[int]
    errorEntryIds: List[int]
    syncId: int
    removed: int


#: A user callback: receives every state of a run, on an engine worker thread.
SyncCallback = Callable[[SyncState], object]

#: Identifiers accepted where a sync is named.
SyncIds = Union[int, str]
