'use strict';
// The Cordova plugin's smartstore: same names, same argument orders, optional leading
// storeConfig, (success, error) callbacks; `client` holds the promise-returning twins.
const { STATUS, syncStoreError } = require('./native');
const { listStores, removeStore, removeAllStores } = require('./store');
const { getRoot, setRoot } = require('./root');
const { getStore, closeStores, operation, splitConfig, later, setLogLevel, getLogLevel, setEncryptionKeyProvider } = require('./cordova');
const specs = require('./querySpec');

function cursorId(cursor) {
  if (cursor && typeof cursor === 'object') return cursor.cursorId;
  return cursor;
}

// name: [impl(config, ...args), arity]
const ops = {
  registerSoup: [async (c, soupName, indexSpecs) => { await (await getStore(c)).registerSoup(soupName, indexSpecs); return soupName; }, 2],
  removeSoup: [async (c, soupName) => { await (await getStore(c)).removeSoup(soupName); return 'OK'; }, 1],
  soupExists: [async (c, soupName) => (await getStore(c)).soupExists(soupName), 1],
  getSoupIndexSpecs: [async (c, soupName) => (await getStore(c)).getSoupIndexSpecs(soupName), 1],
  alterSoup: [async (c, soupName, indexSpecs, reIndexData) => { await (await getStore(c)).alterSoup(soupName, indexSpecs, reIndexData); return soupName; }, 3],
  reIndexSoup: [async (c, soupName, paths) => { await (await getStore(c)).reIndexSoup(soupName, paths); return soupName; }, 2],
  clearSoup: [async (c, soupName) => { await (await getStore(c)).clearSoup(soupName); return 'OK'; }, 1],
  querySoup: [async (c, soupName, querySpec) => (await getStore(c)).query(soupName, querySpec).then((cur) => cur.toJSON()), 2],
  runSmartQuery: [async (c, querySpec) => (await getStore(c)).smartQuery(querySpec).then((cur) => cur.toJSON()), 1],
  retrieveSoupEntries: [async (c, soupName, entryIds) => (await getStore(c)).retrieve(soupName, entryIds), 2],
  upsertSoupEntries: [async (c, soupName, entries) => (await getStore(c)).upsert(soupName, entries), 2],
  upsertSoupEntriesWithExternalId: [async (c, soupName, entries, externalIdPath) =>
    (await getStore(c)).upsert(soupName, entries, { externalIdPath }), 3],
  removeFromSoup: [async (c, soupName, entryIdsOrQuerySpec) => { await (await getStore(c)).remove(soupName, entryIdsOrQuerySpec); return 'OK'; }, 2],
  moveCursorToPageIndex: [async (c, cursor, newPageIndex) => (await getStore(c)).moveCursorToPage(cursorId(cursor), newPageIndex), 2],
  closeCursor: [async (c, cursor) => { await (await getStore(c)).closeCursor(cursorId(cursor)); return 'OK'; }, 1],
  getDatabaseSize: [async (c) => (await getStore(c)).size(), 0],
  removeStore: [async (c) => {
    await closeStores((s) => s.isGlobalStore === c.isGlobalStore && s.storeName === (c.storeName ?? 'smartstore'));
    await removeStore(c);
    return 'OK';
  }, 0],
  /** Registers the soups of a userstore.json / globalstore.json (not in the plugin: Node has no app bundle). */
  loadStoreConfig: [async (c, file) => { await (await getStore(c)).loadStoreConfig(file); return 'OK'; }, 1],
};

const storeListOps = {
  getAllStores: [async () => (await listStores({ isGlobalStore: false })).map((storeName) => ({ storeName, isGlobalStore: false })), 0],
  getAllGlobalStores: [async () => (await listStores({ isGlobalStore: true })).map((storeName) => ({ storeName, isGlobalStore: true })), 0],
  removeAllStores: [async () => { await closeStores((s) => !s.isGlobalStore); await removeAllStores({ isGlobalStore: false }); return 'OK'; }, 0],
  removeAllGlobalStores: [async () => { await closeStores((s) => s.isGlobalStore); await removeAllStores({ isGlobalStore: true }); return 'OK'; }, 0],
};

const smartstore = { ...specs };
const client = { ...specs };

for (const [name, [impl, arity]] of Object.entries(ops)) [smartstore[name], client[name]] = operation(name, impl, arity);
for (const [name, [impl, arity]] of Object.entries(storeListOps)) [smartstore[name], client[name]] = operation(name, impl, arity, { withConfig: false });

// Next / previous page: the plugin checks the bounds itself and calls error(cursor, Error).
function pageStep(delta, edgeMessage) {
  const outOfRange = (cursor) => {
    const index = cursor.currentPageIndex + delta;
    return index < 0 || index >= cursor.totalPages;
  };
  const callbackFace = (...all) => {
    const [config, [cursor, success, failure]] = splitConfig(all);
    if (outOfRange(cursor)) return later(failure, cursor, new Error(edgeMessage));
    smartstore.moveCursorToPageIndex(config, cursor, cursor.currentPageIndex + delta, success, failure);
  };
  const promiseFace = async (...all) => {
    const [config, [cursor]] = splitConfig(all);
    if (outOfRange(cursor)) throw syncStoreError(STATUS.ARGUMENT, edgeMessage);
    return client.moveCursorToPageIndex(config, cursor, cursor.currentPageIndex + delta);
  };
  return [callbackFace, promiseFace];
}
[smartstore.moveCursorToNextPage, client.moveCursorToNextPage] = pageStep(1, 'moveCursorToNextPage called while on last page');
[smartstore.moveCursorToPreviousPage, client.moveCursorToPreviousPage] = pageStep(-1, 'moveCursorToPreviousPage called while on first page');

// Log level of this JS layer (the C ABI has no logging switch).
smartstore.setLogLevel = client.setLogLevel = setLogLevel;
smartstore.getLogLevel = client.getLogLevel = getLogLevel;

// Where stores live (Node only: the plugin's stores live in the app's sandbox).
smartstore.setRootDirectory = client.setRootDirectory = setRoot;
smartstore.getRootDirectory = client.getRootDirectory = getRoot;
// Keys of encrypted stores (Node only: on a device the app gives the SDK its key).
smartstore.setEncryptionKeyProvider = client.setEncryptionKeyProvider = setEncryptionKeyProvider;
/** The promise-returning twin (like the plugin's promiser, smartstoreClient). */
smartstore.client = client;

module.exports = { smartstore, smartstoreClient: client };
