"""The Cordova ``smartstore`` API: same function names and argument orders, returning values.

Every store function takes an optional leading storeConfig (``{"storeName", "isGlobalStore"}`` or
a bool) like the hybrid JS API; the success callback's value is returned instead, and the error
callback becomes a raised :class:`SyncStoreError`. Call :func:`init` with a root directory first.
Cursors are the plain JSON objects of the JS API (``cursorId``, ``currentPageOrderedEntries``...)::

    from syncstore import smartstore
    smartstore.init("/tmp/stores")
    smartstore.registerSoup("contacts", [{"path": "Name", "type": "string"}])
    smartstore.upsertSoupEntries("contacts", [{"Name": "Ada"}])
    cursor = smartstore.querySoup("contacts", smartstore.buildAllQuerySpec("Name"))
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from . import store as _store
from .cordova import close_all, init, split_config, store_for
from .errors import ArgumentError

__all__ = ["init", "close_all", "registerSoup", "removeSoup", "soupExists", "getSoupIndexSpecs", "alterSoup",
           "reIndexSoup", "clearSoup", "querySoup", "runSmartQuery", "retrieveSoupEntries", "upsertSoupEntries",
           "upsertSoupEntriesWithExternalId", "removeFromSoup", "moveCursorToPageIndex", "moveCursorToNextPage",
           "moveCursorToPreviousPage", "closeCursor", "getDatabaseSize", "getAllStores", "getAllGlobalStores",
           "removeStore", "removeAllStores", "removeAllGlobalStores", "buildAllQuerySpec", "buildExactQuerySpec",
           "buildRangeQuerySpec", "buildLikeQuerySpec", "buildMatchQuerySpec", "buildSmartQuerySpec"]


def _root() -> str:
    from . import cordova
    if cordova._root is None:
        raise ArgumentError("call syncstore.smartstore.init(root_dir) first", code=1)
    return cordova._root


def _cursor_json(cursor: Any) -> Dict[str, Any]:
    return {"cursorId": cursor.cursor_id, "currentPageIndex": cursor.current_page_index,
            "pageSize": cursor.page_size, "totalEntries": cursor.total_entries, "totalPages": cursor.total_pages,
            "currentPageOrderedEntries": cursor.entries}


def registerSoup(*args: Any) -> str:
    """registerSoup([storeConfig,] soupName, indexSpecs) -> soupName."""
    config, (soup, specs) = split_config(args, 2)
    store_for(config).register_soup(soup, specs)
    return str(soup)


def removeSoup(*args: Any) -> None:
    """removeSoup([storeConfig,] soupName)."""
    config, (soup,) = split_config(args, 1)
    store_for(config).remove_soup(soup)


def soupExists(*args: Any) -> bool:
    """soupExists([storeConfig,] soupName) -> bool."""
    config, (soup,) = split_config(args, 1)
    return store_for(config).soup_exists(soup)


def getSoupIndexSpecs(*args: Any) -> List[Any]:
    """getSoupIndexSpecs([storeConfig,] soupName) -> index specs."""
    config, (soup,) = split_config(args, 1)
    return list(store_for(config).get_soup_index_specs(soup))


def alterSoup(*args: Any) -> str:
    """alterSoup([storeConfig,] soupName, indexSpecs, reIndexData) -> soupName."""
    config, (soup, specs, reindex) = split_config(args, 3)
    store_for(config).alter_soup(soup, specs, bool(reindex))
    return str(soup)


def reIndexSoup(*args: Any) -> str:
    """reIndexSoup([storeConfig,] soupName, paths) -> soupName."""
    config, (soup, paths) = split_config(args, 2)
    store_for(config).reindex_soup(soup, paths)
    return str(soup)


def clearSoup(*args: Any) -> None:
    """clearSoup([storeConfig,] soupName)."""
    config, (soup,) = split_config(args, 1)
    store_for(config).clear_soup(soup)


def querySoup(*args: Any) -> Dict[str, Any]:
    """querySoup([storeConfig,] soupName, querySpec) -> cursor JSON (first page)."""
    config, (soup, spec) = split_config(args, 2)
    cursor = store_for(config).query_soup(soup, spec)
    cursor.detach()  # the JS API closes cursors explicitly (closeCursor)
    return _cursor_json(cursor)


def runSmartQuery(*args: Any) -> Dict[str, Any]:
    """runSmartQuery([storeConfig,] querySpec or Smart SQL text) -> cursor JSON (first page)."""
    config, (spec,) = split_config(args, 1)
    cursor = store_for(config).run_smart_query(spec)
    cursor.detach()
    return _cursor_json(cursor)


def retrieveSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """retrieveSoupEntries([storeConfig,] soupName, entryIds) -> entries."""
    config, (soup, ids) = split_config(args, 2)
    return store_for(config).retrieve(soup, ids)


def upsertSoupEntries(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntries([storeConfig,] soupName, entries) -> stored entries."""
    config, (soup, entries) = split_config(args, 2)
    return store_for(config).upsert(soup, entries)


def upsertSoupEntriesWithExternalId(*args: Any) -> List[Dict[str, Any]]:
    """upsertSoupEntriesWithExternalId([storeConfig,] soupName, entries, externalIdPath) -> stored entries."""
    config, (soup, entries, path) = split_config(args, 3)
    return store_for(config).upsert(soup, entries, path)


def removeFromSoup(*args: Any) -> None:
    """removeFromSoup([storeConfig,] soupName, entryIdsOrQuerySpec)."""
    config, (soup, what) = split_config(args, 2)
    store = store_for(config)
    if isinstance(what, dict):
        store.remove_by_query(soup, what)
    else:
        store.remove(soup, what)


def _move(config: Any, cursor: Dict[str, Any], page: int) -> Dict[str, Any]:
    moved = store_for(config).move_cursor_to_page(int(cursor["cursorId"]), page)
    return dict(moved)


def moveCursorToPageIndex(*args: Any) -> Dict[str, Any]:
    """moveCursorToPageIndex([storeConfig,] cursor, newPageIndex) -> cursor JSON."""
    config, (cursor, page) = split_config(args, 2)
    return _move(config, cursor, int(page))


def moveCursorToNextPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToNextPage([storeConfig,] cursor) -> cursor JSON."""
    config, (cursor,) = split_config(args, 1)
    return _move(config, cursor, int(cursor["currentPageIndex"]) + 1)


def moveCursorToPreviousPage(*args: Any) -> Dict[str, Any]:
    """moveCursorToPreviousPage([storeConfig,] cursor) -> cursor JSON."""
    config, (cursor,) = split_config(args, 1)
    return _move(config, cursor, int(cursor["currentPageIndex"]) - 1)


def closeCursor(*args: Any) -> None:
    """closeCursor([storeConfig,] cursor)."""
    config, (cursor,) = split_config(args, 1)
    store_for(config).close_cursor(int(cursor["cursorId"]))


def getDatabaseSize(*args: Any) -> int:
    """getDatabaseSize([storeConfig]) -> bytes."""
    config, _ = split_config(args, 0)
    return store_for(config).database_size()


def getAllStores() -> List[str]:
    """getAllStores() -> user store names."""
    return _store.list_stores(_root(), False)


def getAllGlobalStores() -> List[str]:
    """getAllGlobalStores() -> global store names."""
    return _store.list_stores(_root(), True)


def _close_matching(is_global: Optional[bool], name: Optional[str]) -> None:
    from . import cordova
    with cordova._lock:
        keys = [k for k in cordova._stores if (is_global is None or k[0] == is_global) and (name is None or k[1] == name)]
        stores = [cordova._stores.pop(k) for k in keys]
    for store in stores:
        store.close()


def removeStore(storeConfig: Any) -> None:
    """removeStore(storeConfig): closes the store if this module opened it, then deletes it."""
    from .cordova import config_key
    is_global, name = config_key(storeConfig)
    _close_matching(is_global, name)
    _store.remove_store(_root(), {"isGlobalStore": is_global, "storeName": name})


def removeAllStores() -> None:
    """removeAllStores(): every user store."""
    _close_matching(False, None)
    _store.remove_all_stores(_root(), False)


def removeAllGlobalStores() -> None:
    """removeAllGlobalStores(): every global store."""
    _close_matching(True, None)
    _store.remove_all_stores(_root(), True)


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
