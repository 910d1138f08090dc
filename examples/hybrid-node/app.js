'use strict';
// The page's own code of a small hybrid app: what an app built on Salesforce's hybrid JavaScript
// does. It uses only what those files give a page: navigator.smartstore (cordova.force.js), the
// "com.salesforce.plugin.mobilesync" module with its document 'sync' events, force (force.js,
// REST) and Force.* (mobilesync.js on Backbone). The container (index.js) loads the files first.
// run() answers what the page saw, for the container to print.

/** Calls a Cordova-style fn(...args, success, error) as a promise. */
const call = (fn, ...args) => new Promise((resolve, reject) => fn(...args, resolve, reject));

/** A Backbone model's fetch / save / destroy as a promise. */
const backbone = (model, method, options = {}) => new Promise((resolve, reject) => {
  const settle = { ...options, success: () => resolve(model.toJSON()), error: (m, error) => reject(error) };
  if (method === 'save') model.save(null, settle);
  else model[method](settle);
});

/** Every sync's states as the document 'sync' events give them; ended(state, n) waits for the
 *  n-th end (DONE, FAILED or STOPPED) of the sync `state` names: its first run, a reSync, ... */
function syncWatcher() {
  const seen = new Map(); // sync id -> statuses in order
  const ends = (id) => (seen.get(id) || []).filter((s) => s !== 'RUNNING');
  let wake = () => {};
  const listener = (event) => {
    const { _soupEntryId: id, status } = event.detail;
    seen.set(id, [...(seen.get(id) || []), status]);
    wake();
  };
  document.addEventListener('sync', listener);
  return {
    seen,
    async ended(state, n) {
      while (ends(state._soupEntryId).length < n) await new Promise((resolve) => { wake = resolve; });
      const status = ends(state._soupEntryId)[n - 1];
      if (status !== 'DONE') throw new Error(`sync ${state._soupEntryId} ended ${status}`);
      return status;
    },
    stop: () => document.removeEventListener('sync', listener),
  };
}

async function run() {
  const smartstore = navigator.smartstore;
  const mobilesync = cordova.require('com.salesforce.plugin.mobilesync');
  const report = { smartstore: {}, mobilesync: {}, rest: {}, backbone: {} };

  // Log in as a Cordova page does: force.js asks the OAuth plugin once the device is ready.
  await new Promise((resolve, reject) => force.login(resolve, reject));
  report.loggedIn = force.isAuthenticated();

  // ---- SmartStore: notes kept on the device ----
  const ss = report.smartstore;
  await call(smartstore.registerSoup, 'notes', [{ path: 'title', type: 'string' }, { path: 'priority', type: 'integer' },
    { path: 'body', type: 'full_text' }]);
  ss.soupExists = await call(smartstore.soupExists, 'notes');
  const notes = await call(smartstore.upsertSoupEntries, 'notes', [
    { title: 'Call Ada', priority: 1, body: 'about the analytical engine' }, { title: 'Call Grace', priority: 2, body: 'compilers' },
    { title: 'Draft memo', priority: 3, body: 'engine notes' }, { title: 'Draft plan', priority: 4 }, { title: 'Visit Alan', priority: 5 }]);
  ss.ids = notes.map((n) => n._soupEntryId);
  const updated = await call(smartstore.upsertSoupEntriesWithExternalId, 'notes', [{ title: 'Visit Alan', priority: 9 }], 'title');
  ss.upsertByTitleKeptId = updated[0]._soupEntryId === ss.ids[4];

  // Page through every note, two at a time, as a list view does.
  let cursor = await call(smartstore.querySoup, 'notes', smartstore.buildAllQuerySpec('title', 'ascending', 2));
  const titles = cursor.currentPageOrderedEntries.map((n) => n.title);
  while (cursor.currentPageIndex + 1 < cursor.totalPages) {
    cursor = await call(smartstore.moveCursorToNextPage, cursor);
    titles.push(...cursor.currentPageOrderedEntries.map((n) => n.title));
  }
  await call(smartstore.closeCursor, cursor);
  ss.pagedTitles = titles;
  ss.totalPages = cursor.totalPages;
  const count = async (spec) => {
    const c = await call(smartstore.querySoup, 'notes', spec);
    await call(smartstore.closeCursor, c);
    return c.totalEntries;
  };
  ss.exact = await count(smartstore.buildExactQuerySpec('title', 'Call Ada'));
  ss.range = await count(smartstore.buildRangeQuerySpec('priority', 2, 4));
  ss.like = await count(smartstore.buildLikeQuerySpec('title', 'Call%'));
  ss.match = await count(smartstore.buildMatchQuerySpec('body', 'engine'));
  const smart = await call(smartstore.runSmartQuery, smartstore.buildSmartQuerySpec('select count(*), max({notes:priority}) from {notes}'));
  ss.smart = smart.currentPageOrderedEntries[0];
  ss.retrieved = (await call(smartstore.retrieveSoupEntries, 'notes', ss.ids.slice(0, 2))).map((n) => n.title);
  await call(smartstore.removeFromSoup, 'notes', [ss.ids[0]]);
  await call(smartstore.removeFromSoup, 'notes', smartstore.buildLikeQuerySpec('title', 'Draft%'));
  ss.afterRemoves = await count(smartstore.buildAllQuerySpec('title'));
  await call(smartstore.alterSoup, 'notes', [{ path: 'title', type: 'string' }, { path: 'priority', type: 'integer' },
    { path: 'body', type: 'full_text' }, { path: 'owner', type: 'string' }], true);
  ss.indexPaths = (await call(smartstore.getSoupIndexSpecs, 'notes')).map((s) => s.path);
  await call(smartstore.clearSoup, 'notes');
  ss.afterClear = await count(smartstore.buildAllQuerySpec('title'));
  ss.userStoreSize = await call(smartstore.getDatabaseSize);

  // The global store (shared by every user of the app) and a named store of the user's.
  await call(smartstore.registerSoup, true, 'settings', [{ path: 'key', type: 'string' }]);
  await call(smartstore.upsertSoupEntriesWithExternalId, true, 'settings', [{ key: 'theme', value: 'dark' }], 'key');
  ss.globalStoreSize = await call(smartstore.getDatabaseSize, true);
  const offline = new smartstore.StoreConfig('offline', false);
  await call(smartstore.registerSoup, offline, 'drafts', [{ path: 'id', type: 'string' }]);
  ss.userStores = (await call(smartstore.getAllStores)).map((s) => s.storeName).sort();
  ss.globalStores = (await call(smartstore.getAllGlobalStores)).map((s) => s.storeName);
  await call(smartstore.removeStore, offline);
  ss.userStoresAfterRemove = (await call(smartstore.getAllStores)).map((s) => s.storeName);

  // ---- MobileSync: the org's contacts, offline ----
  const ms = report.mobilesync;
  const syncs = syncWatcher();
  await call(smartstore.registerSoup, 'contacts', [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' },
    { path: '__local__', type: 'string' }]);
  const target = { type: 'soql', query: 'SELECT Id, LastName, LastModifiedDate FROM Contact' };
  const down = await call(mobilesync.syncDown, target, 'contacts', { mergeMode: mobilesync.MERGE_MODE.OVERWRITE }, 'allContacts');
  ms.downStarted = down.status;
  ms.downEnded = await syncs.ended(down, 1);
  const downDone = await call(mobilesync.getSyncStatus, down._soupEntryId);
  ms.downDone = { status: downDone.status, progress: downDone.progress, totalSize: downDone.totalSize };
  ms.contactsOnDevice = await (async () => {
    const c = await call(smartstore.querySoup, 'contacts', smartstore.buildAllQuerySpec('LastName'));
    await call(smartstore.closeCursor, c);
    return c.totalEntries;
  })();

  // Edit one contact and create one on the device, then send both to the org.
  const first = await call(smartstore.querySoup, 'contacts', smartstore.buildAllQuerySpec('LastName', 'ascending', 1));
  await call(smartstore.closeCursor, first);
  const edited = { ...first.currentPageOrderedEntries[0], LastName: 'Edited On Device', __local__: true, __locally_updated__: true };
  const created = { Id: `local_${Date.now()}`, LastName: 'Created On Device', attributes: { type: 'Contact' },
    __local__: true, __locally_created__: true, __locally_updated__: false, __locally_deleted__: false };
  await call(smartstore.upsertSoupEntries, 'contacts', [edited, created]);
  const up = await call(mobilesync.syncUp, {}, 'contacts', { fieldlist: ['LastName'], mergeMode: 'OVERWRITE' }, 'pushContacts');
  ms.upDone = await syncs.ended(up, 1);
  const onServer = await call(force.query, "SELECT Id, LastName FROM Contact WHERE LastName IN ('Edited On Device', 'Created On Device')");
  ms.pushedNames = onServer.records.map((r) => r.LastName).sort();

  // Fetch again, by id and by name; then drop contacts deleted in the org.
  await call(mobilesync.reSync, down._soupEntryId);
  ms.reSyncById = await syncs.ended(down, 2);
  await call(mobilesync.reSync, 'allContacts');
  ms.reSyncByName = await syncs.ended(down, 3);
  await call(force.del, 'Contact', onServer.records[0].Id);
  ms.ghostsRemoved = await call(mobilesync.cleanResyncGhosts, down._soupEntryId);
  ms.statusById = (await call(mobilesync.getSyncStatus, down._soupEntryId)).name;
  ms.statusByName = (await call(mobilesync.getSyncStatus, 'allContacts'))._soupEntryId === down._soupEntryId;
  ms.statusOfUnknown = await call(mobilesync.getSyncStatus, 'noSuchSync');
  await call(mobilesync.deleteSync, 'pushContacts');
  ms.statusAfterDelete = await call(mobilesync.getSyncStatus, 'pushContacts');
  ms.eventsOfDown = syncs.seen.get(down._soupEntryId);
  syncs.stop();

  // ---- force.js: REST calls through the network plugin ----
  const rest = report.rest;
  rest.contacts = (await call(force.query, 'SELECT Id FROM Contact')).totalSize;
  const made = await call(force.create, 'Account', { Name: 'Hybrid Traders' });
  rest.created = made.success;
  rest.retrieved = (await call(force.retrieve, 'Account', made.id, ['Name'])).Name;
  await call(force.update, 'Account', { Id: made.id, Name: 'Hybrid Traders Ltd' });
  rest.updated = (await call(force.retrieve, 'Account', made.id, 'Name')).Name;
  await call(force.del, 'Account', made.id);
  rest.afterDelete = await call(force.retrieve, 'Account', made.id, ['Name']).then(() => 'found', (error) => (Array.isArray(error) ? error[0].errorCode : String(error)));

  // ---- mobilesync.js: Backbone models over a SmartStore cache ----
  const bb = report.backbone;
  Force.init();
  const cache = new Force.StoreCache('accounts', [{ path: 'Name', type: 'string' }]);
  const originals = new Force.StoreCache('accounts-originals');
  await cache.init();
  await originals.init();
  const Account = Force.SObject.extend({ sobjectType: 'Account', fieldlist: ['Id', 'Name', 'Industry'], cache, cacheForOriginals: originals });
  const account = new Account({ Name: 'Backbone Inc', Industry: 'Technology' });
  await backbone(account, 'save');
  bb.savedId = typeof account.id === 'string' && account.id.length === 18;
  bb.cachedAfterSave = (await cache.retrieve(account.id)).Name;
  const again = new Account({ Id: account.id });
  bb.cacheFirst = (await backbone(again, 'fetch', { cacheMode: Force.CACHE_MODE.CACHE_FIRST })).Name;
  again.set('Name', 'Backbone Local');
  const local = await backbone(again, 'save', { cacheMode: Force.CACHE_MODE.CACHE_ONLY });
  bb.localOnly = { local: local.__local__, server: (await call(force.retrieve, 'Account', account.id, ['Name'])).Name };
  await backbone(again, 'save', { cacheMode: Force.CACHE_MODE.SERVER_FIRST, mergeMode: Force.MERGE_MODE.OVERWRITE });
  bb.savedToServer = (await call(force.retrieve, 'Account', account.id, ['Name'])).Name;
  bb.serverOnly = (await backbone(new Account({ Id: account.id }), 'fetch', { cacheMode: Force.CACHE_MODE.SERVER_ONLY })).Name;

  const Accounts = Force.SObjectCollection.extend({ model: Account, cache });
  const fromServer = new Accounts();
  await new Promise((resolve, reject) => fromServer.fetch({ config: { type: 'soql', query: 'SELECT Id, Name, Industry FROM Account' },
    success: resolve, error: (c, error) => reject(error) }));
  bb.collectionFromServer = fromServer.length;
  const fromCache = new Accounts();
  await new Promise((resolve, reject) => fromCache.fetch({ config: { type: 'cache', cacheQuery: smartstore.buildAllQuerySpec('Name', 'ascending', 100) },
    success: resolve, error: (c, error) => reject(error) }));
  bb.collectionFromCache = fromCache.length;
  bb.syncRemoteObjects = (await Force.syncSObject('read', 'Account', account.id, null, ['Id', 'Name'], cache, Force.CACHE_MODE.SERVER_FIRST)).Name;
  bb.fetchSObjects = (await Force.fetchSObjects({ type: 'soql', query: 'SELECT Id, Name FROM Account' }, cache)).records.length;
  bb.layout = Object.keys(await new Force.SObjectType('Account', cache).describeLayout()).includes('detailLayoutSections');
  await backbone(again, 'destroy', { cacheMode: Force.CACHE_MODE.SERVER_FIRST });
  bb.destroyed = { cache: await cache.retrieve(account.id), server: await call(force.retrieve, 'Account', account.id, ['Name']).then(() => 'found', () => 'gone') };
  return report;
}

module.exports = { run };
