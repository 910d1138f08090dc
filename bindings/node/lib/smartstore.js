'use strict';
// The Cordova plugin's smartstore: same names, same argument orders, optional leading
// storeConfig, (success, error) callbacks; `client` holds the promise-returning twins.
const { STATUS, syncStoreError } = require('./native');
const { getRoot, setRoot } = require('./root');
const { EventEmitter } = require('node:events');
const { invoke, closeExtraStores, operation, splitConfig, later, setLogLevel, getLogLevel, setEncryptionKeyProvider, onEvent, withOptionalArgs } = require('./cordova');
const { SERVICES, fieldsOf } = require('./api');
const specs = require('./querySpec');

const API = SERVICES.smartstore;

// What Node adds before an action that deletes stores: it closes its own extra handles of them
// (lib/cordova.js' extraStore), by the table's "removes".
const removedBy = {
  named: (c) => (s) => s.isGlobalStore === c.isGlobalStore && s.storeName === (c.storeName ?? 'smartstore'),
  user: () => (s) => !s.isGlobalStore,
  global: () => (s) => s.isGlobalStore,
};

const smartstore = { ...specs };
const client = { ...specs };

// Every function of the library's table: its action with the args object of its arguments, as
// cordova.force.js builds it.
for (const fn of API.functions.values()) {
  const impl = async (config, ...args) => {
    if (fn.removes) await closeExtraStores(removedBy[fn.removes](config || {}));
    return invoke(API.service, fn.action, fieldsOf(fn, args), fn.storeConfig ? config : null);
  };
  const [callbackFace, promiseFace] = operation(fn.name, impl, fn.args.length, { withConfig: fn.storeConfig });
  [smartstore[fn.name], client[fn.name]] = [withOptionalArgs(fn, callbackFace), withOptionalArgs(fn, promiseFace)];
}

// Next / previous page (the table's cursorSteps): the plugin checks the bounds itself and calls
// error(cursor, Error).
function pageStep({ name, via, step, error: edgeMessage }) {
  const outOfRange = (cursor) => {
    const index = cursor.currentPageIndex + step;
    return index < 0 || index >= cursor.totalPages;
  };
  const callbackFace = (...all) => {
    const [config, [cursor, success, failure]] = splitConfig(all, 1);
    if (outOfRange(cursor)) return later(failure, cursor, new Error(edgeMessage));
    smartstore[via](config, cursor, cursor.currentPageIndex + step, success, failure);
  };
  const promiseFace = async (...all) => {
    const [config, [cursor]] = splitConfig(all, 1);
    if (outOfRange(cursor)) throw syncStoreError(STATUS.ARGUMENT, edgeMessage);
    return client[via](config, cursor, cursor.currentPageIndex + step);
  };
  [smartstore[name], client[name]] = [callbackFace, promiseFace];
}
for (const step of API.cursorSteps.values()) pageStep(step);

// Log level of this JS layer (the C ABI has no logging switch).
smartstore.setLogLevel = client.setLogLevel = setLogLevel;
smartstore.getLogLevel = client.getLogLevel = getLogLevel;

// Where stores live (Node only: the plugin's stores live in the app's sandbox).
smartstore.setRootDirectory = client.setRootDirectory = setRoot;
smartstore.getRootDirectory = client.getRootDirectory = getRoot;
// Keys of encrypted stores (Node only: on a device the app gives the SDK its key).
smartstore.setEncryptionKeyProvider = client.setEncryptionKeyProvider = setEncryptionKeyProvider;
// Store listeners' events (addSoupListener / addQueryListener; docs/hybrid-plugin.md): every
// "smartstoreChanged" of the dispatchers reaches on('smartstoreChanged', detail => ...) and
// addEventListener('smartstoreChanged', event => event.detail), on smartstore and on its client.
// They do not keep the process alive.
const ChangeEvent = globalThis.CustomEvent || class extends Event {
  constructor(type, init) { super(type); this.detail = init ? init.detail : null; }
};
const emitter = new EventEmitter();
const target = new EventTarget();
onEvent((name, detail) => {
  if (name !== 'smartstoreChanged') return;
  try { emitter.emit(name, detail); } catch (error) { queueMicrotask(() => { throw error; }); }
  target.dispatchEvent(new ChangeEvent(name, { detail }));
});
for (const face of [smartstore, client]) {
  face.on = (type, listener) => { emitter.on(type, listener); return face; };
  face.once = (type, listener) => { emitter.once(type, listener); return face; };
  face.off = (type, listener) => { emitter.off(type, listener); return face; };
  face.addEventListener = (type, listener, options) => target.addEventListener(type, listener, options);
  face.removeEventListener = (type, listener, options) => target.removeEventListener(type, listener, options);
}

/** The promise-returning twin (like the plugin's promiser, smartstoreClient). */
smartstore.client = client;

module.exports = { smartstore, smartstoreClient: client };
