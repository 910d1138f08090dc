'use strict';
// A StoreCursor ({cursorId, currentPageIndex, pageSize, totalEntries, totalPages,
// currentPageOrderedEntries}) with methods: move between pages, close, iterate pages.
const { OP, callJson, call } = require('./native');

class Cursor {
  #store;
  constructor(store, data) {
    this.#store = store;
    Object.assign(this, data);
  }

  /** Moves to a page (clamped by the engine); updates this cursor and returns it. */
  async moveToPage(pageIndex) {
    Object.assign(this, await callJson(OP.MOVE_CURSOR, this.#store._handle(), null, null, null, null, this.cursorId, pageIndex));
    return this;
  }

  /** Moves to the next page; false (and no move) on the last page. */
  async next() {
    if (this.currentPageIndex + 1 >= this.totalPages) return false;
    await this.moveToPage(this.currentPageIndex + 1);
    return true;
  }

  async previous() {
    if (this.currentPageIndex <= 0) return false;
    await this.moveToPage(this.currentPageIndex - 1);
    return true;
  }

  async close() {
    await call(OP.CLOSE_CURSOR, this.#store._handle(), null, null, null, null, this.cursorId);
  }

  get entries() {
    return this.currentPageOrderedEntries;
  }

  toJSON() {
    const { cursorId, currentPageIndex, pageSize, totalEntries, totalPages, currentPageOrderedEntries } = this;
    return { cursorId, currentPageIndex, pageSize, totalEntries, totalPages, currentPageOrderedEntries };
  }

  /** Pages from the current one to the last; the cursor closes when the loop ends or breaks. */
  async *[Symbol.asyncIterator]() {
    try {
      for (;;) {
        yield this.currentPageOrderedEntries;
        if (!(await this.next())) break;
      }
    } finally {
      await this.close();
    }
  }
}

module.exports = { Cursor };
