"""The Cordova ``smartstore`` API: same function names and argument orders, returning values.

Every store function takes an optional leading storeConfig (``{"storeName", "isGlobalStore"}`` or
a bool) like the hybrid JS API; the success callback's value is returned instead, and the error
callback becomes a raised :class:`SyncStoreError`. Call :func:`init` with a root directory first.
Values, cursors (``cursorId``, ``currentPageOrderedEntries``...) and error messages are the
plugin's own: each function forwards to the library's dispatcher (:mod:`syncstore.cordova`)::

    from syncstore import smartstore
    smartstore.init("/tmp/stores")
    smartstore.registerSoup("contacts", [{"path": "Name", "type": "string"}])
    smartstore.upsertSoupEntries("contacts", [{"Name": "Ada"}])
    cursor = smartstore.querySoup("contacts", smartstore.buildAllQuerySpec("Name"))
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, cast

from . import cordova
from .cordova import close_all, init, split_config
from .errors import ArgumentError
from .plugin import SMARTSTORE

__all__ = ["init", "close_all", "registerSoup", "removeSoup", "soupExists", "getSoupIndexSpecs", "alterSoup",
           "reIndexSoup", "clearSoup", "querySoup", "runSmartQuery", "retrieveSoupEntries", "upsertSoupEntries",
           "upsertSoupEntriesWithExternalId", "removeFromSoup", "moveCursorToPageIndex", "moveCursorToNextPage",
           "moveCursorToPreviousPage", "closeCursor", "getDatabaseSize", "getAllStores", "getAllGlobalStores",
           "removeStore", "removeAllStores", "removeAllGlobalStores", "showInspector", "buildAllQuerySpec",
           "buildExactQuerySpec", "buildRangeQuerySpec", "buildLikeQuerySpec", "buildMatchQuerySpec",
           "buildSmartQuerySpec"]


def _exec(action: str, config: Any, **fields: Any) -> Any:
    return cordova.call(SMARTSTORE, action, config, fields)


def registerSoup(*args: Any) -> str:
    """registerSoup([storeConfig,] soupName, indexSpecs) -> soupName."""
    config, (soup, specs) = split_config(args, 2)
    return cast(str, _exec("pgRegisterSoup", config, soupName=soup, indexes=specs))


def removeSoup(*args: Any) -> str:
    """removeSoup([storeConfig,] soupName) -> "OK"."""
    config, (soup,) = split_config(args, 1)
    return cast(str, _exec("pgRemoveSoup", config, soupName=soup))


def soupExists(*args: Any) -> bool:
    """soupExists([storeConfig,] soupName) -> bool."""
    config, (soup,) = split_config(args, 1)
    return cast(bool, _exec("pgSoupExists", config, soupName=soup))


def getSoupIndexSpecs(*args: Any) -> List[Any]:
    """getSoupIndexSpecs([storeConfig,] soupName) -> index specs."""
    config, (soup,) = split_config(args, 1)
    return cast(List[Any], _exec("pgGetSoupIndexSpecs", config, soupName=soup))


def alterSoup(*args: Any) -> str:
    """alterSoup([storeConfig,] soupName, indexSpecs, reIndexData) -> soupName."""
    config, (soup, specs, reindex) = split_config(args, 3)
    return cast(str, _exec("pgAlterSoup", config, soupName=soup, indexes=specs, reIndexData=reindex))


def reIndexSoup(*args: Any) -> str:
    """reIndexSoup([storeConfig,] soupName, paths) -> soupName."""
    config, (soup, paths) = split_config(args, 2)
    return cast(str, _exec("pgReIndexSoup", config, soupName=soup, paths=paths))


def clearSoup(*args: Any) -> str:
    """clearSoup([storeConfig,] soupName) -> "OK"."""
    config, (soup,) = split_config(args, 1)
    return cast(str, _exec("pgClearSoup", config, soupName=soup))


def querySoup(*args: Any) -> Dict[str, Any]:
    """querySoup([storeConfig,] soupName, querySpec) -> cursor (first page; close it with
    :func:`closeCursor`)."""
    config, (soup, spec) = split_config(args, 2)
    return cast(Dict[str, Any], _exec("pgQuerySoup", config, soupName=soup, querySpec=spec))


def runSmartQuery(*args: Any) -> Dict[str, Any]:
    """runSmartQuery([storeConfig,] querySpec) -> cursor (first page). Smart SQL text stands for
    ``buildSmartQuerySpec(text)``."""
    config, (spec,) = split_config(args, 1)
    if isinstance(spec, str):
        spec = buildSmartQuerySpec(spec)
    return cast(Dict[str, Any], _exec("pgRunSmartQuery", config, querySpec=spec))


def retrieveSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """retrieveSoupEntries([storeConfig,] soupName, entryIds) -> entries."""
    config, (soup, ids) = split_config(args, 2)
    return cast(List[Any], _exec("pgRetrieveSoupEntries", config, soupName=soup, entryIds=ids))


def upsertSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntries([storeConfig,] soupName, entries) -> stored entries."""
    config, (soup, entries) = split_config(args, 2)
    return upsertSoupEntriesWithExternalId(config, soup, entries, "_soupEntryId")


def upsertSoupEntriesWithExternalId(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntriesWithExternalId([storeConfig,] soupName, entries, externalIdPath) -> stored entries."""
    config, (soup, entries, path) = split_config(args, 3)
    return cast(List[Any], _exec("pgUpsertSoupEntries", config, soupName=soup, entries=entries, externalIdPath=path))


def removeFromSoup(*args: Any) -> str:
    """removeFromSoup([storeConfig,] soupName, entryIdsOrQuerySpec) -> "OK": a list is entry ids,
    anything else a query spec (as cordova.force.js tells them apart)."""
    config, (soup, what) = split_config(args, 2)
    if isinstance(what, (list, tuple)):
        return cast(str, _exec("pgRemoveFromSoup", config, soupName=soup, entryIds=what))
    return cast(str, _exec("pgRemoveFromSoup", config, soupName=soup, querySpec=what))


def moveCursorToPageIndex(*args: Any) -> Dict[str, Any]:
    """moveCursorToPageIndex([storeConfig,] cursor, newPageIndex) -> cursor."""
    config, (cursor, page) = split_config(args, 2)
    return cast(Dict[str, Any], _exec("pgMoveCursorToPageIndex", config, cursorId=cursor["cursorId"], index=page))


def moveCursorToNextPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToNextPage([storeConfig,] cursor) -> cursor; on the last page an
    :class:`ArgumentError` (cordova.force.js's check, before any call)."""
    config, (cursor,) = split_config(args, 1)
    page = cursor["currentPageIndex"] + 1
    if page >= cursor["totalPages"]:
        raise ArgumentError("moveCursorToNextPage called while on last page", code=1)
    return moveCursorToPageIndex(config, cursor, page)


def moveCursorToPreviousPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToPreviousPage([storeConfig,] cursor) -> cursor; on the first page an
    :class:`ArgumentError` (cordova.force.js's check, before any call)."""
    config, (cursor,) = split_config(args, 1)
    page = cursor["currentPageIndex"] - 1
    if page < 0:
        raise ArgumentError("moveCursorToPreviousPage called while on first page", code=1)
    return moveCursorToPageIndex(config, cursor, page)


def closeCursor(*args: Any) -> str:
    """closeCursor([storeConfig,] cursor) -> "OK"."""
    config, (cursor,) = split_config(args, 1)
    return cast(str, _exec("pgCloseCursor", config, cursorId=cursor["cursorId"]))


def getDatabaseSize(*args: Any) -> int:
    """getDatabaseSize([storeConfig]) -> bytes."""
    config, _ = split_config(args, 0)
    return cast(int, _exec("pgGetDatabaseSize", config))


def getAllStores() -> List[Dict[str, Any]]:
    """getAllStores() -> the user stores, ``[{"storeName", "isGlobalStore"}]``."""
    return cast(List[Dict[str, Any]], cordova.plugin().exec(SMARTSTORE, "pgGetAllStores", [{}]))


def getAllGlobalStores() -> List[Dict[str, Any]]:
    """getAllGlobalStores() -> the global stores, ``[{"storeName", "isGlobalStore"}]``."""
    return cast(List[Dict[str, Any]], cordova.plugin().exec(SMARTSTORE, "pgGetAllGlobalStores", [{}]))


def removeStore(storeConfig: Any) -> bool:
    """removeStore(storeConfig) -> True: closes the store if it is open, then deletes it."""
    return cast(bool, _exec("pgRemoveStore", storeConfig))


def removeAllStores() -> bool:
    """removeAllStores() -> True: every user store."""
    return cast(bool, cordova.plugin().exec(SMARTSTORE, "pgRemoveAllStores", [{}]))


def removeAllGlobalStores() -> bool:
    """removeAllGlobalStores() -> True: every global store."""
    return cast(bool, cordova.plugin().exec(SMARTSTORE, "pgRemoveAllGlobalStores", [{}]))


def showInspector(*args: Any) -> Dict[str, Any]:
    """showInspector([storeConfig]) -> ``{"url"}`` of the store inspector running for the root (open
    it in a browser); without one, a :class:`StateError` gives the command that starts one."""
    config, _ = split_config(args, 0)
    return cast(Dict[str, Any], _exec("pgShowInspector", config))


def _spec(query_type: str, path: Optional[str], order: str, page_size: int, order_path: Optional[str],
          select_paths: Optional[Sequence[str]], **keys: Any) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"queryType": query_type, "indexPath": path, "order": order or "ascending",
                            "pageSize": page_size or 10, "orderPath": order_path or path}
    spec.update(keys)
    if select_paths is not None:
        spec["selectPaths"] = list(select_paths)
    return spec


def buildAllQuerySpec(path: Optional[str] = None, order: str = "ascending", pageSize: int = 10,
                      selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """All entries (a range with null keys), ordered by ``path``."""
    return _spec("range", path, order, pageSize, path, selectPaths, beginKey=None, endKey=None)


def buildExactQuerySpec(path: str, matchKey: Any, pageSize: int = 10, order: str = "ascending",
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries whose ``path`` equals ``matchKey``."""
    return _spec("exact", path, order, pageSize, orderPath, selectPaths, matchKey=matchKey)


def buildRangeQuerySpec(path: str, beginKey: Any, endKey: Any, order: str = "ascending", pageSize: int = 10,
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries with ``beginKey <= path <= endKey`` (a None key is open)."""
    return _spec("range", path, order, pageSize, orderPath, selectPaths, beginKey=beginKey, endKey=endKey)


def buildLikeQuerySpec(path: str, likeKey: str, order: str = "ascending", pageSize: int = 10,
                       orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Entries whose ``path`` is LIKE ``likeKey``."""
    return _spec("like", path, order, pageSize, orderPath, selectPaths, likeKey=likeKey)


def buildMatchQuerySpec(path: Optional[str], matchKey: str, order: str = "ascending", pageSize: int = 10,
                        orderPath: Optional[str] = None, selectPaths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Full-text match of ``matchKey`` on ``path`` (None: every full_text index)."""
    return _spec("match", path, order, pageSize, orderPath, selectPaths, matchKey=matchKey)


def buildSmartQuerySpec(smartSql: str, pageSize: int = 10) -> Dict[str, Any]:
    """A Smart SQL query spec."""
    return {"queryType": "smart", "smartSql": smartSql, "pageSize": pageSize or 10}
