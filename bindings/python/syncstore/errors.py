"""Exceptions: one class per ``SYNCSTORE_ERR_*`` status code, all under :class:`SyncStoreError`."""

from __future__ import annotations

from typing import Dict, List, Optional, Type

from . import _lib

__all__ = ["SyncStoreError", "ArgumentError", "NotFoundError", "ExistsError", "BusyError", "NetworkError",
           "AuthError", "ServerError", "ConflictError", "StorageError", "InternalError", "StateError",
           "CallbackError", "error_for_code"]


class SyncStoreError(Exception):
    """A failed library call.

    ``code`` is the stable ``SYNCSTORE_ERR_*`` number (decide on it, never on the message),
    ``name`` its name (``"SYNCSTORE_ERR_NOT_FOUND"``), ``retryable`` is true when the same call may
    succeed later unchanged, ``message`` says what was wrong.
    """

    #: The status code of this class (subclasses set it).
    code_value: int = 0

    def __init__(self, message: str, *, code: Optional[int] = None, retryable: bool = False) -> None:
        self.code: int = self.code_value if code is None else code
        self.name: str = _status_name(self.code)
        self.retryable: bool = retryable
        self.message: str = message
        super().__init__(f"{self.name}: {message}")


class ArgumentError(SyncStoreError, ValueError):
    """SYNCSTORE_ERR_ARGUMENT: invalid input (JSON, spec, name, Smart SQL). Fix the input."""

    code_value = 1


class NotFoundError(SyncStoreError, LookupError):
    """SYNCSTORE_ERR_NOT_FOUND: no such soup, entry, store, cursor or sync."""

    code_value = 2


class ExistsError(SyncStoreError):
    """SYNCSTORE_ERR_EXISTS: a thing that must be new already exists (e.g. a sync name)."""

    code_value = 3


class BusyError(SyncStoreError):
    """SYNCSTORE_ERR_BUSY: in use (store open, sync already running, wait timed out). Retry later."""

    code_value = 4


class NetworkError(SyncStoreError):
    """SYNCSTORE_ERR_NETWORK: connect, timeout or dropped connection. Retryable."""

    code_value = 5


class AuthError(SyncStoreError):
    """SYNCSTORE_ERR_AUTH: the server refused the credentials (set new ones), or the key does not
    open an encrypted store (wrong key or kdfIter, no key, or a key for a plaintext store)."""

    code_value = 6


class ServerError(SyncStoreError):
    """SYNCSTORE_ERR_SERVER: the server answered with an error (retryable for 5xx)."""

    code_value = 7


class ConflictError(SyncStoreError):
    """SYNCSTORE_ERR_CONFLICT: a write conflicts with the stored state."""

    code_value = 8


class StorageError(SyncStoreError, OSError):
    """SYNCSTORE_ERR_STORAGE: the database file failed (disk full, I/O, corrupt, cannot open; an
    encrypted page that fails its integrity check)."""

    code_value = 9


class InternalError(SyncStoreError):
    """SYNCSTORE_ERR_INTERNAL: a bug inside the library; please report it with the message."""

    code_value = 10


class StateError(SyncStoreError):
    """SYNCSTORE_ERR_STATE: not valid now (closed handle, stopped syncs, wrong order)."""

    code_value = 11


class CallbackError(Exception):
    """Exceptions raised by user callbacks of a sync run (also logged when they happened).

    ``errors`` lists them in order; the first is also the ``__cause__``. ``state`` is the run's
    final state, which the callback failures did not change.
    """

    def __init__(self, errors: List[BaseException], state: Optional[Dict[str, object]]) -> None:
        self.errors = errors
        self.state = state
        super().__init__(f"{len(errors)} exception(s) raised in sync callbacks; first: {errors[0]!r}")


_CLASSES: Dict[int, Type[SyncStoreError]] = {
    cls.code_value: cls for cls in (ArgumentError, NotFoundError, ExistsError, BusyError, NetworkError, AuthError,
                                    ServerError, ConflictError, StorageError, InternalError, StateError)}

_FALLBACK_NAMES = {0: "SYNCSTORE_OK"}


def _status_name(code: int) -> str:
    try:
        raw = _lib.lib().syncstore_status_name(code)
    except ImportError:
        raw = None
    if raw:
        return str(raw.decode("ascii"))
    return _FALLBACK_NAMES.get(code, f"SYNCSTORE_ERR_{code}")


def error_for_code(code: int, message: str, retryable: bool = False) -> SyncStoreError:
    """The exception instance for a status code (an unknown code gives the base class)."""
    cls = _CLASSES.get(code, SyncStoreError)
    return cls(message, code=code, retryable=retryable)


def _from_c(status: int, err: _lib.Error) -> BaseException:
    message = err.message.decode("utf-8", "replace") or "no message"
    return error_for_code(status, message, bool(err.retryable))


_lib.set_error_factory(_from_c)
