"""SyncStore for Python: an offline JSON document store with Salesforce-compatible sync.

A typed binding of ``libsyncstore.so.1`` (shipped inside this package) through ctypes::

    import syncstore

    with syncstore.Store("/tmp/stores", {"storeName": "app"}) as store:
        store.register_soup("contacts", [{"path": "Id", "type": "string"}])
        store.upsert("contacts", [{"Id": "003A", "LastName": "Ng"}])

See :class:`Store`, :class:`SyncRun`, :class:`Watch` (change notices), :mod:`syncstore.plugin` (the hybrid plugins' dispatcher),
:mod:`syncstore.smartstore` and :mod:`syncstore.mobilesync`.
"""

from __future__ import annotations

from . import _lib
from .cursor import Cursor
from .errors import (ArgumentError, AuthError, BusyError, CallbackError, ConflictError, ExistsError, InternalError,
                     NetworkError, NotFoundError, ServerError, StateError, StorageError, SyncStoreError,
                     error_for_code)
from .store import Store, list_stores, remove_all_stores, remove_store
from .sync import SyncRun, WaitTimeout
from .targets import CustomTarget
from .types import (ChangeList, ChangeOrigin, Entry, IndexSpec, LiveSyncCallback, LiveSyncEvent, LiveSyncState,
                    QueryCallback, QueryNotice, QuerySpec, SoupCallback, SoupChange, SoupNotice, StoreConfig,
                    StoreConfigDict, SyncCallback, SyncState)
from .watch import Watch

__all__ = ["Store", "Cursor", "SyncRun", "CustomTarget", "SyncStoreError", "ArgumentError", "NotFoundError",
           "ExistsError", "BusyError", "NetworkError", "AuthError", "ServerError", "ConflictError", "StorageError",
           "InternalError", "StateError", "CallbackError", "WaitTimeout", "error_for_code", "list_stores",
           "remove_store", "remove_all_stores", "version", "abi_version", "status_name", "library_path",
           "ABI_VERSION", "Entry", "IndexSpec", "QuerySpec", "StoreConfig", "StoreConfigDict", "SyncCallback",
           "SyncState", "Watch", "SoupNotice", "SoupChange", "QueryNotice", "ChangeList", "ChangeOrigin", "SoupCallback",
           "QueryCallback", "LiveSyncState", "LiveSyncEvent", "LiveSyncCallback", "__version__"]

#: The package's version: the header's SYNCSTORE_VERSION (Tests/c/check_abi_facts.py checks the
#: copy; scripts/release.sh checks that the wheel and the library it carries say the same).
__version__ = "0.1.0"

#: The ABI major version this package was written for (SYNCSTORE_ABI_VERSION).
ABI_VERSION = _lib.ABI_VERSION


def version() -> str:
    """The library's version, "major.minor.patch" (the header's SYNCSTORE_VERSION)."""
    return str(_lib.lib().syncstore_version().decode("ascii"))


def abi_version() -> int:
    """The ABI major version the loaded library was built with."""
    return int(_lib.lib().syncstore_abi_version())


def status_name(code: int) -> str:
    """The name of a status code, e.g. ``status_name(2) == "SYNCSTORE_ERR_NOT_FOUND"``."""
    return str(_lib.lib().syncstore_status_name(int(code)).decode("ascii"))


def library_path() -> str:
    """The path the library is loaded from ($SYNCSTORE_LIB overrides the packaged copy)."""
    return _lib.library_path()


if abi_version() != ABI_VERSION:
    raise ImportError(f"libsyncstore at {library_path()} has ABI {abi_version()}, this package needs {ABI_VERSION}")
