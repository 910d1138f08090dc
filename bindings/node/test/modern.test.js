'use strict';
// The promise-first face: openStore, upsert/query/remove, SyncRun (.done, 'progress'),
// close() waiting for the runs it stops, and the store root rules.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const sync = require('..');
const { tempRoot, startDevServer } = require('../test-support/helpers');

const TARGET = { type: 'soql', query: 'SELECT Id, LastName FROM Contact' };

test('openStore, entries and queries', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const store = await sync.openStore({ storeName: 'modern', root });
  t.after(() => store.close());
  assert.equal(store.storeName, 'modern');
  assert.ok(fs.existsSync(path.join(root, 'user', 'modern.db')));
  await store.registerSoup('notes', [{ path: 'title', type: 'string' }, { path: 'body', type: 'full_text' }]);
  const [a, b] = await store.upsert('notes', [{ title: 'a', body: 'red fox' }, { title: 'b', body: 'blue whale' }]);
  assert.equal(await store.upsert('notes', { title: 'c', body: 'red whale' }, { returnEntries: false }), undefined);
  const updated = await store.upsert('notes', [{ title: 'a', body: 'grey fox' }], { externalIdPath: 'title' });
  assert.equal(updated[0]._soupEntryId, a._soupEntryId);
  assert.deepEqual((await store.retrieve('notes', [b._soupEntryId]))[0].body, 'blue whale');
  const whales = await store.query('notes', sync.buildMatchQuerySpec('body', 'whale', 'ascending', 10, 'title'));
  assert.deepEqual(whales.entries.map((e) => e.title), ['b', 'c']);
  await whales.close();
  assert.deepEqual((await store.find('notes', sync.buildMatchQuerySpec('body', 'whale', 'ascending', 1, 'title'))).map((e) => e.title), ['b']);
  assert.deepEqual(await store.find(null, sync.buildSmartQuerySpec('select {notes:title} from {notes} order by {notes:title} desc', 2)), [['c'], ['b']]);
  assert.deepEqual(await store.find('notes', sync.buildExactQuerySpec('title', 'zzz')), []);
  assert.deepEqual((await store.find('notes', sync.buildMatchQuerySpec('body', 'whale', 'ascending', 1, 'title'), 1)).map((e) => e.title), ['c']);
  assert.deepEqual(await store.find('notes', sync.buildMatchQuerySpec('body', 'whale', 'ascending', 1, 'title'), 2), []);
  await assert.rejects(store.find('notes', sync.buildAllQuerySpec('title'), -1), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  await assert.rejects(store.find('nope', sync.buildAllQuerySpec('title')), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  const count = await store.smartQuery('select count(*) from {notes}');
  assert.deepEqual(count.entries, [[3]]);
  // findSync answers what find resolves with, and throws what it rejects with.
  for (const [soup, spec, page] of [['notes', sync.buildExactQuerySpec('title', 'b'), 0],
    ['notes', sync.buildMatchQuerySpec('body', 'whale', 'ascending', 1, 'title'), 1],
    [null, sync.buildSmartQuerySpec('select {notes:title} from {notes} order by {notes:title} desc', 2), 0],
    ['notes', JSON.stringify(sync.buildAllQuerySpec('title', 'descending', 2)), 0],
    [null, sync.buildSmartQuerySpec("select 'süß ✓', {notes:title} from {notes} order by {notes:title}", 10), 0],
    ['notes', sync.buildAllQuerySpec('title'), 5]]) {
    assert.deepEqual(store.findSync(soup, spec, page), await store.find(soup, spec, page));
  }
  assert.deepEqual(store.findSync('notes', sync.buildExactQuerySpec('title', 'ü\u00e9')), []);
  // Specs around the size the addon copies on its stack (512 bytes), ASCII and two-byte
  // characters: each finds its own entry, never a spec cut short.
  const base = JSON.stringify(sync.buildExactQuerySpec('title', '')).length;
  const titles = [];
  for (let size = 500; size <= 520; size++) {
    titles.push('t'.repeat(size - base), `${(size - base) % 2 ? 't' : ''}${'ü'.repeat(Math.floor((size - base) / 2))}`);
  }
  const long = await store.upsert('notes', titles.map((title) => ({ title, body: 'long' })));
  for (const entry of long) {
    assert.deepEqual(store.findSync('notes', sync.buildExactQuerySpec('title', entry.title)).map((e) => e._soupEntryId), [entry._soupEntryId]);
  }
  await store.remove('notes', long.map((e) => e._soupEntryId));
  assert.throws(() => store.findSync('notes', sync.buildAllQuerySpec('title'), -1), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.throws(() => store.findSync('nope', sync.buildAllQuerySpec('title')), { code: 'SYNCSTORE_ERR_NOT_FOUND', status: 2 });
  assert.throws(() => store.findSync('notes', '{"queryType":'), { code: 'SYNCSTORE_ERR_ARGUMENT', message: /Malformed query spec/ });
  assert.throws(() => store.findSync('notes', sync.buildAllQuerySpec('title'), 'one'), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.equal(await store.remove('notes', sync.buildExactQuerySpec('title', 'c')), 1);
  await store.remove('notes', [b._soupEntryId]);
  assert.deepEqual((await store.smartQuery('select {notes:title} from {notes}')).entries, [['a']]);
  assert.ok(await store.size() > 0);
  assert.deepEqual(await sync.listStores({ root }), ['modern']);
  // Once a close is made the lookup throws at once, while the close is still under way.
  const closing = store.close();
  assert.throws(() => store.findSync('notes', sync.buildAllQuerySpec('title')), { code: 'SYNCSTORE_ERR_STATE' });
  await closing;
});

test('store root: explicit call, then SYNCSTORE_ROOT, then a per-user directory', { timeout: 60000 }, (t) => {
  const root = tempRoot(t);
  const code = `const s = require(${JSON.stringify(path.join(__dirname, '..'))});
    const before = s.getRootDirectory(); s.setRootDirectory(${JSON.stringify(path.join(root, 'explicit'))});
    console.log(JSON.stringify([before, s.getRootDirectory()]));`;
  const withEnv = spawnSync(process.execPath, ['-e', code], { env: { ...process.env, SYNCSTORE_ROOT: root }, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(withEnv.stdout), [root, path.join(root, 'explicit')]);
  const env = { ...process.env, HOME: root, XDG_DATA_HOME: '' };
  delete env.SYNCSTORE_ROOT;
  const withoutEnv = spawnSync(process.execPath, ['-e', code], { env, encoding: 'utf8' });
  assert.equal(JSON.parse(withoutEnv.stdout)[0], path.join(root, '.local', 'share', 'syncstore'));
});

test('SyncRun: progress events, .done, reSync, close waits for stopped runs', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=400', '--default-batch-size', '200']);
  const root = tempRoot(t);
  const store = await sync.openStore({ storeName: 'runs', root });
  await store.registerSoup('contacts', [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }]);
  await store.setRemote(server.remote);

  const run = store.syncDown(TARGET, 'contacts', { mergeMode: 'OVERWRITE' }, 'all');
  const seen = [];
  let started = null;
  run.on('start', (state) => { started = state; });
  run.on('progress', (state) => seen.push(state.status));
  assert.equal(typeof await run.started, 'number');
  const final = await run.done;
  assert.equal(run.id, final._soupEntryId);
  assert.equal(started.status, 'RUNNING');
  assert.equal(seen.at(-1), 'DONE');
  assert.equal(final.totalSize, 400);
  assert.deepEqual(await store.getSyncStatus('all'), await store.getSyncStatus(run.id));

  const again = await store.reSync('all').done;
  assert.equal(again.status, 'DONE');
  await assert.rejects(store.syncDown(TARGET, 'contacts', null, 'all').done, { code: 'SYNCSTORE_ERR_EXISTS' });
  const upId = await store.createSyncUp(null, 'contacts', { fieldlist: ['LastName'] }, 'up');
  assert.equal((await store.getSyncStatus(upId)).status, 'NEW');
  assert.equal(await store.hasSyncWithName('up'), true);
  await store.deleteSync('up');
  assert.equal(await store.hasSyncWithName('up'), false);

  // A slow run stopped by close(): its last state still reaches JS, and it is STOPPED.
  await store.setRemote({ ...server.remote, instanceUrl: server.url });
  const slowServer = await startDevServer(t, ['--seed', 'Contact=3000', '--faults', 'latency=200', '--default-batch-size', '200']);
  await store.setRemote(slowServer.remote);
  const slow = store.syncDown(TARGET, 'contacts', null, 'slow');
  const ends = [];
  slow.on('end', (state) => ends.push(state.status));
  await new Promise((resolve) => slow.once('start', resolve));
  await store.close();
  await assert.rejects(slow.done, (error) => error.state.status === 'STOPPED');
  assert.deepEqual(ends, ['STOPPED']);
  const reopened = await sync.openStore({ storeName: 'runs', root });
  assert.equal((await reopened.getSyncStatus('slow')).status, 'STOPPED');
  await reopened.close();
});

const REPO_LIB = path.join(__dirname, '..', '..', '..', 'build', 'lib', require('../lib/native').addon.SONAME);

test('without SYNCSTORE_LIB the repository build/lib library loads, from any directory',
  { skip: fs.existsSync(REPO_LIB) ? false : `no ${path.relative(path.join(__dirname, '..', '..', '..'), REPO_LIB)} in this checkout` }, (t) => {
    const env = { ...process.env };
    delete env.SYNCSTORE_LIB;
    const result = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(path.join(__dirname, '..'))}).version)`],
      { env, cwd: tempRoot(t), encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^\d+\.\d+\.\d+/);
  });

test('an HTML error page reaches JS as a short message without markup', { timeout: 60000 }, async (t) => {
  // A proxy's or web server's HTML page (the dev server's html= fault): the run rejects with a
  // SERVER error whose message names the status and the page's heading (docs/errors.md).
  const root = tempRoot(t);
  const broken = await startDevServer(t, ['--seed', 'Contact=5', '--faults', '* html=500']);
  const store = await sync.openStore({ storeName: 'html', root });
  t.after(() => store.close());
  await store.registerSoup('contacts', [{ path: 'Id', type: 'string' }]);
  await store.setRemote({ ...broken.remote, maxAttempts: 1 });
  const run = store.syncDown(TARGET, 'contacts');
  await assert.rejects(run.done, (error) => {
    assert.equal(error.state.status, 'FAILED');
    assert.equal(error.state.errorCode, 7);
    assert.equal(error.state.errorRetryable, true);
    assert.equal(error.retryable, true);
    for (const message of [error.message, error.state.error]) {
      assert.match(message, /HTTP 500.*500 Internal Server Error/);
      assert.doesNotMatch(message, /[<>]|nginx/);
      assert.ok(message.length < 300, message);
    }
    return true;
  });
});
