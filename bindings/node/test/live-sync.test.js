'use strict';
// Live sync through the promise-first face (docs/sync.md#live-sync): Store#startLiveSync against
// a real dev server process. Catching up at start, a local write pushed once writes paused for
// the debounce, "offline" with the time of the next attempt while the remote is unreachable and
// back "live" (the write made meanwhile pushed) once the real remote is set, stop(), the store's
// close, refused starts, and a process that exits on its own with live sync running.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { setTimeout: sleep } = require('node:timers/promises');
const { openStore, LiveSync } = require('..');
const { tempRoot, startDevServer } = require('../test-support/helpers');

const INDEXES = [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: '__local__', type: 'string' }];
const UNREACHABLE = 'http://127.0.0.1:9'; // nothing listens on port 9
const CHILD = path.join(__dirname, '..', 'test-support', 'live-child.js');

/** Waits (at most `ms`) until check() is truthy; returns its last value. */
async function until(check, ms = 30000, what = 'the condition') {
  const deadline = Date.now() + ms;
  let value;
  while (!(value = await check()) && Date.now() < deadline) await sleep(20);
  assert.ok(value, `timed out waiting for ${what}`);
  return value;
}

/** How many records the server's SOQL query finds. */
async function serverCount(server, soql) {
  const response = await fetch(`${server.url}/services/data/v62.0/query?q=${encodeURIComponent(soql)}`,
    { headers: { Authorization: `Bearer ${server.token}` } });
  assert.equal(response.status, 200);
  return (await response.json()).totalSize;
}

/** A store with a soup, the server's remote (or `remote`), a sync up "up" and a sync down "down". */
async function storeWithSyncs(t, server, { remote = server.remote, root = tempRoot(t), storeName = 'live' } = {}) {
  const store = await openStore({ storeName, root });
  t.after(() => store.close());
  await store.registerSoup('contacts', INDEXES);
  await store.setRemote(remote);
  await store.createSyncUp(null, 'contacts', { fieldlist: ['LastName'] }, 'up');
  await store.createSyncDown({ type: 'soql', query: 'SELECT LastName FROM Contact' }, 'contacts', { mergeMode: 'OVERWRITE' }, 'down');
  return store;
}

/** Records a LiveSync's events: states (names), events (state events), runs (sync states with arrival time). */
function record(live) {
  const seen = { states: [], events: [], runs: [] };
  live.on('state', (event) => { seen.events.push(event); seen.states.push(event.state); });
  live.on('run', (state) => seen.runs.push({ ...state, at: Date.now() }));
  return seen;
}

const localContact = (LastName) => ({ attributes: { type: 'Contact' }, LastName, __local__: true, __locally_created__: true });

test('live sync catches up, pushes a write after the debounce, and stops', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=3']);
  const store = await storeWithSyncs(t, server);
  const DEBOUNCE = 1000;
  const live = store.startLiveSync({ syncs: ['up', 'down'], debounceMs: DEBOUNCE });
  assert.ok(live instanceof LiveSync);
  const seen = record(live);
  assert.equal(live.state, 'connecting');
  assert.equal(await live.started, live);
  await until(() => seen.states.includes('live'), 30000, 'the state "live"');
  assert.equal(seen.states[0], 'connecting');
  assert.equal(live.state, 'live');
  assert.deepEqual(live.lastEvent.syncs.length, 2);
  // Catching up ran the sync up, then the sync down (the server's 3 contacts are here).
  assert.deepEqual(seen.runs.filter((s) => s.status === 'DONE').map((s) => s.name), ['up', 'down']);
  assert.equal((await store.find(null, { queryType: 'smart', smartSql: 'select count(*) from {contacts}', pageSize: 1 }))[0][0], 3);
  const state = await store.liveSyncState();
  assert.equal(state.event, 'state');
  assert.equal(state.state, 'live');

  // One live sync per store: another handle's start is refused (STATE), and says so.
  const other = await openStore({ storeName: 'live', root: store.root });
  t.after(() => other.close());
  const refused = other.startLiveSync();
  const errors = [];
  refused.on('error', (error) => errors.push(error));
  await assert.rejects(refused.started, { code: 'SYNCSTORE_ERR_STATE' });
  assert.equal(refused.state, 'stopped');
  assert.equal(errors.length, 1);
  await refused.stop(); // nothing to stop: it never ran, and the store's live sync goes on
  assert.equal((await other.liveSyncState()).state, 'live');

  // A local write reaches the server once writes paused for the debounce, by one sync up run.
  const before = seen.runs.length;
  await store.upsert('contacts', [localContact('Live')]);
  const written = Date.now();
  assert.equal(await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Live'"), 0);
  await until(async () => await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Live'") === 1, 30000, 'the write on the server');
  const push = await until(() => seen.runs.slice(before).find((s) => s.name === 'up' && s.status === 'DONE'), 10000, 'the sync up run');
  const started = seen.runs.slice(before).find((s) => s.name === 'up' && s.status === 'RUNNING');
  assert.ok(started.at - written >= DEBOUNCE - 100, `the sync up started ${started.at - written} ms after the write`);
  assert.equal(push.type, 'syncUp');
  assert.deepEqual(await store.find('contacts', { queryType: 'exact', indexPath: '__local__', matchKey: 'true', pageSize: 10 }), []);

  await live.stop();
  assert.equal(live.state, 'stopped');
  assert.equal(live.stopped, true);
  assert.equal(seen.states.at(-1), 'stopped');
  assert.equal((await store.liveSyncState()).state, 'stopped');
  // Nothing runs once stopped.
  await store.upsert('contacts', [localContact('AfterStop')]);
  await sleep(DEBOUNCE + 500);
  assert.equal(await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'AfterStop'"), 0);
  await live.stop(); // again: resolves at once

  // Started again after a stop, as a new LiveSync.
  const again = store.startLiveSync({ debounceMs: 50 });
  await again.started;
  for await (const event of again) {
    if (event.state === 'live') break; // leaving the iteration does not stop it
  }
  await until(async () => await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'AfterStop'") === 1, 30000, 'the catch-up push');
  assert.equal(again.state, 'live');
  await again.stop();
});

test('an unreachable remote is offline with the next attempt; the real remote brings it back live with the write pushed', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const store = await storeWithSyncs(t, server, { remote: { instanceUrl: UNREACHABLE, accessToken: server.token } });
  const live = store.startLiveSync({ debounceMs: 50, retryMinMs: 200, retryMaxMs: 400 });
  const seen = record(live);
  const offline = await until(() => seen.events.find((e) => e.state === 'offline'), 30000, 'the state "offline"');
  assert.equal(typeof offline.nextRetryAt, 'number');
  assert.ok(offline.nextRetryAt > Date.now() - 5000 && offline.nextRetryAt < Date.now() + 60000, `nextRetryAt ${offline.nextRetryAt}`);
  assert.equal(typeof offline.error, 'string');
  assert.equal(live.state, 'offline');
  assert.equal((await store.liveSyncState()).state, 'offline');

  // Written while offline, pushed by the attempt that succeeds once the real remote is set.
  await store.upsert('contacts', [localContact('Offline')]);
  await store.setRemote(server.remote);
  await until(async () => await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Offline'") === 1, 30000, 'the write on the server');
  await until(() => live.state === 'live', 30000, 'the state "live"');
  assert.ok(seen.states.includes('catchingUp'), seen.states.join(' '));
  assert.equal(seen.states.lastIndexOf('offline') < seen.states.lastIndexOf('live'), true);
  // Retries were spaced (backoff), not a storm.
  assert.ok(seen.states.filter((s) => s === 'offline').length < 60, seen.states.join(' '));
  assert.equal((await store.find(null, { queryType: 'smart', smartSql: 'select count(*) from {contacts}', pageSize: 1 }))[0][0], 3);
  await live.stop();
});

test("the store's close stops its live sync", { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const store = await storeWithSyncs(t, server);
  const live = store.startLiveSync({ debounceMs: 50 });
  const seen = record(live);
  const iterated = [];
  const iteration = (async () => { for await (const event of live) iterated.push(event.state); })();
  await until(() => live.state === 'live', 30000, 'the state "live"');
  await store.close();
  // The close waited for its last event.
  assert.equal(live.state, 'stopped');
  assert.equal(seen.states.at(-1), 'stopped');
  await iteration; // the iteration ended with "stopped"
  assert.equal(iterated.at(-1), 'stopped');
  assert.equal(iterated[0], 'connecting');
  await live.stop(); // resolves at once
  // A closed store's start is refused.
  await assert.rejects(store.startLiveSync().started, { code: 'SYNCSTORE_ERR_STATE' });
  await assert.rejects(store.liveSyncState(), { code: 'SYNCSTORE_ERR_STATE' });
});

test('refused starts: bad options, an unknown sync, no sync to run', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'refused', root });
  t.after(() => store.close());
  await store.registerSoup('contacts', INDEXES);
  await assert.rejects(store.startLiveSync().started, { code: 'SYNCSTORE_ERR_ARGUMENT', message: /no sync to run/ });
  await store.createSyncUp(null, 'contacts', { fieldlist: ['LastName'] }, 'up');
  await assert.rejects(store.startLiveSync({ syncs: ['nothing'] }).started, { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  await assert.rejects(store.startLiveSync({ debounceMs: -1 }).started, { code: 'SYNCSTORE_ERR_ARGUMENT', message: /debounceMs/ });
  await assert.rejects(store.startLiveSync({ debounce: 10 }).started, { code: 'SYNCSTORE_ERR_ARGUMENT', message: /debounce/ });
  await assert.rejects(store.startLiveSync('fast').started, { code: 'SYNCSTORE_ERR_ARGUMENT' });
  // An iteration takes a refused start's error; one that nobody takes (no 'error' listener, no
  // `started`, no iteration) is thrown, as an EventEmitter's 'error' is (below, in a child).
  const iterate = async () => { for await (const event of store.startLiveSync({ syncs: ['nothing'] })) void event; };
  await assert.rejects(iterate(), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  assert.equal((await store.liveSyncState()).state, 'stopped');
});

test("a refused start nobody takes is thrown, as an EventEmitter's unhandled 'error'", { timeout: 60000 }, async (t) => {
  const script = `
    const { openStore } = require(${JSON.stringify(path.join(__dirname, '..'))});
    openStore({ storeName: 'x', root: ${JSON.stringify(tempRoot(t))} }).then(async (store) => {
      await store.registerSoup('s', [{ path: 'k', type: 'string' }]);
      await store.createSyncUp(null, 's', { fieldlist: ['k'] }, 'up');
      store.startLiveSync({ syncs: ['nothing'] });
    });`;
  const result = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => resolve({ code, err }));
  });
  assert.notEqual(result.code, 0);
  assert.match(result.err, /SYNCSTORE_ERR_NOT_FOUND|No sync named 'nothing'/);
});

function runChild(root, server, variant) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, root, server.url, server.token, variant], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000); // a hang, not a slow exit, fails
    child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal, out, err }); });
  });
}

test('the process exits on its own with live sync running; keepAlive holds it until stop()', { timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const root = tempRoot(t);
  assert.deepEqual(await runChild(root, server, 'iterate'), { code: 0, signal: null, out: 'live live\n', err: '' });
  assert.deepEqual(await runChild(root, server, 'keepAlive'), { code: 0, signal: null, out: 'stopped stopped\n', err: '' });
  // The write made just before the first child's end was pushed by the second's catch-up, or
  // before the first exited; either way it is on the server once.
  assert.equal(await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'AtExit'"), 1);
});

test('a worker terminated with live sync running stops it; the main thread starts its own on the same store', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=2']);
  const root = tempRoot(t);
  const store = await storeWithSyncs(t, server, { root });
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { openStore } = require(workerData.module);
    (async () => {
      const store = await openStore({ storeName: 'live', root: workerData.root });
      await store.setRemote(workerData.remote);
      const live = store.startLiveSync({ debounceMs: 20, keepAlive: true });
      live.on('state', (event) => parentPort.postMessage(event.state));
      // Writes that live sync pushes while the worker is being terminated.
      setInterval(() => store.upsert('contacts', [{ attributes: { type: 'Contact' }, LastName: 'Worker', __local__: true, __locally_created__: true }]), 10);
    })().catch((error) => parentPort.postMessage('error ' + error.message));`;
  const worker = new Worker(code, { eval: true, workerData: { module: path.join(__dirname, '..'), root, remote: server.remote } });
  const states = [];
  await new Promise((resolve, reject) => {
    worker.on('message', (state) => { states.push(state); if (state === 'live') resolve(); if (state.startsWith('error')) reject(new Error(state)); });
    worker.once('error', reject);
  });
  await sleep(100);
  await worker.terminate();
  // The worker's close of its store stopped its live sync: this handle may start one.
  const live = store.startLiveSync({ debounceMs: 20 });
  await live.started;
  await until(() => live.state === 'live', 30000, 'the state "live"');
  await until(async () => (await store.find('contacts', { queryType: 'exact', indexPath: '__local__', matchKey: 'true', pageSize: 10 })).length === 0,
    30000, 'every worker write pushed');
  await live.stop();
  assert.ok(await serverCount(server, "SELECT Id FROM Contact WHERE LastName = 'Worker'") > 0);
});
