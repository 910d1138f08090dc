'use strict';
// The Cordova plugin's mobilesync: syncDown, syncUp, reSync, cleanResyncGhosts, getSyncStatus,
// deleteSync, MERGE_MODE; SyncStore's live sync (startLiveSync, stopLiveSync, getLiveSyncState);
// plus what Cordova got from its OAuth plugin (setRemote) and Node extras (loadSyncConfig,
// registerTarget). Calls go to the library's dispatcher, whose 'sync' events (detail = state +
// isGlobalStore + storeName) and 'liveSync' events (detail = live sync state event +
// isGlobalStore + storeName) every MobileSync emits (EventEmitter and EventTarget).
const { EventEmitter } = require('node:events');
const { syncStoreError } = require('./native');
const { SERVICES, fieldsOf, answerOf } = require('./api');
const { pluginFor, onSync, onEvent, updateKeepAlive, argsOf, invoke, extraStore, splitConfig, operation, withOptionalArgs, later, message, toError } = require('./cordova');

// CustomEvent is global from Node 19; an Event with .detail elsewhere.
const SyncEvent = globalThis.CustomEvent || class extends Event {
  constructor(type, init) { super(type); this.detail = init ? init.detail : null; }
};

const MERGE_MODE = Object.freeze({ OVERWRITE: 'OVERWRITE', LEAVE_IF_CHANGED: 'LEAVE_IF_CHANGED' });

// The library's table: runs (syncDown, syncUp, reSync) answer at their start and go on with
// 'sync' events, "later" actions (cleanResyncGhosts) answer when they end; both have their own
// methods below. The others are made from the table like smartstore's.
const API = SERVICES.mobilesync;
const MOBILESYNC = API.service;
const ROWS = [...API.functions.values()];
const RUN_METHODS = ROWS.filter((fn) => fn.run || fn.later).map((fn) => fn.name);
const action = (name) => API.functions.get(name).action;
const RAW_ERRORS = Symbol('raw errors'); // marks the promise twins' reject functions

/** Error callbacks get a message string, like the plugin; the promise twins get the Error. */
function fail(failure, error) {
  later(failure, failure && failure[RAW_ERRORS] ? toError(error) : message(error));
}

/** The args object of a table function (storeConfig apart) and the callbacks after its
 *  arguments: a function where an optional argument would be is the success callback. */
function argsAndCallbacks(name, rest) {
  const fn = API.functions.get(name);
  const given = [...rest];
  let count = 0;
  for (const spec of fn.args) {
    if (count >= given.length || typeof given[count] === 'function') break;
    if (spec.omittedWhen === 'string' && typeof given[count] === 'string') continue;
    count += 1;
  }
  return [fieldsOf(fn, given.slice(0, count)), given[count], given[count + 1]];
}

const instances = new Set(); // WeakRefs of every MobileSync: the dispatcher's events go to each
const live = () => [...instances].map((ref) => ref.deref() || (instances.delete(ref), null)).filter(Boolean);
onSync((detail) => { for (const ms of live()) ms._dispatch(detail); }, () => live().some((ms) => ms._waiting()));
// Live sync's state events (docs/hybrid-plugin.md, "Live sync"): they keep no process alive.
onEvent((name, detail) => { if (name === 'liveSync') for (const ms of live()) ms._dispatch(detail, name); });

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

  _dispatch(detail, name = 'sync') {
    try { this.emit(name, detail); } catch (error) { queueMicrotask(() => { throw error; }); }
    this.#target.dispatchEvent(new SyncEvent(name, { detail }));
  }

  // ---- runs ----

  /** Sends a run action; success gets the state at its start (React Native: the DONE state). */
  _start(config, name, fields, success, failure) {
    const action = API.functions.get(name).action;
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
    const [config, rest] = splitConfig(all, API.functions.get('syncDown').required);
    const [fields, success, failure] = argsAndCallbacks('syncDown', rest);
    this._start(config, 'syncDown', fields, success, failure);
  }

  syncUp(...all) {
    const [config, rest] = splitConfig(all, API.functions.get('syncUp').required);
    const [fields, success, failure] = argsAndCallbacks('syncUp', rest);
    this._start(config, 'syncUp', fields, success, failure);
  }

  reSync(...all) {
    const [config, rest] = splitConfig(all, API.functions.get('reSync').required);
    const [fields, success, failure] = argsAndCallbacks('reSync', rest);
    this._start(config, 'reSync', fields, success, failure);
  }

  /** success gets the number of records removed (the plugin's contract), at the end. */
  cleanResyncGhosts(...all) {
    const [config, rest] = splitConfig(all, API.functions.get('cleanResyncGhosts').required);
    const [fields, success, failure] = argsAndCallbacks('cleanResyncGhosts', rest);
    invoke(MOBILESYNC, action('cleanResyncGhosts'), fields, config).then((count) => later(success, count), (error) => fail(failure, error));
  }
}

// Calls that settle once: [impl(config, ...args), arity].
const simpleOps = {};
// Every other function of the library's table (getSyncStatus, deleteSync, loadSyncConfig...): its
// action with the args object of its arguments; the plugin's {} for an unknown sync is null.
// Optional last arguments (startLiveSync's options) may be left out before the callbacks.
const optional = {};
for (const fn of ROWS.filter((row) => !RUN_METHODS.includes(row.name))) {
  simpleOps[fn.name] = [async (c, ...args) => answerOf(fn, await invoke(MOBILESYNC, fn.action, fieldsOf(fn, args), c)), fn.args.length];
  optional[fn.name] = (face) => withOptionalArgs(fn, face);
}
Object.assign(simpleOps, {
  /** Node's stand-in for the OAuth plugin: {instanceUrl, accessToken, refreshToken?, ...}. */
  setRemote: [async (c, remote) => { pluginFor().setRemote(c, remote); }, 1],
  hasSyncWithName: [async (c, name) => (await simpleOps.getSyncStatus[0](c, String(name))) !== null, 1],
  /** Stops the runs of the current root directory's stores (the dispatcher closes its stores;
   *  the next call opens them again). */
  stopSyncs: [async () => { await pluginFor().free(); }, 0],
  /** A custom target type written in JS (see Store#registerTarget). */
  registerTarget: [async (c, type, impl) => { (await extraStore(c)).registerTarget(type, impl); }, 2],
});

for (const [name, [impl, arity]] of Object.entries(simpleOps)) {
  const [callbackFace] = operation(name, impl, arity);
  MobileSync.prototype[name] = optional[name] ? optional[name](callbackFace) : callbackFace;
}

/** Promise twins: start calls resolve with the state at start (DONE in React Native mode). */
function makeClient(ms) {
  const client = { MERGE_MODE };
  for (const [name, [impl, arity]] of Object.entries(simpleOps)) {
    const promiseFace = operation(name, impl, arity)[1];
    client[name] = optional[name] ? optional[name](promiseFace) : promiseFace;
  }
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
