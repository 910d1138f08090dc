'use strict';
// The module inside worker_threads: stores, queries and a sync in a worker; a worker
// terminated while its sync runs and its custom target waits; the main thread unaffected.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { openStore } = require('..');
const { tempRoot, startDevServer } = require('../test-support/helpers');

const MODULE = path.join(__dirname, '..');

// Runs in the worker: a store of its own, a sync down awaited to the end.
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { openStore } = require(workerData.module);
(async () => {
  const store = await openStore({ storeName: 'w' + workerData.n, root: workerData.root });
  await store.registerSoup('contacts', [{ path: 'Id', type: 'string' }]);
  await store.upsert('contacts', [{ Id: 'local-' + workerData.n }]);
  await store.setRemote(workerData.remote);
  const run = store.syncDown({ type: 'soql', query: 'SELECT Id, LastName FROM Contact' }, 'contacts');
  let events = 0;
  run.on('progress', () => events++);
  const final = await run.done;
  const count = (await store.query('contacts', { queryType: 'range', indexPath: 'Id', pageSize: 1 })).totalEntries;
  if (workerData.hang) {
    store.registerTarget('hang', { fetchPage: () => new Promise(() => {}) });
    // Both made before the main thread hears from this worker (and may terminate it): a run
    // starts after the call returns, and a slow worker (ASan) was terminated before sync 2 existed.
    const hang = store.syncDown({ type: 'hang' }, 'contacts');
    const queued = store.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 'contacts');
    await Promise.all([hang.started, queued.started]);
  }
  parentPort.postMessage({ status: final.status, count, events });
})().catch((error) => parentPort.postMessage({ error: error.message }));
`;

function startWorker(data) {
  const worker = new Worker(WORKER_CODE, { eval: true, workerData: { module: MODULE, ...data } });
  const message = new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  const exit = new Promise((resolve) => worker.once('exit', resolve));
  return { worker, message, exit };
}

test('workers use their own stores and syncs; terminating one mid-sync is safe', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=300']);
  const root = tempRoot(t);
  const workers = [0, 1, 2].map((n) => startWorker({ n, root, remote: server.remote, hang: n === 2 }));
  const results = await Promise.all(workers.map((w) => w.message));
  for (const result of results) {
    assert.equal(result.error, undefined);
    assert.equal(result.status, 'DONE');
    assert.equal(result.count, 301);
    assert.ok(result.events >= 2);
  }
  // Workers 0 and 1 end on their own (nothing pending); worker 2 is terminated while its
  // custom target call waits on the JS thread it is losing.
  assert.equal(await workers[0].exit, 0);
  assert.equal(await workers[1].exit, 0);
  await workers[2].worker.terminate();
  await workers[2].exit;

  // The main thread goes on, and can open the stores the workers closed.
  const store = await openStore({ storeName: 'w2', root });
  const state = await store.getSyncStatus(2);
  assert.ok(['STOPPED', 'FAILED', 'DONE'].includes(state.status), state.status);
  assert.equal((await store.query('contacts', { queryType: 'range', indexPath: 'Id', pageSize: 1 })).totalEntries, 301);
  await store.close();
});

// Runs in the worker: watches of its store, one iterated (it holds the worker), then a flood of
// writes from the main thread while the worker is terminated.
const WATCH_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { openStore } = require(workerData.module);
(async () => {
  const store = await openStore({ storeName: 'watched', root: workerData.root });
  const soup = store.watchSoup('things');
  soup.on('change', () => {});
  const query = store.watch('things', { queryType: 'range', indexPath: 'k', order: 'ascending', pageSize: 5 });
  await Promise.all([soup.ready, query.ready]);
  parentPort.postMessage('watching');
  for await (const notice of query) parentPort.postMessage(notice.totalEntries);
})().catch((error) => parentPort.postMessage({ error: error.message }));
`;

test('a worker terminated while its watches are told of writes: the main thread goes on', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'watched', root });
  t.after(() => store.close());
  await store.registerSoup('things', [{ path: 'k', type: 'string' }]);
  const worker = new Worker(WATCH_CODE, { eval: true, workerData: { module: MODULE, root } });
  const exit = new Promise((resolve) => worker.once('exit', resolve));
  const heard = [];
  await new Promise((resolve, reject) => {
    worker.on('message', (m) => { if (m === 'watching') resolve(); else heard.push(m); if (m && m.error) reject(new Error(m.error)); });
    worker.once('error', reject);
  });
  const writes = [];
  for (let i = 0; i < 50; i++) writes.push(store.upsert('things', [{ k: `k${i}` }]));
  while (heard.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  await worker.terminate();
  await exit;
  await Promise.all(writes);
  assert.equal((await store.find('things', { queryType: 'range', indexPath: 'k', order: 'ascending', pageSize: 100 })).length, 50);
  // The worker's handle went with it: a watch here still hears this store.
  const watch = store.watchSoup('things');
  await watch.ready;
  await store.upsert('things', [{ k: 'after' }]);
  for await (const notice of watch) { // an iteration holds the process while it waits
    assert.equal(notice.soups[0].inserted.count, 1);
    break;
  }
});
