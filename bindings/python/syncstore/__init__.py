"""Python binding of libsyncstore through ctypes (stdlib only).

The library is found through $SYNCSTORE_LIB, else build/lib/libsyncstore.so.1 in the source tree,
else the system loader path. Every call raises SyncStoreError (with .code, .name, .retryable) on
failure; results are decoded from JSON.
"""
import ctypes
import json
import os
from pathlib import Path

__all__ = ["SyncStoreError", "Store", "library", "list_stores", "remove_store", "remove_all_stores"]

ERROR_MESSAGE_SIZE = 512


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("retryable", ctypes.c_int), ("message", ctypes.c_char * ERROR_MESSAGE_SIZE)]


# void (*)(const char *state_json, void *context): called on the store's sync worker thread.
SYNC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


class SyncStoreError(Exception):
    """A failed call: .code is the SYNCSTORE_ERR_* number, .name its name."""

    def __init__(self, code, name, retryable, message):
        super().__init__(f"{name}: {message}")
        self.code, self.name, self.retryable, self.message = code, name, retryable, message


def _find_library():
    env = os.environ.get("SYNCSTORE_LIB")
    if env:
        return env
    here = Path(__file__).resolve().parents[3] / "build" / "lib" / "libsyncstore.so.1"
    return str(here) if here.exists() else "libsyncstore.so.1"


_lib = None


def library():
    """The loaded libsyncstore with argument types declared."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(_find_library())
    c_char_p, c_int, c_int64, vp = ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.c_void_p
    out = ctypes.POINTER(ctypes.c_void_p)
    err = ctypes.POINTER(_Error)
    signatures = {
        "syncstore_version": ([], c_char_p),
        "syncstore_abi_version": ([], c_int),
        "syncstore_free": ([vp], None),
        "syncstore_status_name": ([c_int], c_char_p),
        "syncstore_open": ([c_char_p, c_char_p, ctypes.POINTER(vp), err], c_int),
        "syncstore_close": ([vp, err], c_int),
        "syncstore_list_stores": ([c_char_p, c_int, out, err], c_int),
        "syncstore_remove_store": ([c_char_p, c_char_p, err], c_int),
        "syncstore_remove_all_stores": ([c_char_p, c_int, err], c_int),
        "syncstore_database_size": ([vp, ctypes.POINTER(c_int64), err], c_int),
        "syncstore_load_store_config": ([vp, c_char_p, err], c_int),
        "syncstore_register_soup": ([vp, c_char_p, c_char_p, err], c_int),
        "syncstore_soup_exists": ([vp, c_char_p, ctypes.POINTER(c_int), err], c_int),
        "syncstore_remove_soup": ([vp, c_char_p, err], c_int),
        "syncstore_clear_soup": ([vp, c_char_p, err], c_int),
        "syncstore_get_soup_index_specs": ([vp, c_char_p, out, err], c_int),
        "syncstore_alter_soup": ([vp, c_char_p, c_char_p, c_int, err], c_int),
        "syncstore_reindex_soup": ([vp, c_char_p, c_char_p, err], c_int),
        "syncstore_upsert": ([vp, c_char_p, c_char_p, c_char_p, out, err], c_int),
        "syncstore_retrieve": ([vp, c_char_p, c_char_p, out, err], c_int),
        "syncstore_remove_entries": ([vp, c_char_p, c_char_p, err], c_int),
        "syncstore_remove_by_query": ([vp, c_char_p, c_char_p, ctypes.POINTER(c_int64), err], c_int),
        "syncstore_query_soup": ([vp, c_char_p, c_char_p, out, err], c_int),
        "syncstore_run_smart_query": ([vp, c_char_p, out, err], c_int),
        "syncstore_cursor_move_to_page": ([vp, c_int64, c_int64, out, err], c_int),
        "syncstore_cursor_close": ([vp, c_int64, err], c_int),
        "syncstore_set_remote": ([vp, c_char_p, err], c_int),
        "syncstore_sync_down": ([vp, c_char_p, c_char_p, c_char_p, c_char_p, SYNC_CALLBACK, vp, ctypes.POINTER(c_int64), err], c_int),
        "syncstore_sync_up": ([vp, c_char_p, c_char_p, c_char_p, c_char_p, SYNC_CALLBACK, vp, ctypes.POINTER(c_int64), err], c_int),
        "syncstore_resync": ([vp, c_int64, SYNC_CALLBACK, vp, err], c_int),
        "syncstore_clean_resync_ghosts": ([vp, c_int64, SYNC_CALLBACK, vp, err], c_int),
        "syncstore_get_sync_status": ([vp, c_int64, out, err], c_int),
        "syncstore_get_sync_status_by_name": ([vp, c_char_p, out, err], c_int),
        "syncstore_delete_sync": ([vp, c_int64, err], c_int),
        "syncstore_stop_syncs": ([vp, err], c_int),
        "syncstore_restart_syncs": ([vp, c_int, SYNC_CALLBACK, vp, err], c_int),
        "syncstore_wait_sync": ([vp, c_int64, c_int64, out, err], c_int),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    _lib = lib
    return lib


def _enc(value):
    if value is None:
        return None
    return value.encode("utf-8") if isinstance(value, str) else value


def _json(value):
    return _enc(value if isinstance(value, (str, bytes)) else json.dumps(value))


def _call(fn, *args, want_output=False):
    err = _Error()
    text = ctypes.c_void_p()
    call_args = list(args) + ([ctypes.byref(text)] if want_output else []) + [ctypes.byref(err)]
    status = fn(*call_args)
    if status != 0:
        lib = library()
        raise SyncStoreError(status, lib.syncstore_status_name(status).decode(), bool(err.retryable),
                             err.message.decode("utf-8", "replace"))
    if want_output:
        try:
            return json.loads(ctypes.string_at(text.value).decode("utf-8")) if text.value else None
        finally:
            library().syncstore_free(text)
    return None


def list_stores(root, is_global=False):
    return _call(library().syncstore_list_stores, _enc(str(root)), int(is_global), want_output=True)


def remove_store(root, store_config=None):
    _call(library().syncstore_remove_store, _enc(str(root)), _json(store_config) if store_config is not None else None)


def remove_all_stores(root, is_global=False):
    _call(library().syncstore_remove_all_stores, _enc(str(root)), int(is_global))


class Store:
    """One open store handle. Usable as a context manager; close() releases it."""

    def __init__(self, root, store_config=None):
        lib = library()
        handle = ctypes.c_void_p()
        _call(lib.syncstore_open, _enc(str(root)), _json(store_config) if store_config is not None else None,
              ctypes.byref(handle))
        self._handle = handle
        # C callback objects must outlive every run that may call them: kept until close().
        self._callbacks = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the handle; waits for the terminal callback of every sync it started."""
        if self._handle is not None:
            _call(library().syncstore_close, self._handle)
            self._handle = None
            self._callbacks.clear()

    def _h(self):
        if self._handle is None:
            raise SyncStoreError(11, "SYNCSTORE_ERR_STATE", False, "the store is closed")
        return self._handle

    def register_soup(self, soup, index_specs):
        _call(library().syncstore_register_soup, self._h(), _enc(soup), _json(index_specs))

    def soup_exists(self, soup):
        out = ctypes.c_int()
        _call(library().syncstore_soup_exists, self._h(), _enc(soup), ctypes.byref(out))
        return bool(out.value)

    def remove_soup(self, soup):
        _call(library().syncstore_remove_soup, self._h(), _enc(soup))

    def clear_soup(self, soup):
        _call(library().syncstore_clear_soup, self._h(), _enc(soup))

    def get_soup_index_specs(self, soup):
        return _call(library().syncstore_get_soup_index_specs, self._h(), _enc(soup), want_output=True)

    def alter_soup(self, soup, index_specs, reindex_data):
        _call(library().syncstore_alter_soup, self._h(), _enc(soup), _json(index_specs), int(reindex_data))

    def reindex_soup(self, soup, paths):
        _call(library().syncstore_reindex_soup, self._h(), _enc(soup), _json(paths))

    def upsert(self, soup, entries, external_id_path=None):
        return _call(library().syncstore_upsert, self._h(), _enc(soup), _json(entries), _enc(external_id_path),
                     want_output=True)

    def retrieve(self, soup, ids):
        return _call(library().syncstore_retrieve, self._h(), _enc(soup), _json(list(ids)), want_output=True)

    def remove(self, soup, ids):
        _call(library().syncstore_remove_entries, self._h(), _enc(soup), _json(list(ids)))

    def remove_by_query(self, soup, query_spec):
        count = ctypes.c_int64()
        _call(library().syncstore_remove_by_query, self._h(), _enc(soup), _json(query_spec), ctypes.byref(count))
        return count.value

    def query_soup(self, soup, query_spec):
        return _call(library().syncstore_query_soup, self._h(), _enc(soup), _json(query_spec), want_output=True)

    def run_smart_query(self, query_spec):
        return _call(library().syncstore_run_smart_query, self._h(), _json(query_spec), want_output=True)

    def move_cursor_to_page(self, cursor_id, page_index):
        return _call(library().syncstore_cursor_move_to_page, self._h(), int(cursor_id), int(page_index),
                     want_output=True)

    def close_cursor(self, cursor_id):
        _call(library().syncstore_cursor_close, self._h(), int(cursor_id))

    def database_size(self):
        out = ctypes.c_int64()
        _call(library().syncstore_database_size, self._h(), ctypes.byref(out))
        return out.value

    def load_store_config(self, path):
        _call(library().syncstore_load_store_config, self._h(), _enc(str(path)))

    # ---- sync (MobileSync semantics; see include/syncstore.h) ----

    def _callback(self, fn):
        """A C callback that decodes the state JSON and calls fn(state) (on the sync thread)."""
        if fn is None:
            return SYNC_CALLBACK()
        c_fn = SYNC_CALLBACK(lambda text, _ctx: fn(json.loads(text.decode("utf-8"))))
        self._callbacks.append(c_fn)
        return c_fn

    def set_remote(self, remote):
        _call(library().syncstore_set_remote, self._h(), _json(remote))

    def sync_down(self, target, soup, options=None, name=None, callback=None):
        """Starts a sync down; returns its id. callback(state) gets every state change."""
        sync_id = ctypes.c_int64()
        _call(library().syncstore_sync_down, self._h(), _json(target), _enc(soup),
              _json(options) if options is not None else None, _enc(name), self._callback(callback), None,
              ctypes.byref(sync_id))
        return sync_id.value

    def sync_up(self, soup, target=None, options=None, name=None, callback=None):
        sync_id = ctypes.c_int64()
        _call(library().syncstore_sync_up, self._h(), _json(target) if target is not None else None, _enc(soup),
              _json(options) if options is not None else None, _enc(name), self._callback(callback), None,
              ctypes.byref(sync_id))
        return sync_id.value

    def resync(self, sync_id, callback=None):
        _call(library().syncstore_resync, self._h(), int(sync_id), self._callback(callback), None)

    def clean_resync_ghosts(self, sync_id, callback=None):
        _call(library().syncstore_clean_resync_ghosts, self._h(), int(sync_id), self._callback(callback), None)

    def get_sync_status(self, sync_id_or_name):
        """The sync's state, or None when there is no such sync."""
        lib = library()
        try:
            if isinstance(sync_id_or_name, str):
                return _call(lib.syncstore_get_sync_status_by_name, self._h(), _enc(sync_id_or_name), want_output=True)
            return _call(lib.syncstore_get_sync_status, self._h(), int(sync_id_or_name), want_output=True)
        except SyncStoreError as e:
            if e.name == "SYNCSTORE_ERR_NOT_FOUND":
                return None
            raise

    def wait_sync(self, sync_id, timeout_ms=-1):
        """Blocks until the sync has no run queued or running; returns its state."""
        return _call(library().syncstore_wait_sync, self._h(), int(sync_id), int(timeout_ms), want_output=True)

    def delete_sync(self, sync_id):
        _call(library().syncstore_delete_sync, self._h(), int(sync_id))

    def stop_syncs(self):
        _call(library().syncstore_stop_syncs, self._h())

    def restart_syncs(self, restart_stopped=True, callback=None):
        _call(library().syncstore_restart_syncs, self._h(), int(restart_stopped), self._callback(callback), None)
