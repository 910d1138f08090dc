'use strict';
// A hybrid app's flow, Cordova style, against a real dev server process on 127.0.0.1:
// soups from userstore.json, syncs from usersyncs.json, sync down, offline edits, sync up,
// 'sync' events (EventEmitter and addEventListener), reSync, ghosts (no event), React Native callbacks.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { smartstore, mobilesync, smartstoreClient: ss, createMobileSync } = require('..');
const { tempRoot, startDevServer, cb } = require('../test-support/helpers');

const API = '/services/data/v62.0';

async function rest(server, method, route, body) {
  const response = await fetch(server.url + API + route, {
    method, headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${route}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}

const soql = (server, q) => rest(server, 'GET', `/query?q=${encodeURIComponent(q)}`);

/** Resolves with the terminal state of syncId (or a sync down's name) seen through 'sync'
 *  events from events[from] on (events already delivered count). */
function terminal(events, syncId, from = events.length) {
  const matches = (detail) => (detail._soupEntryId === syncId || detail.syncId === syncId ||
    (detail.name === syncId && detail.type === 'syncDown')) && ['DONE', 'FAILED', 'STOPPED'].includes(detail.status);
  return new Promise((resolve) => {
    const seen = events.slice(from).find(matches);
    if (seen) return resolve(seen);
    const check = (detail) => {
      if (!matches(detail)) return;
      mobilesync.off('sync', check);
      resolve(detail);
    };
    mobilesync.on('sync', check);
  });
}

const all = async (soup) => (await ss.querySoup(soup, smartstore.buildAllQuerySpec('Id', 'ascending', 1000))).currentPageOrderedEntries;

test('hybrid app flow against the dev server', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=120']);
  const dir = tempRoot(t);
  smartstore.setRootDirectory(path.join(dir, 'stores'));

  const userstore = path.join(dir, 'userstore.json');
  fs.writeFileSync(userstore, JSON.stringify({ soups: [{ soupName: 'contacts', indexes: [
    { path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: '__local__', type: 'string' }] }] }));
  const usersyncs = path.join(dir, 'usersyncs.json');
  fs.writeFileSync(usersyncs, JSON.stringify({ syncs: [
    { syncName: 'syncDownContacts', syncType: 'syncDown', soupName: 'contacts',
      target: { type: 'soql', query: 'SELECT Id, FirstName, LastName, LastModifiedDate FROM Contact' },
      options: { mergeMode: 'OVERWRITE' } },
    { syncName: 'syncUpContacts', syncType: 'syncUp', soupName: 'contacts',
      target: { createFieldlist: ['FirstName', 'LastName'], updateFieldlist: ['FirstName', 'LastName'] },
      options: { fieldlist: ['Id', 'FirstName', 'LastName', 'LastModifiedDate'], mergeMode: 'LEAVE_IF_CHANGED' } },
  ] }));

  // Setup as an app does at start: soups, syncs, then the credentials.
  assert.equal(await cb(smartstore.loadStoreConfig, userstore), 'OK');
  assert.equal(await cb(mobilesync.loadSyncConfig, usersyncs), 'OK');
  assert.equal(await cb(mobilesync.loadSyncConfig, usersyncs), 'OK', 'loading twice skips existing syncs');
  assert.equal(await cb(smartstore.soupExists, 'contacts'), true);
  const down = await cb(mobilesync.getSyncStatus, 'syncDownContacts');
  assert.equal(down.status, 'NEW');
  assert.equal(down.type, 'syncDown');
  assert.equal(await cb(mobilesync.setRemote, server.remote), undefined);

  // Both event faces see every state, with isGlobalStore and storeName.
  const emitted = [];
  const dom = [];
  const onSync = (detail) => emitted.push(detail);
  const onDom = (event) => dom.push(event.detail);
  mobilesync.on('sync', onSync);
  mobilesync.addEventListener('sync', onDom);
  t.after(() => { mobilesync.off('sync', onSync); mobilesync.removeEventListener('sync', onDom); });

  // Sync down: success gets the state at start, events follow to DONE.
  let ended = terminal(emitted, down._soupEntryId);
  const atStart = await cb(mobilesync.reSync, 'syncDownContacts');
  assert.equal(atStart.status, 'RUNNING');
  assert.equal(atStart._soupEntryId, down._soupEntryId);
  let final = await ended;
  assert.equal(final.status, 'DONE', final.error);
  assert.equal(final.totalSize, 120);
  assert.equal(final.isGlobalStore, false);
  assert.equal(final.storeName, 'smartstore');
  assert.ok(emitted.some((d) => d.status === 'RUNNING'));
  assert.deepEqual(dom.map((d) => d.status), emitted.map((d) => d.status));
  let local = await all('contacts');
  assert.equal(local.length, 120);

  // Offline edits, flagged the way the hybrid SDK's helpers flag them.
  const [edited, removed] = [local[0], local[1]];
  await ss.upsertSoupEntries('contacts', [
    { ...edited, LastName: 'EditedOffline', __local__: true, __locally_updated__: true },
    { ...removed, __local__: true, __locally_deleted__: true },
    { attributes: { type: 'Contact' }, FirstName: 'Newly', LastName: 'CreatedOffline', __local__: true, __locally_created__: true },
  ]);
  const dirty = (await ss.querySoup('contacts', smartstore.buildExactQuerySpec('__local__', 'true'))).totalEntries;
  assert.equal(dirty, 3);

  // Sync up, then sync down again.
  const up = await cb(mobilesync.getSyncStatus, 'syncUpContacts');
  ended = terminal(emitted, up._soupEntryId);
  assert.equal((await cb(mobilesync.reSync, 'syncUpContacts')).status, 'RUNNING');
  final = await ended;
  assert.equal(final.status, 'DONE', final.error);
  assert.equal(final.type, 'syncUp');
  const onServer = await soql(server, "SELECT Id, LastName FROM Contact WHERE LastName IN ('EditedOffline', 'CreatedOffline')");
  assert.deepEqual(onServer.records.map((r) => r.LastName).sort(), ['CreatedOffline', 'EditedOffline']);
  await assert.rejects(rest(server, 'GET', `/sobjects/Contact/${removed.Id}`), /404/);

  // syncUp with the target omitted (the plugin's optional first argument).
  const [another] = await ss.upsertSoupEntries('contacts', [{ attributes: { type: 'Contact' }, LastName: 'NoTarget', __local__: true, __locally_created__: true }]);
  const mark = emitted.length;
  const upNoTarget = await cb(mobilesync.syncUp, 'contacts', { fieldlist: ['LastName'] });
  assert.equal(upNoTarget.type, 'syncUp');
  final = await terminal(emitted, upNoTarget._soupEntryId, mark);
  assert.equal(final.status, 'DONE', final.error);
  assert.match((await ss.retrieveSoupEntries('contacts', [another._soupEntryId]))[0].Id, /^003/);

  ended = terminal(emitted, down._soupEntryId);
  await cb(mobilesync.reSync, down._soupEntryId);
  assert.equal((await ended).status, 'DONE');
  local = await all('contacts');
  assert.equal(local.length, 121, '120 - 1 deleted + 2 created');
  assert.ok(local.every((e) => e.__local__ === false || e.__local__ === 'false' || e.__local__ === undefined), 'no dirty entry left');
  const created = local.find((e) => e.LastName === 'CreatedOffline');
  assert.match(created.Id, /^003/);

  // Ghosts: a record deleted on the server stays locally until cleanResyncGhosts.
  const ghost = local.find((e) => e.Id !== created.Id && e.Id !== edited.Id);
  await rest(server, 'DELETE', `/sobjects/Contact/${ghost.Id}`);
  ended = terminal(emitted, down._soupEntryId);
  await cb(mobilesync.reSync, 'syncDownContacts');
  await ended;
  assert.ok((await all('contacts')).some((e) => e.Id === ghost.Id), 'a reSync does not remove deleted records');
  const removedCount = await cb(mobilesync.cleanResyncGhosts, down._soupEntryId);
  assert.equal(removedCount, 1);
  assert.ok(!(await all('contacts')).some((e) => e.Id === ghost.Id));
  // As the plugin: the clean answers its count and fires no 'sync' event (a listener waiting for
  // status DONE must not take it for a finished sync).
  assert.ok(!emitted.some((d) => d.type === 'cleanResyncGhosts'));
  assert.notEqual((await cb(mobilesync.getSyncStatus, 'syncDownContacts')).status, 'RUNNING');

  // A named sync down started directly; the same name again is refused.
  ended = terminal(emitted, 'editedOnly');
  const byName = await new Promise((resolve, reject) => mobilesync.syncDown(
    { type: 'soql', query: "SELECT Id, LastName FROM Contact WHERE LastName = 'EditedOffline'" },
    'contacts', { mergeMode: mobilesync.MERGE_MODE.LEAVE_IF_CHANGED }, 'editedOnly', resolve, reject));
  assert.equal(byName.name, 'editedOnly');
  assert.deepEqual(byName.options.mergeMode, 'LEAVE_IF_CHANGED');
  const duplicate = await new Promise((resolve) => mobilesync.syncDown(
    { type: 'soql', query: 'SELECT Id FROM Contact' }, 'contacts', {}, 'editedOnly', () => resolve('started'), resolve));
  assert.equal(typeof duplicate, 'string');
  assert.notEqual(duplicate, 'started');

  assert.equal((await ended).status, 'DONE');
  // React Native callbacks: success with the DONE state.
  const rn = createMobileSync({ reactNative: true });
  const rnDone = await cb(rn.reSync, 'editedOnly');
  assert.equal(rnDone.status, 'DONE');
  assert.equal(rnDone.totalSize, 1);

  assert.equal(await cb(mobilesync.deleteSync, 'editedOnly'), 'OK');
  assert.equal(await cb(mobilesync.getSyncStatus, 'editedOnly'), null);
});
