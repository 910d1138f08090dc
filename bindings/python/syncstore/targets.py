"""Custom sync targets written in Python (``syncstore_register_custom_target``).

Subclass :class:`CustomTarget` and override the methods your backend supports; register an
instance with :meth:`Store.register_custom_target`, then name its type in a sync's target JSON
(``{"type": "myBackend", ...}``). Methods run on the store's sync worker thread. Raising a
:class:`SyncStoreError` returns its code to the engine (from ``push_record``, ``ServerError`` and
``ConflictError`` record the message on the entry and the run goes on); any other exception is
logged and returned as ``SYNCSTORE_ERR_SERVER`` (the run fails, the store is unchanged).
"""

from __future__ import annotations

import ctypes
import itertools
import json
import threading
from typing import Any, Callable, Dict, List, Optional

from . import _callbacks, _lib
from .errors import ServerError, SyncStoreError

__all__ = ["CustomTarget", "make_struct"]


class CustomTarget:
    """Base class of a host-implemented sync target. Override what the backend supports."""

    def fetch_page(self, target: Dict[str, Any], since_ms: int, continuation: Optional[str]) -> Dict[str, Any]:
        """Sync down: one page ``{"records": [...], "totalSize"?: n, "next"?: "continuation"}``.
        ``since_ms`` is the previous maxTimeStamp (-1: everything); ``continuation`` is None for
        the first page, else the ``next`` of the previous page."""
        raise NotImplementedError

    def remote_ids(self, target: Dict[str, Any]) -> List[Any]:
        """cleanResyncGhosts: every record id the backend has."""
        raise NotImplementedError

    def push_record(self, target: Dict[str, Any], action: str, record: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Sync up: ``action`` is "create", "update" or "delete"; a create returns
        ``{"id": "backend id"}``."""
        raise NotImplementedError


_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]

_lock = threading.Lock()
# Registered targets live as long as the process: the engine may call them while any handle of
# the store is open, and a stale key must never reach freed memory.
_targets: Dict[int, CustomTarget] = {}
_keys = itertools.count(1)


def _malloc_text(value: Any) -> int:
    data = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    ptr = _libc.malloc(len(data) + 1)
    if not ptr:
        raise MemoryError("malloc failed")
    ctypes.memmove(ptr, data + b"\0", len(data) + 1)
    return int(ptr)


def _fill(err: Any, code: int, message: str) -> int:
    if err:
        raw = message.encode("utf-8")[: _lib.ERROR_MESSAGE_SIZE - 1].decode("utf-8", "ignore").encode("utf-8")
        err[0].code = code
        err[0].retryable = 0
        err[0].message = raw
    return code


def _guard(context: Optional[int], err: Any, body: Callable[[CustomTarget], int]) -> int:
    try:
        with _lock:
            target = _targets.get(context or 0)
        if target is None:
            return _fill(err, 11, "custom target is no longer registered")
        return body(target)
    except SyncStoreError as e:
        return _fill(err, e.code, e.message)
    except BaseException as e:  # noqa: BLE001 - never unwind into the engine
        _callbacks.log.exception("syncstore: a custom target callback raised")
        return _fill(err, ServerError.code_value, f"{type(e).__name__}: {e}")


def _fetch_page(context: Optional[int], target_json: Optional[bytes], since_ms: int, continuation: Optional[bytes],
                out: Any, err: Any) -> int:
    def body(t: CustomTarget) -> int:
        page = t.fetch_page(json.loads(target_json or b"{}"), since_ms,
                            None if continuation is None else continuation.decode("utf-8"))
        out[0] = _malloc_text(page)
        return 0
    return _guard(context, err, body)


def _remote_ids(context: Optional[int], target_json: Optional[bytes], out: Any, err: Any) -> int:
    def body(t: CustomTarget) -> int:
        out[0] = _malloc_text(list(t.remote_ids(json.loads(target_json or b"{}"))))
        return 0
    return _guard(context, err, body)


def _push_record(context: Optional[int], target_json: Optional[bytes], action: Optional[bytes],
                 record_json: Optional[bytes], out: Any, err: Any) -> int:
    def body(t: CustomTarget) -> int:
        result = t.push_record(json.loads(target_json or b"{}"), (action or b"").decode("utf-8"),
                               json.loads(record_json or b"{}"))
        out[0] = _malloc_text(result) if result is not None else None
        return 0
    return _guard(context, err, body)


_FETCH = _lib.FETCH_PAGE(_fetch_page)
_IDS = _lib.REMOTE_IDS(_remote_ids)
_PUSH = _lib.PUSH_RECORD(_push_record)
for _thunk in (_FETCH, _IDS, _PUSH):  # never freed, like the sync callback thunk
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_thunk))


def _overrides(target: CustomTarget, name: str) -> bool:
    return getattr(type(target), name, None) is not getattr(CustomTarget, name)


def make_struct(target: CustomTarget) -> _lib.CustomTargetStruct:
    """Registers ``target`` for the process and builds the C struct that names it."""
    if not isinstance(target, CustomTarget):
        raise TypeError("a custom target must be a syncstore.CustomTarget instance")
    with _lock:
        key = next(_keys)
        _targets[key] = target
    struct = _lib.CustomTargetStruct()
    struct.context = key
    struct.fetch_page = _FETCH if _overrides(target, "fetch_page") else _lib.FETCH_PAGE()
    struct.remote_ids = _IDS if _overrides(target, "remote_ids") else _lib.REMOTE_IDS()
    struct.push_record = _PUSH if _overrides(target, "push_record") else _lib.PUSH_RECORD()
    return struct
