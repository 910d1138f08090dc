'use strict';
// Bad input: a clear error (message string to Cordova error callbacks, an Error with .code to
// promises), the store unchanged, the process alive.
const test = require('node:test');
const assert = require('node:assert/strict');
const { smartstore, smartstoreClient: ss, mobilesyncClient: ms, openStore } = require('..');
const native = require('../lib/native');
const { tempRoot, cbError } = require('../test-support/helpers');

const INDEXES = [{ path: 'key', type: 'string' }, { path: 'n', type: 'integer' }];

async function snapshot() {
  const cursor = await ss.runSmartQuery(smartstore.buildSmartQuerySpec('select {items:_soup} from {items} order by {items:_soupEntryId}', 100));
  await ss.closeCursor(cursor);
  return { specs: await ss.getSoupIndexSpecs('items'), rows: cursor.currentPageOrderedEntries };
}

async function setup(t) {
  smartstore.setRootDirectory(tempRoot(t));
  await ss.registerSoup('items', INDEXES);
  await ss.upsertSoupEntries('items', [{ key: 'a', n: 1 }, { key: 'b', n: 2 }, { key: 'dup', n: 3 }, { key: 'dup', n: 4 }]);
  return snapshot();
}

const code = (expected) => (error) => {
  assert.ok(error instanceof Error, 'an Error');
  assert.equal(error.code, expected, error.message);
  assert.equal(typeof error.status, 'number');
  assert.ok(error.message.length > 0);
  return true;
};

test('bad input is refused with a clear error and changes nothing', { timeout: 60000 }, async (t) => {
  const before = await setup(t);
  const cases = [
    ['registerSoup with an empty name', () => ss.registerSoup('', INDEXES), 'SYNCSTORE_ERR_ARGUMENT'],
    ['registerSoup with no index specs', () => ss.registerSoup('x', []), 'SYNCSTORE_ERR_ARGUMENT'],
    ['registerSoup with a bad index type', () => ss.registerSoup('x', [{ path: 'a', type: 'decimal' }]), 'SYNCSTORE_ERR_ARGUMENT'],
    ['registerSoup with a number as name', () => ss.registerSoup(42, INDEXES), 'SYNCSTORE_ERR_ARGUMENT'],
    ['upsert into a missing soup', () => ss.upsertSoupEntries('nope', [{ key: 'z' }]), 'SYNCSTORE_ERR_NOT_FOUND'],
    ['upsert of non-objects', () => ss.upsertSoupEntries('items', [{ key: 'ok' }, 7]), 'SYNCSTORE_ERR_ARGUMENT'],
    ['upsert of a BigInt', () => ss.upsertSoupEntries('items', [{ key: 1n }]), 'SYNCSTORE_ERR_ARGUMENT'],
    ['upsert of a cycle', () => { const e = { key: 'c' }; e.self = e; return ss.upsertSoupEntries('items', [e]); }, 'SYNCSTORE_ERR_ARGUMENT'],
    ['upsert of an unknown _soupEntryId', () => ss.upsertSoupEntries('items', [{ key: 'new' }, { _soupEntryId: 999, key: 'x' }]), 'SYNCSTORE_ERR_NOT_FOUND'],
    ['external id on an unindexed path', () => ss.upsertSoupEntriesWithExternalId('items', [{ other: 'v' }], 'other'), 'SYNCSTORE_ERR_ARGUMENT'],
    ['external id matching several entries', () => ss.upsertSoupEntriesWithExternalId('items', [{ key: 'fresh' }, { key: 'dup', n: 9 }], 'key'), 'SYNCSTORE_ERR_CONFLICT'],
    ['external id with a null value', () => ss.upsertSoupEntriesWithExternalId('items', [{ key: null }], 'key'), 'SYNCSTORE_ERR_ARGUMENT'],
    ['alterSoup of a missing soup', () => ss.alterSoup('nope', INDEXES, true), 'SYNCSTORE_ERR_NOT_FOUND'],
    ['alterSoup with a duplicate path', () => ss.alterSoup('items', [...INDEXES, { path: 'key', type: 'integer' }], true), 'SYNCSTORE_ERR_ARGUMENT'],
    ['reIndexSoup of an unindexed path', () => ss.reIndexSoup('items', ['nothing']), 'SYNCSTORE_ERR_ARGUMENT'],
    ['clearSoup of a missing soup', () => ss.clearSoup('nope'), 'SYNCSTORE_ERR_NOT_FOUND'],
    ['querySoup with a smart spec', () => ss.querySoup('items', smartstore.buildSmartQuerySpec('select 1')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['querySoup with a bad queryType', () => ss.querySoup('items', { queryType: 'fuzzy', indexPath: 'key' }), 'SYNCSTORE_ERR_ARGUMENT'],
    ['runSmartQuery with a non-smart spec', () => ss.runSmartQuery(smartstore.buildAllQuerySpec('key')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['Smart SQL with a second statement', () => ss.runSmartQuery(smartstore.buildSmartQuerySpec('select 1; delete from {items}')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['Smart SQL that writes', () => ss.runSmartQuery(smartstore.buildSmartQuerySpec('delete from {items}')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['Smart SQL on an unknown soup', () => ss.runSmartQuery(smartstore.buildSmartQuerySpec('select * from {ghosts}')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['removeFromSoup by a smart spec', () => ss.removeFromSoup('items', smartstore.buildSmartQuerySpec('select 1')), 'SYNCSTORE_ERR_ARGUMENT'],
    ['removeFromSoup with ids that are not numbers', () => ss.removeFromSoup('items', ['one']), 'SYNCSTORE_ERR_ARGUMENT'],
    ['retrieve with a string for ids', () => ss.retrieveSoupEntries('items', 'not json'), 'SYNCSTORE_ERR_ARGUMENT'],
    ['a bad store name', () => ss.registerSoup({ storeName: '../escape' }, 'x', INDEXES), 'SYNCSTORE_ERR_ARGUMENT'],
    ['moving an unknown cursor', () => ss.moveCursorToPageIndex({ cursorId: 12345 }, 0), 'SYNCSTORE_ERR_NOT_FOUND'],
    ['moving a cursor with a string page', () => ss.moveCursorToPageIndex({ cursorId: 1 }, 'two'), 'SYNCSTORE_ERR_ARGUMENT'],
  ];
  for (const [what, call, expected] of cases) {
    await assert.rejects(call(), code(expected), what);
    assert.deepEqual(await snapshot(), before, `store unchanged after: ${what}`);
  }
  // As the SDK's plugin: removing a store that is not there has nothing to do.
  assert.equal(await ss.removeStore({ storeName: 'neverOpened' }), true);
});

test('Cordova error callbacks get the message string', { timeout: 60000 }, async (t) => {
  await setup(t);
  const [message] = await cbError(smartstore.registerSoup, '', INDEXES);
  assert.equal(typeof message, 'string');
  assert.ok(message.length > 0);
  const [missing] = await cbError(smartstore.querySoup, 'nope', smartstore.buildAllQuerySpec('key'));
  assert.match(missing, /nope/);
});

test('sync calls with bad input fail cleanly', { timeout: 60000 }, async (t) => {
  await setup(t);
  await assert.rejects(ms.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 'nope', null), code('SYNCSTORE_ERR_NOT_FOUND'));
  await assert.rejects(ms.syncDown({ type: 'nosuchtype' }, 'items', null), code('SYNCSTORE_ERR_ARGUMENT'));
  await assert.rejects(ms.reSync('no-such-sync'), code('SYNCSTORE_ERR_NOT_FOUND'));
  await assert.rejects(ms.cleanResyncGhosts('no-such-sync'), code('SYNCSTORE_ERR_NOT_FOUND'));
  assert.equal(await ms.deleteSync(4242), 'OK', 'as the SDK: deleting an unknown sync has nothing to do');
  await assert.rejects(ms.setRemote({ instanceUrl: 42 }), code('SYNCSTORE_ERR_ARGUMENT'));
  assert.equal(await ms.getSyncStatus('no-such-sync'), null);
  assert.equal(await ms.getSyncStatus(4242), null);
});

test('a closed store refuses calls with STATE; a forged handle is refused', { timeout: 60000 }, async (t) => {
  const store = await openStore({ storeName: 'closing', root: tempRoot(t) });
  await store.registerSoup('s', INDEXES);
  await store.close();
  await store.close(); // closing twice is harmless
  await assert.rejects(store.upsert('s', [{ key: 'a' }]), code('SYNCSTORE_ERR_STATE'));
  await assert.rejects(store.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 's').done, code('SYNCSTORE_ERR_STATE'));
  await assert.rejects(native.call(native.OP.SOUP_EXISTS, { not: 'a handle' }, 's'), code('SYNCSTORE_ERR_ARGUMENT'));
  await assert.rejects(native.call(native.OP.SOUP_EXISTS, null, 's'), code('SYNCSTORE_ERR_ARGUMENT'));
  assert.throws(() => native.addon.call(999, null, null, null, null, null, 0, 0), code('SYNCSTORE_ERR_ARGUMENT'));
  assert.throws(() => native.addon.startSync(0, null), code('SYNCSTORE_ERR_ARGUMENT'));
  assert.throws(() => native.addon.releaseSync({}), code('SYNCSTORE_ERR_ARGUMENT'));
});

test('status codes come from the header and their names from the library', () => {
  const { STATUS, addon } = native;
  assert.equal(Object.isFrozen(STATUS), true);
  assert.ok(Object.keys(STATUS).length >= 12, Object.keys(STATUS).join(' '));
  for (const [name, status] of Object.entries(STATUS)) {
    assert.equal(addon.statusName(status), name === 'OK' ? 'SYNCSTORE_OK' : `SYNCSTORE_ERR_${name}`);
    assert.equal(native.syncStoreError(status, 'm').code, addon.statusName(status));
  }
  assert.equal(addon.statusName(Math.max(...Object.values(STATUS)) + 1), 'SYNCSTORE_ERR_UNKNOWN');
});
