'use strict';
// What the Cordova plugin's JS layer does around its native calls: the optional leading
// storeConfig, (success, error) callbacks, and one open store per storeConfig.
const { STATUS, syncStoreError } = require('./native');
const { openStore, normalizeConfig } = require('./store');
const { getRoot } = require('./root');

const stores = new Map(); // keyOf(config, root) -> Promise<Store>

function keyOf(config, root = getRoot()) {
  return JSON.stringify([root, config.isGlobalStore, config.storeName ?? 'smartstore']);
}

function isStoreConfig(value) {
  if (typeof value === 'boolean') return true;
  return value !== null && typeof value === 'object' && !Array.isArray(value) &&
    ('isGlobalStore' in value || 'storeName' in value);
}

// Marks a storeConfig that carried `key` / `kdfIter`: this face takes keys from the provider only.
const KEY_IN_CONFIG = Symbol('key in storeConfig');

/** [storeConfig, rest]: a leading object with isGlobalStore/storeName, or a bare boolean. */
function splitConfig(args) {
  if (args.length && isStoreConfig(args[0])) {
    const config = normalizeConfig(args[0]);
    if (typeof args[0] === 'object' && ('key' in args[0] || 'kdfIter' in args[0])) config[KEY_IN_CONFIG] = true;
    return [config, args.slice(1)];
  }
  return [normalizeConfig(undefined), args];
}

// The host's key provider (the SDK's encryption key block / setEncryptionKeyGenerator): the
// plugin's JS never passes a key, so every open of this face asks it.
let keyProvider = null;

/** fn({storeName, isGlobalStore, root}) -> key string, {key, kdfIter}, or null / undefined for a
 *  plaintext store (may return a promise). null removes the provider. */
function setEncryptionKeyProvider(fn) {
  if (fn !== null && fn !== undefined && typeof fn !== 'function') throw new TypeError('the encryption key provider must be a function or null');
  keyProvider = fn || null;
}

/** {key?, kdfIter?} for openStore; the engine checks them. The provided value is never put in
 *  a message. */
async function providedKey(config, root) {
  if (!keyProvider) return {};
  const given = await keyProvider({ storeName: config.storeName ?? 'smartstore', isGlobalStore: config.isGlobalStore, root });
  if (given === null || given === undefined) return {};
  if (typeof given === 'string') return { key: given };
  if (typeof given === 'object' && !Array.isArray(given)) return { key: given.key, kdfIter: given.kdfIter };
  throw syncStoreError(STATUS.ARGUMENT, 'the encryption key provider must return a string, {key, kdfIter}, null or undefined');
}

async function openWithProvidedKey(config, root) {
  return openStore({ storeName: config.storeName, isGlobalStore: config.isGlobalStore, root, ...await providedKey(config, root) });
}

async function getStore(config) {
  if (config[KEY_IN_CONFIG]) {
    throw syncStoreError(STATUS.ARGUMENT, 'storeConfig takes no key here: register it with setEncryptionKeyProvider(), or use openStore({key})');
  }
  const root = getRoot();
  const slot = keyOf(config, root);
  let promise = stores.get(slot);
  if (promise) {
    const store = await promise.catch(() => null);
    if (store && !store.closed) return store;
    if (stores.get(slot) === promise) stores.delete(slot); // failed or closed: open again
  }
  promise = stores.get(slot) || openWithProvidedKey(config, root);
  stores.set(slot, promise);
  promise.catch(() => { if (stores.get(slot) === promise) stores.delete(slot); });
  return promise;
}

/** Closes the cached handles matching filter(config) (before a store is removed). */
async function closeStores(filter) {
  const closing = [];
  for (const [key, promise] of stores) {
    const [root, isGlobalStore, storeName] = JSON.parse(key);
    if (root !== getRoot() || !filter({ isGlobalStore, storeName })) continue;
    stores.delete(key);
    closing.push(promise.then((store) => store.close(), () => {}));
  }
  await Promise.all(closing);
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
  const split = (args) => (withConfig ? splitConfig(args) : [null, args]);
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
    run(config, args).then((value) => later(success, value), (error) => later(failure, message(error)));
  };
  const promiseFace = (...all) => {
    const [config, rest] = split(all);
    return run(config, rest.slice(0, arity)).catch((error) => { throw toError(error); });
  };
  return [callbackFace, promiseFace];
}

module.exports = { splitConfig, getStore, closeStores, operation, later, message, toError, isStoreConfig, setLogLevel, getLogLevel, setEncryptionKeyProvider };
