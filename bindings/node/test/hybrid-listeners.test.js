'use strict';
// The hybrid faces' store listeners (docs/hybrid-plugin.md, "Store listeners"): pgAddSoupListener /
// pgAddQueryListener / pgRemoveListener through cordova.exec, the smartstore functions and the
// React Native bridges, and the "smartstoreChanged" events they raise (document events, smartstore's
// on / addEventListener, React Native's DeviceEventEmitter), on real store files.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { smartstore, smartstoreClient: ss, openStore } = require('..');
const { createCordova } = require('../lib/bridge');
const { tempRoot } = require('../test-support/helpers');

const SMARTSTORE = 'com.salesforce.smartstore';
const EVENT = 'smartstoreChanged';
const INDEXES = [{ path: 'k', type: 'string' }];

function exec(cordova, action, fields) {
  return new Promise((resolve, reject) => cordova.exec(resolve, (message) => reject(new Error(message)), SMARTSTORE, action, [fields]));
}

/** Waits until `list` has `count` items (at most 5 s) and returns them. */
async function atLeast(list, count) {
  const deadline = Date.now() + 5000;
  while (list.length < count && Date.now() < deadline) await sleep(5);
  return list;
}

test('cordova.exec: pgAddSoupListener answers an id, each commit is a smartstoreChanged document event, pgRemoveListener stops it', { timeout: 30000 }, async (t) => {
  const root = tempRoot(t);
  const cordova = createCordova({ root });
  t.after(() => cordova.close());
  const details = [];
  cordova.addDocumentEventListener(EVENT, (event) => details.push(event.detail));
  const store = { storeName: 'notes', isGlobalStore: false };
  assert.equal(await exec(cordova, 'pgRegisterSoup', { soupName: 'a', indexes: INDEXES, ...store }), 'a');
  assert.equal(await exec(cordova, 'pgRegisterSoup', { soupName: 'b', indexes: INDEXES, ...store }), 'b');
  const id = await exec(cordova, 'pgAddSoupListener', { soupName: 'a', ...store });
  assert.equal(id, 1);
  await assert.rejects(exec(cordova, 'pgAddSoupListener', { soupName: 'missing', ...store }), /missing/);

  // Each write waits for its event (commits made while one waits would be told as one notice).
  const [entry] = await exec(cordova, 'pgUpsertSoupEntries', { soupName: 'a', entries: [{ k: 'x' }], externalIdPath: '_soupEntryId', ...store });
  await atLeast(details, 1);
  // Another soup, and a rolled-back write: not heard. Then another handle of the store (this process).
  await exec(cordova, 'pgUpsertSoupEntries', { soupName: 'b', entries: [{ k: 'y' }], externalIdPath: '_soupEntryId', ...store });
  await assert.rejects(exec(cordova, 'pgUpsertSoupEntries', { soupName: 'a', entries: [{ k: 'z' }, 7], externalIdPath: '_soupEntryId', ...store }));
  const other = await openStore({ storeName: 'notes', root });
  t.after(() => other.close());
  await other.upsert('a', [{ k: 'from elsewhere' }]);
  await atLeast(details, 2);
  await exec(cordova, 'pgRemoveFromSoup', { soupName: 'a', entryIds: [entry._soupEntryId], ...store });
  await atLeast(details, 3);
  assert.equal(details.length, 3, JSON.stringify(details));
  for (const detail of details) {
    assert.equal(detail.listenerId, id);
    assert.equal(detail.storeName, 'notes');
    assert.equal(detail.isGlobalStore, false);
    assert.deepEqual(detail.soups.map((s) => s.soup), ['a']);
  }
  assert.equal(details[0].origin.kind, 'handle');
  assert.deepEqual(details[0].soups[0].inserted.ids, [entry._soupEntryId]);
  assert.equal(details[1].origin.kind, 'otherHandle');
  assert.deepEqual(details[2].soups[0].deleted.ids, [entry._soupEntryId]);

  assert.equal(await exec(cordova, 'pgRemoveListener', { listenerId: id, ...store }), 'OK');
  assert.equal(await exec(cordova, 'pgRemoveListener', { listenerId: id }), 'OK'); // nothing to do
  await exec(cordova, 'pgClearSoup', { soupName: 'a', ...store });
  await sleep(100);
  assert.equal(details.length, 3);
});

test('smartstore.addSoupListener / removeListener and the smartstoreChanged events of the Node faces', { timeout: 30000 }, async (t) => {
  smartstore.setRootDirectory(tempRoot(t));
  t.after(() => smartstore.setRootDirectory(null));
  const heard = [];
  const viaTarget = [];
  const onChange = (detail) => heard.push(detail);
  const onEvent = (event) => viaTarget.push(event.detail);
  smartstore.on(EVENT, onChange);
  smartstore.addEventListener(EVENT, onEvent);
  t.after(() => { smartstore.off(EVENT, onChange); smartstore.removeEventListener(EVENT, onEvent); });

  await ss.registerSoup('things', INDEXES);
  // The soup is optional: callbacks right after the storeConfig (or nothing) listen to every soup.
  const every = await new Promise((resolve, reject) => smartstore.addSoupListener(resolve, reject));
  const one = await ss.addSoupListener({ storeName: 'smartstore' }, 'things');
  assert.ok(Number.isInteger(every) && Number.isInteger(one) && every !== one);
  await ss.upsertSoupEntries('things', [{ k: 'a' }]);
  await atLeast(heard, 2);
  assert.deepEqual(heard.map((d) => d.listenerId).sort(), [every, one].sort());
  assert.deepEqual(viaTarget.map((d) => d.listenerId).sort(), [every, one].sort());
  assert.equal(await ss.removeListener(one), 'OK');
  assert.equal(await new Promise((resolve, reject) => smartstore.removeListener(every, resolve, reject)), 'OK');
  await ss.upsertSoupEntries('things', [{ k: 'b' }]);
  await sleep(100);
  assert.equal(heard.length, 2);
  // A query listener (with the optional options after its spec): its result at once.
  const query = await ss.addQueryListener('things', smartstore.buildAllQuerySpec('k', 'ascending', 5), { minIntervalMs: 20 });
  await atLeast(heard, 3);
  assert.equal(heard[2].listenerId, query);
  assert.equal(heard[2].origin.kind, 'initial');
  assert.deepEqual(heard[2].currentPageOrderedEntries.map((e) => e.k), ['a', 'b']);
  await ss.removeListener(query);
});

test('React Native: addSoupListener through both bridge shapes, events through DeviceEventEmitter', { timeout: 30000 }, async (t) => {
  const cordova = createCordova({ root: tempRoot(t) });
  t.after(() => cordova.close());
  const rn = cordova.reactNative;
  const events = [];
  const subscription = rn.DeviceEventEmitter.addListener(EVENT, (detail) => events.push(detail));
  assert.equal(typeof rn.SFSmartStoreReactBridge.addListener, 'function'); // NativeEventEmitter's protocol
  assert.equal(typeof rn.SmartStoreReactBridge.removeListeners, 'function');
  await new Promise((resolve, reject) => rn.SmartStoreReactBridge.registerSoup({ soupName: 'things', indexes: INDEXES }, resolve, reject));
  // Android answers JSON text, iOS the value.
  const androidId = JSON.parse(await new Promise((resolve, reject) => rn.SmartStoreReactBridge.addSoupListener({ soupName: 'things' }, resolve, reject)));
  const iosId = await new Promise((resolve, reject) => rn.SFSmartStoreReactBridge.addSoupListener({ soupName: 'things' }, (error, id) => (error ? reject(error) : resolve(id))));
  await new Promise((resolve, reject) => rn.SmartStoreReactBridge.upsertSoupEntries({ soupName: 'things', entries: [{ k: 'a' }], externalIdPath: '_soupEntryId' }, resolve, reject));
  await atLeast(events, 2);
  assert.deepEqual(events.map((d) => d.listenerId).sort(), [androidId, iosId].sort());
  assert.equal(events[0].soups[0].inserted.count, 1);
  await new Promise((resolve, reject) => rn.SFSmartStoreReactBridge.removeListener({ listenerId: iosId }, (error) => (error ? reject(error) : resolve())));
  subscription.remove();
  await new Promise((resolve, reject) => rn.SmartStoreReactBridge.upsertSoupEntries({ soupName: 'things', entries: [{ k: 'b' }], externalIdPath: '_soupEntryId' }, resolve, reject));
  await sleep(100);
  assert.equal(events.length, 2);
});

test('pgAddQueryListener: the result at once, then its changes', { timeout: 30000 }, async (t) => {
  const cordova = createCordova({ root: tempRoot(t) });
  t.after(() => cordova.close());
  const details = [];
  cordova.addDocumentEventListener(EVENT, (event) => details.push(event.detail));
  await exec(cordova, 'pgRegisterSoup', { soupName: 'things', indexes: INDEXES });
  await exec(cordova, 'pgUpsertSoupEntries', { soupName: 'things', entries: [{ k: 'a' }, { k: 'q' }], externalIdPath: '_soupEntryId' });
  const querySpec = smartstore.buildRangeQuerySpec('k', 'a', 'm', 'ascending', 10);
  const id = await exec(cordova, 'pgAddQueryListener', { soupName: 'things', querySpec });
  await atLeast(details, 1);
  assert.equal(details[0].listenerId, id);
  assert.equal(details[0].origin.kind, 'initial');
  assert.deepEqual(details[0].currentPageOrderedEntries.map((e) => e.k), ['a']);
  await exec(cordova, 'pgUpsertSoupEntries', { soupName: 'things', entries: [{ k: 'z' }], externalIdPath: '_soupEntryId' }); // outside
  await exec(cordova, 'pgUpsertSoupEntries', { soupName: 'things', entries: [{ k: 'b' }], externalIdPath: '_soupEntryId' }); // inside
  await atLeast(details, 2);
  await sleep(50);
  assert.equal(details.length, 2);
  assert.deepEqual(details[1].currentPageOrderedEntries.map((e) => e.k), ['a', 'b']);
  assert.equal(details[1].totalEntries, 2);
  await assert.rejects(exec(cordova, 'pgAddQueryListener', { soupName: 'missing', querySpec }));
  assert.equal(await exec(cordova, 'pgRemoveListener', { listenerId: id }), 'OK');
});

test('a hybrid listener does not keep the process alive', { timeout: 30000 }, async (t) => {
  const { spawnSync } = require('node:child_process');
  const script = `
    const { createCordova } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'bridge'))});
    const cordova = createCordova({ root: ${JSON.stringify(tempRoot(t))} });
    const exec = (action, fields) => new Promise((ok, fail) => cordova.exec(ok, fail, '${SMARTSTORE}', action, [fields]));
    cordova.addDocumentEventListener('${EVENT}', () => {});
    (async () => {
      await exec('pgRegisterSoup', { soupName: 's', indexes: [{ path: 'k', type: 'string' }] });
      await exec('pgAddSoupListener', { soupName: 's' });
      await exec('pgUpsertSoupEntries', { soupName: 's', entries: [{ k: 'a' }], externalIdPath: '_soupEntryId' });
      process.stdout.write('done');
    })();`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 15000 });
  assert.deepEqual([result.status, result.signal, result.stdout, result.stderr], [0, null, 'done', '']);
});
