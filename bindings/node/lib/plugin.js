'use strict';
// The hybrid plugins' dispatcher (include/syncstore.h, "The hybrid plugins"; src/plugin.c): every
// Cordova / React Native call of this package goes through Plugin#exec, which forwards the
// service, action and args array to syncstore_plugin_exec and settles with its answer. The rules
// (store resolution, answers, error strings, events) are the library's; this file only carries
// calls, keys and events between JS and the library.
const { EventEmitter } = require('node:events');
const path = require('node:path');
const { addon, STATUS, syncStoreError } = require('./native');
const { SERVICES, TERMINAL } = require('./api');

// From the library's table (lib/api.js): the services, the actions that start runs, those that
// open no store (no key is looked up for them: a locked store can still be removed) and those
// that delete stores.
const SMARTSTORE = SERVICES.smartstore.service;
const MOBILESYNC = SERVICES.mobilesync.service;
const actionsOf = (service, test) => new Set([...service.functions.values()].filter(test).map((fn) => fn.action));
const RUNS = actionsOf(SERVICES.mobilesync, (fn) => fn.run);
const NO_STORE = new Set([...SERVICES.smartstore.noStore, ...SERVICES.mobilesync.noStore]);
const REMOVES = actionsOf(SERVICES.smartstore, (fn) => fn.removes);

/** {storeName, isGlobalStore} of a call: the args object's, after the optional version string. */
function slotOf(args) {
  const fields = Array.isArray(args) ? args.find((a) => a !== null && typeof a === 'object') : args;
  const f = fields && typeof fields === 'object' ? fields : {};
  return { storeName: typeof f.storeName === 'string' ? f.storeName : 'smartstore', isGlobalStore: f.isGlobalStore === true };
}

const slotKey = (slot) => `${slot.isGlobalStore ? 'G' : 'U'}:${slot.storeName}`;

/** A key provider's answer as {key, kdfIter}; its value never goes into a message. */
function keyOf(given) {
  if (given === null || given === undefined) return { key: null, kdfIter: 0 };
  if (typeof given === 'string') return { key: given, kdfIter: 0 };
  if (typeof given === 'object' && !Array.isArray(given) && (given.key === undefined || given.key === null || typeof given.key === 'string')) {
    return { key: given.key ?? null, kdfIter: given.kdfIter ?? 0 };
  }
  throw syncStoreError(STATUS.ARGUMENT, 'the encryption key provider must return a string, {key, kdfIter}, null or undefined');
}

/**
 * One dispatcher: its stores live under `root`; `remote` is the default remote of every store
 * (the logged-in user's credentials). Emits 'event' (name, detail) for the library's document
 * events ("sync" with the state, isGlobalStore and storeName as detail; "smartstoreChanged" with
 * a store listener's notice, listenerId, isGlobalStore and storeName).
 *
 * Keys: the library asks for a store's key on the thread that runs the call, where JS cannot
 * answer. So exec() first resolves, with the JS key provider (which may be async), the key of the
 * store the call names, once per store (again after a failure, a removal or a new provider),
 * and passes it with the call; the addon's C provider hands it to the library.
 *
 * The plugin keeps the process alive while an answer is awaited, and while a run started through
 * exec is in flight (its answer said RUNNING and no terminal "sync" event came yet) if someone
 * waits for it (runToEnd, or the owner's waiting()).
 */
class Plugin extends EventEmitter {
  #handle; #freed = null;
  #keyProvider = null; #keys = new Map();
  #inFlight = new Set(); #lastEnd = new Map(); #events = 0;
  #queue = Promise.resolve();

  #waiting; #waiters = 0;

  /** waiting(): whether someone waits for the end of runs (e.g. 'sync' listeners); a run alone
   *  does not keep the process alive (at exit the stores close, which stops it). */
  constructor({ root, remote = null, waiting = () => false } = {}) {
    super();
    this.#waiting = waiting;
    if (typeof root !== 'string' || root === '') throw new TypeError('the plugin root directory must be a non-empty string');
    this.root = path.resolve(root);
    const options = remote ? JSON.stringify({ remote }) : null;
    this.#handle = addon.pluginNew(this.root, options, (name, text) => this.#onEvent(name, text));
  }

  get freed() { return this.#freed !== null; }

  /** Runs one action: resolves with {status, value, hasValue} (status 0: success; else value is
   *  the error message). Never rejects for the action's own failures. Calls run in the order
   *  they are made (a registerSoup then an upsert sent without waiting work as in a WebView);
   *  the arguments are read at once, so the caller may change them afterwards. */
  exec(service, action, args) {
    let text;
    try {
      text = JSON.stringify(args === undefined ? [] : args);
    } catch (error) {
      return Promise.resolve({ status: STATUS.ARGUMENT, value: `${action}'s arguments cannot be converted to JSON: ${error.message}`, hasValue: true });
    }
    let returned;
    const next = new Promise((resolve) => { returned = resolve; });
    const run = this.#queue.then(() => this.#run(service, action, text, slotOf(args), returned));
    this.#queue = next;
    run.then(returned, returned);
    return run;
  }

  /** returned() lets the next call run: when the exec returned, maybe before its answer. */
  async #run(service, action, text, slot, returned) {
    let key = { key: null, kdfIter: 0 };
    if (this.#keyProvider && !NO_STORE.has(action)) {
      try {
        key = await this.#keyFor(slot);
      } catch (error) {
        const status = Number.isInteger(error && error.status) ? error.status : STATUS.AUTH;
        return { status, value: error && error.message !== undefined ? error.message : String(error), hasValue: true };
      }
    }
    const mark = this.#events;
    let status, answer;
    try {
      [status, answer] = await addon.pluginExec(this.#handle, service, action, text, key.key, key.kdfIter);
      if (status === -1) {
        returned();
        [status, answer] = await answer;
      }
    } catch (error) {
      return { status: error.status || STATUS.INTERNAL, value: error.message, hasValue: true };
    }
    const value = answer === null ? undefined : JSON.parse(answer);
    if (status === 0 && service === MOBILESYNC && RUNS.has(action)) this.#started(slot, value, mark);
    if (service === SMARTSTORE && REMOVES.has(action)) this.#keys.clear();
    if (status === STATUS.AUTH) this.#keys.delete(slotKey(slot));
    return { status, value, hasValue: answer !== null };
  }

  /** Starts a run (syncDown, syncUp, reSync) and resolves with {status, value}: 0 and the DONE
   *  state, or the refusal's status and message, or the FAILED / STOPPED state (status of its
   *  errorCode): the React Native bridges' contract. */
  runToEnd(action, args) {
    const slot = slotOf(args);
    return new Promise((resolve) => {
      const seen = [];
      let id = null;
      const ended = (detail) => {
        if (id === null || detail._soupEntryId !== id || slotKey(detail) !== slotKey(slot) || !TERMINAL.has(detail.status)) return false;
        this.off('event', onEvent);
        this.#waiters -= 1;
        this.#keepAlive();
        resolve(detail.status === 'DONE' ? { status: 0, value: detail } : { status: detail.errorCode || STATUS.INTERNAL, value: detail });
        return true;
      };
      const onEvent = (name, detail) => {
        if (name !== 'sync' || !detail || typeof detail !== 'object') return;
        seen.push(detail);
        ended(detail);
      };
      this.on('event', onEvent);
      this.#waiters += 1;
      this.exec(MOBILESYNC, action, args).then(({ status, value }) => {
        if (status !== 0) {
          this.off('event', onEvent);
          this.#waiters -= 1;
          resolve({ status, value });
          return;
        }
        this.#keepAlive();
        id = value._soupEntryId;
        if (!seen.some(ended) && TERMINAL.has(value.status)) ended({ ...value, ...slot });
      });
    });
  }

  /** The remote of one store ({storeName, isGlobalStore}), or with null the default of all. */
  setRemote(storeConfig, remote) {
    if (remote === null || typeof remote !== 'object') throw syncStoreError(STATUS.ARGUMENT, 'the remote must be an object {instanceUrl, accessToken, ...}');
    const store = storeConfig ? JSON.stringify(slotOf(storeConfig)) : null;
    addon.pluginSetRemote(this.#handle, store, JSON.stringify(remote));
  }

  /** fn({storeName, isGlobalStore, root}) -> key string, {key, kdfIter}, or null for a
   *  plaintext store; may return a promise. null removes it. Applies to stores opened after. */
  setKeyProvider(fn) {
    if (fn !== null && fn !== undefined && typeof fn !== 'function') throw new TypeError('the encryption key provider must be a function or null');
    this.#keyProvider = fn || null;
    this.#keys.clear();
    addon.pluginSetKeyProvider(this.#handle, Boolean(fn));
  }

  /** Closes the plugin's stores (their runs stop) and frees it. */
  free() {
    if (!this.#freed) {
      this.#freed = addon.pluginFree(this.#handle).finally(() => {
        this.#inFlight.clear();
        this.#keys.clear();
      });
    }
    return this.#freed;
  }

  #keyFor(slot) {
    const k = slotKey(slot);
    let promise = this.#keys.get(k);
    if (!promise) {
      const provider = this.#keyProvider;
      promise = Promise.resolve().then(() => provider({ ...slot, root: this.root })).then(keyOf);
      this.#keys.set(k, promise);
      promise.catch(() => { if (this.#keys.get(k) === promise) this.#keys.delete(k); });
    }
    return promise;
  }

  #onEvent(name, text) {
    let detail;
    try { detail = JSON.parse(text); } catch { detail = text; }
    this.#events += 1;
    if (name === 'sync' && detail && typeof detail === 'object' && detail._soupEntryId !== undefined) {
      const k = `${slotKey(detail)}#${detail._soupEntryId}`;
      if (TERMINAL.has(detail.status)) {
        this.#inFlight.delete(k);
        this.#lastEnd.delete(k);
        this.#lastEnd.set(k, this.#events);
        if (this.#lastEnd.size > 1000) this.#lastEnd.delete(this.#lastEnd.keys().next().value);
      } else {
        this.#inFlight.add(k);
      }
      this.#keepAlive();
    }
    this.emit('event', name, detail);
  }

  /** A run answered: in flight unless its end already came (events and answers travel apart). */
  #started(slot, state, mark) {
    if (!state || typeof state !== 'object' || state._soupEntryId === undefined || TERMINAL.has(state.status)) return;
    const k = `${slotKey(slot)}#${state._soupEntryId}`;
    if ((this.#lastEnd.get(k) ?? -1) > mark) return;
    this.#inFlight.add(k);
    this.#keepAlive();
  }

  /** Re-reads waiting() (call it when listeners come or go). */
  updateKeepAlive() { this.#keepAlive(); }

  #keepAlive() {
    if (!this.#freed) addon.pluginKeepAlive(this.#handle, this.#inFlight.size > 0 && (this.#waiters > 0 || Boolean(this.#waiting())));
  }
}

module.exports = { Plugin, SMARTSTORE, MOBILESYNC, slotOf };
