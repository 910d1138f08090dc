'use strict';
// A two-phase server (docs/sync.md#two-phase: fetch ids, then one synchronise call) through the
// Cordova-shaped mobilesync, as a hybrid app with UUID keys would use it: sync down, offline
// edits, sync up, the server's rows checked through the protocol, a reSync after another
// client's change. A real dev server process (--twophase) on 127.0.0.1.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { smartstore, smartstoreClient: ss, mobilesync, mobilesyncClient } = require('..');
const { tempRoot, startDevServer, cb } = require('../test-support/helpers');
const { run, assertClean } = require('../test-support/sync-runs');

const TARGET = { type: 'twophase', tables: [{ name: 'todo', idKey: 'id' }] };

async function twophase(server, method, route, body) {
  const response = await fetch(server.url + route, {
    method, headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${route}: ${response.status}`);
  return response.json();
}

/** The server's todo rows by id: phase 1 for the ids, a get for the rows. */
async function serverRows(server) {
  const fetched = await twophase(server, 'GET', '/twophase/fetch?tables=todo');
  const answer = await twophase(server, 'POST', '/twophase/synchronise', { get: { todo: fetched.todo.map((r) => r.id) } });
  return new Map(answer.get.todo.map((row) => [row.id, row]));
}

const local = async () => (await ss.runSmartQuery(smartstore.buildSmartQuerySpec(
  'select {todo:_soup} from {todo} order by {todo:_soupEntryId}', 1000))).currentPageOrderedEntries.map((row) => row[0]);

const isClean = (entry) => entry.__local__ === false || entry.__local__ === 'false';

/** `YYYY-MM-DD HH:MM:SS`, UTC: the target's default timestampFormat. */
const datetime = (ms) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

test('twophase: sync down, offline edits, sync up, reSync', { timeout: 30000 }, async (t) => {
  const server = await startDevServer(t, ['--twophase', '--twophase-seed', '5']);
  smartstore.setRootDirectory(path.join(tempRoot(t), 'stores'));
  await cb(smartstore.registerSoup, 'todo', [{ path: 'id', type: 'string' }, { path: '__local__', type: 'string' }]);
  await cb(mobilesync.setRemote, server.remote);

  const [atStart, downEvents] = await run(mobilesync.syncDown, TARGET, 'todo', {}, 'todoDown');
  assert.equal(atStart.status, 'RUNNING');
  assertClean(downEvents, 'sync down');
  let rows = await serverRows(server);
  let entries = await local();
  assert.equal(rows.size, 5);
  assert.equal(entries.length, 5);
  for (const entry of entries) {
    assert.ok(isClean(entry), entry.id);
    assert.equal(entry.last_update, rows.get(entry.id)?.last_update, 'stored as the server sends it');
    assert.match(entry.last_update, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  }
  const ids = entries.map((e) => e.id);

  // Offline: an edit, a delete, a create without an id (the engine gives it a UUID).
  await ss.upsertSoupEntries('todo', [
    { ...entries[0], title: 'edited here', __local__: true, __locally_updated__: true },
    { ...entries[1], __local__: true, __locally_deleted__: true },
    { title: 'made here', __local__: true, __locally_created__: true },
  ]);
  const [, upEvents] = await run(mobilesync.syncUp, TARGET, 'todo', {});
  const end = assertClean(upEvents, 'sync up');
  assert.equal(end.conflicts, 0);
  assert.equal(end.errors, 0);

  rows = await serverRows(server);
  entries = await local();
  assert.equal(rows.size, 5);
  assert.equal(entries.length, 5);
  assert.equal(rows.get(ids[0]).title, 'edited here');
  assert.ok(!rows.has(ids[1]));
  assert.ok(!entries.some((e) => e.id === ids[1]));
  const created = entries.find((e) => e.title === 'made here');
  assert.match(created.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  assert.equal(rows.get(created.id)?.title, 'made here');
  assert.equal(rows.get(created.id).last_update, created.last_update);
  assert.equal([...rows.values()].filter((r) => r.title === 'made here').length, 1);
  assert.ok(entries.every(isClean), 'no dirty entry left');

  // Another client: a newer update of one row, a delete of another; reSync by name brings both.
  const stamp = datetime(Date.now() + 60000);
  await twophase(server, 'POST', '/twophase/synchronise', {
    update: { todo: [{ ...rows.get(ids[2]), title: 'changed there', last_update: stamp }] }, delete: { todo: [ids[3]] },
  });
  const [again, resyncEvents] = await run(mobilesync.reSync, 'todoDown');
  assert.equal(again._soupEntryId, atStart._soupEntryId);
  assertClean(resyncEvents, 'reSync');
  entries = await local();
  assert.equal(entries.length, 4);
  assert.equal(entries.find((e) => e.id === ids[2])?.title, 'changed there');
  assert.equal(entries.find((e) => e.id === ids[2]).last_update, stamp);
  assert.ok(!entries.some((e) => e.id === ids[3]));

  // A target without tables is refused at the call; a twophase sync down has no ghosts to clean.
  await assert.rejects(mobilesyncClient.syncDown({ type: 'twophase' }, 'todo', {}), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  await assert.rejects(mobilesyncClient.cleanResyncGhosts('todoDown'), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.equal((await local()).length, 4);
});
