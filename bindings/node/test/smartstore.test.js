'use strict';
// Every function of the Cordova smartstore, through callbacks and through the promise twins.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { smartstore, smartstoreClient } = require('..');
const { tempRoot, cb, cbError } = require('../test-support/helpers');

const FUNCTIONS = ['registerSoup', 'removeSoup', 'soupExists', 'getSoupIndexSpecs', 'alterSoup', 'reIndexSoup',
  'clearSoup', 'querySoup', 'runSmartQuery', 'retrieveSoupEntries', 'upsertSoupEntries',
  'upsertSoupEntriesWithExternalId', 'removeFromSoup', 'moveCursorToPageIndex', 'moveCursorToNextPage',
  'moveCursorToPreviousPage', 'closeCursor', 'getDatabaseSize', 'getAllStores', 'getAllGlobalStores',
  'removeStore', 'removeAllStores', 'removeAllGlobalStores', 'setLogLevel', 'getLogLevel',
  'buildAllQuerySpec', 'buildExactQuerySpec', 'buildRangeQuerySpec', 'buildLikeQuerySpec',
  'buildMatchQuerySpec', 'buildSmartQuerySpec'];

const INDEXES = [{ path: 'Name', type: 'string' }, { path: 'Age', type: 'integer' }, { path: 'Bio', type: 'full_text' }];
const PEOPLE = [
  { Name: 'Ada', Age: 36, Bio: 'analytical engine notes', City: 'London' },
  { Name: 'Grace', Age: 85, Bio: 'compiler pioneer', City: 'Arlington' },
  { Name: 'Alan', Age: 41, Bio: 'computable numbers', City: 'Manchester' },
  { Name: 'Barbara', Age: 40, Bio: 'abstract data types', City: 'Boston' },
];

test('every Cordova smartstore function exists on both faces', { timeout: 60000 }, () => {
  for (const name of FUNCTIONS) {
    assert.equal(typeof smartstore[name], 'function', name);
    assert.equal(typeof smartstoreClient[name], 'function', `client.${name}`);
  }
  assert.equal(smartstore.client, smartstoreClient);
  for (const shape of ['QuerySpec', 'SoupIndexSpec', 'StoreCursor']) assert.equal(typeof smartstore[shape], 'function', shape);
  assert.deepEqual({ ...new smartstore.SoupIndexSpec('Name', 'string') }, { path: 'Name', type: 'string' });
  assert.deepEqual(Object.keys(new smartstore.StoreCursor()).sort(),
    ['currentPageIndex', 'currentPageOrderedEntries', 'cursorId', 'pageSize', 'totalEntries', 'totalPages']);
  assert.equal(new smartstore.QuerySpec('Name').indexPath, 'Name');
});

test('build*QuerySpec: the plugin shapes and defaults', { timeout: 60000 }, () => {
  assert.deepEqual(smartstore.buildAllQuerySpec('Name'), {
    queryType: 'range', indexPath: 'Name', matchKey: null, beginKey: null, endKey: null, likeKey: null,
    smartSql: null, orderPath: 'Name', order: 'ascending', pageSize: 10, selectPaths: null,
  });
  const exact = smartstore.buildExactQuerySpec('Name', 'Ada', 5, 'descending', 'Age', ['Name']);
  assert.equal(exact.queryType, 'exact');
  assert.equal(exact.matchKey, 'Ada');
  assert.equal(exact.pageSize, 5);
  assert.equal(exact.order, 'descending');
  assert.equal(exact.orderPath, 'Age');
  assert.deepEqual(exact.selectPaths, ['Name']);
  const range = smartstore.buildRangeQuerySpec('Age', 40, 50, 'ascending', 3);
  assert.deepEqual([range.queryType, range.beginKey, range.endKey, range.pageSize, range.orderPath], ['range', 40, 50, 3, 'Age']);
  const like = smartstore.buildLikeQuerySpec('Name', 'A%', 'descending', 7);
  assert.deepEqual([like.queryType, like.likeKey, like.order, like.pageSize], ['like', 'A%', 'descending', 7]);
  const match = smartstore.buildMatchQuerySpec('Bio', 'compil*');
  assert.deepEqual([match.queryType, match.matchKey, match.pageSize], ['match', 'compil*', 10]);
  const smart = smartstore.buildSmartQuerySpec('select count(*) from {people}', 25);
  assert.deepEqual([smart.queryType, smart.smartSql, smart.pageSize], ['smart', 'select count(*) from {people}', 25]);
});

test('soups, entries and queries through callbacks (default user store)', { timeout: 60000 }, async (t) => {
  smartstore.setRootDirectory(tempRoot(t));
  assert.equal(await cb(smartstore.registerSoup, 'people', INDEXES), 'people');
  assert.equal(await cb(smartstore.soupExists, 'people'), true);
  assert.equal(await cb(smartstore.soupExists, 'nobody'), false);
  assert.deepEqual(await cb(smartstore.getSoupIndexSpecs, 'people'), INDEXES);

  const stored = await cb(smartstore.upsertSoupEntries, 'people', PEOPLE);
  assert.deepEqual(stored.map((e) => e._soupEntryId), [1, 2, 3, 4]);
  assert.ok(stored.every((e) => typeof e._soupLastModifiedDate === 'number'));

  const again = await cb(smartstore.upsertSoupEntriesWithExternalId, 'people', [{ Name: 'Ada', Age: 37 }], 'Name');
  assert.equal(again[0]._soupEntryId, 1);
  assert.equal(again[0].Age, 37);

  const retrieved = await cb(smartstore.retrieveSoupEntries, 'people', [3, 1, 99]);
  assert.deepEqual(retrieved.map((e) => e.Name), ['Alan', 'Ada']);

  const exact = await cb(smartstore.querySoup, 'people', smartstore.buildExactQuerySpec('Name', 'Grace'));
  assert.equal(exact.totalEntries, 1);
  assert.equal(exact.currentPageOrderedEntries[0].Age, 85);

  const range = await cb(smartstore.querySoup, 'people', smartstore.buildRangeQuerySpec('Age', 37, 41, 'descending', 10, 'Age', ['Name']));
  assert.deepEqual(range.currentPageOrderedEntries, [['Alan'], ['Barbara'], ['Ada']]);

  const like = await cb(smartstore.querySoup, 'people', smartstore.buildLikeQuerySpec('Name', 'A%'));
  assert.deepEqual(like.currentPageOrderedEntries.map((e) => e.Name), ['Ada', 'Alan']);

  const match = await cb(smartstore.querySoup, 'people', smartstore.buildMatchQuerySpec('Bio', 'comp*'));
  assert.deepEqual(match.currentPageOrderedEntries.map((e) => e.Name).sort(), ['Alan', 'Grace']);

  const smart = await cb(smartstore.runSmartQuery, smartstore.buildSmartQuerySpec('select {people:Name}, {people:Age} from {people} where {people:Age} > 40 order by {people:Age}'));
  assert.deepEqual(smart.currentPageOrderedEntries, [['Alan', 41], ['Grace', 85]]);
  await cb(smartstore.closeCursor, smart);

  // alterSoup without reindex leaves the new index empty for old rows; reIndexSoup fills it.
  const withCity = [...INDEXES, { path: 'City', type: 'string' }];
  assert.equal(await cb(smartstore.alterSoup, 'people', withCity, false), 'people');
  assert.deepEqual(await cb(smartstore.getSoupIndexSpecs, 'people'), withCity);
  const cityCount = async () => (await cb(smartstore.runSmartQuery, smartstore.buildSmartQuerySpec("select count(*) from {people} where {people:City} = 'Boston'"))).currentPageOrderedEntries[0][0];
  assert.equal(await cityCount(), 0);
  assert.equal(await cb(smartstore.reIndexSoup, 'people', ['City']), 'people');
  assert.equal(await cityCount(), 1);

  assert.equal(await cb(smartstore.removeFromSoup, 'people', [2]), 'OK');
  assert.equal(await cb(smartstore.removeFromSoup, 'people', smartstore.buildLikeQuerySpec('Name', 'B%')), 'OK');
  const left = await cb(smartstore.querySoup, 'people', smartstore.buildAllQuerySpec('Name'));
  assert.deepEqual(left.currentPageOrderedEntries.map((e) => e.Name), ['Ada', 'Alan']);

  assert.equal(await cb(smartstore.clearSoup, 'people'), 'OK');
  assert.equal((await cb(smartstore.querySoup, 'people', smartstore.buildAllQuerySpec('Name'))).totalEntries, 0);
  assert.equal(await cb(smartstore.removeSoup, 'people'), 'OK');
  assert.equal(await cb(smartstore.soupExists, 'people'), false);
});

test('storeConfig: object, bare boolean and absent name different stores', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  smartstoreClient.setRootDirectory(root);
  await smartstoreClient.registerSoup('s', [{ path: 'k', type: 'string' }]);
  await smartstoreClient.registerSoup({ storeName: 'named' }, 's2', [{ path: 'k', type: 'string' }]);
  await smartstoreClient.registerSoup(true, 'g', [{ path: 'k', type: 'string' }]);
  await smartstoreClient.registerSoup({ isGlobalStore: true, storeName: 'gnamed' }, 'g2', [{ path: 'k', type: 'string' }]);
  assert.equal(await smartstoreClient.soupExists(false, 's'), true);
  assert.equal(await smartstoreClient.soupExists({ isGlobalStore: false }, 's2'), false);
  assert.equal(await smartstoreClient.soupExists({ storeName: 'named' }, 's2'), true);
  assert.equal(await smartstoreClient.soupExists(true, 's'), false);
  assert.equal(await smartstoreClient.soupExists({ isGlobalStore: true }, 'g'), true);

  assert.deepEqual(await smartstoreClient.getAllStores(), [
    { storeName: 'named', isGlobalStore: false }, { storeName: 'smartstore', isGlobalStore: false }]);
  assert.deepEqual(await smartstoreClient.getAllGlobalStores(), [
    { storeName: 'gnamed', isGlobalStore: true }, { storeName: 'smartstore', isGlobalStore: true }]);
  assert.ok(fs.existsSync(path.join(root, 'user', 'named.db')));

  const before = await smartstoreClient.getDatabaseSize({ storeName: 'named' });
  await smartstoreClient.upsertSoupEntries({ storeName: 'named' }, 's2',
    Array.from({ length: 500 }, (_, i) => ({ k: `key-${i}`, text: 'x'.repeat(200) })));
  const after = await smartstoreClient.getDatabaseSize({ storeName: 'named' });
  assert.ok(after > before, `size grows: ${before} -> ${after}`);

  // Open stores are closed before they are removed.
  assert.equal(await cb(smartstore.removeStore, { storeName: 'named' }), true);
  assert.deepEqual((await smartstoreClient.getAllStores()).map((s) => s.storeName), ['smartstore']);
  assert.equal(await cb(smartstore.removeAllStores), true);
  assert.deepEqual(await smartstoreClient.getAllStores(), []);
  assert.equal(await cb(smartstore.removeAllGlobalStores), true);
  assert.deepEqual(await smartstoreClient.getAllGlobalStores(), []);
  // A removed store opens empty again on next use.
  assert.equal(await smartstoreClient.soupExists('s'), false);
});

test('where the plugins have nothing to say success gets "OK", as on both platforms; a null storeConfig is the default user store', { timeout: 60000 }, async (t) => {
  smartstore.setRootDirectory(tempRoot(t));
  await cb(smartstore.registerSoup, 'things', [{ path: 'k', type: 'string' }]);
  const args = (fn, ...rest) => new Promise((resolve, reject) => fn(...rest, (...got) => resolve(got), reject));
  assert.deepEqual(await args(smartstore.clearSoup, 'things'), ['OK'], 'clearSoup: success("OK")');
  assert.deepEqual(await args(smartstore.removeFromSoup, 'things', [1]), ['OK'], 'removeFromSoup: success("OK")');

  // As the plugin reads a missing storeConfig (and Python's modules take None): the user store.
  assert.equal(await cb(smartstore.soupExists, null, 'things'), true);
  assert.equal(await cb(smartstore.registerSoup, null, 'more', [{ path: 'k', type: 'string' }]), 'more');
  assert.equal(await smartstoreClient.soupExists(null, 'more'), true);
  assert.equal(await smartstoreClient.soupExists({ isGlobalStore: true }, 'more'), false, 'not the global store');
  assert.ok(await cb(smartstore.getDatabaseSize, null) > 0);
});

test('setLogLevel / getLogLevel', { timeout: 60000 }, () => {
  assert.equal(smartstore.getLogLevel(), 'info');
  smartstore.setLogLevel('debug');
  assert.equal(smartstoreClient.getLogLevel(), 'debug');
  assert.throws(() => smartstore.setLogLevel('loud'), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.equal(smartstore.getLogLevel(), 'debug');
  smartstore.setLogLevel('info');
});

test('the promise twins reject with an Error carrying .code; callbacks get the message', { timeout: 60000 }, async (t) => {
  smartstore.setRootDirectory(tempRoot(t));
  await assert.rejects(smartstoreClient.upsertSoupEntries('missing', [{ a: 1 }]),
    (error) => error instanceof Error && error.code === 'SYNCSTORE_ERR_NOT_FOUND' && error.status === 2 && /missing/.test(error.message));
  const [message] = await cbError(smartstore.upsertSoupEntries, 'missing', [{ a: 1 }]);
  assert.equal(typeof message, 'string');
  assert.match(message, /missing/);
});
