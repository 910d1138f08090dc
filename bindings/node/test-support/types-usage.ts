// Compiled (not run) by test/types.test.js with tsc --strict: the README's uses type-check, and
// each @ts-expect-error line must be an error, so index.d.ts cannot be silently too loose.
import {
  smartstore, smartstoreClient, mobilesync, mobilesyncClient, openStore, createMobileSync,
  buildExactQuerySpec, MERGE_MODE, SyncState, StoreCursor, SyncStoreError, SyncEvent,
  setEncryptionKeyProvider, Watch, SoupNotice, LiveSync, LiveSyncStateEvent,
} from '..';
import cordova = require('../cordova');

smartstore.registerSoup('contacts', [{ path: 'Id', type: 'string' }], (name: string) => name, (message: string) => message);
smartstore.registerSoup({ storeName: 'x' }, 'contacts', [{ path: 'Id', type: 'string' }]);
smartstore.querySoup(true, 'contacts', smartstore.buildAllQuerySpec('Id'), (cursor: StoreCursor) => {
  smartstore.moveCursorToNextPage(cursor, (next) => next.currentPageIndex, (c, error) => error.message);
});
mobilesync.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 'contacts', { mergeMode: MERGE_MODE.OVERWRITE }, 'down',
  (state: SyncState) => state.status);
mobilesync.syncUp('contacts', { fieldlist: ['LastName'] });
mobilesync.on('sync', (detail) => detail.storeName.length + detail.status.length);
mobilesync.addEventListener('sync', (event: SyncEvent) => event.detail.isGlobalStore);
createMobileSync({ reactNative: true }).reSync('down', (state) => state.totalSize);

async function modern(): Promise<number> {
  const store = await openStore({ storeName: 'app' });
  const stored = await store.upsert('contacts', [{ LastName: 'Hopper' }]);
  const id: number | undefined = stored[0]._soupEntryId;
  const found = await store.find('contacts', buildExactQuerySpec('LastName', 'Hopper'));
  found[0]._soupLastModifiedDate;
  for await (const page of store.pages('contacts', buildExactQuerySpec('LastName', 'Hopper'))) page.length;
  const run = store.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 'contacts');
  run.on('progress', (state) => state.progress);
  const final: SyncState = await run.done;
  const count = await smartstoreClient.getDatabaseSize({ storeName: 'app' });
  const ghosts = await mobilesyncClient.cleanResyncGhosts('down');
  try { await store.close(); } catch (e) { (e as SyncStoreError).code.startsWith('SYNCSTORE_'); }
  return (id ?? 0) + final.progress + count + ghosts;
}
modern();

async function watches(): Promise<number> {
  const store = await openStore({ storeName: 'app' });
  const soup: Watch<SoupNotice> = store.watchSoup('contacts', { minIntervalMs: 30 });
  soup.on('change', (notice) => notice.soups[0].inserted.ids.length + notice.commits);
  soup.on('error', (error) => error.code.length);
  await soup.ready;
  let total = 0;
  for await (const notice of store.watch<{ LastName: string }>('contacts', buildExactQuerySpec('LastName', 'Hopper'), { keepAlive: true })) {
    total += notice.totalEntries + notice.currentPageOrderedEntries[0].LastName.length + (notice.added.ids?.length ?? 0);
    if (notice.origin.kind === 'otherProcess') break;
  }
  store.watch({ ...buildExactQuerySpec('LastName', 'Hopper'), soupName: 'contacts' }).unref();
  // @ts-expect-error a soup watch takes a soup name or null
  store.watchSoup(42);
  await soup.close();
  return total;
}
watches();

smartstore.addSoupListener('contacts', (id: number) => id);
smartstore.addSoupListener({ storeName: 'x' }, null, { minIntervalMs: 30 }, (id) => id, (message) => message);
smartstore.addQueryListener('contacts', buildExactQuerySpec('LastName', 'Hopper'), (id) => id);
smartstore.on('smartstoreChanged', (detail) => detail.listenerId + detail.sequence + detail.storeName.length);
smartstore.addEventListener('smartstoreChanged', (event) => event.detail.isGlobalStore);
smartstoreClient.addQueryListener(null, 'select count(*) from {contacts}').then((id: number) => smartstoreClient.removeListener(id));

async function liveSync(): Promise<number> {
  const store = await openStore({ storeName: 'app' });
  const live: LiveSync = store.startLiveSync({ syncs: ['up', 'down'], debounceMs: 100, pullIntervalMs: 60000 });
  live.on('state', (event) => event.state === 'offline' && (event.nextRetryAt ?? 0) > Date.now());
  live.on('run', (state) => state.status.length + state._soupEntryId);
  live.on('error', (error) => error.code);
  await live.started;
  let retries = 0;
  for await (const event of live) {
    if (event.state === 'offline') retries += 1;
    if (event.state === 'live') break;
  }
  const state: LiveSyncStateEvent = await store.liveSyncState();
  await live.stop();
  // @ts-expect-error not a live sync state
  const wrong: typeof live.state = 'paused';
  void wrong;
  // @ts-expect-error debounceMs is a number
  store.startLiveSync({ debounceMs: '1s' });
  return retries + state.syncs.length + (live.lastEvent?.syncs.length ?? 0);
}
liveSync();

mobilesync.startLiveSync((state) => state.state + state.storeName);
mobilesync.startLiveSync({ storeName: 'x' }, { syncs: ['up'] }, (state) => state.syncs.length, (message) => message);
mobilesync.on('liveSync', (detail) => detail.state === 'offline' && detail.nextRetryAt);
mobilesync.addEventListener('liveSync', (event) => event.detail.isGlobalStore);
mobilesyncClient.startLiveSync({ debounceMs: 50 }).then((state) => state.event === 'state');
mobilesyncClient.getLiveSyncState(true).then((state) => state.state);
mobilesyncClient.stopLiveSync().then((ok: 'OK') => ok);

async function encrypted(): Promise<void> {
  const store = await openStore({ storeName: 'vault', key: 'passphrase', kdfIter: 4000 });
  await store.changeKey("x'" + '00'.repeat(32) + "'");
  await store.changeKey(null);
  await store.close();
  setEncryptionKeyProvider(({ storeName, isGlobalStore }) => (isGlobalStore ? null : `key-of-${storeName}`));
  smartstore.setEncryptionKeyProvider(async () => ({ key: 'passphrase', kdfIter: 4000 }));
  smartstoreClient.setEncryptionKeyProvider(null);
}
encrypted();

// The Cordova bridge (cordova.d.ts).
const bridge = cordova.create({ root: '/tmp/stores', remote: { instanceUrl: 'https://127.0.0.1', accessToken: 't' } });
bridge.exec((value) => value, (message: string) => message, 'com.salesforce.smartstore', 'pgGetAllStores', [{}]);
bridge.define('app.store', (require, exports, module) => { module.exports = require('cordova/exec'); });
bridge.document.addEventListener('sync', (event) => event.detail);
bridge.reactNative.SFSmartStoreReactBridge.soupExists({ soupName: 'contacts' }, (error, exists) => error ?? exists);
bridge.reactNative.DeviceEventEmitter.addListener('smartstoreChanged', (detail) => detail.listenerId).remove();
bridge.reactNative.DeviceEventEmitter.addListener('liveSync', (detail) => detail.state).remove();
bridge.reactNative.SFMobileSyncReactBridge.startLiveSync({ options: { debounceMs: 50 } }, (error, state) => error ?? state);
bridge.configure({ keyProvider: async () => ({ key: 'passphrase', kdfIter: 4000 }) }).install();
// @ts-expect-error fail gets the message string
bridge.exec(null, (message: number) => message, 'com.salesforce.smartstore', 'pgGetAllStores', []);

// @ts-expect-error an index type that does not exist
smartstore.registerSoup('contacts', [{ path: 'Id', type: 'decimal' }]);
// @ts-expect-error soupExists resolves with a boolean
const wrong: Promise<string> = smartstoreClient.soupExists('contacts');
// @ts-expect-error a merge mode that does not exist
mobilesync.syncDown({ type: 'soql' }, 'contacts', { mergeMode: 'MERGE' });
// @ts-expect-error openStore takes options, not a name
openStore('app');
// @ts-expect-error a key is a string
openStore({ storeName: 'vault', key: 42 });
// @ts-expect-error a provider returns a key, not a number
setEncryptionKeyProvider(() => 7);
// @ts-expect-error changeKey needs the new key (or null)
openStore().then((store) => store.changeKey());
void wrong;
