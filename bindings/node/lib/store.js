'use strict';
// The modern, promise-first face: one open store handle per Store object.
const path = require('node:path');
const { addon, OP, SYNC_OP, STATUS, syncStoreError, json, call, callJson } = require('./native');
const { getRoot } = require('./root');
const { Cursor } = require('./cursor');
const { SyncRun, registerTarget } = require('./sync');
const { Watches, watchOptions } = require('./watch');
const { LiveSync, liveOptions } = require('./live');

/** {storeName, isGlobalStore} from a storeConfig (object, bare boolean, or absent). A key in it
 *  is not copied: see openConfigJson. */
function normalizeConfig(config) {
  if (config === undefined || config === null) return { isGlobalStore: false };
  if (typeof config === 'boolean') return { isGlobalStore: config };
  if (typeof config !== 'object') throw syncStoreError(STATUS.ARGUMENT, 'storeConfig must be an object, a boolean or absent');
  const out = { isGlobalStore: Boolean(config.isGlobalStore) };
  if (config.storeName !== undefined && config.storeName !== null) out.storeName = config.storeName;
  return out;
}

/** The storeConfig JSON syncstore_open gets: the name plus `key` and `kdfIter` when given. The
 *  engine checks them (ARGUMENT, AUTH); the key lives only in this text, which the addon wipes
 *  after the call. */
function openConfigJson(config, options) {
  if (!options || typeof options !== 'object') return JSON.stringify(config);
  const withKey = { ...config };
  if (options.key !== undefined) withKey.key = options.key;
  if (options.kdfIter !== undefined) withKey.kdfIter = options.kdfIter;
  return JSON.stringify(withKey);
}

function isQuerySpec(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

class Store {
  #handle;
  #watches = new Watches(this);
  #lives = new Set(); // the LiveSyncs started through this handle, until they stop

  constructor(handle, config, root) {
    this.#handle = handle;
    this.storeName = config.storeName ?? 'smartstore';
    this.isGlobalStore = config.isGlobalStore;
    this.root = root;
  }

  /** The addon handle, closed or not (internal). */
  _rawHandle() { return this.#handle; }

  /** The addon handle (internal). */
  _handle() {
    if (this.closed) throw syncStoreError(STATUS.STATE, 'the store is closed');
    return this.#handle;
  }

  #call(op, ...args) {
    let handle;
    try { handle = this._handle(); } catch (error) { return Promise.reject(error); }
    return call(op, handle, ...args);
  }

  async #json(op, ...args) {
    const text = await this.#call(op, ...args);
    return typeof text === 'string' ? JSON.parse(text) : text; // undefined: result not wanted
  }

  /** Whether the store is closed: the addon's record says (a close marks it when it is made). */
  get closed() { return addon.storeClosed(this.#handle); }

  /** Closes the handle: stops the syncs and the live sync it started and waits for their last
   *  state (a LiveSync's "stopped" event is emitted before this resolves). */
  async close() {
    if (this.closed) return;
    try {
      await call(OP.CLOSE, this.#handle);
    } finally {
      this.#watches.closed();
    }
    await Promise.all([...this.#lives].map((live) => live._ended()));
  }

  // ---- soups ----
  async registerSoup(soup, indexSpecs) { return this.#call(OP.REGISTER_SOUP, soup, json(indexSpecs)); }
  async soupExists(soup) { return this.#call(OP.SOUP_EXISTS, soup); }
  async removeSoup(soup) { return this.#call(OP.REMOVE_SOUP, soup); }
  async clearSoup(soup) { return this.#call(OP.CLEAR_SOUP, soup); }
  async getSoupIndexSpecs(soup) { return this.#json(OP.GET_INDEX_SPECS, soup); }
  async alterSoup(soup, indexSpecs, reIndexData) { return this.#call(OP.ALTER_SOUP, soup, json(indexSpecs), null, null, reIndexData ? 1 : 0); }
  async reIndexSoup(soup, paths) { return this.#call(OP.REINDEX_SOUP, soup, json(paths)); }
  /** Registers the soups of a userstore.json / globalstore.json file. */
  async loadStoreConfig(file) { return this.#call(OP.LOAD_STORE_CONFIG, path.resolve(file)); }

  // ---- entries ----
  /** Upserts entries (array or one object); returns the stored entries (with ids) unless
   *  {returnEntries: false}. externalIdPath: the path to match on (default _soupEntryId). */
  async upsert(soup, entries, { externalIdPath = null, returnEntries = true } = {}) {
    return this.#json(OP.UPSERT, soup, json(entries), externalIdPath, null, returnEntries ? 1 : 0);
  }
  async retrieve(soup, ids) { return this.#json(OP.RETRIEVE, soup, json(ids)); }
  /** Removes by ids (array) or by query spec (every match); resolves with the count for a spec. */
  async remove(soup, idsOrQuerySpec) {
    if (isQuerySpec(idsOrQuerySpec)) return this.#call(OP.REMOVE_BY_QUERY, soup, json(idsOrQuerySpec));
    return this.#call(OP.REMOVE_ENTRIES, soup, json(idsOrQuerySpec));
  }

  // ---- queries ----
  async query(soup, querySpec) { return new Cursor(this, await this.#json(OP.QUERY_SOUP, soup, json(querySpec))); }
  /** Smart SQL: a spec ({queryType:'smart', smartSql, pageSize}) or the SQL text. */
  async smartQuery(specOrSql, pageSize = 10) {
    const spec = typeof specOrSql === 'string' ? { queryType: 'smart', smartSql: specOrSql, pageSize } : specOrSql;
    return new Cursor(this, await this.#json(OP.SMART_QUERY, json(spec)));
  }
  /** One page of a query (smart specs too) as an array, without a cursor or a count: the
   *  fastest way to look entries up. pageIndex counts from 0; past the last page: []. */
  async find(soup, querySpec, pageIndex = 0) {
    return JSON.parse(await this.#call(OP.QUERY_PAGE, soup, json(querySpec), null, null, pageIndex));
  }
  /** find, answered on the JS thread: no thread handoff and no promise, but the event loop
   *  waits for the query. For lookups by an indexed path (microseconds); a query that reads
   *  many rows belongs in find. Throws what find rejects with. */
  findSync(soup, querySpec, pageIndex = 0) {
    // The addon checks the handle's closed state itself: no second call for it here.
    return JSON.parse(addon.queryPageSync(this.#handle, soup, json(querySpec), pageIndex));
  }
  /** Async iteration over a query's pages (arrays of entries); the cursor closes at the end. */
  async *pages(soup, querySpec) {
    const cursor = querySpec && querySpec.queryType === 'smart' ? await this.smartQuery(querySpec) : await this.query(soup, querySpec);
    yield* cursor;
  }
  async moveCursorToPage(cursorId, pageIndex) { return this.#json(OP.MOVE_CURSOR, null, null, null, null, cursorId, pageIndex); }
  async closeCursor(cursorId) { return this.#call(OP.CLOSE_CURSOR, null, null, null, null, cursorId); }
  async size() { return this.#call(OP.DB_SIZE); }

  // ---- encryption ----
  /** Re-keys the store atomically: a plaintext store becomes encrypted, an encrypted one gets
   *  the new key, null decrypts it (syncstore_change_key). Opens after this need the new key. */
  async changeKey(newKey) {
    if (newKey !== null && newKey !== undefined && typeof newKey !== 'string') {
      throw syncStoreError(STATUS.ARGUMENT, "the new key must be a string (a passphrase or x'<64 hex digits>') or null");
    }
    return this.#call(OP.CHANGE_KEY, newKey ?? null);
  }

  // ---- sync ----
  /** {instanceUrl, accessToken, refreshToken?, clientId?, ...} (see syncstore_set_remote). */
  async setRemote(remote) { return this.#call(OP.SET_REMOTE, json(remote)); }
  async loadSyncConfig(file) { return this.#call(OP.LOAD_SYNC_CONFIG, path.resolve(file)); }
  // args() runs inside the run's start, so bad arguments fail the run instead of throwing.
  #run(op, args, opts) {
    return new SyncRun((onState) => addon.startSync(op, this._handle(), ...args(), onState), opts);
  }
  /** Starts a sync down; returns a SyncRun ('progress' events, .done). */
  syncDown(target, soup, options, syncName) { return this.#run(SYNC_OP.DOWN, () => [json(target), soup, json(options), syncName ?? null, 0]); }
  /** Starts a sync up of the soup's locally changed entries (target may be null). */
  syncUp(target, soup, options, syncName) { return this.#run(SYNC_OP.UP, () => [json(target), soup, json(options), syncName ?? null, 0]); }
  reSync(idOrName) {
    return typeof idOrName === 'string'
      ? this.#run(SYNC_OP.RESYNC_BY_NAME, () => [idOrName, null, null, null, 0])
      : this.#run(SYNC_OP.RESYNC, () => [null, null, null, null, idOrName]);
  }
  /** Removes local records the server no longer has; the run's last state carries `removed`. */
  cleanResyncGhosts(idOrName) {
    if (typeof idOrName !== 'string') return this.#run(SYNC_OP.CLEAN_GHOSTS, () => [null, null, null, null, idOrName]);
    // The C ABI takes an id: a name is looked up first.
    return new SyncRun(async (onState) => {
      const state = await this.getSyncStatus(idOrName);
      if (!state) throw syncStoreError(STATUS.NOT_FOUND, `no sync named "${idOrName}"`);
      return addon.startSync(SYNC_OP.CLEAN_GHOSTS, this._handle(), null, null, null, null, state._soupEntryId, onState);
    });
  }
  restartSyncs(restartStopped = true) { return this.#run(SYNC_OP.RESTART, () => [null, null, null, null, restartStopped ? 1 : 0], { multiple: true }); }
  async createSyncDown(target, soup, options, syncName) { return this.#call(OP.CREATE_SYNC_DOWN, json(target), soup, json(options), syncName ?? null); }
  async createSyncUp(target, soup, options, syncName) { return this.#call(OP.CREATE_SYNC_UP, json(target), soup, json(options), syncName ?? null); }
  /** The sync's state, or null when there is no such sync. */
  async getSyncStatus(idOrName) {
    try {
      return typeof idOrName === 'string'
        ? await this.#json(OP.GET_SYNC_STATUS_BY_NAME, idOrName)
        : await this.#json(OP.GET_SYNC_STATUS, null, null, null, null, idOrName);
    } catch (error) {
      if (error.status === STATUS.NOT_FOUND) return null;
      throw error;
    }
  }
  async hasSyncWithName(name) { return (await this.getSyncStatus(String(name))) !== null; }
  async deleteSync(idOrName) {
    return typeof idOrName === 'string'
      ? this.#call(OP.DELETE_SYNC_BY_NAME, idOrName)
      : this.#call(OP.DELETE_SYNC, null, null, null, null, idOrName);
  }
  async stopSyncs() { return this.#call(OP.STOP_SYNCS); }
  registerTarget(type, impl) { registerTarget(this, type, impl); }

  // ---- live sync (docs/sync.md#live-sync) ----
  /** Starts live sync: the store's syncs run by themselves (catching up at once and after being
   *  offline, a sync up after writes pause for debounceMs, sync downs every pullIntervalMs).
   *  options: {syncs (names; default every named sync), debounceMs, retryMinMs, retryMaxMs,
   *  pullIntervalMs, keepAlive}. Returns a LiveSync ('state' and 'run' events, .state, .stop(),
   *  async iterable); it belongs to this handle, whose close stops it. One per store. */
  startLiveSync(options) {
    let parsed;
    try { parsed = liveOptions(options); } catch (error) { parsed = { error }; }
    const live = new LiveSync(this, (onEvent) => {
      if (parsed.error) throw parsed.error;
      return addon.liveStart(this._handle(), parsed.json, onEvent);
    }, parsed);
    this.#lives.add(live);
    live._ended().then(() => this.#lives.delete(live));
    return live;
  }

  /** The store's live sync state, whoever started it: {event: 'state', state, nextRetryAt?,
   *  error?, syncs}; state 'stopped' when it is off. */
  async liveSyncState() { return this.#json(OP.LIVE_SYNC_STATE); }

  // ---- watches (include/syncstore.h, "Listeners") ----
  /** Watches a query's result: a Watch ('change' with the result and what changed, async
   *  iterable), told at once of the current result, then after each commit that changed it.
   *  watch(querySpec with soupName, options) or watch(soupName, querySpec, options); a Smart SQL
   *  spec needs no soup. options: {minIntervalMs, keepAlive}. */
  watch(soupOrSpec, specOrOptions, maybeOptions) {
    let spec, options;
    if (typeof soupOrSpec === 'string') {
      spec = isQuerySpec(specOrOptions) ? { ...specOrOptions, soupName: soupOrSpec } : specOrOptions;
      options = maybeOptions;
    } else {
      spec = soupOrSpec;
      options = specOrOptions;
    }
    if (!isQuerySpec(spec)) throw syncStoreError(STATUS.ARGUMENT, 'watch needs a query spec: watch(querySpec, options) or watch(soupName, querySpec, options)');
    return this.#watches.add(1, json(spec), watchOptions(options));
  }

  /** Watches the commits that touch a soup (null: every soup): a Watch whose 'change' events
   *  carry each commit's notice. options: {minIntervalMs, keepAlive}. */
  watchSoup(soup, options) {
    if (soup !== null && soup !== undefined && typeof soup !== 'string') throw syncStoreError(STATUS.ARGUMENT, 'watchSoup takes a soup name or null (every soup)');
    return this.#watches.add(0, soup ?? null, watchOptions(options));
  }

  _watchRef(delta) { this.#watches.ref(delta); }
  _watchGone(watch) { this.#watches.gone(watch); }
}

/** Opens (creating if needed) a store: {storeName?, isGlobalStore?, root?, key?, kdfIter?}.
 *  The key goes to the engine only; the Store keeps no copy of it. */
async function openStore(options = {}) {
  const config = normalizeConfig(options);
  const root = options && typeof options === 'object' && options.root ? path.resolve(options.root) : getRoot();
  const handle = await call(OP.OPEN, null, root, openConfigJson(config, options));
  return new Store(handle, config, root);
}

async function listStores({ isGlobalStore = false, root } = {}) {
  return callJson(OP.LIST_STORES, null, root ? path.resolve(root) : getRoot(), null, null, null, isGlobalStore ? 1 : 0);
}

async function removeStore(options = {}) {
  const config = normalizeConfig(options);
  const root = options && typeof options === 'object' && options.root ? path.resolve(options.root) : getRoot();
  return call(OP.REMOVE_STORE, null, root, JSON.stringify(config));
}

async function removeAllStores({ isGlobalStore = false, root } = {}) {
  return call(OP.REMOVE_ALL_STORES, null, root ? path.resolve(root) : getRoot(), null, null, null, isGlobalStore ? 1 : 0);
}

module.exports = { Store, openStore, listStores, removeStore, removeAllStores, normalizeConfig };
