'use strict';
// Live sync (docs/sync.md#live-sync; include/syncstore.h, syncstore_start_live_sync): the store's
// syncs run by themselves. Store#startLiveSync makes a LiveSync; the addon (src/live.c) brings
// each of the library's events to the JS thread, this file turns them into 'state' and 'run'
// events, a last known state and async iteration.
const { EventEmitter } = require('node:events');
const { eventIterator } = require('./iterator');
const { addon, OP, STATUS, syncStoreError, call } = require('./native');

const STATES = new Set(['connecting', 'catchingUp', 'live', 'offline', 'stopped']);
/** The options as the library reads them (JSON; the library checks keys and values,
 *  include/syncstore.h, syncstore_start_live_sync), and keepAlive (this package's own). */
function liveOptions(options) {
  if (options === undefined || options === null) return { json: null, keepAlive: false };
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw syncStoreError(STATUS.ARGUMENT, 'live sync options must be an object {syncs?, debounceMs?, retryMinMs?, retryMaxMs?, pullIntervalMs?, changeEvents?, keepAlive?}');
  }
  const engine = {};
  for (const key of Object.keys(options)) {
    if (key !== 'keepAlive' && options[key] !== undefined) engine[key] = options[key];
  }
  return { json: JSON.stringify(engine), keepAlive: Boolean(options.keepAlive) };
}

/**
 * The live sync of a store, started by Store#startLiveSync. Emits 'state' (each state event:
 * {event: 'state', state, nextRetryAt?, error?, syncs}), 'run' (each state of each run it starts,
 * a sync state) and 'error' (the start was refused). `state` is the last known state's name,
 * `lastEvent` its event; async iteration yields the state events, beginning with the last known
 * one, and ends after "stopped".
 *
 * Events come on later turns of the event loop than the call that started it: listeners added
 * in the same turn hear every one. A refused start rejects `started`, ends iterations with the
 * error and is emitted as 'error'; when none of these has a taker it is thrown, as an
 * EventEmitter's unhandled 'error' is.
 *
 * The process stays alive for a live sync only while someone waits: an iteration's pending
 * next(), a stop() in flight, or keepAlive / ref(). Otherwise, when nothing else is pending, the
 * process exits, and the close of its stores at exit stops it.
 */
class LiveSync extends EventEmitter {
  #store; #ctx = null;
  #state = 'connecting'; #last = null; #stopped = false;
  #accepted = false; #startError = null;
  #startedPromise = null; #startedSettle = null; #startedAsked = false;
  #ended; #endedSettle;
  #stopping = null;
  #iterators = new Set();
  #refd = false; #awaiting = 0; #holds = 0; #counted = false;

  /** start(onEvent) is called at once and returns the addon's [ctx, Promise]. */
  constructor(store, start, { keepAlive = false } = {}) {
    super();
    this.#store = store;
    this.#ended = new Promise((resolve) => { this.#endedSettle = resolve; });
    let accepted;
    try {
      const [ctx, promise] = start((text) => this.#onEvent(text));
      this.#ctx = ctx;
      accepted = promise;
    } catch (error) {
      accepted = Promise.reject(error);
    }
    if (keepAlive) this.ref();
    this.#syncRef();
    accepted.then(() => {
      this.#accepted = true;
      this.#startedSettle?.resolve(this);
    }, (error) => this.#fail(error));
  }

  /** The last known state: 'connecting', 'catchingUp', 'live', 'offline' or 'stopped'. */
  get state() { return this.#state; }

  /** The last state event ({event: 'state', state, nextRetryAt?, error?, syncs}), null before the first. */
  get lastEvent() { return this.#last; }

  /** Whether it has stopped (its "stopped" event came, or its start was refused). */
  get stopped() { return this.#stopped; }

  /** Resolves with this LiveSync once the library accepted the start; rejects when it refused
   *  it (ARGUMENT: bad options or no sync to run; NOT_FOUND: a name in `syncs`; STATE: live
   *  sync is on already, or the store is closed). */
  get started() {
    this.#startedAsked = true;
    if (!this.#startedPromise) {
      this.#startedPromise = new Promise((resolve, reject) => { this.#startedSettle = { resolve, reject }; });
      if (this.#startError) this.#startedSettle.reject(this.#startError);
      else if (this.#accepted) this.#startedSettle.resolve(this);
    }
    return this.#startedPromise;
  }

  /** Stops it (syncstore_stop_live_sync): resolves once its "stopped" event was emitted. No run
   *  starts after that; a run in progress ends as any run does. A refused or stopped live sync
   *  resolves at once. */
  stop() {
    if (!this.#stopping) {
      this.#stopping = (async () => {
        try { await this.started; } catch { return; } // refused: nothing runs
        if (this.#stopped) return;
        this.#hold(1); // the "stopped" event must reach JS before the process may exit
        try {
          const store = this.#store;
          if (!store.closed) await call(OP.STOP_LIVE_SYNC, store._rawHandle()).catch(() => {}); // closed meanwhile: the close stops it
          await this.#ended;
        } finally {
          this.#hold(-1);
        }
      })();
    }
    return this.#stopping;
  }

  /** Keeps the process alive until it stops (as keepAlive: true); returns this. */
  ref() {
    this.#refd = true;
    this.#syncRef();
    return this;
  }

  /** Lets the process exit while it runs (the default); returns this. */
  unref() {
    this.#refd = false;
    this.#syncRef();
    return this;
  }

  hasRef() { return this.#refd && !this.#stopped; }

  /** Resolves when it stopped or its start failed (internal: Store#close waits for it). */
  _ended() { return this.#ended; }

  [Symbol.asyncIterator]() {
    const it = eventIterator({ initial: this.#last ? [this.#last] : [], iterators: this.#iterators, await: (d) => this.#await(d) });
    if (this.#stopped) it.finish(this.#startError);
    else this.#iterators.add(it);
    return it;
  }

  #onEvent(text) {
    let event;
    try { event = JSON.parse(text); } catch { return; }
    if (!event || typeof event !== 'object') return;
    if (event.event === 'run') {
      if (event.sync) this.#safeEmit('run', event.sync);
      return;
    }
    if (event.event !== 'state' || this.#stopped || !STATES.has(event.state)) return;
    this.#state = event.state;
    this.#last = event;
    for (const it of this.#iterators) it.push(event);
    this.#safeEmit('state', event);
    if (event.state === 'stopped') this.#end(null);
  }

  #fail(error) {
    this.#startError = error;
    this.#state = 'stopped';
    this.#startedSettle?.reject(error);
    // An error nobody takes is thrown, as an EventEmitter's 'error' is.
    // A start the store's close overtook is no surprise: it only stops.
    const closing = error && error.status === STATUS.STATE && this.#store.closed;
    const taken = this.listenerCount('error') > 0 || this.#iterators.size > 0 || this.#startedAsked || closing;
    if (this.listenerCount('error') > 0) this.#safeEmit('error', error);
    else if (!taken) process.nextTick(() => this.emit('error', error));
    this.#end(error);
  }

  #end(error) {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const it of [...this.#iterators]) it.finish(error);
    this.#syncRef();
    this.#endedSettle();
  }

  #await(delta) {
    this.#awaiting += delta;
    this.#syncRef();
  }

  #hold(delta) {
    this.#holds += delta;
    this.#syncRef();
  }

  // The events keep the process alive while it is ref'd or someone waits for them.
  #syncRef() {
    const want = this.#holds > 0 || (!this.#stopped && (this.#refd || this.#awaiting > 0));
    if (want === this.#counted || !this.#ctx) return;
    this.#counted = want;
    addon.liveRef(this.#ctx, want);
  }

  // A listener's exception becomes an ordinary uncaught exception, as with any emitter.
  #safeEmit(name, value) {
    try {
      this.emit(name, value);
    } catch (error) {
      queueMicrotask(() => { throw error; });
    }
  }
}

module.exports = { LiveSync, liveOptions };
