'use strict';
// Encrypted stores from Node: openStore({key, kdfIter}), store.changeKey(), and the key
// provider the Cordova faces ask (the plugin's JS never passes a key). The key must reach the
// engine and nothing else: not the Store object, not an error message.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const { openStore, smartstore, smartstoreClient: ss, setEncryptionKeyProvider, STATUS } = require('..');
const { tempRoot, cb, cbError } = require('../test-support/helpers');

const INDEXES = [{ path: 'name', type: 'string' }, { path: 'n', type: 'integer' }];
const CANARY = 'CANARY-7f3a9c-plaintext-must-not-reach-disk';
const K1 = 'correct horse battery staple';
const K2 = "x'" + '5c'.repeat(32) + "'"; // a raw 256-bit key

/** AUTH, as a promise rejection: an Error with the status name and number, no key inside. */
const auth = (...secrets) => (error) => {
  assert.ok(error instanceof Error, 'an Error');
  assert.equal(error.code, 'SYNCSTORE_ERR_AUTH', error.message);
  assert.equal(error.status, STATUS.AUTH);
  assert.equal(error.retryable, false);
  for (const secret of secrets) assert.ok(!error.message.includes(secret), 'the message must not contain the key');
  return true;
};

const entries = (count) => Array.from({ length: count }, (_, i) => ({ name: `${CANARY} #${i}`, n: i }));

async function allEntries(store) {
  const found = await store.find('items', smartstore.buildAllQuerySpec('n', 'ascending', 100000));
  return found.map(({ name, n }) => ({ name, n }));
}

/** Every file of the store (the .db and any -wal / -shm / .rekey beside it) as one buffer. */
function storeBytes(root, name) {
  const dir = path.join(root, 'user');
  return Buffer.concat(fs.readdirSync(dir).filter((f) => f.startsWith(`${name}.db`)).map((f) => fs.readFileSync(path.join(dir, f))));
}

const holdsCanary = (root, name) => storeBytes(root, name).includes(CANARY);

test('an encrypted store round-trips across close and reopen', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'vault', root, key: K1 });
  await store.registerSoup('items', INDEXES);
  await store.upsert('items', entries(50));
  await store.close();

  await assert.rejects(openStore({ storeName: 'vault', root }), auth(K1), 'the store must need its key');
  const again = await openStore({ storeName: 'vault', root, key: K1 });
  t.after(() => again.close());
  assert.deepEqual(await allEntries(again), entries(50).map(({ name, n }) => ({ name, n })));
  assert.deepEqual(await again.getSoupIndexSpecs('items'), INDEXES);
});

test('a wrong key or no key is AUTH, the message holds no key, the file is untouched', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'vault', root, key: K1 });
  await store.registerSoup('items', INDEXES);
  await store.upsert('items', entries(3));
  await store.close();
  const before = storeBytes(root, 'vault');

  const wrong = 'not-the-key-3b1d';
  await assert.rejects(openStore({ storeName: 'vault', root, key: wrong }), auth(wrong, K1));
  await assert.rejects(openStore({ storeName: 'vault', root }), auth(K1));
  await assert.rejects(openStore({ storeName: 'vault', root, key: null }), auth(K1));
  // The passphrase alone is not enough: the PBKDF2 iterations are part of the key.
  await assert.rejects(openStore({ storeName: 'vault', root, key: K1, kdfIter: 4000 }), auth(K1));
  assert.ok(storeBytes(root, 'vault').equals(before), 'a refused open leaves the file as it was');

  // A plaintext store opened with a key is AUTH too.
  const plain = await openStore({ storeName: 'plain', root });
  await plain.close();
  await assert.rejects(openStore({ storeName: 'plain', root, key: K1 }), auth(K1));
});

test('keys of the wrong shape are ARGUMENT errors that do not echo the key', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const argument = (secret) => (error) => {
    assert.equal(error.code, 'SYNCSTORE_ERR_ARGUMENT', error.message);
    if (secret) assert.ok(!error.message.includes(secret), error.message);
    return true;
  };
  await assert.rejects(openStore({ storeName: 'bad', root, key: '' }), argument());
  await assert.rejects(openStore({ storeName: 'bad', root, key: 918273645 }), argument('918273645'));
  await assert.rejects(openStore({ storeName: 'bad', root, key: { secret: 'obj-secret-42' } }), argument('obj-secret-42'));
  await assert.rejects(openStore({ storeName: 'bad', root, key: K1, kdfIter: 0 }), argument(K1));
  const store = await openStore({ storeName: 'ok', root });
  t.after(() => store.close());
  await assert.rejects(store.changeKey(''), argument());
  await assert.rejects(store.changeKey(271828), argument('271828'));
});

test('the Store object keeps no copy of the key', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const options = { storeName: 'vault', root, key: K1, kdfIter: 1000 };
  const store = await openStore(options);
  t.after(() => store.close());
  assert.equal(options.key, K1, 'the caller\'s options are not changed');
  const views = [
    util.inspect(store, { showHidden: true, depth: Infinity, getters: true }),
    JSON.stringify(store),
    JSON.stringify(Object.getOwnPropertyNames(store).map((name) => [name, String(store[name])])),
    Object.keys(store).join(','),
  ];
  for (const view of views) assert.ok(!view.includes(K1), `the key is visible: ${view}`);
  assert.equal(store.key, undefined);
  assert.equal(store.kdfIter, undefined);
  assert.equal(store.storeName, 'vault');
});

test('the file on disk holds no plaintext; a plaintext control store does', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const secret = await openStore({ storeName: 'secret', root, key: K1 });
  const plain = await openStore({ storeName: 'plain', root });
  for (const store of [secret, plain]) {
    await store.registerSoup('items', INDEXES);
    await store.upsert('items', entries(20));
  }
  // While open (pages in the WAL) and after close (checkpointed into the .db file).
  assert.equal(holdsCanary(root, 'secret'), false, 'an open encrypted store leaks plaintext');
  assert.equal(holdsCanary(root, 'plain'), true, 'the control store should hold the canary');
  await secret.close();
  await plain.close();
  assert.equal(holdsCanary(root, 'secret'), false, 'a closed encrypted store leaks plaintext');
  assert.equal(holdsCanary(root, 'plain'), true);
});

test('changeKey: plaintext -> K1 -> K2 -> none keeps every entry; old keys stop working', { timeout: 120000 }, async (t) => {
  const root = tempRoot(t);
  const expected = entries(300).map(({ name, n }) => ({ name, n }));
  let store = await openStore({ storeName: 'rekey', root });
  t.after(() => store.close());
  await store.registerSoup('items', INDEXES);
  await store.upsert('items', entries(300), { returnEntries: false });
  assert.equal(holdsCanary(root, 'rekey'), true);

  const steps = [[undefined, K1], [K1, K2], [K2, null]];
  for (const [oldKey, newKey] of steps) {
    await store.changeKey(newKey);
    // This handle keeps working under the new key.
    assert.deepEqual(await allEntries(store), expected, `entries after changeKey to ${newKey ? 'a key' : 'none'}`);
    await store.close();
    if (oldKey) await assert.rejects(openStore({ storeName: 'rekey', root, key: oldKey }), auth(oldKey), 'the old key must stop working');
    else await assert.rejects(openStore({ storeName: 'rekey', root }), auth(), 'no key must stop working');
    assert.equal(holdsCanary(root, 'rekey'), newKey === null, `plaintext on disk with ${newKey ? 'a key' : 'no key'}`);
    store = await openStore({ storeName: 'rekey', root, key: newKey });
    assert.deepEqual(await allEntries(store), expected, 'entries after reopening with the new key');
  }
  // Back to plaintext: opens without a key, refuses the last key.
  await store.close();
  await assert.rejects(openStore({ storeName: 'rekey', root, key: K2 }), auth(K2));
  store = await openStore({ storeName: 'rekey', root });
  assert.deepEqual(await allEntries(store), expected);
});

test('changeKey keeps the kdfIter the store was opened with', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  let store = await openStore({ storeName: 'sdk', root, key: K1, kdfIter: 4000 });
  await store.registerSoup('items', INDEXES);
  await store.upsert('items', entries(5));
  await store.changeKey('second passphrase');
  await store.close();
  await assert.rejects(openStore({ storeName: 'sdk', root, key: 'second passphrase' }), auth('second passphrase'));
  store = await openStore({ storeName: 'sdk', root, key: 'second passphrase', kdfIter: 4000 });
  t.after(() => store.close());
  assert.equal((await allEntries(store)).length, 5);
});

test('changeKey is BUSY (retryable) while a sync of the store runs, and changes nothing', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'syncing', root, key: K1 });
  t.after(() => store.close());
  await store.registerSoup('items', [...INDEXES, { path: 'Id', type: 'string' }]);
  await store.upsert('items', entries(3));
  let release, fetching;
  const fetched = new Promise((resolve) => { fetching = resolve; });
  store.registerTarget('held', {
    async fetchPage() {
      fetching();
      await new Promise((resolve) => { release = resolve; });
      return { records: [{ Id: 'r1', name: 'remote', n: 99, LastModifiedDate: '2026-01-01T00:00:00.000Z' }], totalSize: 1 };
    },
  });
  const run = store.syncDown({ type: 'held' }, 'items', { mergeMode: 'OVERWRITE' }, 'held');
  const done = run.done; // waiting for its end keeps the process alive meanwhile
  await fetched; // the sync is running, its worker waits for this JS promise
  await assert.rejects(store.changeKey(K2), (error) => {
    assert.equal(error.code, 'SYNCSTORE_ERR_BUSY', error.message);
    assert.equal(error.retryable, true);
    assert.ok(!error.message.includes(K2) && !error.message.includes(K1));
    return true;
  });
  release();
  assert.equal((await done).status, 'DONE');
  await store.changeKey(K2); // free now
  await store.close();
  await assert.rejects(openStore({ storeName: 'syncing', root, key: K1 }), auth(K1));
  const reopened = await openStore({ storeName: 'syncing', root, key: K2 });
  assert.equal((await allEntries(reopened)).length, 4);
  await reopened.close();
});

// ---- the Cordova faces ----

function useProvider(t, fn) {
  setEncryptionKeyProvider(fn);
  t.after(() => setEncryptionKeyProvider(null));
}

test('the Cordova face opens an encrypted store with the provider\'s key', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  smartstore.setRootDirectory(root);
  const writer = await openStore({ storeName: 'shared', root, key: K1 });
  await writer.registerSoup('items', INDEXES);
  await writer.upsert('items', entries(10));
  await writer.close();

  const asked = [];
  useProvider(t, (store) => { asked.push(store); return store.storeName === 'shared' ? K1 : null; });
  const cursor = await cb(smartstore.querySoup, { storeName: 'shared' }, 'items', smartstore.buildAllQuerySpec('n', 'ascending', 100));
  assert.equal(cursor.totalEntries, 10);
  assert.equal(cursor.currentPageOrderedEntries[3].name, `${CANARY} #3`);
  assert.deepEqual(asked, [{ storeName: 'shared', isGlobalStore: false, root }]);
  // Writes through the Cordova face stay encrypted and are read back by the promise face.
  await cb(smartstore.upsertSoupEntries, { storeName: 'shared' }, 'items', [{ name: `${CANARY} cordova`, n: 100 }]);
  await cb(smartstore.closeCursor, { storeName: 'shared' }, cursor);
  assert.equal(holdsCanary(root, 'shared'), false);
  // A second handle beside the Cordova face's one: same store, same key.
  const reader = await openStore({ storeName: 'shared', root, key: K1 });
  t.after(() => reader.close());
  assert.equal((await allEntries(reader)).length, 11);
  // A provider returning null opens a plaintext store, as without a provider.
  await cb(smartstore.registerSoup, { storeName: 'open' }, 'items', INDEXES);
  await cb(smartstore.upsertSoupEntries, { storeName: 'open' }, 'items', entries(1));
  assert.equal(holdsCanary(root, 'open'), true);
});

test('a provider giving the wrong key: error callback, AUTH, no key in the message; asked again next time', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  smartstore.setRootDirectory(root);
  for (const storeName of ['locked', 'other']) {
    const writer = await openStore({ storeName, root, key: K1 });
    await writer.registerSoup('items', INDEXES);
    await writer.close();
  }

  const wrong = 'provider-wrong-key-81c2';
  let provide = wrong;
  let calls = 0;
  useProvider(t, async () => { calls++; return provide; });
  const [message, ...rest] = await cbError(smartstore.soupExists, { storeName: 'locked' }, 'items');
  assert.equal(typeof message, 'string', 'Cordova error callbacks get the message string');
  assert.deepEqual(rest, []);
  assert.match(message, /key/i);
  assert.ok(!message.includes(wrong) && !message.includes(K1), message);
  // The promise twin gives the Error itself: AUTH.
  await assert.rejects(ss.soupExists({ storeName: 'locked' }, 'items'), auth(wrong, K1));
  // No store was cached: the next call asks the provider again and opens with the right key.
  provide = K1;
  assert.equal(await cb(smartstore.soupExists, { storeName: 'locked' }, 'items'), true);
  assert.equal(calls, 3);
  // Without a provider there is no key: AUTH for an encrypted store this face has not opened yet.
  setEncryptionKeyProvider(null);
  await assert.rejects(ss.soupExists({ storeName: 'other' }, 'items'), auth(K1));
  assert.equal(calls, 3);
});

test('the Cordova faces refuse a key inside storeConfig and bad provider results', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  smartstore.setRootDirectory(root);
  await assert.rejects(ss.registerSoup({ storeName: 'x', key: K1 }, 'items', INDEXES), (error) => {
    assert.equal(error.code, 'SYNCSTORE_ERR_ARGUMENT');
    assert.match(error.message, /setEncryptionKeyProvider/);
    assert.ok(!error.message.includes(K1));
    return true;
  });
  const [message] = await cbError(smartstore.registerSoup, { storeName: 'x', kdfIter: 4000 }, 'items', INDEXES);
  assert.match(message, /setEncryptionKeyProvider/);
  assert.equal(fs.existsSync(path.join(root, 'user', 'x.db')), false, 'nothing was created');

  useProvider(t, () => 12345);
  await assert.rejects(ss.registerSoup({ storeName: 'y' }, 'items', INDEXES), (error) => error.code === 'SYNCSTORE_ERR_ARGUMENT' && !error.message.includes('12345'));
  setEncryptionKeyProvider(() => { throw new Error('keychain locked'); });
  const [thrown] = await cbError(smartstore.registerSoup, { storeName: 'y' }, 'items', INDEXES);
  assert.equal(thrown, 'keychain locked');
  assert.throws(() => setEncryptionKeyProvider('K1'), TypeError);
  // {key, kdfIter}: a store made by the Mobile SDK uses 4000 iterations.
  const sdk = await openStore({ storeName: 'sdk', root, key: K1, kdfIter: 4000 });
  await sdk.registerSoup('items', INDEXES);
  await sdk.close();
  setEncryptionKeyProvider(() => ({ key: K1, kdfIter: 4000 }));
  assert.equal(await ss.soupExists({ storeName: 'sdk' }, 'items'), true);
  assert.equal(smartstore.setEncryptionKeyProvider, setEncryptionKeyProvider);
});
