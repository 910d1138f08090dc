'use strict';
// The Cordova plugin's mobilesync: syncDown, syncUp, reSync, cleanResyncGhosts, getSyncStatus,
// deleteSync, MERGE_MODE; plus what Cordova got from its OAuth plugin (setRemote) and Node
// extras (loadSyncConfig, registerTarget). Every state of every run is emitted as a 'sync'
// event (EventEmitter and EventTarget) with detail = state + isGlobalStore + storeName.
const { EventEmitter } = require('node:events');
const { STATUS, syncStoreError } = require('./native');
const { getStore, splitConfig, operation, later, message, toError } = require('./cordova');

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

class MobileSync extends EventEmitter {
  #target = new EventTarget();
  #domListeners = 0;
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
  }

  get reactNative() { return this.#reactNative; }

  addEventListener(type, listener, options) {
    if (type === 'sync' && listener) this.#domListeners++;
    this.#target.addEventListener(type, listener, options);
  }

  removeEventListener(type, listener, options) {
    if (type === 'sync' && listener && this.#domListeners > 0) this.#domListeners--;
    this.#target.removeEventListener(type, listener, options);
  }

  _dispatch(detail) {
    this.emit('sync', detail);
    this.#target.dispatchEvent(new SyncEvent('sync', { detail }));
  }

  /** A run keeps the process alive only while someone waits for its end: a React Native
   *  style callback or a 'sync' listener. */
  _waited() {
    return this.#reactNative || this.listenerCount('sync') > 0 || this.#domListeners > 0;
  }

  // ---- runs ----

  /** Starts a run through startRun(store) and wires callbacks and events; returns the run. */
  _start(config, startRun, success, failure) {
    const detailOf = (state) => ({ ...state, isGlobalStore: config.isGlobalStore, storeName: config.storeName ?? 'smartstore' });
    return getStore(config).then((store) => {
      const run = startRun(store);
      // A run keeps the process alive only while someone waits for its end.
      if (this._waited()) run.keepAlive();
      run.on('start', (state) => { if (!this.#reactNative) later(success, state); });
      run.on('progress', (state) => this._dispatch(detailOf(state)));
      run.on('end', (state) => {
        if (!this.#reactNative) return;
        if (state.status === 'DONE') later(success, state);
        else if (failure && failure[RAW_ERRORS]) later(failure, Object.assign(syncStoreError(state.errorCode || STATUS.INTERNAL, state.error || `sync ${state.status}`), { state }));
        else later(failure, state);
      });
      run.started.catch((error) => fail(failure, error));
      return run;
    }, (error) => { fail(failure, error); return null; });
  }

  syncDown(...all) {
    const [config, rest] = splitConfig(all);
    const [target, soupName, options] = rest;
    const named = typeof rest[3] !== 'function';
    const syncName = named ? rest[3] : undefined;
    const [success, failure] = named ? [rest[4], rest[5]] : [rest[3], rest[4]];
    return this._start(config, (store) => store.syncDown(target, soupName, options, syncName), success, failure);
  }

  syncUp(...all) {
    const [config, args] = splitConfig(all);
    const rest = typeof args[0] === 'string' ? [null, ...args] : args; // target is optional
    const [target, soupName, options] = rest;
    const named = typeof rest[3] !== 'function';
    const syncName = named ? rest[3] : undefined;
    const [success, failure] = named ? [rest[4], rest[5]] : [rest[3], rest[4]];
    return this._start(config, (store) => store.syncUp(target, soupName, options, syncName), success, failure);
  }

  reSync(...all) {
    const [config, [idOrName, success, failure]] = splitConfig(all);
    return this._start(config, (store) => store.reSync(idOrName), success, failure);
  }

  /** success gets the number of records removed (the plugin's contract), at the end. */
  cleanResyncGhosts(...all) {
    const [config, [idOrName, success, failure]] = splitConfig(all);
    return getStore(config).then((store) => {
      const run = store.cleanResyncGhosts(idOrName);
      if (this._waited()) run.keepAlive();
      run.on('progress', (state) => this._dispatch({ ...state, isGlobalStore: config.isGlobalStore, storeName: config.storeName ?? 'smartstore' }));
      run.on('end', (state) => {
        if (state.status === 'DONE') later(success, state.removed);
        else fail(failure, Object.assign(syncStoreError(state.errorCode || STATUS.INTERNAL, state.error || `cleanResyncGhosts ${state.status}`), { state }));
      });
      run.started.catch((error) => fail(failure, error));
      return run;
    }, (error) => { fail(failure, error); return null; });
  }
}

// Calls that settle once: [impl(config, ...args), arity].
const simpleOps = {
  getSyncStatus: [async (c, idOrName) => (await getStore(c)).getSyncStatus(idOrName), 1],
  deleteSync: [async (c, idOrName) => { await (await getStore(c)).deleteSync(idOrName); return 'OK'; }, 1],
  /** Node's stand-in for the OAuth plugin: {instanceUrl, accessToken, refreshToken?, ...}. */
  setRemote: [async (c, remote) => { await (await getStore(c)).setRemote(remote); return 'OK'; }, 1],
  /** Creates the syncs of a usersyncs.json / globalsyncs.json. */
  loadSyncConfig: [async (c, file) => { await (await getStore(c)).loadSyncConfig(file); return 'OK'; }, 1],
  hasSyncWithName: [async (c, name) => (await getStore(c)).hasSyncWithName(name), 1],
  stopSyncs: [async (c) => { await (await getStore(c)).stopSyncs(); return 'OK'; }, 0],
  /** A custom target type written in JS (see Store#registerTarget). */
  registerTarget: [async (c, type, impl) => { (await getStore(c)).registerTarget(type, impl); return 'OK'; }, 2],
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
