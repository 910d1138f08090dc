"""Loading libsyncstore and declaring the ctypes signature of every C function.

This module is private: the rest of the package calls the library through :func:`lib` and
:func:`call`. The library is found, in order, at ``$SYNCSTORE_LIB`` (an override), inside this
package (where ``pip install`` puts it), in the source tree's ``build/lib`` (a checkout used
without installing), then through the system loader.
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = ["ERROR_MESSAGE_SIZE", "Error", "SYNC_CALLBACK", "READY_CALLBACK", "FETCH_PAGE", "REMOTE_IDS", "PUSH_RECORD",
           "CustomTargetStruct", "PLUGIN_ANSWER", "PLUGIN_EVENT", "PLUGIN_KEY_PROVIDER", "SIGNATURES", "lib",
           "library_path", "call", "call_json", "enc", "dump"]

ERROR_MESSAGE_SIZE = 512
#: The ABI major version this package was written for: the header's SYNCSTORE_ABI_VERSION
#: (Tests/c/check_abi_facts.py checks the copy), also the library's soname suffix.
ABI_VERSION = 1
LIBRARY_NAME = f"libsyncstore.so.{ABI_VERSION}"


class Error(ctypes.Structure):
    """``syncstore_error``: code, retryable flag and message, filled by a failing call."""

    _fields_ = [("code", ctypes.c_int), ("retryable", ctypes.c_int),
                ("message", ctypes.c_char * ERROR_MESSAGE_SIZE)]


_vp = ctypes.c_void_p
_ErrP = ctypes.POINTER(Error)
_OutStr = ctypes.POINTER(ctypes.c_void_p)

#: ``syncstore_sync_callback``: void (*)(const char *state_json, void *context).
SYNC_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, _vp)
#: ``syncstore_notifications_ready``: void (*)(void *context).
READY_CALLBACK = ctypes.CFUNCTYPE(None, _vp)
#: ``fetch_page`` of ``syncstore_custom_target``.
FETCH_PAGE = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, _OutStr, _ErrP)
#: ``remote_ids`` of ``syncstore_custom_target``.
REMOTE_IDS = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, _OutStr, _ErrP)
#: ``push_record`` of ``syncstore_custom_target``.
PUSH_RECORD = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _OutStr, _ErrP)


#: ``syncstore_plugin_answer``: void (*)(void *context, int status, const char *json).
PLUGIN_ANSWER = ctypes.CFUNCTYPE(None, _vp, ctypes.c_int, ctypes.c_char_p)
#: ``syncstore_plugin_event``: void (*)(void *context, const char *event, const char *detail_json).
PLUGIN_EVENT = ctypes.CFUNCTYPE(None, _vp, ctypes.c_char_p, ctypes.c_char_p)
#: ``syncstore_plugin_key_provider``: int (*)(void *context, const char *store_json, char **out_key,
#: int *out_kdf_iter, syncstore_error *err).
PLUGIN_KEY_PROVIDER = ctypes.CFUNCTYPE(ctypes.c_int, _vp, ctypes.c_char_p, _OutStr, ctypes.POINTER(ctypes.c_int), _ErrP)


class CustomTargetStruct(ctypes.Structure):
    """``syncstore_custom_target``: a context pointer and three callbacks (NULL when unused)."""

    _fields_ = [("context", _vp), ("fetch_page", FETCH_PAGE), ("remote_ids", REMOTE_IDS),
                ("push_record", PUSH_RECORD)]


_c_char_p, _c_int, _c_int64 = ctypes.c_char_p, ctypes.c_int, ctypes.c_int64
_I64P, _IntP = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int)
_StoreP = ctypes.POINTER(_vp)

#: Every function of include/syncstore.h: name -> (argument types, result type).
SIGNATURES: Dict[str, Tuple[List[Any], Any]] = {
    "syncstore_version": ([], _c_char_p),
    "syncstore_abi_version": ([], _c_int),
    "syncstore_free": ([_vp], None),
    "syncstore_status_name": ([_c_int], _c_char_p),
    "syncstore_open": ([_c_char_p, _c_char_p, _StoreP, _ErrP], _c_int),
    "syncstore_close": ([_vp, _ErrP], _c_int),
    "syncstore_change_key": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_list_stores": ([_c_char_p, _c_int, _OutStr, _ErrP], _c_int),
    "syncstore_remove_store": ([_c_char_p, _c_char_p, _ErrP], _c_int),
    "syncstore_remove_all_stores": ([_c_char_p, _c_int, _ErrP], _c_int),
    "syncstore_database_size": ([_vp, _I64P, _ErrP], _c_int),
    "syncstore_load_store_config": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_register_soup": ([_vp, _c_char_p, _c_char_p, _ErrP], _c_int),
    "syncstore_soup_exists": ([_vp, _c_char_p, _IntP, _ErrP], _c_int),
    "syncstore_remove_soup": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_clear_soup": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_get_soup_index_specs": ([_vp, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_alter_soup": ([_vp, _c_char_p, _c_char_p, _c_int, _ErrP], _c_int),
    "syncstore_reindex_soup": ([_vp, _c_char_p, _c_char_p, _ErrP], _c_int),
    "syncstore_upsert": ([_vp, _c_char_p, _c_char_p, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_retrieve": ([_vp, _c_char_p, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_remove_entries": ([_vp, _c_char_p, _c_char_p, _ErrP], _c_int),
    "syncstore_remove_by_query": ([_vp, _c_char_p, _c_char_p, _I64P, _ErrP], _c_int),
    "syncstore_query_soup": ([_vp, _c_char_p, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_run_smart_query": ([_vp, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_query_page": ([_vp, _c_char_p, _c_char_p, _c_int64, _OutStr, _ErrP], _c_int),
    "syncstore_cursor_move_to_page": ([_vp, _c_int64, _c_int64, _OutStr, _ErrP], _c_int),
    "syncstore_cursor_close": ([_vp, _c_int64, _ErrP], _c_int),
    "syncstore_set_remote": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_sync_down": ([_vp, _c_char_p, _c_char_p, _c_char_p, _c_char_p, SYNC_CALLBACK, _vp, _I64P, _ErrP],
                            _c_int),
    "syncstore_sync_up": ([_vp, _c_char_p, _c_char_p, _c_char_p, _c_char_p, SYNC_CALLBACK, _vp, _I64P, _ErrP],
                          _c_int),
    "syncstore_create_sync_down": ([_vp, _c_char_p, _c_char_p, _c_char_p, _c_char_p, _I64P, _ErrP], _c_int),
    "syncstore_create_sync_up": ([_vp, _c_char_p, _c_char_p, _c_char_p, _c_char_p, _I64P, _ErrP], _c_int),
    "syncstore_resync": ([_vp, _c_int64, SYNC_CALLBACK, _vp, _ErrP], _c_int),
    "syncstore_resync_by_name": ([_vp, _c_char_p, SYNC_CALLBACK, _vp, _I64P, _ErrP], _c_int),
    "syncstore_clean_resync_ghosts": ([_vp, _c_int64, SYNC_CALLBACK, _vp, _ErrP], _c_int),
    "syncstore_get_sync_status": ([_vp, _c_int64, _OutStr, _ErrP], _c_int),
    "syncstore_get_sync_status_by_name": ([_vp, _c_char_p, _OutStr, _ErrP], _c_int),
    "syncstore_delete_sync": ([_vp, _c_int64, _ErrP], _c_int),
    "syncstore_delete_sync_by_name": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_stop_syncs": ([_vp, _ErrP], _c_int),
    "syncstore_restart_syncs": ([_vp, _c_int, SYNC_CALLBACK, _vp, _ErrP], _c_int),
    "syncstore_wait_sync": ([_vp, _c_int64, _c_int64, _OutStr, _ErrP], _c_int),
    "syncstore_load_sync_config": ([_vp, _c_char_p, _ErrP], _c_int),
    "syncstore_register_custom_target": ([_vp, _c_char_p, ctypes.POINTER(CustomTargetStruct), _ErrP], _c_int),
    # A change callback has a sync callback's C signature: the same thunk serves both.
    "syncstore_add_soup_listener": ([_vp, _c_char_p, SYNC_CALLBACK, _vp, ctypes.POINTER(_vp), _ErrP], _c_int),
    "syncstore_remove_listener": ([_vp, _vp, _ErrP], _c_int),
    "syncstore_add_query_listener": ([_vp, _c_char_p, SYNC_CALLBACK, _vp, ctypes.POINTER(_vp), _ErrP], _c_int),
    "syncstore_set_listener_interval": ([_vp, _vp, _c_int64, _ErrP], _c_int),
    "syncstore_buffer_notifications": ([_vp, READY_CALLBACK, _vp, _ErrP], _c_int),
    "syncstore_send_notifications": ([_vp, _I64P, _ErrP], _c_int),
    "syncstore_start_live_sync": ([_vp, _c_char_p, SYNC_CALLBACK, _vp, _ErrP], _c_int),
    "syncstore_stop_live_sync": ([_vp, _ErrP], _c_int),
    "syncstore_get_live_sync_state": ([_vp, _OutStr, _ErrP], _c_int),
    "syncstore_plugin_new": ([_c_char_p, _c_char_p, _StoreP, _ErrP], _c_int),
    "syncstore_plugin_set_remote": ([_vp, _c_char_p, _c_char_p, _ErrP], _c_int),
    "syncstore_plugin_set_listener": ([_vp, PLUGIN_EVENT, _vp, _ErrP], _c_int),
    "syncstore_plugin_set_key_provider": ([_vp, PLUGIN_KEY_PROVIDER, _vp, _ErrP], _c_int),
    "syncstore_plugin_exec": ([_vp, _c_char_p, _c_char_p, _c_char_p, PLUGIN_ANSWER, _vp, _ErrP], _c_int),
    "syncstore_plugin_free": ([_vp, _ErrP], _c_int),
    "syncstore_plugin_api": ([_OutStr, _ErrP], _c_int),
}


def library_path() -> str:
    """Where the library is loaded from (see the module docstring for the search order)."""
    override = os.environ.get("SYNCSTORE_LIB")
    if override:
        return override
    here = Path(__file__).resolve().parent
    for candidate in (here / LIBRARY_NAME, here.parents[2] / "build" / "lib" / LIBRARY_NAME):
        if candidate.is_file():
            return str(candidate)
    return LIBRARY_NAME


_loaded: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library with every signature of :data:`SIGNATURES` declared (loaded once)."""
    global _loaded
    if _loaded is None:
        path = library_path()
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"cannot load libsyncstore from {path!r}: {e}. Reinstall the syncstore "
                              f"package, or set SYNCSTORE_LIB to a built {LIBRARY_NAME}") from e
        for name, (args, result) in SIGNATURES.items():
            fn = getattr(loaded, name)
            fn.argtypes, fn.restype = args, result
        _loaded = loaded
    return _loaded


def enc(value: Optional[str]) -> Optional[bytes]:
    """UTF-8 bytes of a string argument; None stays NULL. Rejects lone surrogates and NULs."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("text arguments cannot contain NUL characters")
    return value.encode("utf-8")


# Compact, no NaN/Infinity (not JSON), UTF-8 kept as is (the C encoder's fastest path).
_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":"))


def _unserializable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The same encoder made once: JSONEncoder.encode makes it again on every call, which was half of
# a small query spec's encoding (Store.find calls it directly for a dict). None where the
# interpreter has no C encoder.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
c_encode = (_c_make_encoder(None, _unserializable, json.encoder.encode_basestring, None, ":", ",", False, False, False)
            if _c_make_encoder is not None else None)


def dump(value: Any) -> bytes:
    """JSON text of a Python value (str/bytes are taken as JSON text already written)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if c_encode is not None and type(value) in (dict, list):
        return "".join(c_encode(value, 0)).encode("utf-8")
    return _encoder.encode(value).encode("utf-8")


# json.loads(bytes) detects the encoding, decodes, then runs this same C scanner between two
# whitespace matches: a third of a one-entry lookup. The library writes UTF-8 JSON with nothing
# around the value, so its answers go to the scanner directly; anything it declines (it never
# should) goes through json.loads, which says what is wrong.
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_char_p = ctypes.c_char_p


def load(ptr: int) -> Any:
    """The JSON value of a ``char *`` the library wrote (not freed here)."""
    return parse(_char_p(ptr).value)  # type: ignore[arg-type]


def parse(raw: bytes) -> Any:
    """The JSON value of UTF-8 JSON text the library wrote."""
    text = raw.decode("utf-8")
    try:
        return _scan_once(text, 0)[0]
    except StopIteration:
        return json.loads(text)


class OutSlots:
    """A ``char **`` out argument and a ``syncstore_error``, made once and reused by the lookup
    path (see :func:`lookup_functions`), with the pointer also readable as a C string."""

    __slots__ = ("out", "text", "err", "out_ref", "err_ref")

    def __init__(self) -> None:
        self.out = ctypes.c_void_p()
        self.text = ctypes.c_char_p.from_buffer(self.out)  # the same pointer, read as a C string
        self.err = Error()
        self.out_ref = ctypes.byref(self.out)
        self.err_ref = ctypes.byref(self.err)


#: Idle :class:`OutSlots`: a call pops one (or makes one) and puts it back once read, so
#: threads, and a lookup made from a finalizer or a signal handler amid another, never share one.
out_slots: List[OutSlots] = []

_lookup: Optional[Tuple[Any, Any]] = None


def lookup_functions() -> Tuple[Any, Any]:
    """``syncstore_query_page`` and ``syncstore_free`` as function objects of their own with no
    argtypes: the lookup path passes values of the C types already (a ``c_void_p`` handle,
    bytes, a ``c_int64``, byref slots), and converting its six arguments cost a tenth of a
    lookup."""
    global _lookup
    if _lookup is None:
        query_page, free = lib()["syncstore_query_page"], lib()["syncstore_free"]
        query_page.restype, free.restype = ctypes.c_int, None
        _lookup = (query_page, free)
    return _lookup


def take_string(ptr: Optional[int]) -> Optional[str]:
    """Decodes and frees a ``char *`` returned by the library (NULL gives None)."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        lib().syncstore_free(ptr)


RaiseFn = Callable[[int, Error], BaseException]
_raise_error: Optional[RaiseFn] = None


def set_error_factory(factory: RaiseFn) -> None:
    """Installs the function that turns a status and its ``syncstore_error`` into an exception."""
    global _raise_error
    _raise_error = factory


def error_of(status: int, err: Error) -> BaseException:
    """The exception for a failed call's status and its filled ``syncstore_error``."""
    assert _raise_error is not None
    return _raise_error(status, err)


def call(fn: Any, *args: Any) -> None:
    """Calls a C function whose last argument is ``syncstore_error *``; raises on failure."""
    err = Error()
    status = fn(*args, ctypes.byref(err))
    if status != 0:
        raise error_of(status, err)


def call_json(fn: Any, *args: Any) -> Any:
    """Calls a C function ending in ``char **out, syncstore_error *err``; returns the decoded JSON."""
    out = ctypes.c_void_p()
    err = Error()
    status = fn(*args, ctypes.byref(out), ctypes.byref(err))
    if status != 0:
        raise error_of(status, err)
    ptr = out.value
    if not ptr:
        return None
    try:
        return load(ptr)
    finally:
        lib().syncstore_free(ptr)
