// Types of the syncstore Node module: the Cordova smartstore / mobilesync faces, their promise
// twins, and the promise-first face (openStore). Self-contained (no @types/node needed).

/** The part of node:events' EventEmitter these classes use (they extend the real one). */
declare class EventEmitter {
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  off(event: string | symbol, listener: (...args: any[]) => void): this;
  emit(event: string | symbol, ...args: any[]): boolean;
  listenerCount(event: string | symbol): number;
}

/** The event addEventListener('sync', ...) listeners get (a CustomEvent). */
export interface SyncEvent { readonly type: 'sync'; readonly detail: SyncEventDetail }
/** The event addEventListener('liveSync', ...) listeners get (a CustomEvent). */
export interface LiveSyncEvent { readonly type: 'liveSync'; readonly detail: LiveSyncEventDetail }

// ---- shapes (docs/README.md#cordova-surface) ----

/** A store name: {storeName?, isGlobalStore?}; a bare boolean means isGlobalStore. */
export interface StoreConfig {
  storeName?: string;
  isGlobalStore?: boolean;
}
export type StoreConfigArg = StoreConfig | boolean | null;

export type IndexType = 'string' | 'integer' | 'floating' | 'full_text' | 'json1';
export declare class SoupIndexSpec {
  constructor(path: string, type: IndexType);
  path: string;
  type: IndexType;
}
export interface IndexSpec { path: string; type: IndexType }

export type QueryType = 'exact' | 'range' | 'like' | 'match' | 'smart';
export type Order = 'ascending' | 'descending';
export interface QuerySpec {
  queryType: QueryType;
  indexPath?: string | null;
  matchKey?: unknown;
  beginKey?: unknown;
  endKey?: unknown;
  likeKey?: string | null;
  smartSql?: string | null;
  orderPath?: string | null;
  order?: Order;
  pageSize?: number;
  selectPaths?: string[] | null;
  /** Smart SQL only: ms before a statement is stopped (1..3600000, default 30000). */
  timeoutMs?: number;
}
export declare class QuerySpec {
  constructor(path?: string);
}

/** A stored entry: your fields plus _soupEntryId and _soupLastModifiedDate. */
export type SoupEntry = Record<string, any> & { _soupEntryId?: number; _soupLastModifiedDate?: number };

export interface StoreCursor<T = any> {
  cursorId: number;
  currentPageIndex: number;
  pageSize: number;
  totalEntries: number;
  totalPages: number;
  currentPageOrderedEntries: T[];
}

/** The plugin's StoreCursor constructor (an empty cursor shape). */
export declare const StoreCursor: { new (): StoreCursor<any> };

export type SyncStatus = 'NEW' | 'RUNNING' | 'DONE' | 'FAILED' | 'STOPPED';
export interface SyncState {
  _soupEntryId: number;
  type: 'syncDown' | 'syncUp';
  name?: string | null;
  target: Record<string, any>;
  options: Record<string, any>;
  soupName: string;
  status: SyncStatus;
  progress: number;
  totalSize: number;
  maxTimeStamp: number;
  startTime: number;
  endTime: number;
  error: string;
  errorCode: number;
  /** True when running it again unchanged may succeed (network, 5xx, busy). */
  errorRetryable: boolean;
  conflicts?: number;
  errors?: number;
  conflictEntryIds?: number[];
  errorEntryIds?: number[];
}
/** What a cleanResyncGhosts run reports. */
export interface GhostsState {
  syncId: number;
  type: 'cleanResyncGhosts';
  status: SyncStatus;
  removed: number;
  error: string;
  errorCode: number;
  errorRetryable: boolean;
}
/** The detail of a 'sync' event. */
export type SyncEventDetail = (SyncState | GhostsState) & { isGlobalStore: boolean; storeName: string };

export type MergeMode = 'OVERWRITE' | 'LEAVE_IF_CHANGED';
export declare const MERGE_MODE: { readonly OVERWRITE: 'OVERWRITE'; readonly LEAVE_IF_CHANGED: 'LEAVE_IF_CHANGED' };
export interface SyncOptions { mergeMode?: MergeMode; fieldlist?: string[]; [key: string]: unknown }
export type SyncTarget = Record<string, unknown> & { type?: string };

/** {instanceUrl, accessToken, ...} (see syncstore_set_remote in include/syncstore.h). */
export interface Remote {
  instanceUrl: string;
  accessToken: string;
  apiVersion?: string;
  refreshToken?: string;
  clientId?: string;
  clientSecret?: string;
  tokenUrl?: string;
  caBundle?: string;
  verifyTls?: boolean;
  connectTimeoutMs?: number;
  stallTimeoutMs?: number;
  maxAttempts?: number;
  retryBaseDelayMs?: number;
}

/** Errors carry the C ABI's status: code 'SYNCSTORE_ERR_NOT_FOUND', status 2, ... */
export interface SyncStoreError extends Error {
  code: string;
  status: number;
  retryable: boolean;
  /** For a failed or stopped run: its last state. */
  state?: SyncState | GhostsState;
}

/** A sync target implemented in JS (methods may be async). */
export interface CustomTarget {
  fetchPage?(target: SyncTarget, sinceMs: number, continuation: string | null):
    Promise<{ records: SoupEntry[]; totalSize?: number; next?: string }> | { records: SoupEntry[]; totalSize?: number; next?: string };
  remoteIds?(target: SyncTarget): Promise<string[]> | string[];
  pushRecord?(target: SyncTarget, action: 'create' | 'update' | 'delete', record: SoupEntry):
    Promise<{ id?: string } | null | void> | { id?: string } | null | void;
}

// ---- live sync (docs/sync.md#live-sync) ----

export type LiveSyncStateName = 'connecting' | 'catchingUp' | 'live' | 'offline' | 'stopped';
/** A live sync's state, as its 'state' events, Store#liveSyncState and getLiveSyncState give it. */
export interface LiveSyncStateEvent {
  event: 'state';
  state: LiveSyncStateName;
  /** offline: when the next attempt is made (epoch ms). */
  nextRetryAt?: number;
  /** The last failure (a retryable one while offline). */
  error?: string;
  /** The ids of the syncs it runs: its sync ups, then its sync downs. */
  syncs: number[];
}
/** What syncstore_start_live_sync reads (the library checks the values). */
export interface LiveSyncOptions {
  /** The syncs to run, by name (default: every named sync of the store). */
  syncs?: string[] | null;
  /** A sync up runs once host writes paused this long (default 300). */
  debounceMs?: number;
  /** The first wait after a retryable failure (default 1000), doubling up to retryMaxMs (60000). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** The sync downs run again this often (default 0: only when catching up). */
  pullIntervalMs?: number;
  /** SOQL sync downs kept current by Change Data Capture events (default true). */
  changeEvents?: boolean;
}
export interface StartLiveSyncOptions extends LiveSyncOptions {
  /** Keep the process alive until it stops (default false: only while someone waits). */
  keepAlive?: boolean;
}
/** The detail of a "liveSync" event (the hybrid faces): the state event plus its store. */
export type LiveSyncEventDetail = LiveSyncStateEvent & { isGlobalStore: boolean; storeName: string };

// ---- query spec builders ----

export declare function buildAllQuerySpec(path: string, order?: Order, pageSize?: number, selectPaths?: string[]): QuerySpec;
export declare function buildExactQuerySpec(path: string, matchKey: unknown, pageSize?: number, order?: Order, orderPath?: string, selectPaths?: string[]): QuerySpec;
export declare function buildRangeQuerySpec(path: string, beginKey: unknown, endKey: unknown, order?: Order, pageSize?: number, orderPath?: string, selectPaths?: string[]): QuerySpec;
export declare function buildLikeQuerySpec(path: string, likeKey: string, order?: Order, pageSize?: number, orderPath?: string, selectPaths?: string[]): QuerySpec;
export declare function buildMatchQuerySpec(path: string | null, matchKey: string, order?: Order, pageSize?: number, orderPath?: string, selectPaths?: string[]): QuerySpec;
export declare function buildSmartQuerySpec(smartSql: string, pageSize?: number): QuerySpec;

// ---- Cordova smartstore ----

type Ok<T> = (result: T) => void;
type Fail = (message: string) => void;
type CursorFail = (cursor: StoreCursor, error: Error) => void;
/** Every function also accepts the optional leading storeConfig (object, boolean, or null: the default user store). */
type WithConfig<A extends unknown[], R> = {
  (...args: [...A, Ok<R>?, Fail?]): void;
  (config: StoreConfigArg, ...args: [...A, Ok<R>?, Fail?]): void;
};
type WithConfigP<A extends unknown[], R> = {
  (...args: A): Promise<R>;
  (config: StoreConfigArg, ...args: A): Promise<R>;
};

interface QuerySpecBuilders {
  buildAllQuerySpec: typeof buildAllQuerySpec;
  buildExactQuerySpec: typeof buildExactQuerySpec;
  buildRangeQuerySpec: typeof buildRangeQuerySpec;
  buildLikeQuerySpec: typeof buildLikeQuerySpec;
  buildMatchQuerySpec: typeof buildMatchQuerySpec;
  buildSmartQuerySpec: typeof buildSmartQuerySpec;
  QuerySpec: typeof QuerySpec;
  SoupIndexSpec: typeof SoupIndexSpec;
  StoreCursor: typeof StoreCursor;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug' | 'verbose';

/** What a key provider returns for a store: its key (a passphrase or x'<64 hex digits>'), the
 *  key with its PBKDF2 iterations (the Mobile SDK's stores use 4000), or null / undefined for a
 *  plaintext store. */
export type EncryptionKey = string | { key: string | null; kdfIter?: number } | null | undefined;
/** Gives the key of each store the Cordova faces open (asked at every open, never cached). */
export type EncryptionKeyProvider = (store: { storeName: string; isGlobalStore: boolean; root: string }) =>
  EncryptionKey | Promise<EncryptionKey>;
export interface StoreListing { storeName: string; isGlobalStore: boolean }

/** A store listener's options (addSoupListener / addQueryListener). */
export interface ListenerOptions { minIntervalMs?: number }
/** The detail of a "smartstoreChanged" event: a listener's notice plus which listener and store. */
export type SmartstoreChangedDetail = (SoupNotice | QueryNotice) & { listenerId: number; isGlobalStore: boolean; storeName: string };
/** The event addEventListener('smartstoreChanged', ...) listeners get (a CustomEvent). */
export interface SmartstoreChangedEvent { readonly type: 'smartstoreChanged'; readonly detail: SmartstoreChangedDetail }

/** Store listeners and their events, on smartstore and on its client. */
interface SmartStoreEvents<Self> {
  on(event: 'smartstoreChanged', listener: (detail: SmartstoreChangedDetail) => void): Self;
  once(event: 'smartstoreChanged', listener: (detail: SmartstoreChangedDetail) => void): Self;
  off(event: 'smartstoreChanged', listener: (detail: SmartstoreChangedDetail) => void): Self;
  addEventListener(type: 'smartstoreChanged', listener: (event: SmartstoreChangedEvent) => void): void;
  removeEventListener(type: 'smartstoreChanged', listener: (event: SmartstoreChangedEvent) => void): void;
}

export interface SmartStore extends QuerySpecBuilders, SmartStoreEvents<SmartStore> {
  /** SyncStore's own: a listener of a soup (null or left out: every soup); success gets its id. */
  addSoupListener: WithConfig<[], number> & WithConfig<[soupName: string | null], number> &
    WithConfig<[soupName: string | null, options: ListenerOptions], number>;
  /** SyncStore's own: a listener of a query's result (its first event: the result at once). */
  addQueryListener: WithConfig<[soupName: string | null, querySpec: QuerySpec | string], number> &
    WithConfig<[soupName: string | null, querySpec: QuerySpec | string, options: ListenerOptions], number>;
  removeListener: WithConfig<[listenerId: number], 'OK'>;
  registerSoup: WithConfig<[soupName: string, indexSpecs: IndexSpec[]], string>;
  removeSoup: WithConfig<[soupName: string], 'OK'>;
  soupExists: WithConfig<[soupName: string], boolean>;
  getSoupIndexSpecs: WithConfig<[soupName: string], IndexSpec[]>;
  alterSoup: WithConfig<[soupName: string, indexSpecs: IndexSpec[], reIndexData: boolean], string>;
  reIndexSoup: WithConfig<[soupName: string, paths: string[]], string>;
  clearSoup: WithConfig<[soupName: string], 'OK'>;
  querySoup: WithConfig<[soupName: string, querySpec: QuerySpec], StoreCursor>;
  runSmartQuery: WithConfig<[querySpec: QuerySpec], StoreCursor>;
  retrieveSoupEntries: WithConfig<[soupName: string, entryIds: number[]], SoupEntry[]>;
  upsertSoupEntries: WithConfig<[soupName: string, entries: SoupEntry[]], SoupEntry[]>;
  upsertSoupEntriesWithExternalId: WithConfig<[soupName: string, entries: SoupEntry[], externalIdPath: string], SoupEntry[]>;
  removeFromSoup: WithConfig<[soupName: string, entryIdsOrQuerySpec: number[] | QuerySpec], 'OK'>;
  moveCursorToPageIndex: WithConfig<[cursor: StoreCursor, newPageIndex: number], StoreCursor>;
  moveCursorToNextPage: {
    (cursor: StoreCursor, success?: Ok<StoreCursor>, error?: CursorFail): void;
    (config: StoreConfigArg, cursor: StoreCursor, success?: Ok<StoreCursor>, error?: CursorFail): void;
  };
  moveCursorToPreviousPage: SmartStore['moveCursorToNextPage'];
  closeCursor: WithConfig<[cursor: StoreCursor], 'OK'>;
  getDatabaseSize: WithConfig<[], number>;
  removeStore: WithConfig<[], true>;
  getAllStores(success?: Ok<StoreListing[]>, error?: Fail): void;
  getAllGlobalStores(success?: Ok<StoreListing[]>, error?: Fail): void;
  removeAllStores(success?: Ok<true>, error?: Fail): void;
  removeAllGlobalStores(success?: Ok<true>, error?: Fail): void;
  /** Node: registers the soups of a userstore.json / globalstore.json. */
  loadStoreConfig: WithConfig<[file: string], 'OK'>;
  setLogLevel(level: LogLevel): void;
  getLogLevel(): LogLevel;
  setRootDirectory(dir: string | null): void;
  getRootDirectory(): string;
  /** Node: where the keys of encrypted stores come from (the plugin's JS passes none). */
  setEncryptionKeyProvider(provider: EncryptionKeyProvider | null): void;
  client: SmartStoreClient;
}

export interface SmartStoreClient extends QuerySpecBuilders, SmartStoreEvents<SmartStoreClient> {
  addSoupListener: WithConfigP<[soupName?: string | null, options?: ListenerOptions], number>;
  addQueryListener: WithConfigP<[soupName: string | null, querySpec: QuerySpec | string, options?: ListenerOptions], number>;
  removeListener: WithConfigP<[listenerId: number], 'OK'>;
  registerSoup: WithConfigP<[soupName: string, indexSpecs: IndexSpec[]], string>;
  removeSoup: WithConfigP<[soupName: string], 'OK'>;
  soupExists: WithConfigP<[soupName: string], boolean>;
  getSoupIndexSpecs: WithConfigP<[soupName: string], IndexSpec[]>;
  alterSoup: WithConfigP<[soupName: string, indexSpecs: IndexSpec[], reIndexData: boolean], string>;
  reIndexSoup: WithConfigP<[soupName: string, paths: string[]], string>;
  clearSoup: WithConfigP<[soupName: string], 'OK'>;
  querySoup: WithConfigP<[soupName: string, querySpec: QuerySpec], StoreCursor>;
  runSmartQuery: WithConfigP<[querySpec: QuerySpec], StoreCursor>;
  retrieveSoupEntries: WithConfigP<[soupName: string, entryIds: number[]], SoupEntry[]>;
  upsertSoupEntries: WithConfigP<[soupName: string, entries: SoupEntry[]], SoupEntry[]>;
  upsertSoupEntriesWithExternalId: WithConfigP<[soupName: string, entries: SoupEntry[], externalIdPath: string], SoupEntry[]>;
  removeFromSoup: WithConfigP<[soupName: string, entryIdsOrQuerySpec: number[] | QuerySpec], 'OK'>;
  moveCursorToPageIndex: WithConfigP<[cursor: StoreCursor, newPageIndex: number], StoreCursor>;
  moveCursorToNextPage: WithConfigP<[cursor: StoreCursor], StoreCursor>;
  moveCursorToPreviousPage: WithConfigP<[cursor: StoreCursor], StoreCursor>;
  closeCursor: WithConfigP<[cursor: StoreCursor], 'OK'>;
  getDatabaseSize: WithConfigP<[], number>;
  removeStore: WithConfigP<[], true>;
  getAllStores(): Promise<StoreListing[]>;
  getAllGlobalStores(): Promise<StoreListing[]>;
  removeAllStores(): Promise<true>;
  removeAllGlobalStores(): Promise<true>;
  loadStoreConfig: WithConfigP<[file: string], 'OK'>;
  setLogLevel(level: LogLevel): void;
  getLogLevel(): LogLevel;
  setRootDirectory(dir: string | null): void;
  getRootDirectory(): string;
  setEncryptionKeyProvider(provider: EncryptionKeyProvider | null): void;
}

// ---- Cordova mobilesync ----

type SyncOk = (state: SyncState) => void;
type SyncFail = (error: string | SyncState) => void;

export declare class MobileSync extends EventEmitter {
  constructor(options?: { reactNative?: boolean });
  readonly reactNative: boolean;
  readonly MERGE_MODE: typeof MERGE_MODE;
  readonly client: MobileSyncClient;
  on(event: 'sync', listener: (detail: SyncEventDetail) => void): this;
  off(event: 'sync', listener: (detail: SyncEventDetail) => void): this;
  once(event: 'sync', listener: (detail: SyncEventDetail) => void): this;
  addEventListener(type: 'sync', listener: (event: SyncEvent) => void, options?: { once?: boolean } | boolean): void;
  removeEventListener(type: 'sync', listener: (event: SyncEvent) => void, options?: boolean): void;
  /** Live sync's state events ("liveSync"; they do not keep the process alive). */
  on(event: 'liveSync', listener: (detail: LiveSyncEventDetail) => void): this;
  off(event: 'liveSync', listener: (detail: LiveSyncEventDetail) => void): this;
  once(event: 'liveSync', listener: (detail: LiveSyncEventDetail) => void): this;
  addEventListener(type: 'liveSync', listener: (event: LiveSyncEvent) => void, options?: { once?: boolean } | boolean): void;
  removeEventListener(type: 'liveSync', listener: (event: LiveSyncEvent) => void, options?: boolean): void;

  syncDown(target: SyncTarget, soupName: string, options: SyncOptions | null, success?: SyncOk, error?: SyncFail): void;
  syncDown(target: SyncTarget, soupName: string, options: SyncOptions | null, syncName: string | undefined, success?: SyncOk, error?: SyncFail): void;
  syncDown(config: StoreConfigArg, target: SyncTarget, soupName: string, options: SyncOptions | null, success?: SyncOk, error?: SyncFail): void;
  syncDown(config: StoreConfigArg, target: SyncTarget, soupName: string, options: SyncOptions | null, syncName: string | undefined, success?: SyncOk, error?: SyncFail): void;
  syncUp(soupName: string, options: SyncOptions | null, success?: SyncOk, error?: SyncFail): void;
  syncUp(target: SyncTarget | null, soupName: string, options: SyncOptions | null, success?: SyncOk, error?: SyncFail): void;
  syncUp(target: SyncTarget | null, soupName: string, options: SyncOptions | null, syncName: string | undefined, success?: SyncOk, error?: SyncFail): void;
  syncUp(config: StoreConfigArg, target: SyncTarget | null, soupName: string, options: SyncOptions | null, syncName?: string, success?: SyncOk, error?: SyncFail): void;
  reSync(idOrName: number | string, success?: SyncOk, error?: SyncFail): void;
  reSync(config: StoreConfigArg, idOrName: number | string, success?: SyncOk, error?: SyncFail): void;
  cleanResyncGhosts(idOrName: number | string, success?: (removed: number) => void, error?: (message: string) => void): void;
  cleanResyncGhosts(config: StoreConfigArg, idOrName: number | string, success?: (removed: number) => void, error?: (message: string) => void): void;
  getSyncStatus: WithConfig<[idOrName: number | string], SyncState | null>;
  deleteSync: WithConfig<[idOrName: number | string], 'OK'>;
  setRemote: WithConfig<[remote: Remote], void>;
  loadSyncConfig: WithConfig<[file: string], 'OK'>;
  hasSyncWithName: WithConfig<[name: string], boolean>;
  stopSyncs: WithConfig<[], void>;
  registerTarget: WithConfig<[type: string, impl: CustomTarget], void>;
  /** SyncStore's own: the store's syncs run by themselves; success gets the live sync state. */
  startLiveSync: WithConfig<[], LiveSyncEventDetail> & WithConfig<[options: LiveSyncOptions | null], LiveSyncEventDetail>;
  stopLiveSync: WithConfig<[], 'OK'>;
  getLiveSyncState: WithConfig<[], LiveSyncEventDetail>;
}

export interface MobileSyncClient {
  MERGE_MODE: typeof MERGE_MODE;
  syncDown(...args: [StoreConfigArg, SyncTarget, string, SyncOptions | null, string?] | [SyncTarget, string, SyncOptions | null, string?]): Promise<SyncState>;
  syncUp(...args: unknown[]): Promise<SyncState>;
  reSync: WithConfigP<[idOrName: number | string], SyncState>;
  cleanResyncGhosts: WithConfigP<[idOrName: number | string], number>;
  getSyncStatus: WithConfigP<[idOrName: number | string], SyncState | null>;
  deleteSync: WithConfigP<[idOrName: number | string], 'OK'>;
  setRemote: WithConfigP<[remote: Remote], void>;
  loadSyncConfig: WithConfigP<[file: string], 'OK'>;
  hasSyncWithName: WithConfigP<[name: string], boolean>;
  stopSyncs: WithConfigP<[], void>;
  registerTarget: WithConfigP<[type: string, impl: CustomTarget], void>;
  startLiveSync: WithConfigP<[options?: LiveSyncOptions | null], LiveSyncEventDetail>;
  stopLiveSync: WithConfigP<[], 'OK'>;
  getLiveSyncState: WithConfigP<[], LiveSyncEventDetail>;
}

export declare const smartstore: SmartStore;
export declare const smartstoreClient: SmartStoreClient;
export declare const mobilesync: MobileSync;
export declare const mobilesyncClient: MobileSyncClient;
export declare function createMobileSync(options?: { reactNative?: boolean }): MobileSync;

// ---- promise-first face ----

export declare class Cursor<T = any> implements StoreCursor<T>, AsyncIterable<T[]> {
  cursorId: number;
  currentPageIndex: number;
  pageSize: number;
  totalEntries: number;
  totalPages: number;
  currentPageOrderedEntries: T[];
  readonly entries: T[];
  moveToPage(pageIndex: number): Promise<this>;
  next(): Promise<boolean>;
  previous(): Promise<boolean>;
  close(): Promise<void>;
  toJSON(): StoreCursor<T>;
  [Symbol.asyncIterator](): AsyncIterator<T[]>;
}

export declare class SyncRun<S = SyncState> extends EventEmitter {
  readonly id: number | null;
  readonly started: Promise<number>;
  readonly done: Promise<S>;
  keepAlive(): this;
  on(event: 'start' | 'progress' | 'end', listener: (state: S) => void): this;
  on(event: 'error', listener: (error: SyncStoreError) => void): this;
  once(event: 'start' | 'progress' | 'end', listener: (state: S) => void): this;
}

// ---- watches (include/syncstore.h, "Listeners") ----

/** Who made the commit a notice tells of (the last one's, when it tells of several). */
export interface ChangeOrigin {
  /** handle: a write through the watched Store's handle; otherHandle: another handle of this
   *  process; sync: a sync run; otherProcess: another process; initial: a query watch's first
   *  notice. */
  kind: 'handle' | 'otherHandle' | 'sync' | 'otherProcess' | 'initial';
  syncId?: number;
  syncName?: string;
}
/** How many entries, the first 1000 of their ids, and whether ids were left out. */
export interface ChangedIds { count: number; ids: number[]; cut: boolean }
export interface SoupChange {
  soup: string;
  inserted: ChangedIds;
  updated: ChangedIds;
  deleted: ChangedIds;
  /** Every entry was removed (no ids listed). */
  cleared: boolean;
  /** The soup itself was removed. */
  removed: boolean;
  /** Another process changed it: which entries is not known. */
  unknown?: boolean;
}
/** What a soup watch hears after commits that touched its soup (every soup for watchSoup(null)). */
export interface SoupNotice {
  /** The last commit it tells of: the store's commits in this process, increasing. */
  sequence: number;
  /** How many commits it tells of (more than 1 when merged). */
  commits: number;
  origin: ChangeOrigin;
  soups: SoupChange[];
}
/** Rows that entered, left or changed in a query's result: ids, or rows for Smart SQL. */
export interface ChangedRows { count: number; ids?: number[]; rows?: unknown[][]; cut: boolean }
/** What a query watch hears: at once the current result (origin "initial"), then each change. */
export interface QueryNotice<T = SoupEntry> {
  sequence: number;
  commits: number;
  origin: ChangeOrigin;
  totalEntries: number;
  /** The first page of the result (pageSize rows at most). */
  currentPageOrderedEntries: T[];
  added: ChangedRows;
  removed: ChangedRows;
  changed: ChangedRows;
}
export interface WatchOptions {
  /** Least time between two notices (0..3600000, default 0); commits within it are merged. */
  minIntervalMs?: number;
  /** Keep the process alive while the watch is open (default false: only while an iteration
   *  waits for a notice). */
  keepAlive?: boolean;
}
/** A listener of a store: 'change' events and async iteration until close(), the store's close
 *  or an error. */
export declare class Watch<N = SoupNotice> extends EventEmitter {
  /** The listener's number in its Store, null when it could not be asked for. */
  readonly id: number | null;
  readonly closed: boolean;
  /** Resolves once the listener is added (commits after that are heard); rejects when it cannot be. */
  readonly ready: Promise<this>;
  /** Removes the listener; resolves when no notice of it will come. */
  close(): Promise<void>;
  ref(): this;
  unref(): this;
  hasRef(): boolean;
  on(event: 'change', listener: (notice: N) => void): this;
  on(event: 'error', listener: (error: SyncStoreError) => void): this;
  on(event: 'close', listener: () => void): this;
  once(event: 'change', listener: (notice: N) => void): this;
  once(event: 'error', listener: (error: SyncStoreError) => void): this;
  once(event: 'close', listener: () => void): this;
  [Symbol.asyncIterator](): AsyncIterableIterator<N>;
}

/** A store's live sync (Store#startLiveSync): 'state' and 'run' events, the last known state,
 *  stop(), and async iteration of its state events (beginning with the last known one, ending
 *  after "stopped"). Keeps the process alive only while someone waits (an iteration's pending
 *  next(), a stop() in flight, keepAlive / ref()). */
export declare class LiveSync extends EventEmitter {
  /** The last known state ('connecting' until the first event). */
  readonly state: LiveSyncStateName;
  readonly lastEvent: LiveSyncStateEvent | null;
  readonly stopped: boolean;
  /** Resolves once the library accepted the start; rejects when it refused it. */
  readonly started: Promise<this>;
  /** Resolves once its "stopped" event was emitted. */
  stop(): Promise<void>;
  ref(): this;
  unref(): this;
  hasRef(): boolean;
  on(event: 'state', listener: (event: LiveSyncStateEvent) => void): this;
  on(event: 'run', listener: (state: SyncState) => void): this;
  on(event: 'error', listener: (error: SyncStoreError) => void): this;
  once(event: 'state', listener: (event: LiveSyncStateEvent) => void): this;
  once(event: 'run', listener: (state: SyncState) => void): this;
  once(event: 'error', listener: (error: SyncStoreError) => void): this;
  off(event: 'state', listener: (event: LiveSyncStateEvent) => void): this;
  off(event: 'run', listener: (state: SyncState) => void): this;
  off(event: 'error', listener: (error: SyncStoreError) => void): this;
  [Symbol.asyncIterator](): AsyncIterableIterator<LiveSyncStateEvent>;
}

export interface OpenOptions extends StoreConfig {
  root?: string;
  /** Opens (or creates) an encrypted store: a passphrase, or x'<64 hex digits>' (the raw key).
   *  Absent or null: a plaintext store. Never kept on the Store. */
  key?: string | null;
  /** PBKDF2 iterations for a passphrase (default 256000; the Mobile SDK uses 4000). */
  kdfIter?: number;
}

export declare class Store {
  readonly storeName: string;
  readonly isGlobalStore: boolean;
  readonly root: string;
  readonly closed: boolean;
  close(): Promise<void>;
  registerSoup(soup: string, indexSpecs: IndexSpec[]): Promise<void>;
  soupExists(soup: string): Promise<boolean>;
  removeSoup(soup: string): Promise<void>;
  clearSoup(soup: string): Promise<void>;
  getSoupIndexSpecs(soup: string): Promise<IndexSpec[]>;
  alterSoup(soup: string, indexSpecs: IndexSpec[], reIndexData: boolean): Promise<void>;
  reIndexSoup(soup: string, paths: string[]): Promise<void>;
  loadStoreConfig(file: string): Promise<void>;
  upsert(soup: string, entries: SoupEntry | SoupEntry[], options: { externalIdPath?: string | null; returnEntries: false }): Promise<undefined>;
  upsert(soup: string, entries: SoupEntry | SoupEntry[], options?: { externalIdPath?: string | null; returnEntries?: true }): Promise<SoupEntry[]>;
  retrieve(soup: string, ids: number[]): Promise<SoupEntry[]>;
  remove(soup: string, ids: number[]): Promise<void>;
  remove(soup: string, querySpec: QuerySpec): Promise<number>;
  query<T = SoupEntry>(soup: string, querySpec: QuerySpec): Promise<Cursor<T>>;
  smartQuery<T = unknown[]>(specOrSql: QuerySpec | string, pageSize?: number): Promise<Cursor<T>>;
  /** One page (default the first) of a query as an array, without a cursor or a count: the
   *  fastest lookup. A page past the last is []. */
  find<T = SoupEntry>(soup: string | null, querySpec: QuerySpec, pageIndex?: number): Promise<T[]>;
  /** find answered on the JS thread: returns the page, throws what find rejects with. The event
   *  loop waits for the query: for lookups by an indexed path. */
  findSync<T = SoupEntry>(soup: string | null, querySpec: QuerySpec | string, pageIndex?: number): T[];
  pages<T = SoupEntry>(soup: string | null, querySpec: QuerySpec): AsyncIterableIterator<T[]>;
  moveCursorToPage(cursorId: number, pageIndex: number): Promise<StoreCursor>;
  closeCursor(cursorId: number): Promise<void>;
  size(): Promise<number>;
  /** Re-keys the store atomically: plaintext to encrypted, a new key, or null to decrypt. The
   *  new key keeps the kdfIter the store was opened with. BUSY (retryable) while a sync runs. */
  changeKey(newKey: string | null): Promise<void>;
  setRemote(remote: Remote): Promise<void>;
  loadSyncConfig(file: string): Promise<void>;
  syncDown(target: SyncTarget, soup: string, options?: SyncOptions | null, syncName?: string | null): SyncRun;
  syncUp(target: SyncTarget | null, soup: string, options?: SyncOptions | null, syncName?: string | null): SyncRun;
  reSync(idOrName: number | string): SyncRun;
  cleanResyncGhosts(idOrName: number | string): SyncRun<GhostsState>;
  restartSyncs(restartStopped?: boolean): SyncRun;
  createSyncDown(target: SyncTarget, soup: string, options?: SyncOptions | null, syncName?: string | null): Promise<number>;
  createSyncUp(target: SyncTarget | null, soup: string, options?: SyncOptions | null, syncName?: string | null): Promise<number>;
  getSyncStatus(idOrName: number | string): Promise<SyncState | null>;
  hasSyncWithName(name: string): Promise<boolean>;
  deleteSync(idOrName: number | string): Promise<void>;
  stopSyncs(): Promise<void>;
  registerTarget(type: string, impl: CustomTarget): void;
  /** Watches a query's result: its current result at once, then each change of it. The spec
   *  names its soup (soupName), or the soup comes first; a Smart SQL spec needs none. */
  watch<T = SoupEntry>(querySpec: QuerySpec & { soupName?: string }, options?: WatchOptions): Watch<QueryNotice<T>>;
  watch<T = SoupEntry>(soup: string, querySpec: QuerySpec, options?: WatchOptions): Watch<QueryNotice<T>>;
  /** Watches the commits that touch a soup (null: every soup). */
  watchSoup(soup: string | null, options?: WatchOptions): Watch<SoupNotice>;
  /** Starts live sync: the store's syncs run by themselves. It belongs to this handle (its
   *  close stops it); one per store. */
  startLiveSync(options?: StartLiveSyncOptions): LiveSync;
  /** The store's live sync state, whoever started it ('stopped' when off). */
  liveSyncState(): Promise<LiveSyncStateEvent>;
}

export declare function openStore(options?: OpenOptions): Promise<Store>;
export declare function listStores(options?: { isGlobalStore?: boolean; root?: string }): Promise<string[]>;
export declare function removeStore(options?: OpenOptions): Promise<void>;
export declare function removeAllStores(options?: { isGlobalStore?: boolean; root?: string }): Promise<void>;
export declare function setRootDirectory(dir: string | null): void;
export declare function getRootDirectory(): string;
/** Where the Cordova faces get the keys of encrypted stores; null removes the provider. */
export declare function setEncryptionKeyProvider(provider: EncryptionKeyProvider | null): void;
export declare const STATUS: Readonly<Record<'OK' | 'ARGUMENT' | 'NOT_FOUND' | 'EXISTS' | 'BUSY' | 'NETWORK' | 'AUTH' | 'SERVER' | 'CONFLICT' | 'STORAGE' | 'INTERNAL' | 'STATE', number>>;
/** libsyncstore's version. */
export declare const version: string;
