"""Query cursors: iterate entries page by page; the cursor closes when done."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Dict, Iterator, List, Optional, Type

from . import _lib
from ._handle import Handle

__all__ = ["Cursor"]


def _close(handle: Handle, cursor_id: int) -> None:
    if handle.closed:
        return  # closing the store closed its cursors
    try:
        _lib.call(_lib.lib().syncstore_cursor_close, handle.arg(), cursor_id)
    except Exception:  # noqa: BLE001 - a finalizer must not raise; the store may be closing
        pass


class Cursor(Iterator[Any]):
    """An open cursor of ``Store.query_soup`` / ``Store.run_smart_query``.

    Iterating yields the entries (whole objects, or lists of values for selectPaths and Smart
    SQL) from the current page to the last, moving page by page, and closes the cursor at the
    end. Use it in a ``with`` block (or call :meth:`close`) when you stop early; a cursor that is
    garbage collected is closed too.
    """

    def __init__(self, handle: Handle, payload: Dict[str, Any]) -> None:
        self._handle = handle
        #: The cursor id in the store.
        self.cursor_id: int = int(payload["cursorId"])
        self._apply(payload)
        self._position = 0
        self._closed = False

    def _apply(self, payload: Dict[str, Any]) -> None:
        #: Entries per page.
        self.page_size: int = int(payload["pageSize"])
        #: Number of entries, counted when the cursor opened.
        self.total_entries: int = int(payload["totalEntries"])
        #: Number of pages.
        self.total_pages: int = int(payload["totalPages"])
        #: Index of the current page (from 0).
        self.current_page_index: int = int(payload["currentPageIndex"])
        #: The entries of the current page.
        self.entries: List[Any] = list(payload["currentPageOrderedEntries"])

    def __repr__(self) -> str:
        return (f"<Cursor {self.cursor_id} page {self.current_page_index + 1}/{self.total_pages} "
                f"of {self.total_entries} entries{' closed' if self._closed else ''}>")

    @property
    def closed(self) -> bool:
        """True once the cursor is closed."""
        return self._closed

    def move_to_page(self, page_index: int) -> List[Any]:
        """Moves to a page (clamped to the existing pages); returns its entries."""
        payload = _lib.call_json(_lib.lib().syncstore_cursor_move_to_page, self._handle.arg(),
                                 self.cursor_id, int(page_index))
        self._apply(payload)
        self._position = 0
        return self.entries

    def next_page(self) -> List[Any]:
        """Moves to the next page (stays on the last one); returns its entries."""
        return self.move_to_page(self.current_page_index + 1)

    def previous_page(self) -> List[Any]:
        """Moves to the previous page (stays on the first one); returns its entries."""
        return self.move_to_page(self.current_page_index - 1)

    def close(self) -> None:
        """Closes the cursor (again: no-op)."""
        if not self._closed:
            self._closed = True
            _close(self._handle, self.cursor_id)

    def detach(self) -> int:
        """Leaves the cursor open in the store (for code that closes it by id later, e.g.
        ``Store.close_cursor``); returns its id. This object no longer closes it."""
        self._closed = True
        return self.cursor_id

    def __del__(self) -> None:
        # A cursor garbage collected while open is closed (never raises; see _close).
        if not getattr(self, "_closed", True):
            self._closed = True
            _close(self._handle, self.cursor_id)

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        while self._position >= len(self.entries):
            if self.current_page_index + 1 >= self.total_pages:
                self.close()
                raise StopIteration
            self.next_page()
        entry = self.entries[self._position]
        self._position += 1
        return entry

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()
