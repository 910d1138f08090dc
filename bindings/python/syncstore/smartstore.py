"""The Cordova ``smartstore`` API: same function names and argument orders, returning values.

Every store function takes an optional leading storeConfig (``{"storeName", "isGlobalStore"}`` or
a bool) like the hybrid JS API; the success callback's value is returned instead, and the error
callback becomes a raised :class:`SyncStoreError`. Call :func:`init` with a root directory first.
Values, cursors (``cursorId``, ``currentPageOrderedEntries``...) and error messages are the
plugin's own: each function forwards to the library's dispatcher (:mod:`syncstore.cordova`), with
the action and argument object the library's table gives for it (``syncstore_plugin_api()``: the
functions below are typed facades over that table, as are the query-spec builders)::

    from syncstore import smartstore
    smartstore.init("/tmp/stores")
    smartstore.registerSoup("contacts", [{"path": "Name", "type": "string"}])
    smartstore.upsertSoupEntries("contacts", [{"Name": "Ada"}])
    cursor = smartstore.querySoup("contacts", smartstore.buildAllQuerySpec("Name"))
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, cast

from . import _cordova_api, cordova
from .cordova import close_all, init, split_config
from .errors import ArgumentError

__all__ = ["init", "close_all", "registerSoup", "removeSoup", "soupExists", "getSoupIndexSpecs", "alterSoup",
           "reIndexSoup", "clearSoup", "querySoup", "runSmartQuery", "retrieveSoupEntries", "upsertSoupEntries",
           "upsertSoupEntriesWithExternalId", "removeFromSoup", "moveCursorToPageIndex", "moveCursorToNextPage",
           "moveCursorToPreviousPage", "closeCursor", "getDatabaseSize", "getAllStores", "getAllGlobalStores",
           "removeStore", "removeAllStores", "removeAllGlobalStores", "showInspector", "addSoupListener",
           "addQueryListener", "removeListener", "buildAllQuerySpec",
           "buildExactQuerySpec", "buildRangeQuerySpec", "buildLikeQuerySpec", "buildMatchQuerySpec",
           "buildSmartQuerySpec"]


_API = _cordova_api.Service("smartstore")


def _call(name: str, args: Sequence[Any]) -> Any:
    """A Cordova function of the table: its action with the args object of these arguments."""
    fn, config, fields = _cordova_api.split(_API, name, args)
    if not fn.store_config:
        return cordova.plugin().exec(_API.service, fn.action, [fields])
    return cordova.call(_API.service, fn.action, config, fields)


def registerSoup(*args: Any) -> str:
    """registerSoup([storeConfig,] soupName, indexSpecs) -> soupName."""
    return cast(str, _call("registerSoup", args))


def removeSoup(*args: Any) -> str:
    """removeSoup([storeConfig,] soupName) -> "OK"."""
    return cast(str, _call("removeSoup", args))


def soupExists(*args: Any) -> bool:
    """soupExists([storeConfig,] soupName) -> bool."""
    return cast(bool, _call("soupExists", args))


def getSoupIndexSpecs(*args: Any) -> List[Any]:
    """getSoupIndexSpecs([storeConfig,] soupName) -> index specs."""
    return cast(List[Any], _call("getSoupIndexSpecs", args))


def alterSoup(*args: Any) -> str:
    """alterSoup([storeConfig,] soupName, indexSpecs, reIndexData) -> soupName."""
    return cast(str, _call("alterSoup", args))


def reIndexSoup(*args: Any) -> str:
    """reIndexSoup([storeConfig,] soupName, paths) -> soupName."""
    return cast(str, _call("reIndexSoup", args))


def clearSoup(*args: Any) -> str:
    """clearSoup([storeConfig,] soupName) -> "OK"."""
    return cast(str, _call("clearSoup", args))


def querySoup(*args: Any) -> Dict[str, Any]:
    """querySoup([storeConfig,] soupName, querySpec) -> cursor (first page; close it with
    :func:`closeCursor`)."""
    return cast(Dict[str, Any], _call("querySoup", args))


def runSmartQuery(*args: Any) -> Dict[str, Any]:
    """runSmartQuery([storeConfig,] querySpec) -> cursor (first page). Smart SQL text stands for
    ``buildSmartQuerySpec(text)``."""
    return cast(Dict[str, Any], _call("runSmartQuery", args))


def retrieveSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """retrieveSoupEntries([storeConfig,] soupName, entryIds) -> entries."""
    return cast(List[Any], _call("retrieveSoupEntries", args))


def upsertSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntries([storeConfig,] soupName, entries) -> stored entries."""
    return cast(List[Any], _call("upsertSoupEntries", args))


def upsertSoupEntriesWithExternalId(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntriesWithExternalId([storeConfig,] soupName, entries, externalIdPath) -> stored entries."""
    return cast(List[Any], _call("upsertSoupEntriesWithExternalId", args))


def removeFromSoup(*args: Any) -> str:
    """removeFromSoup([storeConfig,] soupName, entryIdsOrQuerySpec) -> "OK": a list is entry ids,
    anything else a query spec (as cordova.force.js tells them apart)."""
    return cast(str, _call("removeFromSoup", args))


def moveCursorToPageIndex(*args: Any) -> Dict[str, Any]:
    """moveCursorToPageIndex([storeConfig,] cursor, newPageIndex) -> cursor."""
    return cast(Dict[str, Any], _call("moveCursorToPageIndex", args))


def _step(name: str, args: Sequence[Any]) -> Dict[str, Any]:
    """moveCursorToNextPage / moveCursorToPreviousPage: the table's step, checked before any call."""
    step = _API.cursor_steps[name]
    config, (cursor,) = split_config(args, 1)
    page = cursor["currentPageIndex"] + step["step"]
    if page < 0 or page >= cursor["totalPages"]:
        raise ArgumentError(step["error"])
    return cast(Dict[str, Any], _call(step["via"], (config, cursor, page)))


def moveCursorToNextPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToNextPage([storeConfig,] cursor) -> cursor; on the last page an
    :class:`ArgumentError` (cordova.force.js's check, before any call)."""
    return _step("moveCursorToNextPage", args)


def moveCursorToPreviousPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToPreviousPage([storeConfig,] cursor) -> cursor; on the first page an
    :class:`ArgumentError` (cordova.force.js's check, before any call)."""
    return _step("moveCursorToPreviousPage", args)


def closeCursor(*args: Any) -> str:
    """closeCursor([storeConfig,] cursor) -> "OK"."""
    return cast(str, _call("closeCursor", args))


def getDatabaseSize(*args: Any) -> int:
    """getDatabaseSize([storeConfig]) -> bytes."""
    return cast(int, _call("getDatabaseSize", args))


def getAllStores() -> List[Dict[str, Any]]:
    """getAllStores() -> the user stores, ``[{"storeName", "isGlobalStore"}]``."""
    return cast(List[Dict[str, Any]], _call("getAllStores", ()))


def getAllGlobalStores() -> List[Dict[str, Any]]:
    """getAllGlobalStores() -> the global stores, ``[{"storeName", "isGlobalStore"}]``."""
    return cast(List[Dict[str, Any]], _call("getAllGlobalStores", ()))


def removeStore(storeConfig: Any) -> bool:
    """removeStore(storeConfig) -> True: closes the store if it is open, then deletes it."""
    return cast(bool, cordova.call(_API.service, _API.function("removeStore").action, storeConfig, {}))


def removeAllStores() -> bool:
    """removeAllStores() -> True: every user store."""
    return cast(bool, _call("removeAllStores", ()))


def removeAllGlobalStores() -> bool:
    """removeAllGlobalStores() -> True: every global store."""
    return cast(bool, _call("removeAllGlobalStores", ()))


def showInspector(*args: Any) -> Dict[str, Any]:
    """showInspector([storeConfig]) -> ``{"url"}`` of the store inspector running for the root (open
    it in a browser); without one, a :class:`StateError` gives the command that starts one."""
    return cast(Dict[str, Any], _call("showInspector", args))


def addSoupListener(*args: Any) -> int:
    """addSoupListener([storeConfig,] [soupName, [options]]) -> the listener's id: each commit that
    touches the soup (None or missing: any soup) is a ``"smartstoreChanged"`` event
    (:func:`syncstore.cordova.add_event_listener`) whose detail is the notice (see
    :class:`syncstore.SoupNotice`) plus ``listenerId``, ``isGlobalStore`` and ``storeName``.
    ``options``: ``{"minIntervalMs": n}``, the least time between two events."""
    return cast(int, _call("addSoupListener", args))


def addQueryListener(*args: Any) -> int:
    """addQueryListener([storeConfig,] soupName, querySpec, [options]) -> the listener's id: the
    query's result now (origin ``"initial"``, maybe before this returns) and after each commit
    that changes it, as ``"smartstoreChanged"`` events (see :class:`syncstore.QueryNotice`).
    ``querySpec`` as :func:`querySoup` takes it, or a smart spec or Smart SQL text."""
    return cast(int, _call("addQueryListener", args))


def removeListener(*args: Any) -> str:
    """removeListener([storeConfig,] listenerId) -> "OK": no event of it comes after this returns
    (an unknown id is fine)."""
    return cast(str, _call("removeListener", args))


# The builders' defaults, as the library's table gives them (the signatures show them).
_ORDER = cast(str, _cordova_api.query_spec_default("order"))
_PAGE_SIZE = cast(int, _cordova_api.query_spec_default("pageSize"))


def buildAllQuerySpec(path: Optional[str] = None, order: str = _ORDER, pageSize: int = _PAGE_SIZE,
                      selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """All entries (a range with null keys), ordered by ``path``."""
    return _cordova_api.build_query_spec("buildAllQuerySpec", path, order, pageSize, selectPaths)


def buildExactQuerySpec(path: str, matchKey: Any, pageSize: int = _PAGE_SIZE, order: str = _ORDER,
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries whose ``path`` equals ``matchKey``."""
    return _cordova_api.build_query_spec("buildExactQuerySpec", path, matchKey, pageSize, order, orderPath, selectPaths)


def buildRangeQuerySpec(path: str, beginKey: Any, endKey: Any, order: str = _ORDER, pageSize: int = _PAGE_SIZE,
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries with ``beginKey <= path <= endKey`` (a None key is open)."""
    return _cordova_api.build_query_spec("buildRangeQuerySpec", path, beginKey, endKey, order, pageSize, orderPath,
                                         selectPaths)


def buildLikeQuerySpec(path: str, likeKey: str, order: str = _ORDER, pageSize: int = _PAGE_SIZE,
                       orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries whose ``path`` is LIKE ``likeKey``."""
    return _cordova_api.build_query_spec("buildLikeQuerySpec", path, likeKey, order, pageSize, orderPath, selectPaths)


def buildMatchQuerySpec(path: Optional[str], matchKey: str, order: str = _ORDER, pageSize: int = _PAGE_SIZE,
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Full-text match of ``matchKey`` on ``path`` (None: every full_text index)."""
    return _cordova_api.build_query_spec("buildMatchQuerySpec", path, matchKey, order, pageSize, orderPath, selectPaths)


def buildSmartQuerySpec(smartSql: str, pageSize: int = _PAGE_SIZE) -> Dict[str, Any]:
    """A Smart SQL query spec."""
    return _cordova_api.build_query_spec("buildSmartQuerySpec", smartSql, pageSize)


# Every facade above is a row of the library's table (an ImportError names any that is not).
_API.check([name for name in __all__ if name not in ("init", "close_all") and not name.startswith("build")])
