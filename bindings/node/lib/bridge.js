'use strict';
// The Cordova bridge (require('<repo>/bindings/node/cordova')) and the React Native bridge
// objects: what a WebView / React Native container gives hybrid JavaScript, for Node. Every
// call (smartstore, mobilesync, the OAuth plugin's credentials, the network plugin's REST
// requests) is forwarded to the library's dispatcher (lib/plugin.js).
const { EventEmitter } = require('node:events');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const { version: libraryVersion, STATUS } = require('./native');
const { Plugin, MOBILESYNC, SMARTSTORE } = require('./plugin');
const { SERVICES, answerOf } = require('./api');
const { getRoot } = require('./root');
// Callbacks run outside the call's promise chain: a throwing one is an ordinary uncaught
// exception, as in a WebView.
const { later } = require('./cordova');

const OAUTH = 'com.salesforce.oauth';


/** A document for events when the host has none (Node): an EventTarget that counts its 'sync'
 *  listeners, so runs keep the process alive only while someone listens for their end.
 *  'deviceready' is sticky, as Cordova's: the bridge is ready at once, so a listener added at any
 *  time is called once, on a later turn (force.js logs in from such a listener). */
class NodeDocument extends EventTarget {
  #sync = new Set();
  #ready = new Set();
  #changed;
  constructor(changed = () => {}) { super(); this.#changed = changed; }
  addEventListener(type, listener, options) {
    if (type === 'deviceready') {
      if (!listener || this.#ready.has(listener)) return;
      this.#ready.add(listener);
      setImmediate(() => {
        if (!this.#ready.delete(listener)) return; // removed before it ran
        const event = new Event('deviceready');
        if (typeof listener === 'function') listener.call(this, event);
        else if (typeof listener.handleEvent === 'function') listener.handleEvent(event);
      });
      return;
    }
    super.addEventListener(type, listener, options);
    if (type === 'sync' && listener) { this.#sync.add(listener); this.#changed(); }
  }
  removeEventListener(type, listener, options) {
    if (type === 'deviceready') { this.#ready.delete(listener); return; }
    super.removeEventListener(type, listener, options);
    if (type === 'sync' && this.#sync.delete(listener)) this.#changed();
  }
  get waiting() { return this.#sync.size > 0; }
}

/** Cordova's way of building a document event: an Event with the data's members copied on. */
function documentEvent(name, data) {
  const event = new Event(name);
  if (data && typeof data === 'object') {
    for (const [key, value] of Object.entries(data)) {
      try { Object.defineProperty(event, key, { value, enumerable: true, configurable: true, writable: true }); } catch { /* a read-only member of Event */ }
    }
  }
  return event;
}

/**
 * A Cordova bridge over one dispatcher. options: root (store directory; default $SYNCSTORE_ROOT
 * or the per-user data directory), remote (default remote of every store: the logged-in user's
 * {instanceUrl, accessToken, ...}), remotes ([{storeConfig, remote}] per-store overrides),
 * keyProvider (fn({storeName, isGlobalStore, root}) -> key | {key, kdfIter} | null, may be
 * async), credentials (extra members of getAuthCredentials' answer: userId, orgId, ...).
 */
function createCordova(options = {}) {
  let settings = { ...options };
  let plugin = null;
  const ownDocument = new NodeDocument(() => { if (plugin && !plugin.freed) plugin.updateKeepAlive(); });
  const modules = new Map(); // id -> {factory, exports, module, state}
  const nativeEvents = new EventEmitter(); // the React Native face's RCTDeviceEventEmitter

  const doc = () => {
    const d = globalThis.document;
    return d && typeof d.dispatchEvent === 'function' ? d : ownDocument;
  };

  /** The default remote, with `credentials`' members (userId, orgId, ...) that the OAuth
   *  plugin's answer carries. */
  const defaultRemote = () => (settings.remote ? { ...settings.remote, ...(settings.credentials || {}) } : null);

  function getPlugin() {
    if (plugin && !plugin.freed) return plugin;
    // Runs keep the process alive while 'sync' listeners wait (any, on a host's own document).
    const waiting = () => doc() !== ownDocument || ownDocument.waiting;
    plugin = new Plugin({ root: settings.root ? path.resolve(settings.root) : getRoot(), remote: defaultRemote(), waiting });
    for (const { storeConfig, remote } of settings.remotes || []) plugin.setRemote(storeConfig, remote);
    if (settings.keyProvider) plugin.setKeyProvider(settings.keyProvider);
    // The plugins fire their events as cordova.fireDocumentEvent(name, {detail}) does.
    plugin.on('event', (name, detail) => {
      cordova.fireDocumentEvent(name, { detail });
      // The React Native face's events (its bridges fire no sync events of their own).
      if (name === 'smartstoreChanged' || name === 'liveSync') {
        try { nativeEvents.emit(name, detail); } catch (error) { queueMicrotask(() => { throw error; }); }
      }
    });
    return plugin;
  }

  function resolveId(id, from) {
    if (!id.startsWith('.')) return id;
    const parts = from.split('/').slice(0, -1);
    for (const part of id.split('/')) {
      if (part === '..') parts.pop();
      else if (part !== '.') parts.push(part);
    }
    return parts.join('/');
  }

  function build(id) {
    const entry = modules.get(id);
    if (!entry) throw new Error(`module ${id} not found`);
    if (entry.state === 'new') {
      entry.state = 'building'; // a cycle gets the exports built so far, as Cordova's require
      entry.module = { id, exports: {} };
      entry.factory((other) => build(resolveId(other, id)), entry.module.exports, entry.module);
      entry.state = 'built';
    }
    return entry.module.exports;
  }

  const cordova = {
    platformId: 'node',
    platformVersion: process.versions.node,
    version: libraryVersion,

    /** cordova.exec(success, fail, service, action, args): success gets the answer (no
     *  argument when the plugin answers none), fail the error message. */
    exec(success, fail, service, action, args) {
      getPlugin().exec(service, action, args).then(({ status, value, hasValue }) => {
        if (status !== 0) later(fail, value);
        else if (hasValue) later(success, value);
        else later(success);
      });
    },

    define(id, factory) {
      if (modules.has(id)) throw new Error(`module ${id} already defined`);
      if (typeof factory !== 'function') throw new TypeError(`module ${id}: the factory must be a function`);
      modules.set(id, { factory, state: 'new' });
    },

    require(id) { return build(id); },

    /** Fires a document event: an Event with data's members copied on (event.detail, ...). */
    fireDocumentEvent(name, data) {
      doc().dispatchEvent(documentEvent(name, data));
    },

    addDocumentEventListener(type, listener, options) { doc().addEventListener(type, listener, options); },
    removeDocumentEventListener(type, listener, options) { doc().removeEventListener(type, listener, options); },

    /** The document events go to: globalThis.document when it has one, else the bridge's own. */
    get document() { return doc(); },

    /** Changes settings; `root` only before the first call. */
    configure(more = {}) {
      if (more.root !== undefined && plugin && !plugin.freed && path.resolve(more.root) !== plugin.root) {
        const error = new Error('the bridge already opened stores under its root: configure({root}) before the first call, or close() first');
        error.status = STATUS.STATE;
        throw error;
      }
      settings = { ...settings, ...more };
      if (plugin && !plugin.freed) {
        if (more.remote || more.credentials) plugin.setRemote(null, defaultRemote());
        for (const { storeConfig, remote } of more.remotes || []) plugin.setRemote(storeConfig, remote);
        if (more.keyProvider !== undefined) plugin.setKeyProvider(more.keyProvider);
      }
      return cordova;
    },

    /** The remote of one store ({storeName, isGlobalStore}), or with null the default. */
    setRemote(storeConfig, remote) {
      if (!storeConfig) settings = { ...settings, remote };
      else settings = { ...settings, remotes: [...(settings.remotes || []), { storeConfig, remote }] };
      if (plugin && !plugin.freed) plugin.setRemote(storeConfig || null, storeConfig ? remote : defaultRemote());
    },

    setKeyProvider(fn) { cordova.configure({ keyProvider: fn || null }); },

    /** Makes this the global `cordova`, and gives the global object a `document` (for 'sync'
     *  events) and a `navigator` (where cordova.force.js puts smartstore) when it has none. */
    install(target = globalThis) {
      target.cordova = cordova;
      if (!target.document) target.document = ownDocument;
      if (!target.navigator) target.navigator = {};
      return cordova;
    },

    /** Runs a browser script (e.g. cordova.force.js) as a <script> tag does: in the global scope. */
    loadScript(file) {
      return vm.runInThisContext(fs.readFileSync(file, 'utf8'), { filename: path.resolve(file) });
    },

    /** Closes the stores the bridge opened (their runs stop); the next call opens them again. */
    async close() {
      if (plugin) await plugin.free();
    },

    /** The dispatcher (created on first use). */
    get plugin() { return getPlugin(); },
  };
  cordova.define.remove = (id) => modules.delete(id);
  cordova.define.moduleMap = modules;
  modules.set('cordova', { state: 'built', module: { id: 'cordova', exports: cordova } });
  modules.set('cordova/exec', { state: 'built', module: { id: 'cordova/exec', exports: cordova.exec } });
  cordova.reactNative = reactNativeBridges(cordova, getPlugin, nativeEvents);
  return cordova;
}

// ---- React Native ----

/** react-native-force's method names and the plugin actions they are. */
const SMARTSTORE_METHODS = ['alterSoup', 'clearSoup', 'closeCursor', 'getAllGlobalStores', 'getAllStores', 'getDatabaseSize',
  'getSoupIndexSpecs', 'moveCursorToPageIndex', 'querySoup', 'registerSoup', 'reIndexSoup', 'removeAllGlobalStores',
  'removeAllStores', 'removeFromSoup', 'removeSoup', 'removeStore', 'retrieveSoupEntries', 'runSmartQuery', 'soupExists',
  'upsertSoupEntries',
  // SyncStore's own (docs/hybrid-plugin.md, "Store listeners"), when the library's table has them.
  'addSoupListener', 'addQueryListener', 'removeListener'].filter((method) => SERVICES.smartstore.functions.has(method));
// Where react-native-force's native bridges answer otherwise than the Cordova plugins' "OK" and
// true (docs/hybrid-plugin.md, "React Native"): Android's (SmartStoreReactBridge,
// MobileSyncReactBridge) call success() with no argument where the plugins answer "OK", and answer
// "true" for the store removals as the plugins do; iOS's (SFSmartStoreReactBridge,
// SFMobileSyncReactBridge) answer "OK" for those removals too.
const RN_ANDROID_BARE = new Set(['removeSoup', 'clearSoup', 'removeFromSoup', 'closeCursor', 'deleteSync', 'resetSyncManager', 'stopLiveSync']);
const RN_IOS_OK = new Set(['removeStore', 'removeAllStores', 'removeAllGlobalStores']);
/** The action of a method: the Cordova function's of the same name (the library's table). */
const smartstoreAction = (method) => SERVICES.smartstore.functions.get(method).action;

/** The arguments object as the dispatcher reads it: removeFromSoup's newer `soupEntryIds` is its
 *  `entryIds`. */
function rnArgs(method, args) {
  const fields = { ...(args || {}) };
  if (method === 'removeFromSoup' && fields.entryIds == null && fields.soupEntryIds != null) fields.entryIds = fields.soupEntryIds;
  delete fields.soupEntryIds;
  return [fields];
}

/**
 * SmartStoreReactBridge / MobileSyncReactBridge (Android: (args, success, error), answers as JSON
 * text) and SFSmartStoreReactBridge / SFMobileSyncReactBridge (iOS and the TurboModules:
 * (args, callback(error, result))). Sync runs answer once, at their end: success with the DONE
 * state, error with the FAILED / STOPPED one; they fire no document events of their own.
 */
function reactNativeBridges(cordova, getPlugin, events) {
  const run = (service, action, args) => getPlugin().exec(service, action, args);

  async function smartstore(method, args) {
    const { status, value, hasValue } = await run(SMARTSTORE, smartstoreAction(method), rnArgs(method, args));
    if (status !== 0) return { error: value };
    return { value, hasValue };
  }

  async function mobilesync(method, args) {
    const fn = SERVICES.mobilesync.functions.get(method);
    if (fn.run) {
      const { status, value } = await getPlugin().runToEnd(fn.action, [{ ...(args || {}) }]);
      return status === 0 ? { value, hasValue: true } : { error: value };
    }
    const { status, value, hasValue } = await run(MOBILESYNC, fn.action, [{ ...(args || {}) }]);
    if (status !== 0) return { error: value };
    // The plugin answers {} for an unknown sync (Cordova cannot pass null); React Native gets null.
    const answer = answerOf(fn, value);
    return answer === null ? { value: null, hasValue: true } : { value, hasValue };
  }

  const MOBILESYNC_METHODS = ['syncDown', 'syncUp', 'reSync', 'cleanResyncGhosts', 'getSyncStatus', 'deleteSync', 'resetSyncManager',
    // SyncStore's own (docs/hybrid-plugin.md, "Live sync"), when the library's table has them.
    'startLiveSync', 'stopLiveSync', 'getLiveSyncState'].filter((method) => SERVICES.mobilesync.functions.has(method));

  function make(methods, impl, shape) {
    const bridge = {};
    for (const method of methods) {
      bridge[method] = shape === 'android'
        ? (args, success, error) => impl(method, args).then((r) => {
          if ('error' in r) later(error, typeof r.error === 'string' ? r.error : JSON.stringify(r.error));
          else if (r.hasValue && !RN_ANDROID_BARE.has(method)) later(success, JSON.stringify(r.value));
          else later(success);
        })
        : (args, callback) => impl(method, args).then((r) => {
          if ('error' in r) later(callback, typeof r.error === 'string' ? Object.assign(new Error(r.error), { message: r.error }) : r.error);
          else later(callback, null, r.hasValue && !RN_IOS_OK.has(method) ? r.value : 'OK');
        });
    }
    return bridge;
  }

  // Native modules send events to JS through RCTDeviceEventEmitter (Android's
  // DeviceEventManagerModule, iOS's RCTEventEmitter sendEventWithName): here one emitter carries
  // every "smartstoreChanged" and "liveSync" event, its payload the detail a Cordova page gets.
  // The bridges that fire them answer NativeEventEmitter's addListener / removeListeners, as
  // event-emitting modules do.
  const DeviceEventEmitter = {
    addListener(type, listener) {
      events.on(type, listener);
      return { remove: () => events.off(type, listener) };
    },
    removeAllListeners(type) { events.removeAllListeners(type); },
    listenerCount(type) { return events.listenerCount(type); },
  };
  const emitting = (bridge) => Object.assign(bridge, { addListener() {}, removeListeners() {} });

  return {
    SmartStoreReactBridge: emitting(make(SMARTSTORE_METHODS, smartstore, 'android')),
    MobileSyncReactBridge: emitting(make(MOBILESYNC_METHODS, mobilesync, 'android')),
    SFSmartStoreReactBridge: emitting(make(SMARTSTORE_METHODS, smartstore, 'ios')),
    SFMobileSyncReactBridge: emitting(make(MOBILESYNC_METHODS, mobilesync, 'ios')),
    DeviceEventEmitter,
    /** The container's OAuth bridge: getAuthCredentials(callback(error, credentials)). */
    SalesforceOauthReactBridge: {
      getAuthCredentials(args, success, error) {
        if (typeof args === 'function') [success, error] = [args, success];
        cordova.exec(success, error, OAUTH, 'getAuthCredentials', []);
      },
    },
  };
}

module.exports = { createCordova, NodeDocument };
