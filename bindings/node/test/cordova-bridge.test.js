'use strict';
// A Cordova-shaped hybrid client (test-support/cordova-client.js: cordova.define modules,
// require('cordova/exec'), navigator.smartstore / navigator.mobilesync, document 'sync' events)
// loaded through the bridge and run against a dev server; the bridge's module registry, document
// events and OAuth answer; the React Native bridge objects.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { tempRoot, startDevServer } = require('../test-support/helpers');
const bridge = require('../cordova');

const API = '/services/data/v62.0';
const CLIENT = path.join(__dirname, '..', 'test-support', 'cordova-client.js');

/** Calls fn(...args, success, fail); resolves with success's arguments, rejects with fail's. */
const call = (fn, ...args) => new Promise((resolve, reject) => fn(...args, (...got) => resolve(got), (...got) => reject(got)));

async function rest(server, method, route) {
  const response = await fetch(server.url + API + route, { method, headers: { Authorization: `Bearer ${server.token}` } });
  assert.ok(response.ok, `${method} ${route}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}

/** The global names install() may add, restored when the test ends. */
function isolateGlobals(t) {
  const names = ['cordova', 'document', 'navigator', 'CLIENT_SDK_VERSION'];
  const before = Object.fromEntries(names.map((n) => [n, Object.getOwnPropertyDescriptor(globalThis, n)]));
  t.after(() => {
    for (const name of names) {
      if (before[name]) Object.defineProperty(globalThis, name, before[name]);
      else {
        try { delete globalThis[name]; } catch { globalThis[name] = undefined; } // a script's `var` stays declared
      }
    }
  });
}

test('require("cordova/exec") and the module registry', { timeout: 30000 }, (t) => {
  const cordova = bridge.create({ root: tempRoot(t) });
  t.after(() => cordova.close());
  assert.equal(cordova.require('cordova'), cordova);
  assert.equal(cordova.require('cordova/exec'), cordova.exec);
  cordova.define('app/a', (require, exports, module) => { module.exports = { b: require('./b').name }; });
  cordova.define('app/b', (require, exports) => { exports.name = 'b'; });
  assert.deepEqual(cordova.require('app/a'), { b: 'b' });
  assert.equal(cordova.require('app/a'), cordova.require('app/a'), 'built once');
  assert.throws(() => cordova.define('app/a', () => {}), /already defined/);
  assert.throws(() => cordova.require('app/none'), /not found/);

  // Document events carry the data's members, as Cordova's fireDocumentEvent.
  const got = [];
  const listener = (event) => got.push([event.type, event.detail]);
  cordova.document.addEventListener('custom', listener);
  cordova.fireDocumentEvent('custom', { detail: { n: 1 } });
  cordova.document.removeEventListener('custom', listener);
  cordova.fireDocumentEvent('custom', { detail: { n: 2 } });
  assert.deepEqual(got, [['custom', { n: 1 }]]);
});

test("'deviceready' is sticky, as Cordova's: force.js logs in from such a listener", { timeout: 30000 }, async (t) => {
  const cordova = bridge.create({ root: tempRoot(t) });
  const doc = cordova.document;
  const fired = [];
  const first = (event) => fired.push(['first', event.type]);
  doc.addEventListener('deviceready', first);
  doc.addEventListener('deviceready', first); // the same listener once, as addEventListener
  const removed = () => fired.push(['removed']);
  doc.addEventListener('deviceready', removed);
  doc.removeEventListener('deviceready', removed);
  doc.addEventListener('deviceready', { handleEvent: (event) => fired.push(['object', event.type]) });
  assert.deepEqual(fired, [], 'called on a later turn, not inside addEventListener');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(fired, [['first', 'deviceready'], ['object', 'deviceready']]);
  // Long after start-up a new listener still runs (the event has happened).
  await new Promise((resolve) => doc.addEventListener('deviceready', resolve));
});

test('getAuthCredentials answers from the default remote', { timeout: 30000 }, async (t) => {
  const exec = (cordova) => new Promise((resolve, reject) => cordova.exec(resolve, reject, 'com.salesforce.oauth', 'getAuthCredentials', []));
  const remote = { instanceUrl: 'http://127.0.0.1:1', accessToken: 'T0K', refreshToken: 'R', clientId: 'C' };
  const cordova = bridge.create({ root: tempRoot(t), remote, credentials: { userId: '005x', orgId: '00Dx' } });
  const creds = await exec(cordova);
  assert.deepEqual([creds.instanceUrl, creds.loginUrl, creds.accessToken, creds.refreshToken, creds.clientId, creds.userId, creds.orgId],
    ['http://127.0.0.1:1', 'http://127.0.0.1:1', 'T0K', 'R', 'C', '005x', '00Dx']);
  await assert.rejects(exec(bridge.create({ root: tempRoot(t) })), (message) => typeof message === 'string' && /Not authenticated/.test(message));
});

test('a Cordova-shaped client runs through the bridge against the dev server', { timeout: 60000 }, async (t) => {
  isolateGlobals(t);
  const server = await startDevServer(t, ['--seed', 'Contact=12']);
  const cordova = bridge.create({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  cordova.install();
  cordova.loadScript(CLIENT);
  const { smartstore, mobilesync } = globalThis.navigator;
  assert.equal(typeof smartstore.registerSoup, 'function');

  // OAuth: where force.js REST calls go.
  const creds = await new Promise((resolve, reject) => cordova.exec(resolve, reject, 'com.salesforce.oauth', 'getAuthCredentials', []));
  assert.equal(creds.instanceUrl, server.url);
  assert.equal(creds.accessToken, server.token);

  // Soups and entries, storeConfig left out (checkFirstArg puts it in).
  const indexes = [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: 'LastModifiedDate', type: 'string' }, { path: '__local__', type: 'string' }];
  assert.deepEqual(await call(smartstore.registerSoup, 'contacts', indexes), ['contacts']);
  assert.deepEqual(await call(smartstore.soupExists, false, 'contacts'), [true]);
  const [stored] = await call(smartstore.upsertSoupEntries, 'contacts', [{ Id: 'L1', LastName: 'Local1' }, { Id: 'L2', LastName: 'Local2' }]);
  assert.deepEqual(stored.map((e) => e._soupEntryId), [1, 2]);
  const [again] = await call(smartstore.upsertSoupEntriesWithExternalId, { isGlobalStore: false }, 'contacts', [{ Id: 'L1', LastName: 'Local1b' }], 'Id');
  assert.equal(again[0]._soupEntryId, 1);
  const [failed] = await call(smartstore.upsertSoupEntries, 'missing', [{ a: 1 }]).then(() => assert.fail('no error'), (got) => got);
  assert.equal(typeof failed, 'string');
  assert.match(failed, /missing/);

  // Sync down with document 'sync' events.
  const events = [];
  globalThis.document.addEventListener('sync', (event) => events.push(event.detail));
  const ended = (id, from) => new Promise((resolve) => {
    const look = () => {
      const end = events.slice(from).find((d) => d._soupEntryId === id && ['DONE', 'FAILED', 'STOPPED'].includes(d.status));
      if (end) resolve(end); else setTimeout(look, 10);
    };
    look();
  });
  const target = { type: 'soql', query: 'SELECT Id, LastName, LastModifiedDate FROM Contact' };
  let mark = events.length;
  const [atStart] = await call(mobilesync.syncDown, target, 'contacts', { mergeMode: mobilesync.MERGE_MODE.OVERWRITE }, 'contactsDown');
  assert.equal(atStart.status, 'RUNNING');
  for (const field of ['_soupEntryId', 'status', 'progress', 'totalSize', 'maxTimeStamp']) assert.ok(field in atStart, field);
  let end = await ended(atStart._soupEntryId, mark);
  assert.equal(end.status, 'DONE', end.error);
  assert.equal(end.totalSize, 12);
  assert.equal(end.storeName, 'smartstore');
  assert.equal(end.isGlobalStore, false);

  // Cursor paging over the 14 entries.
  const [cursor] = await call(smartstore.querySoup, 'contacts', smartstore.buildAllQuerySpec('LastName', 'ascending', 5));
  assert.deepEqual([cursor.totalEntries, cursor.totalPages, cursor.currentPageIndex, cursor.currentPageOrderedEntries.length], [14, 3, 0, 5]);
  const [second] = await call(smartstore.moveCursorToNextPage, cursor);
  assert.equal(second.currentPageIndex, 1);
  assert.notDeepEqual(second.currentPageOrderedEntries, cursor.currentPageOrderedEntries);
  const [third] = await call(smartstore.moveCursorToNextPage, second);
  assert.equal(third.currentPageOrderedEntries.length, 4);
  const [edge] = await call(smartstore.moveCursorToNextPage, third).then(() => assert.fail('no error'), (got) => got);
  assert.match(edge.message, /last page/);
  assert.deepEqual(await call(smartstore.closeCursor, cursor), ['OK'], 'as both platforms: "OK"');

  // reSync by name.
  mark = events.length;
  const [resync] = await call(mobilesync.reSync, 'contactsDown');
  assert.equal(resync._soupEntryId, atStart._soupEntryId);
  end = await ended(atStart._soupEntryId, mark);
  assert.equal(end.status, 'DONE');

  // Ghosts: a record deleted on the server; the clean answers the count and fires no event.
  const first = await rest(server, 'GET', `/query?q=${encodeURIComponent('SELECT Id FROM Contact ORDER BY Id LIMIT 1')}`);
  await rest(server, 'DELETE', `/sobjects/Contact/${first.records[0].Id}`);
  mark = events.length;
  assert.deepEqual(await call(mobilesync.cleanResyncGhosts, atStart._soupEntryId), [1]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(events.slice(mark), [], 'cleanResyncGhosts fires no sync event');
  const [count] = await call(smartstore.runSmartQuery, smartstore.buildSmartQuerySpec('select count(*) from {contacts}'));
  assert.deepEqual(count.currentPageOrderedEntries, [[13]]);

  // getSyncStatus: known by name, unknown is null.
  assert.equal((await call(mobilesync.getSyncStatus, 'contactsDown'))[0].status, 'DONE');
  assert.deepEqual(await call(mobilesync.getSyncStatus, 'nothing'), [null]);
  assert.deepEqual(await call(mobilesync.getSyncStatus, 4242), [null]);
});

test('the React Native bridge objects', { timeout: 60000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=7']);
  const cordova = bridge.create({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  const { SmartStoreReactBridge: android, SFSmartStoreReactBridge: ios, MobileSyncReactBridge: androidSync, SFMobileSyncReactBridge: iosSync } = cordova.reactNative;
  const androidCall = (fn, args) => new Promise((resolve, reject) => fn(args, (...got) => resolve(got), (...got) => reject(got)));
  const iosCall = (fn, args) => new Promise((resolve) => fn(args, (error, result) => resolve([error, result])));

  // Android: answers are JSON text; void calls call success without a value.
  assert.deepEqual(await androidCall(android.registerSoup, { soupName: '2024', indexes: [{ path: 'Id', type: 'string' }], storeName: undefined }), ['"2024"']);
  assert.deepEqual(await androidCall(android.soupExists, { soupName: '2024', isGlobalStore: false }), ['true']);
  assert.deepEqual(await androidCall(android.clearSoup, { soupName: '2024' }), []);
  assert.deepEqual(await androidCall(android.removeStore, { storeName: 'other' }), ['true']);
  const [message] = await androidCall(android.clearSoup, { soupName: 'nothing' }).then(() => assert.fail('no error'), (got) => got);
  assert.match(message, /nothing/);

  // iOS / TurboModule: callback(error, result) with values.
  const [, stored] = await iosCall(ios.upsertSoupEntries, { soupName: '2024', entries: [{ Id: 'a' }, { Id: 'b' }], externalIdPath: '_soupEntryId' });
  assert.deepEqual(stored.map((e) => e.Id), ['a', 'b']);
  assert.deepEqual(await iosCall(ios.removeFromSoup, { soupName: '2024', soupEntryIds: [1], querySpec: undefined }), [null, 'OK']);
  const [, cursor] = await iosCall(ios.querySoup, { soupName: '2024', querySpec: { queryType: 'range', indexPath: 'Id', orderPath: 'Id', order: 'ascending', pageSize: 10 } });
  assert.deepEqual(cursor.currentPageOrderedEntries.map((e) => e.Id), ['b']);
  const [error] = await iosCall(ios.querySoup, { soupName: '2024', querySpec: { queryType: 'near', indexPath: 'Id', pageSize: 10 } });
  assert.match(error.message, /near/);

  // Runs answer once, at their end, with the DONE state.
  await iosCall(ios.registerSoup, { soupName: 'contacts', indexes: [{ path: 'Id', type: 'string' }, { path: '__local__', type: 'string' }] });
  const [syncError, done] = await iosCall(iosSync.syncDown, { target: { type: 'soql', query: 'SELECT Id, LastModifiedDate FROM Contact' }, soupName: 'contacts', options: { mergeMode: 'OVERWRITE' }, syncName: 'rn' });
  assert.equal(syncError, null);
  assert.equal(done.status, 'DONE');
  assert.equal(done.totalSize, 7);
  const [again] = await androidCall(androidSync.reSync, { syncId: null, syncName: 'rn' });
  assert.equal(JSON.parse(again).status, 'DONE');
  assert.deepEqual(await iosCall(iosSync.getSyncStatus, { syncId: null, syncName: 'nothing' }), [null, null]);
  assert.deepEqual(await androidCall(androidSync.cleanResyncGhosts, { syncId: done._soupEntryId }), ['0']);
  const [refused] = await iosCall(iosSync.syncDown, { target: null, soupName: 'contacts', options: {}, syncName: null });
  assert.match(refused.message, /target/);

  // Every method react-native-force's JS calls, on both shapes (its 14.0 JS and its TurboModule specs).
  const SMARTSTORE_CALLS = ['alterSoup', 'clearSoup', 'closeCursor', 'getAllGlobalStores', 'getAllStores', 'getDatabaseSize',
    'getSoupIndexSpecs', 'moveCursorToPageIndex', 'querySoup', 'registerSoup', 'reIndexSoup', 'removeAllGlobalStores',
    'removeAllStores', 'removeFromSoup', 'removeSoup', 'removeStore', 'retrieveSoupEntries', 'runSmartQuery', 'soupExists',
    'upsertSoupEntries'];
  const MOBILESYNC_CALLS = ['syncDown', 'syncUp', 'reSync', 'cleanResyncGhosts', 'getSyncStatus', 'deleteSync', 'resetSyncManager'];
  for (const [bridgeObject, methods] of [[android, SMARTSTORE_CALLS], [ios, SMARTSTORE_CALLS], [androidSync, MOBILESYNC_CALLS], [iosSync, MOBILESYNC_CALLS]]) {
    for (const method of methods) assert.equal(typeof bridgeObject[method], 'function', method);
  }
  // resetSyncManager: the store's syncs stop; later ones run.
  assert.deepEqual(await androidCall(androidSync.resetSyncManager, { isGlobalStore: false }), []);
  assert.deepEqual(await iosCall(iosSync.resetSyncManager, { isGlobalStore: false }), [null, 'OK']);
  const [, afterReset] = await iosCall(iosSync.reSync, { syncId: done._soupEntryId, syncName: null });
  assert.equal(afterReset.status, 'DONE');

  // The network plugin's binary answers (force.js' getAttachment): the bytes in base64 and their type.
  const exec = (service, action, args) => new Promise((resolve, reject) => cordova.exec(resolve, reject, service, action, args));
  const residues = new Set();
  for (let limit = 1; limit <= 6; limit++) { // answers of several lengths: every base64 padding
    const request = { endPoint: '/services/data', path: '/v62.0/query', method: 'GET', queryParams: { q: `SELECT Id, LastName FROM Contact LIMIT ${limit}` } };
    const plain = await exec('com.salesforce.network', 'pgSendRequest', [request]);
    const binary = await exec('com.salesforce.network', 'pgSendRequest', [{ ...request, returnBinary: true }]);
    assert.match(binary.contentType, /^application\/json/);
    const bytes = Buffer.from(binary.encodedBody, 'base64');
    assert.equal(bytes.toString('base64'), binary.encodedBody, 'canonical base64');
    assert.deepEqual(JSON.parse(bytes.toString('utf8')), plain);
    residues.add(bytes.length % 3);
  }
  assert.ok(residues.size > 1, `answers of more than one length mod 3: ${[...residues]}`);

  // The OAuth bridge gives the credentials the REST calls need.
  const creds = await new Promise((resolve, reject) => cordova.reactNative.SalesforceOauthReactBridge.getAuthCredentials({}, resolve, reject));
  assert.equal(creds.instanceUrl, server.url);
});

test('calls run in the order they are made; an async key provider encrypts; late answers interleave', { timeout: 60000 }, async (t) => {
  const KEY = 'bridge-test-passphrase-31f7';
  const asked = [];
  const server = await startDevServer(t, ['--seed', 'Contact=5']);
  const root = tempRoot(t);
  const cordova = bridge.create({
    root, remote: server.remote,
    keyProvider: async (store) => { asked.push(store.storeName); await new Promise((r) => setTimeout(r, 5)); return store.storeName === 'secret' ? { key: KEY, kdfIter: 4000 } : null; },
  });
  t.after(() => cordova.close());
  const exec = (action, fields, service = 'com.salesforce.smartstore') => new Promise((resolve) =>
    cordova.exec((...got) => resolve(['ok', ...got]), (message) => resolve(['fail', message]), service, action, [fields]));

  // Sent without waiting, as hybrid code may: each call sees the ones before it.
  for (let round = 0; round < 20; round++) {
    const soupName = `s${round}`;
    const answers = await Promise.all([
      exec('pgRegisterSoup', { soupName, indexes: [{ path: 'Id', type: 'string' }], storeName: 'secret' }),
      exec('pgUpsertSoupEntries', { soupName, entries: [{ Id: 'x' }], externalIdPath: '_soupEntryId', storeName: 'secret' }),
      exec('pgRemoveSoup', { soupName, storeName: 'secret' }),
      exec('pgSoupExists', { soupName, storeName: 'secret' }),
    ]);
    assert.deepEqual(answers.map((a) => a[0]), ['ok', 'ok', 'ok', 'ok'], JSON.stringify(answers));
    assert.equal(answers[3][1], false);
  }
  assert.deepEqual(asked, ['secret'], 'the key is resolved once per store');
  // The store is encrypted with the provider's key.
  const { openStore } = require('..');
  await assert.rejects(openStore({ storeName: 'secret', root }), { code: 'SYNCSTORE_ERR_AUTH' });
  const opened = await openStore({ storeName: 'secret', root, key: KEY, kdfIter: 4000 });
  await opened.close();

  // cleanResyncGhosts answers from the sync thread, among other calls: each call answers once.
  assert.deepEqual(await exec('pgRegisterSoup', { soupName: 'c', indexes: [{ path: 'Id', type: 'string' }] }), ['ok', 'c']);
  const ended = await cordova.plugin.runToEnd('syncDown', [{ soupName: 'c', target: { type: 'soql', query: 'SELECT Id, LastModifiedDate FROM Contact' }, options: { mergeMode: 'OVERWRITE' }, syncName: 'd' }]);
  assert.equal(ended.value.status, 'DONE');
  // (One clean of a sync at a time: the plugin refuses a second while one runs.)
  for (let i = 0; i < 10; i++) {
    const answers = await Promise.all([exec('pgSoupExists', { soupName: 'c' }),
      exec('cleanResyncGhosts', { syncId: ended.value._soupEntryId }, 'com.salesforce.mobilesync'),
      exec('pgSoupExists', { soupName: 'c' }), exec('pgSoupExists', { soupName: 'none' })]);
    assert.deepEqual(answers, [['ok', true], ['ok', 0], ['ok', true], ['ok', false]]);
  }
});

test('a run keeps the process alive while a sync listener waits for its end, not otherwise', { timeout: 60000 }, async (t) => {
  const { spawn } = require('node:child_process');
  // 100 ms a request, 4 pages: the run lasts about half a second.
  const server = await startDevServer(t, ['--seed', 'Contact=400', '--faults', 'latency=100', '--default-batch-size', '100']);
  const child = (mode) => new Promise((resolve) => {
    const proc = spawn(process.execPath, [path.join(__dirname, '..', 'test-support', 'bridge-child.js'), tempRoot(t), server.url, server.token, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
    proc.on('exit', (code) => { clearTimeout(timer); resolve({ code, out }); });
  });
  const [listening, forgetting, cleaning] = await Promise.all([child('listen'), child('forget'), child('clean')]);
  assert.deepEqual(listening, { code: 0, out: 'RUNNING\nDONE\n' });
  assert.deepEqual(forgetting, { code: 0, out: 'RUNNING\n' });
  assert.deepEqual(cleaning, { code: 0, out: 'DONE\nremoved 0\n' }, 'an awaited late answer keeps the process alive');
});

test('a worker terminated while its bridge runs a sync: the run stops, the process goes on', { timeout: 60000 }, async (t) => {
  const { Worker } = require('node:worker_threads');
  const server = await startDevServer(t, ['--seed', 'Contact=400', '--faults', 'latency=200', '--default-batch-size', '50']);
  const root = tempRoot(t);
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const cordova = require(workerData.bridge).create({ root: workerData.root, remote: workerData.remote });
    cordova.document.addEventListener('sync', (event) => parentPort.postMessage(event.detail.status));
    cordova.exec(null, (m) => parentPort.postMessage('fail ' + m), 'com.salesforce.smartstore', 'pgRegisterSoup', [{ soupName: 'c', indexes: [{ path: 'Id', type: 'string' }] }]);
    cordova.exec(null, (m) => parentPort.postMessage('fail ' + m), 'com.salesforce.mobilesync', 'syncDown',
      [{ soupName: 'c', syncName: 'd', target: { type: 'soql', query: 'SELECT Id, LastModifiedDate FROM Contact' }, options: { mergeMode: 'OVERWRITE' } }]);`;
  const worker = new Worker(code, { eval: true, workerData: { bridge: path.join(__dirname, '..', 'cordova'), root, remote: server.remote } });
  const first = await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
  assert.equal(first, 'RUNNING');
  await worker.terminate();

  const cordova = bridge.create({ root, remote: server.remote });
  t.after(() => cordova.close());
  const status = await new Promise((resolve, reject) => cordova.exec(resolve, reject, 'com.salesforce.mobilesync', 'getSyncStatus', [{ syncName: 'd' }]));
  assert.ok(['STOPPED', 'FAILED'].includes(status.status), status.status);
});
