'use strict';
// Live sync through the hybrid faces (docs/hybrid-plugin.md, "Live sync"): startLiveSync /
// stopLiveSync / getLiveSyncState on com.salesforce.mobilesync through cordova.exec, the
// mobilesync functions and both React Native bridge shapes; the "liveSync" events they raise
// (document events, mobilesync's on / addEventListener, React Native's DeviceEventEmitter) and
// the ordinary "sync" events of the runs live sync starts, against a real dev server process.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { mobilesync, mobilesyncClient: ms, smartstoreClient: ss, setRootDirectory } = require('..');
const { createCordova } = require('../lib/bridge');
const { tempRoot, startDevServer } = require('../test-support/helpers');

const MOBILESYNC = 'com.salesforce.mobilesync';
const SMARTSTORE = 'com.salesforce.smartstore';
const INDEXES = [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: '__local__', type: 'string' }];
const UNREACHABLE = 'http://127.0.0.1:9'; // nothing listens on port 9

function exec(cordova, service, action, fields) {
  return new Promise((resolve, reject) => cordova.exec(resolve, (message) => reject(new Error(message)), service, action, [fields]));
}

/** Waits (at most `ms`) until check() is truthy; returns its last value. */
async function until(check, ms = 30000, what = 'the condition') {
  const deadline = Date.now() + ms;
  let value;
  while (!(value = await check()) && Date.now() < deadline) await sleep(20);
  assert.ok(value, `timed out waiting for ${what}`);
  return value;
}

async function serverCount(server, soql) {
  const response = await fetch(`${server.url}/services/data/v62.0/query?q=${encodeURIComponent(soql)}`,
    { headers: { Authorization: `Bearer ${server.token}` } });
  return (await response.json()).totalSize;
}

const localContact = (LastName) => ({ attributes: { type: 'Contact' }, LastName, __local__: true, __locally_created__: true });

/** Registers the soup and creates the syncs "up" and "down" of a store through cordova.exec
 *  (each first run waited for). */
async function setUpSyncs(cordova, store) {
  await exec(cordova, SMARTSTORE, 'pgRegisterSoup', { soupName: 'contacts', indexes: INDEXES, ...store });
  for (const [action, fields] of [
    ['syncUp', { soupName: 'contacts', syncName: 'up', options: { fieldlist: ['LastName'] } }],
    ['syncDown', { soupName: 'contacts', syncName: 'down', target: { type: 'soql', query: 'SELECT LastName FROM Contact' }, options: { mergeMode: 'OVERWRITE' } }],
  ]) {
    const { status, value } = await cordova.plugin.runToEnd(action, [{ ...fields, ...store }]);
    assert.equal(status, 0, JSON.stringify(value));
  }
}

test('cordova.exec: startLiveSync, liveSync document events, the sync events of its runs, stopLiveSync', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=3']);
  const cordova = createCordova({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  const live = [];
  const syncs = [];
  cordova.addDocumentEventListener('liveSync', (event) => live.push(event.detail));
  cordova.addDocumentEventListener('sync', (event) => syncs.push(event.detail));
  const store = { storeName: 'crm', isGlobalStore: false };
  assert.equal((await exec(cordova, MOBILESYNC, 'getLiveSyncState', store)).state, 'stopped');
  await assert.rejects(exec(cordova, MOBILESYNC, 'startLiveSync', store), /no sync to run/);
  await setUpSyncs(cordova, store);
  await assert.rejects(exec(cordova, MOBILESYNC, 'startLiveSync', { options: { syncs: ['nothing'] }, ...store }), /nothing/);

  const before = syncs.length;
  const started = await exec(cordova, MOBILESYNC, 'startLiveSync', { options: { syncs: ['up', 'down'], debounceMs: 100 }, ...store });
  assert.equal(started.event, 'state');
  assert.notEqual(started.state, 'stopped');
  assert.deepEqual([started.storeName, started.isGlobalStore, started.syncs.length], ['crm', false, 2]);
  await assert.rejects(exec(cordova, MOBILESYNC, 'startLiveSync', store), /on already/);
  await until(() => live.some((d) => d.state === 'live'), 30000, 'the state "live"');
  assert.equal(live[0].state, 'connecting');
  for (const detail of live) assert.deepEqual([detail.event, detail.storeName, detail.isGlobalStore], ['state', 'crm', false]);
  assert.equal((await exec(cordova, MOBILESYNC, 'getLiveSyncState', store)).state, 'live');

  // A write through the page reaches the server after the debounce; the run is a sync event.
  await exec(cordova, SMARTSTORE, 'pgUpsertSoupEntries', { soupName: 'contacts', entries: [localContact('Live')], externalIdPath: '_soupEntryId', ...store });
  await until(async () => await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Live'") === 1, 30000, 'the write on the server');
  await until(() => syncs.slice(before).some((d) => d.name === 'up' && d.status === 'DONE' && d.storeName === 'crm'), 10000, "the sync up's sync event");
  assert.ok(syncs.slice(before).every((d) => d.storeName === 'crm' && typeof d._soupEntryId === 'number'));

  assert.equal(await exec(cordova, MOBILESYNC, 'stopLiveSync', store), 'OK');
  await until(() => live.at(-1).state === 'stopped', 10000, 'the state "stopped"');
  assert.equal((await exec(cordova, MOBILESYNC, 'getLiveSyncState', store)).state, 'stopped');
  assert.equal(await exec(cordova, MOBILESYNC, 'stopLiveSync', store), 'OK'); // nothing to do

  // The bridge's close (the plugin's close of its stores) stops it.
  await exec(cordova, MOBILESYNC, 'startLiveSync', store);
  await until(() => live.at(-1).state === 'live', 30000, 'live again');
  await cordova.close();
  await until(() => live.at(-1).state === 'stopped', 10000, 'stopped by the close');
});

test('an offline live sync comes back live when the bridge gets the real remote', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const cordova = createCordova({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  const live = [];
  cordova.addDocumentEventListener('liveSync', (event) => live.push(event.detail));
  await setUpSyncs(cordova, {});
  cordova.setRemote(null, { instanceUrl: UNREACHABLE, accessToken: server.token });
  await exec(cordova, MOBILESYNC, 'startLiveSync', { options: { debounceMs: 50, retryMinMs: 200, retryMaxMs: 400 } });
  const offline = await until(() => live.find((d) => d.state === 'offline'), 30000, 'the state "offline"');
  assert.equal(typeof offline.nextRetryAt, 'number');
  assert.equal(typeof offline.error, 'string');
  assert.equal(offline.storeName, 'smartstore');
  await exec(cordova, SMARTSTORE, 'pgUpsertSoupEntries', { soupName: 'contacts', entries: [localContact('Offline')], externalIdPath: '_soupEntryId' });
  // The new default remote reaches the running live sync (no sync action needed).
  cordova.setRemote(null, server.remote);
  await until(async () => await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Offline'") === 1, 30000, 'the write on the server');
  await until(() => live.at(-1).state === 'live', 30000, 'back "live"');
  assert.ok(live.some((d) => d.state === 'catchingUp'));
});

test('mobilesync.startLiveSync / stopLiveSync / getLiveSyncState and the liveSync events of the Node faces', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  setRootDirectory(tempRoot(t));
  t.after(async () => { await ms.stopSyncs(); setRootDirectory(null); });
  await ms.setRemote(server.remote);
  await ss.registerSoup('contacts', INDEXES);
  const up = await new Promise((resolve, reject) => mobilesync.syncUp('contacts', { fieldlist: ['LastName'] }, 'up', resolve, reject));
  assert.equal(up.name, 'up');
  await until(async () => (await ms.getSyncStatus('up')).status === 'DONE', 30000, 'the first sync up');

  const heard = [];
  const viaTarget = [];
  const onLive = (detail) => heard.push(detail);
  const onEvent = (event) => viaTarget.push(event.detail);
  mobilesync.on('liveSync', onLive);
  mobilesync.addEventListener('liveSync', onEvent);
  t.after(() => { mobilesync.off('liveSync', onLive); mobilesync.removeEventListener('liveSync', onEvent); });

  // The options are optional: callbacks right after the storeConfig (or nothing).
  const started = await new Promise((resolve, reject) => mobilesync.startLiveSync(resolve, reject));
  assert.equal(started.event, 'state');
  assert.equal(started.storeName, 'smartstore');
  await until(() => heard.some((d) => d.state === 'live'), 30000, 'the state "live"');
  assert.deepEqual(viaTarget.map((d) => d.state), heard.map((d) => d.state));
  assert.equal((await ms.getLiveSyncState()).state, 'live');
  assert.equal((await ms.getLiveSyncState({ storeName: 'smartstore' })).state, 'live');
  await assert.rejects(ms.startLiveSync({ debounceMs: 10 }), { code: 'SYNCSTORE_ERR_STATE' });
  assert.equal(await ms.stopLiveSync(), 'OK');
  await until(() => heard.at(-1).state === 'stopped', 10000, 'the state "stopped"');
  // The promise twin with options, and a store given first.
  const again = await ms.startLiveSync({ storeName: 'smartstore' }, { syncs: ['up'], debounceMs: 20 });
  assert.deepEqual(again.syncs, [up._soupEntryId]);
  await assert.rejects(ms.startLiveSync({ storeName: 'other' }, { syncs: ['up'] }), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  assert.equal(await new Promise((resolve, reject) => mobilesync.stopLiveSync(resolve, reject)), 'OK');
});

test('React Native: live sync through both bridge shapes, liveSync events through DeviceEventEmitter', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const cordova = createCordova({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  const rn = cordova.reactNative;
  const events = [];
  const subscription = rn.DeviceEventEmitter.addListener('liveSync', (detail) => events.push(detail));
  assert.equal(typeof rn.MobileSyncReactBridge.addListener, 'function'); // NativeEventEmitter's protocol
  assert.equal(typeof rn.SFMobileSyncReactBridge.removeListeners, 'function');
  await setUpSyncs(cordova, {});

  // Android: JSON text; stopLiveSync's success gets no argument.
  const android = rn.MobileSyncReactBridge;
  const text = await new Promise((resolve, reject) => android.startLiveSync({ options: { debounceMs: 50 } }, resolve, reject));
  assert.equal(typeof text, 'string');
  assert.equal(JSON.parse(text).event, 'state');
  await until(() => events.some((d) => d.state === 'live'), 30000, 'the state "live"');
  const state = JSON.parse(await new Promise((resolve, reject) => android.getLiveSyncState({}, resolve, reject)));
  assert.equal(state.state, 'live');
  const bare = await new Promise((resolve, reject) => android.stopLiveSync({}, (...got) => resolve(got), reject));
  assert.deepEqual(bare, []);
  await until(() => events.at(-1).state === 'stopped', 10000, 'stopped');
  await assert.rejects(new Promise((resolve, reject) => android.startLiveSync({ options: { syncs: ['nothing'] } }, resolve, reject)));

  // iOS: values, "OK".
  const ios = rn.SFMobileSyncReactBridge;
  const call = (method, args) => new Promise((resolve, reject) => ios[method](args, (error, result) => (error ? reject(error) : resolve(result))));
  assert.equal((await call('startLiveSync', { options: { syncs: ['down'] } })).syncs.length, 1);
  await until(() => events.at(-1).state === 'live', 30000, 'live again');
  assert.equal((await call('getLiveSyncState', {})).state, 'live');
  assert.equal(await call('stopLiveSync', {}), 'OK');
  subscription.remove();
  const count = events.length;
  await call('startLiveSync', {});
  await sleep(200);
  assert.equal(events.length, count, 'a removed subscription hears nothing');
  await call('stopLiveSync', {});
});

test('a hybrid live sync does not keep the process alive', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const script = `
    const { createCordova } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'bridge'))});
    const cordova = createCordova({ root: ${JSON.stringify(tempRoot(t))}, remote: ${JSON.stringify(server.remote)} });
    const exec = (service, action, fields) => new Promise((ok, fail) => cordova.exec(ok, fail, service, action, [fields]));
    // Held until live sync is live (a 'liveSync' listener alone does not hold the process).
    const hold = setInterval(() => {}, 1000);
    cordova.addDocumentEventListener('liveSync', (event) => {
      if (event.detail.state !== 'live' || !hold.hasRef()) return;
      process.stdout.write('live');
      clearInterval(hold);
      hold.unref();
    });
    (async () => {
      await exec('${SMARTSTORE}', 'pgRegisterSoup', { soupName: 's', indexes: [{ path: 'Id', type: 'string' }, { path: '__local__', type: 'string' }] });
      await cordova.plugin.runToEnd('syncUp', [{ soupName: 's', syncName: 'up', options: { fieldlist: ['Id'] } }]);
      await exec('${MOBILESYNC}', 'startLiveSync', {});
    })();`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  assert.deepEqual([result.status, result.signal, result.stdout, result.stderr], [0, null, 'live', '']);
});
