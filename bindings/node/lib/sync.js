'use strict';
// Sync runs and custom targets over the addon. A run's states arrive from the engine's worker
// thread through a thread-safe function; this file only orders them for JS listeners.
const { EventEmitter } = require('node:events');
const { addon, STATUS, syncStoreError } = require('./native');

// The statuses a run ends with (DONE, FAILED, STOPPED): the library's (lib/api.js).
const { TERMINAL } = require('./api');

function stateError(state) {
  const error = syncStoreError(state.errorCode || STATUS.INTERNAL, state.error || `sync ${state.status}`, state.errorRetryable === true);
  error.state = state;
  return error;
}

/**
 * One run of a sync (sync down / up, reSync, cleanResyncGhosts). Events: 'start' (first state,
 * once the run is accepted), 'progress' (every state, in order), 'end' (terminal state),
 * 'error' (a refused start) only if someone listens. `.done` resolves with the DONE state,
 * rejects on FAILED or STOPPED. The process stays alive for a run only while someone waits:
 * a 'start' listener until the first state, `.done` / keepAlive() until the end.
 */
class SyncRun extends EventEmitter {
  #ctx; #started = false; #buffer = []; #final = null; #startError = null; #id = null;
  #donePromise = null; #doneSettle = null; #startedPromise = null; #startedSettle = null;
  #multi; #wantRef = false; #startRef = false;

  /** start(onState) returns (or resolves to) the addon's [ctx, Promise<syncId>]. */
  constructor(start, { multiple = false } = {}) {
    super();
    this.#multi = multiple; // restartSyncs: several runs report through one callback
    Promise.resolve().then(() => start((text) => this.#onState(text))).then(([ctx, promise]) => {
      this.#ctx = ctx;
      // Someone waits for the first state (a 'start' listener, e.g. the Cordova success
      // callback) or for the end: hold the process until then.
      this.#startRef = !this.#multi && this.listenerCount('start') > 0;
      if (this.#wantRef || this.#startRef) addon.refSync(ctx, true);
      return promise;
    }).then((id) => {
      this.#id = id;
      this.#started = true;
      const buffered = this.#buffer;
      this.#buffer = null;
      if (buffered.length) this.#emitStart(buffered[0]);
      for (const state of buffered) this.#deliver(state);
      this.#startedSettle?.resolve(id);
    }, (error) => {
      this.#startError = error; // bad arguments and engine refusals fail the run alike
      this.#startedSettle?.reject(error);
      this.#settleDone();
      if (this.listenerCount('error')) this.#safeEmit('error', error);
    });
  }

  /** The sync id, once the run is accepted (null before). */
  get id() { return this.#id; }

  /** Resolves with the sync id when the engine accepted the run. */
  get started() {
    if (!this.#startedPromise) {
      this.#startedPromise = new Promise((resolve, reject) => { this.#startedSettle = { resolve, reject }; });
      if (this.#started) this.#startedSettle.resolve(this.#id);
      else if (this.#startError) this.#startedSettle.reject(this.#startError);
    }
    return this.#startedPromise;
  }

  /** Resolves with the final DONE state; rejects (error.state) on FAILED / STOPPED. */
  get done() {
    if (!this.#donePromise) {
      this.#donePromise = new Promise((resolve, reject) => { this.#doneSettle = { resolve, reject }; });
      this.keepAlive();
      this.#settleDone();
    }
    return this.#donePromise;
  }

  /** Keeps the process alive until the run ends (a run alone does not: at exit the store
   *  closes, which stops the run). */
  keepAlive() {
    if (this.#wantRef || this.#final || this.#startError || this.#multi) return this;
    this.#wantRef = true;
    if (this.#ctx) addon.refSync(this.#ctx, true);
    return this;
  }

  #onState(text) {
    const state = JSON.parse(text);
    if (!this.#started) this.#buffer.push(state);
    else {
      if (this.#firstPending) this.#emitStart(state);
      this.#deliver(state);
    }
  }

  #firstPending = true;
  #emitStart(state) {
    if (!this.#firstPending) return;
    this.#firstPending = false;
    if (this.#startRef && !this.#wantRef) addon.refSync(this.#ctx, false); // nobody waits for the end
    this.#safeEmit('start', state);
  }

  #deliver(state) {
    // Bookkeeping first: a throwing listener must not leave the run unsettled.
    const terminal = TERMINAL.has(state.status) && !this.#multi;
    if (terminal) {
      this.#final = state;
      addon.releaseSync(this.#ctx); // the engine calls this run no more
    }
    this.#safeEmit('progress', state);
    if (terminal) {
      this.#settleDone();
      this.#safeEmit('end', state);
    }
  }

  // A listener's exception becomes an ordinary uncaught exception, as with any emitter.
  #safeEmit(name, value) {
    try {
      this.emit(name, value);
    } catch (error) {
      queueMicrotask(() => { throw error; });
    }
  }

  #settleDone() {
    if (!this.#doneSettle) return;
    if (this.#startError) this.#doneSettle.reject(this.#startError);
    else if (this.#final) {
      if (this.#final.status === 'DONE') this.#doneSettle.resolve(this.#final);
      else this.#doneSettle.reject(stateError(this.#final));
    } else return;
    this.#doneSettle = null;
  }
}

// ---- custom targets ----

function errorStatus(error) {
  if (error && Number.isInteger(error.status) && error.status > 0 && error.status <= STATUS.STATE) return error.status;
  if (error && typeof error.code === 'string') {
    const name = error.code.replace(/^SYNCSTORE_ERR_/, '');
    if (STATUS[name] > 0) return STATUS[name];
  }
  return STATUS.SERVER; // the backend failed: recorded on the entry (sync up) or fails the run
}

/**
 * Registers a target type implemented in JS: impl.fetchPage(target, sinceMs, continuation) ->
 * {records, totalSize?, next?}; impl.remoteIds(target) -> [ids]; impl.pushRecord(target,
 * action, record) -> {id} for a create. Methods may be async; the engine's worker thread waits.
 */
function registerTarget(store, type, impl) {
  if (!impl || typeof impl !== 'object') throw syncStoreError(STATUS.ARGUMENT, 'a custom target must be an object with fetchPage / remoteIds / pushRecord');
  const dispatch = (id, kind, targetJson, since, b, c) => {
    Promise.resolve().then(() => {
      const method = impl[kind];
      if (typeof method !== 'function') throw syncStoreError(STATUS.ARGUMENT, `the custom target "${type}" has no ${kind}()`);
      const target = JSON.parse(targetJson);
      if (kind === 'fetchPage') return method.call(impl, target, since, b);
      if (kind === 'remoteIds') return method.call(impl, target);
      return method.call(impl, target, b, JSON.parse(c));
    }).then((result) => {
      addon.resolveTarget(id, 0, result === undefined || result === null ? (kind === 'pushRecord' ? '{}' : 'null') : JSON.stringify(result));
    }, (error) => {
      addon.resolveTarget(id, errorStatus(error), String(error && error.message ? error.message : error));
    });
  };
  addon.registerTarget(store._handle(), type, dispatch);
}

module.exports = { SyncRun, registerTarget, TERMINAL };
