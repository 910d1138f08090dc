'use strict';
// Custom sync targets written as JS async functions: the engine's worker thread waits for each
// promise while the JS thread stays free (other store calls complete meanwhile).
const test = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');
const { openStore, mobilesyncClient, setRootDirectory } = require('..');
const { tempRoot } = require('../test-support/helpers');

/** An in-memory backend: records with Id and LastModifiedDate (ISO text). */
function backend(count) {
  const records = new Map();
  for (let i = 0; i < count; i++) records.set(`r${i}`, { Id: `r${i}`, Name: `Name ${i}`, LastModifiedDate: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() });
  return records;
}

test('sync down, up and ghosts through a JS target', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'custom', root });
  t.after(() => store.close());
  await store.registerSoup('things', [{ path: 'Id', type: 'string' }, { path: 'Name', type: 'string' }, { path: '__local__', type: 'string' }]);
  const server = backend(25);
  const calls = { fetchPage: [], pushRecord: [], remoteIds: 0 };
  let storeCallDuringFetch = null;

  store.registerTarget('memory', {
    async fetchPage(target, sinceMs, continuation) {
      calls.fetchPage.push({ sinceMs, continuation, target });
      if (calls.fetchPage.length === 1) {
        // The JS thread is free while the engine's worker waits: a store call completes now.
        storeCallDuringFetch = await store.soupExists('things');
      }
      await sleep(5);
      const all = [...server.values()].filter((r) => sinceMs < 0 || Date.parse(r.LastModifiedDate) >= sinceMs);
      const start = continuation ? Number(continuation) : 0;
      const page = all.slice(start, start + 10);
      const next = start + 10 < all.length ? String(start + 10) : undefined;
      return { records: page, totalSize: all.length, ...(next ? { next } : {}) };
    },
    async remoteIds() {
      calls.remoteIds++;
      return [...server.keys()];
    },
    async pushRecord(target, action, record) {
      calls.pushRecord.push({ action, Id: record.Id, Name: record.Name });
      await sleep(1);
      if (record.Name === 'refused') throw Object.assign(new Error('backend refused this record'), { code: 'SYNCSTORE_ERR_SERVER' });
      if (action === 'create') {
        const id = `new${server.size}`;
        server.set(id, { Id: id, Name: record.Name, LastModifiedDate: new Date().toISOString() });
        return { id };
      }
      if (action === 'update') server.set(record.Id, { ...server.get(record.Id), Name: record.Name });
      if (action === 'delete') server.delete(record.Id);
      return null;
    },
  });

  const down = store.syncDown({ type: 'memory', marker: 42 }, 'things', { mergeMode: 'OVERWRITE' }, 'memDown');
  const progress = [];
  down.on('progress', (state) => progress.push(state.progress));
  const final = await down.done;
  assert.equal(final.status, 'DONE', final.error);
  assert.equal(storeCallDuringFetch, true);
  assert.deepEqual(calls.fetchPage.map((c) => c.continuation), [null, '10', '20']);
  assert.equal(calls.fetchPage[0].sinceMs, -1);
  assert.equal(calls.fetchPage[0].target.marker, 42);
  assert.equal(progress.at(-1), 100);
  const cursor = await store.query('things', { queryType: 'range', indexPath: 'Id', pageSize: 100 });
  assert.equal(cursor.totalEntries, 25);

  // Local edits pushed through pushRecord; a refused record keeps its error and stays dirty.
  const [first, second, third] = cursor.currentPageOrderedEntries;
  await store.upsert('things', [
    { ...first, Name: 'renamed', __local__: true, __locally_updated__: true },
    { ...second, __local__: true, __locally_deleted__: true },
    { ...third, Name: 'refused', __local__: true, __locally_updated__: true },
    { Name: 'brand new', __local__: true, __locally_created__: true },
  ]);
  const up = await store.syncUp({ type: 'memory' }, 'things', { fieldlist: ['Name'] }).done;
  assert.equal(up.status, 'DONE');
  assert.equal(up.errors, 1, JSON.stringify(up));
  assert.deepEqual(calls.pushRecord.map((c) => c.action).sort(), ['create', 'delete', 'update', 'update']);
  assert.equal(server.get(first.Id).Name, 'renamed');
  assert.ok(!server.has(second.Id));
  const refused = (await store.retrieve('things', [third._soupEntryId]))[0];
  assert.match(refused.__last_error__, /backend refused/);
  const created = (await store.query('things', { queryType: 'exact', indexPath: 'Name', matchKey: 'brand new' })).currentPageOrderedEntries[0];
  assert.match(created.Id, /^new/);

  // Ghosts: a record gone from the backend is removed locally.
  server.delete('r5'); // clean locally (r0, r1, r10 were the edited ones)
  const ghosts = await store.cleanResyncGhosts('memDown').done;
  assert.equal(ghosts.status, 'DONE');
  assert.equal(ghosts.removed, 1);
  assert.equal(calls.remoteIds, 1);

  // Errors thrown by the target fail the run with the JS message.
  store.registerTarget('broken', { async fetchPage() { throw Object.assign(new Error('backend is down'), { code: 'SYNCSTORE_ERR_NETWORK' }); } });
  await assert.rejects(store.syncDown({ type: 'broken' }, 'things').done, (error) => {
    assert.equal(error.state.status, 'FAILED');
    assert.match(error.message, /backend is down/);
    return true;
  });
  // A missing method is an error too, not a hang.
  store.registerTarget('empty', {});
  await assert.rejects(store.syncDown({ type: 'empty' }, 'things').done, /fetchPage/);
  // Built-in names cannot be taken.
  assert.throws(() => store.registerTarget('soql', {}), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  // The Cordova face registers on the store named by its storeConfig (under its root: not the
  // user's data directory, which other processes may use).
  setRootDirectory(root);
  assert.equal(await mobilesyncClient.registerTarget({ storeName: 'custom' }, 'viaCordova', { fetchPage: async () => ({ records: [] }) }), undefined);
});

test('close() and stopSyncs() do not hang on a target promise that never settles', { timeout: 60000 }, async (t) => {
  const store = await openStore({ storeName: 'hang', root: tempRoot(t) });
  await store.registerSoup('things', [{ path: 'Id', type: 'string' }]);
  let calls = 0;
  store.registerTarget('never', { fetchPage: () => { calls++; return new Promise(() => {}); } });

  const first = store.syncDown({ type: 'never' }, 'things');
  await first.started;
  while (calls === 0) await sleep(5);
  await store.stopSyncs();
  await assert.rejects(first.done, (error) => ['FAILED', 'STOPPED'].includes(error.state.status));

  await store.restartSyncs(false).started; // stopSyncs refuses runs until restarted
  const second = store.syncDown({ type: 'never' }, 'things');
  const secondEnd = second.done.catch((error) => error.state);
  while (calls < 2) await sleep(5);
  await store.close(); // waits for the run, whose target call is failed for it
  assert.ok(['FAILED', 'STOPPED'].includes((await secondEnd).status));
});

test('close() of a handle does not hang on its run of a target registered through another handle', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const a = await openStore({ storeName: 'shared-target', root });
  t.after(() => a.close());
  await a.registerSoup('things', [{ path: 'Id', type: 'string' }]);
  let calls = 0;
  a.registerTarget('never', { fetchPage: () => { calls++; return new Promise(() => {}); } });
  // Several rounds: each handle B runs the target A registered, and B's close fails B's
  // waiting target call (not A's close, which comes last).
  for (let round = 0; round < 3; round++) {
    const b = await openStore({ storeName: 'shared-target', root });
    const run = b.syncDown({ type: 'never' }, 'things');
    const end = run.done.catch((error) => error.state);
    while (calls <= round) await sleep(5);
    const closed = b.close().then(() => 'closed');
    const outcome = await Promise.race([closed, sleep(5000).then(() => 'still pending')]);
    assert.equal(outcome, 'closed', `round ${round}: B.close() waited for a target promise that never settles`);
    assert.ok(['FAILED', 'STOPPED'].includes((await end).status));
  }
  // A's own handle still runs syncs with its target.
  assert.equal(a.closed, false);
});

test('Cordova faces on a named global store: events carry isGlobalStore and storeName', { timeout: 60000 }, async (t) => {
  const { smartstore, smartstoreClient, mobilesync, mobilesyncClient } = require('..');
  smartstore.setRootDirectory(tempRoot(t));
  const config = { isGlobalStore: true, storeName: 'shared' };
  await smartstoreClient.registerSoup(config, 'items', [{ path: 'Id', type: 'string' }]);
  await mobilesyncClient.registerTarget(config, 'two', {
    fetchPage: async () => ({ records: [{ Id: 'a', LastModifiedDate: '2026-01-01T00:00:00.000Z' }, { Id: 'b', LastModifiedDate: '2026-01-02T00:00:00.000Z' }] }),
    remoteIds: async () => ['a', 'b'],
  });
  const details = [];
  const onSync = (detail) => details.push(detail);
  mobilesync.on('sync', onSync);
  t.after(() => mobilesync.off('sync', onSync));
  const done = new Promise((resolve) => mobilesync.on('sync', function wait(detail) {
    if (detail.status === 'DONE') { mobilesync.off('sync', wait); resolve(detail); }
  }));
  const atStart = await mobilesyncClient.syncDown(config, { type: 'two' }, 'items', { mergeMode: mobilesync.MERGE_MODE.OVERWRITE }, 'globalDown');
  assert.equal(atStart.status, 'RUNNING');
  const final = await done;
  assert.deepEqual([final.isGlobalStore, final.storeName, final.name], [true, 'shared', 'globalDown']);
  assert.ok(details.every((d) => d.isGlobalStore === true && d.storeName === 'shared'));
  assert.equal((await smartstoreClient.querySoup(config, 'items', smartstore.buildAllQuerySpec('Id'))).totalEntries, 2);
  assert.equal((await smartstoreClient.querySoup(false, 'items', smartstore.buildAllQuerySpec('Id')).catch((e) => e)).code, 'SYNCSTORE_ERR_NOT_FOUND');
  assert.equal((await mobilesyncClient.getSyncStatus(config, 'globalDown')).status, 'DONE');
  assert.equal(await mobilesyncClient.getSyncStatus(true, 'globalDown'), null, 'the default global store has no such sync');
  assert.equal(await mobilesyncClient.cleanResyncGhosts(config, 'globalDown'), 0);
});
