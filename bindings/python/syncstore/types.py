"""Type aliases and the shapes of the JSON values the library returns."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, TypedDict, Union

__all__ = ["Entry", "IndexSpec", "QuerySpec", "StoreConfig", "StoreConfigDict", "PathLike", "SyncState", "SyncCallback",
           "SyncIds", "JSON", "ChangeOrigin", "ChangeList", "SoupChange", "SoupNotice", "QueryNotice", "SoupCallback",
           "QueryCallback", "LiveSyncState", "LiveSyncEvent", "LiveSyncCallback"]

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


# -- change notices (syncstore.h, "Callbacks, threads and close": Listeners) --


class ChangeOrigin(TypedDict, total=False):
    """Who made the (last) commit a notice tells of.

    ``kind``: ``"handle"`` (a write through the handle that added the listener), ``"otherHandle"``
    (another handle of this process), ``"sync"`` (a sync run; ``syncId`` and ``syncName`` when
    known), ``"otherProcess"`` (another process), or ``"initial"`` (a query listener's first
    notice).
    """

    kind: str
    syncId: int
    syncName: str


class ChangeList(TypedDict, total=False):
    """Entries inserted, updated or deleted (a soup notice), or added, removed or changed (a query
    notice): ``count``, the first 1000 ``ids`` (``_soupEntryId``; a Smart SQL query's ``rows``
    instead), and ``cut`` when some were left out."""

    count: int
    ids: List[int]
    rows: List[Any]
    cut: bool


class SoupChange(TypedDict, total=False):
    """What the commits of a notice did to one soup."""

    soup: str
    inserted: ChangeList
    updated: ChangeList
    deleted: ChangeList
    #: Every entry was removed (no ids listed).
    cleared: bool
    #: The soup itself was removed.
    removed: bool
    #: Another process changed it: which entries is not known (the lists may miss them).
    unknown: bool


class SoupNotice(TypedDict, total=False):
    """A soup listener's notice: one commit, or several merged (``commits`` > 1)."""

    #: The last commit it tells of (the store's commits in this process, increasing).
    sequence: int
    #: How many commits it tells of.
    commits: int
    origin: ChangeOrigin
    #: The touched soups by name (a listener of one soup: that soup only).
    soups: List[SoupChange]


class QueryNotice(TypedDict, total=False):
    """A query listener's notice: the query's new first page and how the result differs from the
    one last told (the first notice: ``origin.kind == "initial"``, ``commits == 0``, every row
    added)."""

    sequence: int
    commits: int
    origin: ChangeOrigin
    totalEntries: int
    #: The first page, as a query answers it (``pageSize`` rows at most).
    currentPageOrderedEntries: List[Any]
    added: ChangeList
    removed: ChangeList
    changed: ChangeList


#: A soup listener's callback: receives each notice, on the store's notifier thread.
SoupCallback = Callable[[SoupNotice], object]
#: A query listener's callback: receives each notice, on the store's notifier thread.
QueryCallback = Callable[[QueryNotice], object]


# -- live sync (syncstore.h, syncstore_start_live_sync; docs/sync.md, "Live sync") --


class LiveSyncState(TypedDict, total=False):
    """Live sync's state: ``state`` is ``"connecting"``, ``"catchingUp"``, ``"live"``,
    ``"offline"`` (``nextRetryAt``: epoch ms of the next attempt) or ``"stopped"``; ``error`` the
    last failure; ``syncs`` the ids of the syncs it runs."""

    state: str
    nextRetryAt: int
    error: Any
    syncs: List[int]


class LiveSyncEvent(LiveSyncState, total=False):
    """An event of live sync: ``{"event": "state", ...LiveSyncState}``, or ``{"event": "run",
    "sync": SyncState}`` for each state of each run it starts."""

    event: str
    sync: SyncState


#: Live sync's callback: its state events (on its own thread) and its runs' states (on the sync
#: worker thread).
LiveSyncCallback = Callable[[LiveSyncEvent], object]
