'use strict';
// The StoreCursor contract: shape, page moves (clamped), bounds errors of next/previous,
// pages re-queried on move, close; and async iteration over pages in the modern face.
const test = require('node:test');
const assert = require('node:assert/strict');
const { smartstore, smartstoreClient: ss, openStore } = require('..');
const { tempRoot, cb, cbError } = require('../test-support/helpers');

async function seed(t, count) {
  smartstore.setRootDirectory(tempRoot(t));
  await ss.registerSoup('items', [{ path: 'n', type: 'integer' }]);
  await ss.upsertSoupEntries('items', Array.from({ length: count }, (_, i) => ({ n: i })));
}

const ns = (cursor) => cursor.currentPageOrderedEntries.map((e) => e.n);

test('cursor shape and page moves', { timeout: 60000 }, async (t) => {
  await seed(t, 10);
  const cursor = await cb(smartstore.querySoup, 'items', smartstore.buildAllQuerySpec('n', 'ascending', 3));
  assert.deepEqual(Object.keys(cursor).sort(), ['currentPageIndex', 'currentPageOrderedEntries', 'cursorId', 'pageSize', 'totalEntries', 'totalPages']);
  assert.equal(typeof cursor.cursorId, 'number');
  assert.deepEqual([cursor.currentPageIndex, cursor.pageSize, cursor.totalEntries, cursor.totalPages], [0, 3, 10, 4]);
  assert.deepEqual(ns(cursor), [0, 1, 2]);

  const second = await cb(smartstore.moveCursorToNextPage, cursor);
  assert.equal(second.currentPageIndex, 1);
  assert.equal(second.cursorId, cursor.cursorId);
  assert.deepEqual(ns(second), [3, 4, 5]);
  const first = await cb(smartstore.moveCursorToPreviousPage, second);
  assert.deepEqual(ns(first), [0, 1, 2]);

  const last = await cb(smartstore.moveCursorToPageIndex, cursor, 3);
  assert.deepEqual([last.currentPageIndex, ...ns(last)], [3, 9]);
  assert.equal((await cb(smartstore.moveCursorToPageIndex, cursor, 99)).currentPageIndex, 3, 'clamped high');
  assert.equal((await cb(smartstore.moveCursorToPageIndex, cursor, -5)).currentPageIndex, 0, 'clamped low');

  // Like the plugin: next on the last page / previous on the first call error(cursor, Error).
  const [atEnd, endError] = await cbError(smartstore.moveCursorToNextPage, last);
  assert.equal(atEnd, last);
  assert.match(endError.message, /last page/);
  const [, startError] = await cbError(smartstore.moveCursorToPreviousPage, first);
  assert.match(startError.message, /first page/);
  await assert.rejects(ss.moveCursorToNextPage(last), { code: 'SYNCSTORE_ERR_ARGUMENT' });

  // Pages are re-queried on move; totalEntries stays as counted at open.
  await ss.upsertSoupEntries('items', [{ n: -1 }]);
  const requeried = await cb(smartstore.moveCursorToPageIndex, cursor, 0);
  assert.deepEqual(ns(requeried), [-1, 0, 1]);
  assert.equal(requeried.totalEntries, 10);

  assert.equal(await cb(smartstore.closeCursor, cursor), 'OK');
  const [closedMessage] = await cbError(smartstore.moveCursorToPageIndex, cursor, 1);
  assert.match(closedMessage, /cursor/i);
  await assert.rejects(ss.moveCursorToPageIndex(cursor, 1), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  assert.equal(await cb(smartstore.closeCursor, cursor), 'OK', 'closing twice is a no-op');
});

test('an empty result has no pages', { timeout: 60000 }, async (t) => {
  await seed(t, 3);
  const cursor = await ss.querySoup('items', smartstore.buildExactQuerySpec('n', 42));
  assert.deepEqual([cursor.totalEntries, cursor.totalPages, cursor.currentPageOrderedEntries], [0, 0, []]);
  await ss.closeCursor(cursor);
});

test('smart query cursors page too', { timeout: 60000 }, async (t) => {
  await seed(t, 25);
  const cursor = await ss.runSmartQuery(smartstore.buildSmartQuerySpec('select {items:n} from {items} order by {items:n} desc', 10));
  assert.deepEqual([cursor.totalEntries, cursor.totalPages], [25, 3]);
  assert.deepEqual(cursor.currentPageOrderedEntries[0], [24]);
  const third = await ss.moveCursorToPageIndex(cursor, 2);
  assert.deepEqual(third.currentPageOrderedEntries, [[4], [3], [2], [1], [0]]);
  await ss.closeCursor(cursor);
});

test('modern face: async iteration over pages, cursor closed after break', { timeout: 60000 }, async (t) => {
  const store = await openStore({ storeName: 'iter', root: tempRoot(t) });
  t.after(() => store.close());
  await store.registerSoup('items', [{ path: 'n', type: 'integer' }]);
  await store.upsert('items', Array.from({ length: 23 }, (_, i) => ({ n: i })), { returnEntries: false });
  const pages = [];
  for await (const page of store.pages('items', smartstore.buildAllQuerySpec('n', 'ascending', 5))) pages.push(page.map((e) => e.n));
  assert.equal(pages.length, 5);
  assert.deepEqual(pages.flat(), Array.from({ length: 23 }, (_, i) => i));

  const cursor = await store.query('items', smartstore.buildAllQuerySpec('n', 'descending', 4));
  for await (const page of cursor) {
    assert.deepEqual(page.map((e) => e.n), [22, 21, 20, 19]);
    break;
  }
  await assert.rejects(cursor.moveToPage(1), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  const smartPages = [];
  for await (const page of store.pages(null, smartstore.buildSmartQuerySpec('select count(*) from {items}'))) smartPages.push(page);
  assert.deepEqual(smartPages, [[[23]]]);
});
