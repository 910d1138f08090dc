'use strict';
// What the Cordova plugin's JS half does around cordova.exec, for this package's smartstore and
// mobilesync: the optional leading storeConfig, the args object, (success, error) callbacks or
// promises. Every call goes to the library's dispatcher (lib/plugin.js) of the current root
// directory, which owns the rules: store resolution, answers, error strings, events.
const { STATUS, syncStoreError } = require('./native');
const { retryable } = require('./api');
const { Plugin } = require('./plugin');
const { openStore, normalizeConfig } = require('./store');
const { getRoot } = require('./root');

const plugins = new Map(); // root -> Plugin
const syncSinks = new Set(); // fn(detail): every 'sync' event of these plugins
const eventSinks = new Set(); // fn(name, detail): every event of these plugins
let waiting = () => false; // someone listens for 'sync' events (see onSync)

/** The dispatcher of the current root directory (created on first use). */
function pluginFor(root = getRoot()) {
  let plugin = plugins.get(root);
  if (!plugin || plugin.freed) {
    plugin = new Plugin({ root, waiting: () => waiting() });
    if (keyProvider) plugin.setKeyProvider(keyProvider);
    plugin.on('event', (name, detail) => {
      if (name === 'sync') for (const sink of syncSinks) sink(detail);
      for (const sink of eventSinks) sink(name, detail);
    });
    plugins.set(root, plugin);
  }
  return plugin;
}

/** sink(detail) gets every 'sync' event; isWaiting() says whether someone waits for runs to end
 *  (then runs in flight keep the process alive). */
function onSync(sink, isWaiting) {
  syncSinks.add(sink);
  waiting = isWaiting;
}

/** sink(name, detail) gets every event of the dispatchers ("sync", "smartstoreChanged"). */
function onEvent(sink) {
  eventSinks.add(sink);
}

/** Listeners came or went: runs in flight keep the process alive or stop doing so. */
function updateKeepAlive() {
  for (const plugin of plugins.values()) if (!plugin.freed) plugin.updateKeepAlive();
}

function isStoreConfig(value) {
  if (typeof value === 'boolean') return true;
  return value !== null && typeof value === 'object' && !Array.isArray(value) &&
    ('isGlobalStore' in value || 'storeName' in value);
}

const KEY_IN_CONFIG = 'storeConfig takes no key here: register it with setEncryptionKeyProvider(), or use openStore({key})';

/** [storeConfig, rest]: a leading object with isGlobalStore/storeName, a bare boolean, or null /
 *  undefined when more than `arity` arguments follow it (the default user store, as the plugin
 *  reads a missing storeConfig). */
function splitConfig(args, arity = Infinity) {
  if (args.length > arity && args[0] == null) return [normalizeConfig(undefined), args.slice(1)];
  if (args.length && isStoreConfig(args[0])) {
    const config = normalizeConfig(args[0]);
    if (typeof args[0] === 'object' && ('key' in args[0] || 'kdfIter' in args[0])) config.keyInConfig = true;
    return [config, args.slice(1)];
  }
  return [normalizeConfig(undefined), args];
}

// The host's key provider (the SDK's encryption key block): the plugin's JS never passes a key.
let keyProvider = null;

/** fn({storeName, isGlobalStore, root}) -> key string, {key, kdfIter}, or null / undefined for a
 *  plaintext store (may return a promise). null removes the provider. */
function setEncryptionKeyProvider(fn) {
  if (fn !== null && fn !== undefined && typeof fn !== 'function') throw new TypeError('the encryption key provider must be a function or null');
  keyProvider = fn || null;
  for (const plugin of plugins.values()) if (!plugin.freed) plugin.setKeyProvider(keyProvider);
}

/** The args object of a call: the action's fields and the storeConfig's (none for the calls
 *  that name no store). */
function argsOf(fields, config) {
  if (!config) return fields;
  if (config.keyInConfig) throw syncStoreError(STATUS.ARGUMENT, KEY_IN_CONFIG);
  return { ...fields, isGlobalStore: config.isGlobalStore, storeName: config.storeName };
}

/**
 * Sends one action to the dispatcher: fields is the action's args object, config the storeConfig
 * (null for the calls that name no store). Resolves with the answer (undefined when there is
 * none), rejects with an Error carrying the plugin's message, .code and .status.
 */
async function invoke(service, action, fields, config) {
  const { status, value } = await pluginFor().exec(service, action, [argsOf(fields, config)]);
  if (status !== 0) throw syncStoreError(status, typeof value === 'string' ? value : JSON.stringify(value), retryable(status));
  return value;
}

// The plugin's JS log level: 'debug' and 'verbose' trace every call and its outcome.
const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'verbose'];
let logLevel = 'info';

function setLogLevel(level) {
  if (!LOG_LEVELS.includes(level)) throw syncStoreError(STATUS.ARGUMENT, `log level must be one of ${LOG_LEVELS.join(', ')}`);
  logLevel = level;
}

const getLogLevel = () => logLevel;

function trace(name, outcome) {
  if (LOG_LEVELS.indexOf(logLevel) >= LOG_LEVELS.indexOf('debug')) console.debug(`syncstore: ${name} ${outcome}`);
}

/** Runs callbacks outside promise chains, so a throwing callback is an ordinary uncaught error. */
function later(fn, ...args) {
  if (typeof fn === 'function') queueMicrotask(() => fn(...args));
}

function message(error) {
  return error && error.message !== undefined ? error.message : String(error);
}

function toError(error) {
  if (error instanceof Error) return error;
  return syncStoreError(STATUS.INTERNAL, message(error));
}

/**
 * Makes the callback face and the promise face of one operation. impl(config, ...args) returns
 * a promise; the Cordova function takes ([storeConfig,] ...args, success, error) with `arity`
 * args, the promise function ([storeConfig,] ...args).
 */
function operation(name, impl, arity, { withConfig = true } = {}) {
  const split = (args) => (withConfig ? splitConfig(args, arity) : [null, args]);
  const run = (config, args) => {
    let promise;
    try { promise = Promise.resolve(impl(config, ...args)); } catch (error) { promise = Promise.reject(error); }
    if (logLevel === 'debug' || logLevel === 'verbose') {
      trace(name, 'called');
      promise.then(() => trace(name, 'succeeded'), (error) => trace(name, `failed: ${message(error)}`));
    }
    return promise;
  };
  const callbackFace = (...all) => {
    const [config, rest] = split(all);
    const args = rest.slice(0, arity);
    const success = rest[arity], failure = rest[arity + 1];
    // No value: success() with no argument, as the plugin's bare success reaches Cordova JS.
    run(config, args).then((value) => (value === undefined ? later(success) : later(success, value)), (error) => later(failure, message(error)));
  };
  const promiseFace = (...all) => {
    const [config, rest] = split(all);
    return run(config, rest.slice(0, arity)).catch((error) => { throw toError(error); });
  };
  return [callbackFace, promiseFace];
}

/** A face of a function whose last arguments may be left out (addSoupListener's soupName, startLiveSync's options):
 *  the arguments before the first function (the callbacks) are padded to the function's count,
 *  after the storeConfig when one leads them. */
function withOptionalArgs(fn, face) {
  if (fn.required === fn.args.length || !fn.storeConfig) return face;
  return (...all) => {
    const k = all.findIndex((a) => typeof a === 'function');
    const given = k < 0 ? all : all.slice(0, k);
    const callbacks = k < 0 ? [] : all.slice(k);
    const leads = given.length > fn.args.length || (given.length > 0 && isStoreConfig(given[0]));
    const config = leads ? given[0] : null;
    const args = leads ? given.slice(1) : given;
    while (args.length < fn.args.length) args.push(undefined);
    // A leading null before the arguments and callbacks stands for the default store.
    return face(config ?? null, ...args, ...callbacks);
  };
}

// ---- Node extras that need a store handle of their own (not plugin actions) ----

const extraStores = new Map(); // root + slot -> Promise<Store>

/** A store handle beside the dispatcher's (same store, same key) for loadStoreConfig,
 *  loadSyncConfig and registerTarget; kept open (a custom target lives with its handle). */
function extraStore(config) {
  if (config.keyInConfig) return Promise.reject(syncStoreError(STATUS.ARGUMENT, KEY_IN_CONFIG));
  const root = getRoot();
  const slot = JSON.stringify([root, config.isGlobalStore, config.storeName ?? 'smartstore']);
  let promise = extraStores.get(slot);
  if (!promise) {
    promise = (async () => {
      const storeConfig = { storeName: config.storeName ?? 'smartstore', isGlobalStore: config.isGlobalStore };
      let key = {};
      if (keyProvider) {
        const given = await keyProvider({ ...storeConfig, root });
        if (typeof given === 'string') key = { key: given };
        else if (given && typeof given === 'object') key = { key: given.key, kdfIter: given.kdfIter };
      }
      return openStore({ ...storeConfig, root, ...key });
    })();
    extraStores.set(slot, promise);
    promise.catch(() => { if (extraStores.get(slot) === promise) extraStores.delete(slot); });
  }
  return promise.then((store) => {
    if (!store.closed) return store;
    extraStores.delete(slot);
    return extraStore(config);
  });
}

/** Closes the extra handles of the stores matching filter({isGlobalStore, storeName}) (before
 *  they are removed). */
async function closeExtraStores(filter) {
  const closing = [];
  for (const [slot, promise] of extraStores) {
    const [root, isGlobalStore, storeName] = JSON.parse(slot);
    if (root !== getRoot() || !filter({ isGlobalStore, storeName })) continue;
    extraStores.delete(slot);
    closing.push(promise.then((store) => store.close(), () => {}));
  }
  await Promise.all(closing);
}

module.exports = {
  pluginFor, onSync, onEvent, updateKeepAlive, argsOf, invoke, splitConfig, operation, withOptionalArgs, later, message, toError, isStoreConfig,
  setLogLevel, getLogLevel, setEncryptionKeyProvider, extraStore, closeExtraStores,
};
