"""The store: soups, entries, queries and syncs of one SQLite database (``syncstore_store``)."""

from __future__ import annotations

import ctypes
import json
import os
import weakref
from types import TracebackType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Type, Union, cast

from . import _callbacks, _lib, targets
from ._handle import Handle
from .cursor import Cursor
from .errors import ArgumentError, NotFoundError
from .sync import RestartListener, SyncRun, wait_sync
from .types import (Entry, IndexSpec, LiveSyncCallback, LiveSyncState, PathLike, QueryCallback, QueryNotice, QuerySpec,
                    SoupCallback, SoupNotice, StoreConfig, SyncCallback, SyncState)
from .watch import Watch, _interval


__all__ = ["Store", "list_stores", "remove_store", "remove_all_stores", "store_config_json"]

SyncRef = Union[int, str, SyncRun]


# Soup names as the C calls take them, encoded once: a lookup names the same few soups each time.
_soup_names: Dict[Optional[str], Optional[bytes]] = {}


_out_slots = _lib.out_slots
_encode_dict = _lib.c_encode
_PAGE_0 = ctypes.c_int64(0)


def _page_arg(page_index: Any) -> ctypes.c_int64:
    """A page index as the C call takes it; one out of int64's range is an ArgumentError (ctypes
    would wrap it)."""
    page = int(page_index)
    if not -(1 << 63) <= page < (1 << 63):
        raise ArgumentError(f"page_index must be 0 or more and fit in 64 bits (got {page})")
    return ctypes.c_int64(page)


def _soup_name(soup: Optional[str]) -> Optional[bytes]:
    name = _lib.enc(soup)
    if len(_soup_names) < 4096:
        _soup_names[soup] = name
    return name


def store_config_json(config: StoreConfig) -> Optional[bytes]:
    """The storeConfig JSON for a config value: a mapping, a bool (isGlobalStore), a store name,
    or None (the default user store)."""
    if config is None:
        return None
    if isinstance(config, bool):
        return _lib.dump({"isGlobalStore": config})
    if isinstance(config, str):
        return _lib.dump({"storeName": config})
    return _lib.dump(dict(config))


def _redacted(config: StoreConfig) -> StoreConfig:
    """The config as shown in reprs, logs and messages: a key is replaced by ``"***"``."""
    if isinstance(config, Mapping) and config.get("key") is not None:
        return {**config, "key": "***"}
    return config


def _path(value: PathLike) -> bytes:
    text = os.fspath(value)
    encoded = _lib.enc(text)
    assert encoded is not None
    return encoded


def _opt_json(value: Any) -> Optional[bytes]:
    return None if value is None else _lib.dump(value)


def _object_json(value: Union[Mapping[str, Any], str], what: str) -> bytes:
    """JSON text of an object argument (a query spec, a remote, a target): a mapping, or JSON text
    already written (a str, as the Node binding takes it; the library checks it). Anything else
    is an :class:`ArgumentError` naming the argument."""
    if type(value) is dict:
        return _lib.dump(value)  # no copy: the common case, and a lookup's largest cost here
    if isinstance(value, str):
        return _lib.dump(value)  # before the Mapping check: an ABC test costs a lookup 0.5 us
    if isinstance(value, Mapping):
        return _lib.dump(dict(value))
    raise ArgumentError(f"{what} must be a mapping (dict) or JSON text (str), not {type(value).__name__}")


def list_stores(root: PathLike, is_global: bool = False) -> List[str]:
    """Names of the user (or global) stores under ``root``, sorted."""
    return cast(List[str], _lib.call_json(_lib.lib().syncstore_list_stores, _path(root), int(is_global)))


def remove_store(root: PathLike, config: StoreConfig = None) -> None:
    """Deletes one store's files (BusyError if open in this process, NotFoundError if missing)."""
    _lib.call(_lib.lib().syncstore_remove_store, _path(root), store_config_json(config))


def remove_all_stores(root: PathLike, is_global: bool = False) -> None:
    """Deletes every user (or global) store under ``root`` (BusyError, nothing removed, if one is open)."""
    _lib.call(_lib.lib().syncstore_remove_all_stores, _path(root), int(is_global))


class Store:
    """An open store: ``Store(root_dir, config)``; a context manager that closes it.

    ``config`` is a storeConfig mapping (``{"storeName": "app", "isGlobalStore": False}``), a
    store name, a bool (global store or not) or None (the default user store). A mapping with
    ``"key"`` (a passphrase, or ``"x'<64 hex digits>'"`` for a raw 256-bit key) and optionally
    ``"kdfIter"`` (PBKDF2 iterations, default 256000; the Mobile SDK uses 4000) opens or creates
    an encrypted store in SQLCipher 4's file format (another ``"x'...'"`` is an
    :class:`ArgumentError`): a wrong or missing key raises
    :class:`AuthError`, a damaged encrypted page :class:`StorageError`. The key never appears in
    the store's repr or in messages. Methods map the C
    functions of ``syncstore.h`` one to one and raise a :class:`SyncStoreError` subclass on
    failure; the store is unchanged then. A store that is never closed is closed when it is
    garbage collected or at interpreter exit (its running syncs are stopped and finish first).
    Every method may be called from any thread.
    """

    def __init__(self, root: PathLike, config: StoreConfig = None) -> None:
        ptr = ctypes.c_void_p()
        root_path, config_json = _path(root), store_config_json(config)
        _lib.call(_lib.lib().syncstore_open, root_path, config_json, ctypes.byref(ptr))
        assert ptr.value is not None
        label = f"{os.fspath(root)}:{_redacted(config)!r}"
        self._handle = Handle(ptr.value, label)
        #: Exceptions raised by :meth:`restart_syncs` callbacks (also logged).
        self.callback_errors: List[BaseException] = []
        self._listeners: Dict[int, int] = {}  # change listener token -> callback registry key
        # How a watch opens its own handle of this store (the key too: never shown).
        self._reopen: Tuple[bytes, Optional[bytes]] = (root_path, config_json)
        self._watches: "weakref.WeakSet[Watch[Any]]" = weakref.WeakSet()
        self._ready_key: Optional[int] = None  # buffer_notifications' ready callback
        self._finalizer = weakref.finalize(self, self._handle.close_quietly)

    # -- lifetime --

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self._handle.label}{' closed' if self.closed else ''}>"

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._handle.closed

    def close(self) -> None:
        """Closes the store: stops the syncs started through it and waits for their last
        callbacks, and closes the watches made from it. Closing again is a no-op. Not allowed
        inside a sync or listener callback (StateError)."""
        self._handle.close()
        self._finalizer.detach()
        for watch in list(self._watches):
            watch.close()

    def _p(self) -> ctypes.c_void_p:
        return self._handle.arg()

    # -- store --

    def database_size(self) -> int:
        """Size of the database in bytes as of the last commit."""
        out = ctypes.c_int64()
        _lib.call(_lib.lib().syncstore_database_size, self._p(), ctypes.byref(out))
        return out.value

    def load_store_config(self, path: PathLike) -> None:
        """Registers the soups of a userstore.json / globalstore.json file (existing ones skipped)."""
        _lib.call(_lib.lib().syncstore_load_store_config, self._p(), _path(path))

    def change_key(self, new_key: Optional[str]) -> None:
        """Re-encrypts the store under ``new_key`` (a passphrase or ``"x'<64 hex digits>'"``), or
        decrypts it with None, atomically: a crash at any point leaves a store that opens with
        exactly one of the old and new keys. The new key uses the ``kdfIter`` of the config the
        store was opened with, a plaintext store's too (256000 when the config has none: open a
        plaintext store with ``{"storeName": ..., "kdfIter": 4000}`` for the Mobile SDK's setting).
        Every handle to the store in this process keeps working; later opens need the new key.
        :class:`BusyError` (retryable, nothing changed) while a sync of the store runs or another
        process has it open; :class:`ArgumentError` for an empty key. Not from a sync callback
        (:class:`StateError`)."""
        _lib.call(_lib.lib().syncstore_change_key, self._p(), _lib.enc(new_key))
        root, config_json = self._reopen
        config = json.loads(config_json) if config_json is not None else {}
        if new_key is None:
            config.pop("key", None)
        else:
            config["key"] = new_key
        self._reopen = (root, _lib.dump(config))

    # -- soups --

    def register_soup(self, soup: str, index_specs: Sequence[IndexSpec]) -> None:
        """Creates a soup with its indexes (an existing soup is left as is)."""
        _lib.call(_lib.lib().syncstore_register_soup, self._p(), _lib.enc(soup), _lib.dump(list(index_specs)))

    def soup_exists(self, soup: str) -> bool:
        """True if the soup exists."""
        out = ctypes.c_int()
        _lib.call(_lib.lib().syncstore_soup_exists, self._p(), _lib.enc(soup), ctypes.byref(out))
        return bool(out.value)

    def remove_soup(self, soup: str) -> None:
        """Drops a soup and its entries (a missing soup is fine)."""
        _lib.call(_lib.lib().syncstore_remove_soup, self._p(), _lib.enc(soup))

    def clear_soup(self, soup: str) -> None:
        """Deletes every entry of a soup, keeping its indexes."""
        _lib.call(_lib.lib().syncstore_clear_soup, self._p(), _lib.enc(soup))

    def get_soup_index_specs(self, soup: str) -> List[IndexSpec]:
        """The soup's index specs, in registration order."""
        return cast(List[IndexSpec], _lib.call_json(_lib.lib().syncstore_get_soup_index_specs, self._p(),
                                                    _lib.enc(soup)))

    def alter_soup(self, soup: str, index_specs: Sequence[IndexSpec], reindex: bool = True) -> None:
        """Replaces the soup's index specs, rebuilding every index when ``reindex``."""
        _lib.call(_lib.lib().syncstore_alter_soup, self._p(), _lib.enc(soup), _lib.dump(list(index_specs)),
                  int(reindex))

    def reindex_soup(self, soup: str, paths: Sequence[str]) -> None:
        """Recomputes the index values of the given indexed paths for every entry."""
        _lib.call(_lib.lib().syncstore_reindex_soup, self._p(), _lib.enc(soup), _lib.dump(list(paths)))

    # -- entries --

    def upsert(self, soup: str, entries: Union[Entry, Sequence[Entry], str], external_id_path: Optional[str] = None,
               *, return_entries: bool = True) -> List[Entry]:
        """Inserts or updates entries (a dict, a sequence of dicts, or JSON text already written)
        in one transaction; returns the stored entries in order (an empty list with
        ``return_entries=False``, which skips decoding them)."""
        payload: Any = entries if isinstance(entries, (Mapping, str)) else list(entries)
        if not return_entries:
            _lib.call(_lib.lib().syncstore_upsert, self._p(), _lib.enc(soup), _lib.dump(payload),
                      _lib.enc(external_id_path), None)
            return []
        return cast(List[Entry], _lib.call_json(_lib.lib().syncstore_upsert, self._p(), _lib.enc(soup),
                                                _lib.dump(payload), _lib.enc(external_id_path)))

    def retrieve(self, soup: str, ids: Iterable[int]) -> List[Entry]:
        """The entries with these ids, in the order of the ids (missing ids skipped)."""
        return cast(List[Entry], _lib.call_json(_lib.lib().syncstore_retrieve, self._p(), _lib.enc(soup),
                                                _lib.dump([int(i) for i in ids])))

    def remove(self, soup: str, ids: Iterable[int]) -> None:
        """Deletes the entries with these ids (missing ids ignored)."""
        _lib.call(_lib.lib().syncstore_remove_entries, self._p(), _lib.enc(soup), _lib.dump([int(i) for i in ids]))

    def remove_by_query(self, soup: str, query_spec: QuerySpec) -> int:
        """Deletes every entry matching a (non-smart) query spec; returns how many."""
        count = ctypes.c_int64()
        _lib.call(_lib.lib().syncstore_remove_by_query, self._p(), _lib.enc(soup),
                  _object_json(query_spec, "the query spec"), ctypes.byref(count))
        return count.value

    # -- queries --

    def query_soup(self, soup: str, query_spec: QuerySpec) -> Cursor:
        """Runs a query spec (exact, range, like, match) and opens a :class:`Cursor` on page 0."""
        payload = _lib.call_json(_lib.lib().syncstore_query_soup, self._p(), _lib.enc(soup),
                                 _object_json(query_spec, "the query spec"))
        return Cursor(self._handle, payload)

    def run_smart_query(self, query: Union[QuerySpec, str], page_size: int = 10) -> Cursor:
        """Runs Smart SQL, given as a smart query spec (``{"queryType": "smart", "smartSql": ...,
        "pageSize": ...}``) or as the SQL text itself (pages of ``page_size`` rows); a
        :class:`Cursor`. Another type is an :class:`ArgumentError`."""
        if isinstance(query, str):
            spec: Any = {"queryType": "smart", "smartSql": query, "pageSize": page_size}
        elif isinstance(query, Mapping):
            spec = dict(query)
        else:
            raise ArgumentError("run_smart_query takes Smart SQL text (str) or a smart query spec (a mapping), "
                                f"not {type(query).__name__}")
        payload = _lib.call_json(_lib.lib().syncstore_run_smart_query, self._p(), _lib.dump(spec))
        return Cursor(self._handle, payload)

    def query(self, soup: str, query_spec: QuerySpec) -> List[Any]:
        """Every entry a query spec matches (all pages), the cursor closed afterwards."""
        with self.query_soup(soup, query_spec) as cursor:
            return list(cursor)

    def find(self, soup: Optional[str], query_spec: QuerySpec, page_index: int = 0) -> List[Any]:
        """One page (default the first) of a query's results, without a cursor or a count: the
        fastest lookup. Takes smart specs too (``soup`` may then be None). A page past the last
        is ``[]``."""
        # call_json inlined, with the C types made once (_lib.lookup_functions) and a dict spec
        # encoded here: a lookup is the call a host makes most, and each Python frame and ctypes
        # object is a twentieth of it.
        query_page, free = _lib.lookup_functions()
        try:
            slots = _out_slots.pop()
        except IndexError:
            slots = _lib.OutSlots()
        status = query_page(self._handle.arg(), _soup_names.get(soup) or _soup_name(soup),
                            "".join(_encode_dict(query_spec, 0)).encode()
                            if type(query_spec) is dict and _encode_dict else _object_json(query_spec, "the query spec"),
                            _PAGE_0 if page_index == 0 else _page_arg(page_index), slots.out_ref, slots.err_ref)
        if status != 0:
            error = _lib.error_of(status, slots.err)  # read before the slots go back
            _out_slots.append(slots)
            raise error
        raw = slots.text.value
        if raw is not None:
            free(slots.out)
        _out_slots.append(slots)
        return None if raw is None else _lib.parse(raw)  # type: ignore[return-value]

    def move_cursor_to_page(self, cursor_id: int, page_index: int) -> Any:
        """The raw cursor JSON after moving cursor ``cursor_id`` (see :class:`Cursor` for the
        object form)."""
        return _lib.call_json(_lib.lib().syncstore_cursor_move_to_page, self._p(), int(cursor_id), int(page_index))

    def close_cursor(self, cursor_id: int) -> None:
        """Closes a cursor by id (an unknown id is fine)."""
        _lib.call(_lib.lib().syncstore_cursor_close, self._p(), int(cursor_id))

    # -- change listeners and watches --

    def add_soup_listener(self, soup: Optional[str], callback: SoupCallback, *, min_interval_ms: int = 0) -> int:
        """Calls ``callback(notice)`` after the commits that changed ``soup`` (None: any soup), on
        the store's notifier thread, one notice per commit at most (commits made while one waits
        are merged into it); returns the token for :meth:`remove_listener`. ``notice``: a
        :class:`SoupNotice` (syncstore.h, "Listeners"). ``min_interval_ms``: the least time
        between two notices (0: none). The listener goes when this store closes. An exception
        the callback raises is logged (logger ``syncstore``) and dropped."""
        return self._add_listener(lambda key, token: _lib.call(
            _lib.lib().syncstore_add_soup_listener, self._p(), _lib.enc(soup), _callbacks.SYNC_THUNK, key, token),
            callback, min_interval_ms)

    def add_query_listener(self, query_spec: Union[QuerySpec, str], callback: QueryCallback, *,
                           soup: Optional[str] = None, min_interval_ms: int = 0) -> int:
        """Calls ``callback(notice)`` each time the result of a query changes, first at once with
        the current result, on the store's notifier thread; returns the token for
        :meth:`remove_listener`. ``query_spec``: a query spec (a mapping, or its JSON text) with
        ``"soupName"`` (or give ``soup``, as :meth:`query_soup` takes it), or a smart query
        spec (``{"queryType": "smart", "smartSql": ..., "pageSize": ...}``); its ``pageSize``
        is the size of the page each notice carries. ``notice``: a :class:`QueryNotice`.
        :class:`ArgumentError` for a spec the store cannot run, :class:`NotFoundError` for an
        unknown soup."""
        spec = _listener_spec(query_spec, soup)
        return self._add_listener(lambda key, token: _lib.call(
            _lib.lib().syncstore_add_query_listener, self._p(), spec, _callbacks.SYNC_THUNK, key, token),
            callback, min_interval_ms)

    def _add_listener(self, add: Callable[[int, Any], None], callback: Callable[[Any], object],
                      min_interval_ms: int) -> int:
        interval = _interval(min_interval_ms)
        listener = _ChangeListener(callback)
        key = _callbacks.register(listener)
        token = ctypes.c_void_p()
        try:
            add(key, ctypes.byref(token))
        except BaseException:
            _callbacks.unregister(key)
            raise
        assert token.value is not None
        self._handle.track(key)
        listener.token = token.value
        self._listeners[token.value] = key
        if interval:
            try:
                self.set_listener_interval(token.value, interval)
            except BaseException:
                self.remove_listener(token.value)
                raise
        return token.value

    def set_listener_interval(self, token: int, min_interval_ms: int) -> None:
        """Sets the least time between two notices of a listener (0: none; at most 3600000):
        commits made within it are merged into one notice, told when it has passed."""
        _lib.call(_lib.lib().syncstore_set_listener_interval, self._p(), ctypes.c_void_p(token),
                  _interval(min_interval_ms))

    def remove_listener(self, token: int) -> None:
        """Removes a listener: no callback of it runs once this returns (from inside its own
        callback it returns at once)."""
        _lib.call(_lib.lib().syncstore_remove_listener, self._p(), ctypes.c_void_p(token))
        key = self._listeners.pop(token, None)
        if key is not None:
            _callbacks.unregister(key)

    def buffer_notifications(self, ready: Optional[Callable[[], object]] = None) -> None:
        """Buffers the notices of this store's listeners (those added before and after): their
        callbacks no longer run on the notifier thread but in :meth:`send_notifications`, on the
        thread that calls it (a GUI's thread, an event loop...). ``ready()`` is called on the
        notifier thread when a notice becomes pending and none was since the last send (its
        exceptions are logged). Calling this again replaces ``ready``; the store stays buffered
        until it is closed. Watches are not affected (each has a handle of its own)."""
        key = _callbacks.register(_ReadyListener(ready)) if ready is not None else None
        try:
            _lib.call(_lib.lib().syncstore_buffer_notifications, self._p(),
                      _callbacks.READY_THUNK if key is not None else _lib.READY_CALLBACK(), key)
        except BaseException:
            if key is not None:
                _callbacks.unregister(key)
            raise
        if key is not None:
            self._handle.track(key)
        previous, self._ready_key = self._ready_key, key
        if previous is not None:
            _callbacks.unregister(previous)

    def send_notifications(self) -> int:
        """Calls, on this thread, the callbacks of every notice pending for this buffered store's
        listeners; returns how many were called. :class:`StateError` when the store is not
        buffered, or from inside a listener callback."""
        sent = ctypes.c_int64()
        _lib.call(_lib.lib().syncstore_send_notifications, self._p(), ctypes.byref(sent))
        return sent.value

    def watch_soup(self, soup: Optional[str], *, min_interval_ms: int = 0) -> Watch[SoupNotice]:
        """The notices of the commits that change ``soup`` (None: every soup) as a
        :class:`Watch`: ``for notice in store.watch_soup("contacts")``, ``async for`` too, or
        ``watch.get(timeout)``. It hears the commits made after this call, until it is closed
        (``with`` block, :meth:`Watch.close`, or this store's close). A consumer that falls
        behind gets the commits made meanwhile merged into one notice, never a queue.
        :class:`NotFoundError` for an unknown soup."""
        name = _lib.enc(soup)
        watch: Watch[SoupNotice] = Watch._open(self, lambda p, key: self._token_of(
            _lib.lib().syncstore_add_soup_listener, p, name, key), min_interval_ms,
            "every soup" if soup is None else f"soup {soup!r}")
        self._watches.add(watch)
        return watch

    def watch(self, query_spec: Union[QuerySpec, str], *, soup: Optional[str] = None,
              min_interval_ms: int = 0) -> Watch[QueryNotice]:
        """The notices of a query whose result changes, as a :class:`Watch`: the first (origin
        ``"initial"``) is the current result; each later one the new first page and what was
        added, removed or changed. ``query_spec`` and ``soup`` as :meth:`add_query_listener`
        takes them; errors as it raises them."""
        spec = _listener_spec(query_spec, soup)
        watch: Watch[QueryNotice] = Watch._open(self, lambda p, key: self._token_of(
            _lib.lib().syncstore_add_query_listener, p, spec, key), min_interval_ms, "a query")
        self._watches.add(watch)
        return watch

    @staticmethod
    def _token_of(fn: Any, p: ctypes.c_void_p, what: Optional[bytes], key: int) -> int:
        token = ctypes.c_void_p()
        _lib.call(fn, p, what, _callbacks.SYNC_THUNK, key, ctypes.byref(token))
        assert token.value is not None
        return token.value

    def _reopen_args(self) -> Tuple[bytes, Optional[bytes], str]:
        self._handle.arg()  # StateError once closed
        return self._reopen[0], self._reopen[1], self._handle.label

    def _forget_watch(self, watch: Watch[Any]) -> None:
        self._watches.discard(watch)

    # -- sync --

    def set_remote(self, remote: Union[Mapping[str, Any], str]) -> None:
        """Sets the store's remote (instanceUrl, accessToken, apiVersion, refresh settings...): a
        mapping, or its JSON text (e.g. read from a file)."""
        _lib.call(_lib.lib().syncstore_set_remote, self._p(), _object_json(remote, "the remote"))

    def _start(self, kind: str, callback: Optional[SyncCallback]) -> SyncRun:
        run = SyncRun(self._handle, kind, callback)
        self._handle.track(_callbacks.register(run))
        return run

    def _launch(self, run: SyncRun, fn: Any, *args: Any) -> SyncRun:
        try:
            fn(*args)
        except BaseException:
            _callbacks.unregister(run.key)
            raise
        return run

    def sync_down(self, target: Mapping[str, Any], soup: str, options: Optional[Mapping[str, Any]] = None,
                  name: Optional[str] = None, callback: Optional[SyncCallback] = None) -> SyncRun:
        """Creates a sync down and starts its first run; returns the :class:`SyncRun`.
        ``callback(state)`` gets every state change on the sync worker thread."""
        target_json = _object_json(target, "the sync target")  # before the run is registered
        run = self._start("syncDown", callback)
        out = ctypes.c_int64()
        self._launch(run, _lib.call, _lib.lib().syncstore_sync_down, self._p(), target_json, _lib.enc(soup),
                     _opt_json(options), _lib.enc(name), _callbacks.SYNC_THUNK, run.key, ctypes.byref(out))
        run.sync_id = out.value
        return run

    def sync_up(self, soup: str, target: Optional[Mapping[str, Any]] = None,
                options: Optional[Mapping[str, Any]] = None, name: Optional[str] = None,
                callback: Optional[SyncCallback] = None) -> SyncRun:
        """Creates a sync up (pushing entries with ``__local__`` set) and starts its first run."""
        run = self._start("syncUp", callback)
        out = ctypes.c_int64()
        self._launch(run, _lib.call, _lib.lib().syncstore_sync_up, self._p(), _opt_json(target), _lib.enc(soup),
                     _opt_json(options), _lib.enc(name), _callbacks.SYNC_THUNK, run.key, ctypes.byref(out))
        run.sync_id = out.value
        return run

    def create_sync_down(self, target: Mapping[str, Any], soup: str, options: Optional[Mapping[str, Any]] = None,
                         name: Optional[str] = None) -> int:
        """Creates a sync down without running it (status NEW); returns its id."""
        out = ctypes.c_int64()
        _lib.call(_lib.lib().syncstore_create_sync_down, self._p(), _object_json(target, "the sync target"),
                  _lib.enc(soup), _opt_json(options), _lib.enc(name), ctypes.byref(out))
        return out.value

    def create_sync_up(self, soup: str, target: Optional[Mapping[str, Any]] = None,
                       options: Optional[Mapping[str, Any]] = None, name: Optional[str] = None) -> int:
        """Creates a sync up without running it (status NEW); returns its id."""
        out = ctypes.c_int64()
        _lib.call(_lib.lib().syncstore_create_sync_up, self._p(), _opt_json(target), _lib.enc(soup),
                  _opt_json(options), _lib.enc(name), ctypes.byref(out))
        return out.value

    def resync(self, sync: SyncRef, callback: Optional[SyncCallback] = None) -> SyncRun:
        """Runs an existing sync again, by id, name or a previous :class:`SyncRun`."""
        run = self._start("reSync", callback)
        if isinstance(sync, str):
            out = ctypes.c_int64()
            self._launch(run, _lib.call, _lib.lib().syncstore_resync_by_name, self._p(), _lib.enc(sync),
                         _callbacks.SYNC_THUNK, run.key, ctypes.byref(out))
            run.sync_id = out.value
        else:
            sync_id = _sync_id(sync)
            self._launch(run, _lib.call, _lib.lib().syncstore_resync, self._p(), sync_id, _callbacks.SYNC_THUNK,
                         run.key)
            run.sync_id = sync_id
        return run

    def clean_resync_ghosts(self, sync: SyncRef, callback: Optional[SyncCallback] = None) -> SyncRun:
        """Deletes local records of a sync down that the server no longer has (and that are not
        locally modified). The run's states are ghost reports (``removed`` = count)."""
        sync_id = self._resolve(sync)
        run = self._start("cleanResyncGhosts", callback)
        self._launch(run, _lib.call, _lib.lib().syncstore_clean_resync_ghosts, self._p(), sync_id,
                     _callbacks.SYNC_THUNK, run.key)
        run.sync_id = sync_id
        return run

    def _resolve(self, sync: SyncRef) -> int:
        if isinstance(sync, str):
            state = _lib.call_json(_lib.lib().syncstore_get_sync_status_by_name, self._p(), _lib.enc(sync))
            return int(state["_soupEntryId"])
        return _sync_id(sync)

    def get_sync_status(self, sync: SyncRef) -> Optional[SyncState]:
        """The sync's state by id or name, or None when there is no such sync."""
        try:
            if isinstance(sync, str):
                state = _lib.call_json(_lib.lib().syncstore_get_sync_status_by_name, self._p(), _lib.enc(sync))
            else:
                state = _lib.call_json(_lib.lib().syncstore_get_sync_status, self._p(), _sync_id(sync))
        except NotFoundError:
            return None
        return cast(SyncState, state)

    def delete_sync(self, sync: SyncRef) -> None:
        """Deletes a sync's state, by id or name (not its records). BusyError while it runs."""
        if isinstance(sync, str):
            _lib.call(_lib.lib().syncstore_delete_sync_by_name, self._p(), _lib.enc(sync))
        else:
            _lib.call(_lib.lib().syncstore_delete_sync, self._p(), _sync_id(sync))

    def stop_syncs(self) -> None:
        """Stops every queued and running sync of the store (they end STOPPED); new runs are
        refused (StateError) until :meth:`restart_syncs`. Does not wait."""
        _lib.call(_lib.lib().syncstore_stop_syncs, self._p())

    def restart_syncs(self, restart_stopped: bool = True, callback: Optional[SyncCallback] = None) -> None:
        """Accepts runs again; with ``restart_stopped`` re-runs every STOPPED sync, reporting their
        states to ``callback`` (its exceptions are logged and kept in ``callback_errors``)."""
        if callback is None:
            _lib.call(_lib.lib().syncstore_restart_syncs, self._p(), int(restart_stopped), _lib.SYNC_CALLBACK(), None)
            return
        listener = RestartListener(callback, self.callback_errors)
        key = _callbacks.register(listener)
        self._handle.track(key)
        try:
            _lib.call(_lib.lib().syncstore_restart_syncs, self._p(), int(restart_stopped), _callbacks.SYNC_THUNK, key)
        except BaseException:
            _callbacks.unregister(key)
            raise

    def wait_sync(self, sync: SyncRef, timeout_ms: int = -1) -> SyncState:
        """Blocks until the sync has no queued or running run; returns its state. ``timeout_ms``
        < 0 waits without limit; at the timeout :class:`WaitTimeout` (a BusyError) is raised.
        Ctrl-C interrupts the wait."""
        return wait_sync(self._handle, self._resolve(sync), None if timeout_ms < 0 else timeout_ms / 1000.0)

    def start_live_sync(self, options: Optional[Mapping[str, Any]] = None,
                        callback: Optional[LiveSyncCallback] = None) -> None:
        """Starts live sync: the store's named syncs run by themselves (docs/sync.md, "Live
        sync"): catching up at once and whenever the server answers again (sync ups, then sync
        downs), a sync up after host writes pause for ``debounceMs``, sync downs every
        ``pullIntervalMs`` (0: only when catching up), SOQL sync downs kept current by Change
        Data Capture events (``changeEvents``, docs/sync.md, "Change events"), offline with a
        doubling, jittered retry time. ``options``: ``{"syncs": [names] (default: every named
        sync), "debounceMs": 300, "retryMinMs": 1000, "retryMaxMs": 60000, "pullIntervalMs": 0,
        "changeEvents": true}``. ``callback(event)``
        gets ``{"event": "state", "state": ...}`` on live sync's own thread and ``{"event":
        "run", "sync": state}`` on the sync worker thread (its exceptions are logged). It belongs
        to this store handle: :meth:`stop_live_sync` or the close stops it. :class:`StateError`
        when it is on already; :class:`NotFoundError` for an unknown sync name;
        :class:`ArgumentError` for bad options or no sync to run."""
        options_json = _opt_json(options)
        if callback is None:
            _lib.call(_lib.lib().syncstore_start_live_sync, self._p(), options_json, _lib.SYNC_CALLBACK(), None)
            return
        key = _callbacks.register(_LiveSyncListener(callback))
        try:
            _lib.call(_lib.lib().syncstore_start_live_sync, self._p(), options_json, _callbacks.SYNC_THUNK, key)
        except BaseException:
            _callbacks.unregister(key)
            raise
        self._handle.track(key)  # runs it started may report after a stop: kept until the close

    def stop_live_sync(self) -> None:
        """Stops live sync; returns when its thread has ended (the last state event is
        ``"stopped"``). A run in progress ends as any run does. Without live sync: nothing."""
        _lib.call(_lib.lib().syncstore_stop_live_sync, self._p())

    def live_sync_state(self) -> LiveSyncState:
        """Live sync's state now (``{"state": "stopped"}`` when it is off)."""
        return cast(LiveSyncState, _lib.call_json(_lib.lib().syncstore_get_live_sync_state, self._p()))

    def load_sync_config(self, path: PathLike) -> None:
        """Creates the syncs of a usersyncs.json / globalsyncs.json file (existing names skipped)."""
        _lib.call(_lib.lib().syncstore_load_sync_config, self._p(), _path(path))

    def register_custom_target(self, type_name: str, target: targets.CustomTarget) -> None:
        """Registers a Python :class:`CustomTarget` as sync target type ``type_name``. The target
        object is kept for the life of the process."""
        struct = targets.make_struct(target)
        _lib.call(_lib.lib().syncstore_register_custom_target, self._p(), _lib.enc(type_name), ctypes.byref(struct))


def _sync_id(sync: Union[int, SyncRun]) -> int:
    if isinstance(sync, SyncRun):
        return sync.sync_id
    if isinstance(sync, bool) or not isinstance(sync, int):
        raise TypeError(f"a sync is named by an int id, a str name or a SyncRun, not {type(sync).__name__}")
    return sync


def _listener_spec(query_spec: Union[QuerySpec, str], soup: Optional[str]) -> bytes:
    """A query listener's spec JSON: the spec with ``"soupName"`` set to ``soup`` when given."""
    if soup is None:
        return _object_json(query_spec, "the query spec")
    if isinstance(query_spec, str):
        try:
            parsed = json.loads(query_spec)
        except ValueError as e:
            raise ArgumentError(f"the query spec is not JSON: {e}") from None
        if not isinstance(parsed, dict):
            raise ArgumentError("the query spec must be a JSON object")
        query_spec = parsed
    elif not isinstance(query_spec, Mapping):
        raise ArgumentError(f"the query spec must be a mapping (dict) or JSON text (str), not {type(query_spec).__name__}")
    _lib.enc(soup)  # a str without NUL
    return _lib.dump({**query_spec, "soupName": soup})


class _ChangeListener(_callbacks.Listener):
    """A change listener's callback: every change goes to it; none is terminal."""

    def __init__(self, callback: Callable[[Any], object]) -> None:
        self._callback = callback
        self.token = 0

    def deliver(self, state: Dict[str, Any]) -> bool:
        try:
            self._callback(state)
        except BaseException:  # noqa: BLE001 - never into the engine
            _callbacks.log.exception("syncstore: a change listener raised")
        return False


class _ReadyListener(_callbacks.Listener):
    """The ``ready`` function of :meth:`Store.buffer_notifications`."""

    def __init__(self, ready: Callable[[], object]) -> None:
        self._ready = ready

    def deliver(self, state: Dict[str, Any]) -> bool:
        return False

    def ready(self) -> None:
        try:
            self._ready()
        except BaseException:  # noqa: BLE001 - never into the engine
            _callbacks.log.exception("syncstore: a notifications-ready callback raised")


class _LiveSyncListener(_callbacks.Listener):
    """Live sync's callback: every event goes to it; none is terminal."""

    def __init__(self, callback: LiveSyncCallback) -> None:
        self._callback = callback

    def deliver(self, state: Dict[str, Any]) -> bool:
        try:
            self._callback(cast(Any, state))
        except BaseException:  # noqa: BLE001 - never into the engine
            _callbacks.log.exception("syncstore: a live sync callback raised")
        return False
