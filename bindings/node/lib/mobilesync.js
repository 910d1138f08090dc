'use strict';
// The Cordova plugin's mobilesync: syncDown, syncUp, reSync, cleanResyncGhosts, getSyncStatus,
// deleteSync, MERGE_MODE; plus what Cordova got from its OAuth plugin (setRemote) and Node
// extras (loadSyncConfig, registerTarget). Calls go to the library's dispatcher, whose 'sync'
// events (detail = state + isGlobalStore + storeName) every MobileSync emits (EventEmitter and
// EventTarget).
const { EventEmitter } = require('node:events');
const { syncStoreError } = require('./native');
const { MOBILESYNC } = require('./plugin');
const { pluginFor, onSync, updateKeepAlive, argsOf, invoke, extraStore, splitConfig, operation, later, message, toError } = require('./cordova');

// CustomEvent is global from Node 19; an Event with .detail elsewhere.
const SyncEvent = globalThis.CustomEvent || class extends Event {
  constructor(type, init) { super(type); this.detail = init ? init.detail : null; }
};

const MERGE_MODE = Object.freeze({ OVERWRITE: 'OVERWRITE', LEAVE_IF_CHANGED: 'LEAVE_IF_CHANGED' });

const RUN_METHODS = ['syncDown', 'syncUp', 'reSync', 'cleanResyncGhosts'];
const RAW_ERRORS = Symbol('raw errors'); // marks the promise twins' reject functions

/** Error callbacks get a message string, like the plugin; the promise twins get the Error. */
function fail(failure, error) {
  later(failure, failure && failure[RAW_ERRORS] ? toError(error) : message(error));
}

/** syncId / syncName as the plugin's JS sends a sync named by either. */
const reference = (idOrName) => (typeof idOrName === 'string' ? { syncId: null, syncName: idOrName } : { syncId: idOrName, syncName: null });

const instances = new Set(); // WeakRefs of every MobileSync: the dispatcher's events go to each
const live = () => [...instances].map((ref) => ref.deref() || (instances.delete(ref), null)).filter(Boolean);
onSync((detail) => { for (const ms of live()) ms._dispatch(detail); }, () => live().some((ms) => ms._waiting()));

class MobileSync extends EventEmitter {
  #target = new EventTarget();
  #domListeners = new Set();
  #reactNative;

  /** reactNative: success on DONE and error on FAILED / STOPPED (the React Native module's
   *  behaviour) instead of success with the state at start. */
  constructor({ reactNative = false } = {}) {
    super();
    this.#reactNative = reactNative;
    this.MERGE_MODE = MERGE_MODE;
    this.client = makeClient(this);
    // Bound, so destructured functions work like the plugin's plain functions.
    for (const name of [...RUN_METHODS, ...Object.keys(simpleOps)]) this[name] = this[name].bind(this);
    instances.add(new WeakRef(this));
    const changed = (type) => { if (type === 'sync') queueMicrotask(updateKeepAlive); };
    this.on('newListener', changed);
    this.on('removeListener', changed);
  }

  get reactNative() { return this.#reactNative; }

  addEventListener(type, listener, options) {
    this.#target.addEventListener(type, listener, options);
    if (type === 'sync' && listener) { this.#domListeners.add(listener); updateKeepAlive(); }
  }

  removeEventListener(type, listener, options) {
    this.#target.removeEventListener(type, listener, options);
    if (type === 'sync' && this.#domListeners.delete(listener)) updateKeepAlive();
  }

  /** Someone waits for runs to end: 'sync' listeners (a run alone does not keep the process
   *  alive; at exit the stores close, which stops it). */
  _waiting() { return this.listenerCount('sync') > 0 || this.#domListeners.size > 0; }

  _dispatch(detail) {
    this.emit('sync', detail);
    this.#target.dispatchEvent(new SyncEvent('sync', { detail }));
  }

  // ---- runs ----

  /** Sends a run action; success gets the state at its start (React Native: the DONE state). */
  _start(config, action, fields, success, failure) {
    if (!this.#reactNative) {
      invoke(MOBILESYNC, action, fields, config).then((state) => later(success, state), (error) => fail(failure, error));
      return;
    }
    let args;
    try { args = argsOf(fields, config); } catch (error) { fail(failure, error); return; }
    pluginFor().runToEnd(action, [args]).then(({ status, value }) => {
      if (status === 0) later(success, value);
      else if (typeof value === 'string') fail(failure, syncStoreError(status, value));
      else if (failure && failure[RAW_ERRORS]) later(failure, Object.assign(syncStoreError(status, value.error || `sync ${value.status}`), { state: value }));
      else later(failure, value);
    });
  }

  syncDown(...all) {
    const [config, rest] = splitConfig(all, 3);
    const [target, soupName, options] = rest;
    const named = typeof rest[3] !== 'function';
    const syncName = named ? rest[3] ?? null : null;
    const [success, failure] = named ? [rest[4], rest[5]] : [rest[3], rest[4]];
    this._start(config, 'syncDown', { syncName, target, soupName, options }, success, failure);
  }

  syncUp(...all) {
    const [config, args] = splitConfig(all, 2);
    const rest = typeof args[0] === 'string' ? [{}, ...args] : args; // target is optional
    const [target, soupName, options] = rest;
    const named = typeof rest[3] !== 'function';
    const syncName = named ? rest[3] ?? null : null;
    const [success, failure] = named ? [rest[4], rest[5]] : [rest[3], rest[4]];
    this._start(config, 'syncUp', { syncName, target: target || {}, soupName, options }, success, failure);
  }

  reSync(...all) {
    const [config, [idOrName, success, failure]] = splitConfig(all, 1);
    this._start(config, 'reSync', reference(idOrName), success, failure);
  }

  /** success gets the number of records removed (the plugin's contract), at the end. */
  cleanResyncGhosts(...all) {
    const [config, [idOrName, success, failure]] = splitConfig(all, 1);
    invoke(MOBILESYNC, 'cleanResyncGhosts', reference(idOrName), config).then((count) => later(success, count), (error) => fail(failure, error));
  }
}

// Calls that settle once: [impl(config, ...args), arity].
const simpleOps = {
  // The plugin answers {} for an unknown sync (Cordova cannot pass null): its JS gives null.
  getSyncStatus: [async (c, idOrName) => {
    const state = await invoke(MOBILESYNC, 'getSyncStatus', reference(idOrName), c);
    return state && state._soupEntryId !== undefined ? state : null;
  }, 1],
  deleteSync: [(c, idOrName) => invoke(MOBILESYNC, 'deleteSync', reference(idOrName), c), 1],
  /** Node's stand-in for the OAuth plugin: {instanceUrl, accessToken, refreshToken?, ...}. */
  setRemote: [async (c, remote) => { pluginFor().setRemote(c, remote); }, 1],
  /** Creates the syncs of a usersyncs.json / globalsyncs.json (the dispatcher's loadSyncConfig). */
  loadSyncConfig: [(c, path) => invoke(MOBILESYNC, 'loadSyncConfig', { path }, c), 1],
  hasSyncWithName: [async (c, name) => (await simpleOps.getSyncStatus[0](c, String(name))) !== null, 1],
  /** Stops the runs of the current root directory's stores (the dispatcher closes its stores;
   *  the next call opens them again). */
  stopSyncs: [async () => { await pluginFor().free(); }, 0],
  /** A custom target type written in JS (see Store#registerTarget). */
  registerTarget: [async (c, type, impl) => { (await extraStore(c)).registerTarget(type, impl); }, 2],
};

for (const [name, [impl, arity]] of Object.entries(simpleOps)) {
  const [callbackFace] = operation(name, impl, arity);
  MobileSync.prototype[name] = callbackFace;
}

/** Promise twins: start calls resolve with the state at start (DONE in React Native mode). */
function makeClient(ms) {
  const client = { MERGE_MODE };
  for (const [name, [impl, arity]] of Object.entries(simpleOps)) client[name] = operation(name, impl, arity)[1];
  for (const name of RUN_METHODS) {
    client[name] = (...args) => new Promise((resolve, reject) => {
      ms[name](...args, resolve, Object.assign((error) => reject(error), { [RAW_ERRORS]: true }));
    });
  }
  return client;
}

const mobilesync = new MobileSync();

/** Another mobilesync with its own 'sync' listeners, e.g. createMobileSync({reactNative: true}). */
const createMobileSync = (options) => new MobileSync(options);

module.exports = { mobilesync, mobilesyncClient: mobilesync.client, MobileSync, createMobileSync, MERGE_MODE };
