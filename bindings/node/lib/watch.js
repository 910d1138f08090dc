'use strict';
// Store watches: Store#watch (a query's result) and Store#watchSoup (a soup's commits) over the
// library's listeners (include/syncstore.h, "Listeners"). The addon (src/watch.c) brings each
// notice to the JS thread; this file turns it into 'change' events and async iteration.
const { EventEmitter } = require('node:events');
const { eventIterator } = require('./iterator');
const { addon, STATUS, syncStoreError } = require('./native');

const MAX_INTERVAL_MS = 3600000; // syncstore_set_listener_interval's limit

/** {minIntervalMs, keepAlive} as given, checked here so a bad option fails at once. */
function watchOptions(options) {
  if (options === undefined || options === null) return { minIntervalMs: 0, keepAlive: false };
  if (typeof options !== 'object') throw syncStoreError(STATUS.ARGUMENT, 'watch options must be an object {minIntervalMs?, keepAlive?}');
  const { minIntervalMs = 0, keepAlive = false } = options;
  if (!Number.isInteger(minIntervalMs) || minIntervalMs < 0 || minIntervalMs > MAX_INTERVAL_MS) {
    throw syncStoreError(STATUS.ARGUMENT, `minIntervalMs must be an integer from 0 to ${MAX_INTERVAL_MS}`);
  }
  return { minIntervalMs, keepAlive: Boolean(keepAlive) };
}

/**
 * One listener of a store. Emits 'change' (the notice, parsed), 'error' (the listener could not
 * be added: bad spec, unknown soup, closed store) and 'close' (once: closed by close(), by the
 * store's close, or after an error). Async iterable: each iteration yields the next notice and
 * ends when the watch closes (breaking out of the loop closes the watch).
 *
 * No notice is told before `ready` settles, and the first ones come on a later turn of the
 * event loop; until the watch has a consumer (a 'change' listener or an iteration) its notices
 * are kept for the first one. So `await watch.ready`, or other work, then iterating misses none.
 * Once it has had one, a notice goes to the 'change' listeners and iterations of its moment.
 *
 * The process stays alive for a watch only while someone waits for its next notice (an
 * iteration's pending next(), as in a `for await` loop) or while it is ref'd (keepAlive, ref()).
 * 'change' listeners alone do not hold it: at exit the store closes and the watch with it.
 */
class Watch extends EventEmitter {
  #store; #id = null;
  #added = false; #error = null; #closed = false; #removal = null;
  #readyPromise = null; #readySettle = null; #readyAsked = false;
  #held = []; #holding = true; #turned = false;
  #iterators = new Set();
  #refd = false; #awaiting = 0; #counted = false;

  /** add(watch) is called at once: it asks the addon for the listener and returns [id, Promise]. */
  constructor(store, add, options) {
    super();
    this.#store = store;
    let added;
    try {
      const [id, promise] = add(this);
      this.#id = id;
      added = promise;
    } catch (error) {
      added = Promise.reject(error);
    }
    if (options.keepAlive) this.ref();
    // A 'change' listener added now is a consumer: held notices go to it (on a later turn, so
    // every listener added in the same turn hears them).
    this.on('newListener', (event) => { if (event === 'change') queueMicrotask(() => this.#maybeRelease()); });
    added.then(() => {
      this.#added = true;
      this.#readySettle?.resolve(this);
      // Held notices go on a later turn: code awaiting `ready` runs (and starts iterating) first.
      setImmediate(() => { this.#turned = true; this.#maybeRelease(); });
    }, (error) => this.#fail(error));
  }

  /** The listener's number in its store (null when it could not even be asked for). */
  get id() { return this.#id; }

  /** Whether the watch is closed (close(), the store's close, or a failed add). */
  get closed() { return this.#closed; }

  /** Resolves with the watch once its listener is added (commits after that are heard); rejects
   *  when it cannot be (the error 'error' carries). */
  get ready() {
    this.#readyAsked = true;
    if (!this.#readyPromise) {
      this.#readyPromise = new Promise((resolve, reject) => { this.#readySettle = { resolve, reject }; });
      if (this.#error) this.#readySettle.reject(this.#error);
      else if (this.#added) this.#readySettle.resolve(this);
    }
    return this.#readyPromise;
  }

  /** Removes the listener; resolves when no notice of it will come. Iterators end, 'close' is
   *  emitted. Closing again (or a closed store's watch) resolves at once. */
  close() {
    if (!this.#removal) {
      this.#end(null);
      const store = this.#store;
      this.#removal = this.#id === null || store.closed ? Promise.resolve() : addon.watchRemove(store._rawHandle(), this.#id).catch(() => {});
    }
    return this.#removal;
  }

  /** Keeps the process alive while the watch is open (as `keepAlive: true`); returns this. */
  ref() {
    this.#refd = true;
    this.#syncRef();
    return this;
  }

  /** The watch keeps the process alive only while an iteration waits for a notice (the
   *  default); returns this. */
  unref() {
    this.#refd = false;
    this.#syncRef();
    return this;
  }

  hasRef() { return this.#refd && !this.#closed; }

  // The process stays alive while the watch is ref'd or an iteration awaits its next notice.
  #syncRef() {
    const want = !this.#closed && (this.#refd || this.#awaiting > 0);
    if (want === this.#counted) return;
    this.#counted = want;
    this.#store._watchRef(want ? 1 : -1);
  }

  #await(delta) {
    this.#awaiting += delta;
    this.#syncRef();
  }

  [Symbol.asyncIterator]() {
    const it = eventIterator({ iterators: this.#iterators, await: (d) => this.#await(d), onReturn: () => this.close() });
    if (this.#closed) it.finish(this.#error);
    else {
      this.#iterators.add(it);
      this.#maybeRelease(); // the notices kept for the first consumer go to its queue
    }
    return it;
  }

  /** A notice's text from the store's dispatcher. */
  _notice(text) {
    if (this.#closed) return;
    let notice;
    try { notice = JSON.parse(text); } catch { return; }
    if (this.#holding) this.#held.push(notice);
    else this.#tell(notice);
  }

  /** The store closed: no more notices. */
  _storeClosed() { this.#end(null); }

  /** Held notices go out once the add's turn has passed and someone consumes them. */
  #maybeRelease() {
    if (!this.#holding || !this.#turned || this.#closed) return;
    if (this.#iterators.size === 0 && this.listenerCount('change') === 0) return;
    this.#holding = false;
    const held = this.#held;
    this.#held = [];
    for (const notice of held) this.#tell(notice);
  }

  #tell(notice) {
    if (this.#closed) return;
    for (const it of this.#iterators) it.push(notice);
    this.#safeEmit('change', notice);
  }

  #fail(error) {
    if (this.#closed) return;
    this.#error = error;
    this.#readySettle?.reject(error);
    // An error nobody handles is thrown, as an EventEmitter's 'error' is.
    const handled = this.listenerCount('error') > 0 || this.#iterators.size > 0 || this.#readyAsked;
    if (this.listenerCount('error') > 0) this.#safeEmit('error', error);
    else if (!handled) process.nextTick(() => this.emit('error', error));
    this.#end(error);
  }

  #end(error) {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = [];
    this.#store._watchGone(this);
    for (const it of [...this.#iterators]) it.finish(error);
    this.#syncRef();
    this.#safeEmit('close');
  }

  // A listener's exception becomes an ordinary uncaught exception, as with any emitter.
  #safeEmit(name, ...values) {
    try {
      this.emit(name, ...values);
    } catch (error) {
      queueMicrotask(() => { throw error; });
    }
  }
}

/**
 * A Store's watches: one dispatcher for the addon, the watches by id, and how many keep the
 * process alive.
 */
class Watches {
  #store; #byId = new Map(); #refs = 0;
  constructor(store) { this.#store = store; }

  #dispatch = (id, text) => { this.#byId.get(id)?._notice(text); };

  /** kind 0: soup (text: its name or null); 1: a query (text: the spec JSON). */
  add(kind, text, options) {
    const store = this.#store;
    return new Watch(store, (watch) => {
      const handle = store._handle(); // STATE for a closed store: the watch fails
      const pair = addon.watchAdd(handle, kind, text, options.minIntervalMs, this.#dispatch);
      this.#byId.set(pair[0], watch);
      return pair;
    }, options);
  }

  ref(delta) {
    const before = this.#refs;
    this.#refs += delta;
    if ((before === 0) !== (this.#refs === 0) && !this.#store.closed) addon.watchRef(this.#store._rawHandle(), this.#refs > 0);
  }

  gone(watch) { if (watch.id !== null && this.#byId.get(watch.id) === watch) this.#byId.delete(watch.id); }

  /** The store closed: every watch ends. */
  closed() { for (const watch of [...this.#byId.values()]) watch._storeClosed(); }
}

module.exports = { Watch, Watches, watchOptions };
