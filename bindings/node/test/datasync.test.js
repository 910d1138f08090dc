'use strict';
// A Datasync table (docs/sync.md#datasync) through the Cordova-shaped mobilesync, as a hybrid app
// syncing with an Azure Mobile Apps / Datasync service would: sync down a paged table, offline
// edits, sync up, the service's rows checked over HTTP, a reSync after another client's change.
// A real dev server process (--datasync) on 127.0.0.1.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { smartstore, smartstoreClient: ss, mobilesync, mobilesyncClient } = require('..');
const { tempRoot, startDevServer, cb, cbError } = require('../test-support/helpers');
const { run, assertClean } = require('../test-support/sync-runs');

const TARGET = { type: 'datasync', table: 'todo' };

async function tables(server, method, route, body) {
  const response = await fetch(server.url + route, {
    method, headers: { Authorization: `Bearer ${server.token}`, 'ZUMO-API-VERSION': '3.0.0', 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${route}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}

/** Every row of the service's todo table, soft-deleted ones included (following nextLink). */
async function serverRows(server) {
  const rows = [];
  let route = '/tables/todo?__includedeleted=true';
  while (route) {
    const page = await tables(server, 'GET', route);
    rows.push(...page.items);
    route = page.nextLink ? page.nextLink.slice(server.url.length) : null;
  }
  return rows;
}

const local = async () => (await ss.runSmartQuery(smartstore.buildSmartQuerySpec(
  'select {todo:_soup} from {todo} order by {todo:_soupEntryId}', 1000))).currentPageOrderedEntries.map((row) => row[0]);

const isClean = (entry) => entry.__local__ === false || entry.__local__ === 'false';

test('datasync: sync down, offline edits, sync up, reSync', { timeout: 30000 }, async (t) => {
  // 60 rows in runs of 7 sharing one updatedAt, 25 a page: runs straddle page ends.
  const server = await startDevServer(t, ['--datasync', '--datasync-seed', 'todo=60/7', '--datasync-page-size', '25']);
  smartstore.setRootDirectory(path.join(tempRoot(t), 'stores'));
  await cb(smartstore.registerSoup, 'todo', [{ path: 'id', type: 'string' }, { path: '__local__', type: 'string' }]);
  await cb(mobilesync.setRemote, server.remote);

  // Sync down, named: every row once, clean, with the service's version and updatedAt.
  const [atStart, downEvents] = await run(mobilesync.syncDown, TARGET, 'todo', { mergeMode: mobilesync.MERGE_MODE.OVERWRITE }, 'todoDown');
  assert.equal(atStart.status, 'RUNNING');
  assert.equal(atStart.type, 'syncDown');
  assert.deepEqual(atStart.target, TARGET);
  let end = assertClean(downEvents, 'sync down');
  assert.equal(end.totalSize, 60);
  assert.ok(downEvents.length >= 4, 'RUNNING, a state per page, DONE');
  let entries = await local();
  assert.equal(entries.length, 60);
  assert.deepEqual(entries.map((e) => e.id).sort(), Array.from({ length: 60 }, (_, i) => `seed-todo-${String(i + 1).padStart(6, '0')}`));
  assert.ok(entries.every((e) => isClean(e) && typeof e.version === 'string' && typeof e.updatedAt === 'string'));

  // Offline, flagged the way the hybrid SDK flags entries.
  const byId = (id) => entries.find((e) => e.id === id);
  await ss.upsertSoupEntries('todo', [
    { ...byId('seed-todo-000003'), title: 'edited here', __local__: true, __locally_updated__: true },
    { ...byId('seed-todo-000004'), __local__: true, __locally_deleted__: true },
    { title: 'made here', rank: 1000, complete: false, __local__: true, __locally_created__: true },
  ]);
  const [, upEvents] = await run(mobilesync.syncUp, TARGET, 'todo', { mergeMode: mobilesync.MERGE_MODE.LEAVE_IF_CHANGED });
  end = assertClean(upEvents, 'sync up');
  assert.equal(end.type, 'syncUp');
  assert.equal(end.conflicts, 0);
  assert.equal(end.errors, 0);

  const rows = await serverRows(server);
  assert.equal(rows.length, 61, 'the soft-deleted row stays, the create made one');
  const made = rows.filter((r) => r.title === 'made here');
  assert.equal(made.length, 1);
  const edited = rows.find((r) => r.id === 'seed-todo-000003');
  assert.equal(edited.title, 'edited here');
  assert.equal(edited.rank, 3, 'the fields not edited are kept');
  assert.equal(edited.deleted, false);
  assert.equal(rows.find((r) => r.id === 'seed-todo-000004').deleted, true);
  entries = await local();
  assert.equal(entries.length, 60);
  assert.ok(!entries.some((e) => e.id === 'seed-todo-000004'));
  const created = entries.find((e) => e.title === 'made here');
  assert.equal(created.id, made[0].id);
  assert.equal(created.version, made[0].version);
  assert.ok(entries.every(isClean), 'no dirty entry left');

  // Another client changes one row and deletes another; reSync by name fetches only changes.
  await tables(server, 'PUT', '/tables/todo/seed-todo-000010', { id: 'seed-todo-000010', title: 'changed there', rank: 10 });
  await tables(server, 'DELETE', '/tables/todo/seed-todo-000011');
  const [again, resyncEvents] = await run(mobilesync.reSync, 'todoDown');
  assert.equal(again._soupEntryId, atStart._soupEntryId);
  end = assertClean(resyncEvents, 'reSync');
  assert.ok(end.totalSize >= 2 && end.totalSize < 60, `incremental: ${end.totalSize}`);
  entries = await local();
  assert.equal(entries.length, 59);
  assert.equal(entries.find((e) => e.id === 'seed-todo-000010').title, 'changed there');
  assert.ok(!entries.some((e) => e.id === 'seed-todo-000011'));
  assert.equal((await cb(mobilesync.getSyncStatus, 'todoDown')).status, 'DONE');

  // A target without its table is refused at the call, the store unchanged.
  const [message] = await cbError(mobilesync.syncDown, { type: 'datasync' }, 'todo', {}, 'noTable');
  assert.equal(typeof message, 'string');
  assert.match(message, /table/);
  await assert.rejects(mobilesyncClient.syncUp({ type: 'datasync' }, 'todo', {}), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.equal(await cb(mobilesync.getSyncStatus, 'noTable'), null);
  assert.equal((await local()).length, 59);
});
