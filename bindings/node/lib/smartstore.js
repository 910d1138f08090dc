'use strict';
// The Cordova plugin's smartstore: same names, same argument orders, optional leading
// storeConfig, (success, error) callbacks; `client` holds the promise-returning twins.
const { STATUS, syncStoreError } = require('./native');
const { getRoot, setRoot } = require('./root');
const { invoke, closeExtraStores, operation, splitConfig, later, setLogLevel, getLogLevel, setEncryptionKeyProvider } = require('./cordova');
const { SMARTSTORE } = require('./plugin');
const specs = require('./querySpec');

const cursorId = (cursor) => (cursor && typeof cursor === 'object' ? cursor.cursorId : cursor);

/** impl(config, ...args) sending `action` with the args object fields(...args); resolves with the
 *  plugin's answer (undefined where it gives no value: success is called without an argument). */
const forward = (action, fields) => (config, ...args) => invoke(SMARTSTORE, action, fields(...args), config);

// name: [impl(config, ...args), arity]: the args objects cordova.force.js builds.
const ops = {
  registerSoup: [forward('pgRegisterSoup', (soupName, indexes) => ({ soupName, indexes })), 2],
  removeSoup: [forward('pgRemoveSoup', (soupName) => ({ soupName })), 1],
  soupExists: [forward('pgSoupExists', (soupName) => ({ soupName })), 1],
  getSoupIndexSpecs: [forward('pgGetSoupIndexSpecs', (soupName) => ({ soupName })), 1],
  alterSoup: [forward('pgAlterSoup', (soupName, indexes, reIndexData) => ({ soupName, indexes, reIndexData })), 3],
  reIndexSoup: [forward('pgReIndexSoup', (soupName, paths) => ({ soupName, paths })), 2],
  clearSoup: [forward('pgClearSoup', (soupName) => ({ soupName })), 1],
  querySoup: [forward('pgQuerySoup', (soupName, querySpec) => {
    // Pre-3.3 specs name their order path by indexPath, as the plugin's JS reads them.
    if (querySpec && typeof querySpec === 'object' && querySpec.order != null && querySpec.orderPath == null) querySpec = { ...querySpec, orderPath: querySpec.indexPath };
    return { soupName, querySpec };
  }), 2],
  runSmartQuery: [forward('pgRunSmartQuery', (querySpec) => ({ querySpec })), 1],
  retrieveSoupEntries: [forward('pgRetrieveSoupEntries', (soupName, entryIds) => ({ soupName, entryIds })), 2],
  upsertSoupEntries: [forward('pgUpsertSoupEntries', (soupName, entries) => ({ soupName, entries, externalIdPath: '_soupEntryId' })), 2],
  upsertSoupEntriesWithExternalId: [forward('pgUpsertSoupEntries', (soupName, entries, externalIdPath) => ({ soupName, entries, externalIdPath })), 3],
  removeFromSoup: [forward('pgRemoveFromSoup', (soupName, idsOrSpec) => (Array.isArray(idsOrSpec) ? { soupName, entryIds: idsOrSpec } : { soupName, querySpec: idsOrSpec })), 2],
  moveCursorToPageIndex: [forward('pgMoveCursorToPageIndex', (cursor, index) => ({ cursorId: cursorId(cursor), index })), 2],
  closeCursor: [forward('pgCloseCursor', (cursor) => ({ cursorId: cursorId(cursor) })), 1],
  getDatabaseSize: [forward('pgGetDatabaseSize', () => ({})), 0],
  showInspector: [forward('pgShowInspector', () => ({})), 0],
  removeStore: [async (c) => {
    await closeExtraStores((s) => s.isGlobalStore === c.isGlobalStore && s.storeName === (c.storeName ?? 'smartstore'));
    return invoke(SMARTSTORE, 'pgRemoveStore', {}, c);
  }, 0],
  /** Registers the soups of a userstore.json / globalstore.json (the dispatcher's loadStoreConfig). */
  loadStoreConfig: [forward('loadStoreConfig', (path) => ({ path })), 1],
};

const storeListOps = {
  getAllStores: [async () => invoke(SMARTSTORE, 'pgGetAllStores', {}, null), 0],
  getAllGlobalStores: [async () => invoke(SMARTSTORE, 'pgGetAllGlobalStores', {}, null), 0],
  removeAllStores: [async () => {
    await closeExtraStores((s) => !s.isGlobalStore);
    return invoke(SMARTSTORE, 'pgRemoveAllStores', {}, null);
  }, 0],
  removeAllGlobalStores: [async () => {
    await closeExtraStores((s) => s.isGlobalStore);
    return invoke(SMARTSTORE, 'pgRemoveAllGlobalStores', {}, null);
  }, 0],
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
    const [config, [cursor, success, failure]] = splitConfig(all, 1);
    if (outOfRange(cursor)) return later(failure, cursor, new Error(edgeMessage));
    smartstore.moveCursorToPageIndex(config, cursor, cursor.currentPageIndex + delta, success, failure);
  };
  const promiseFace = async (...all) => {
    const [config, [cursor]] = splitConfig(all, 1);
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
