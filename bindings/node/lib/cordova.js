'use strict';
// What the Cordova plugin's JS layer does around its native calls: the optional leading
// storeConfig, (success, error) callbacks, and one open store per storeConfig.
const { STATUS, syncStoreError } = require('./native');
const { openStore, normalizeConfig } = require('./store');
const { getRoot } = require('./root');

const stores = new Map(); // key -> Promise<Store>

function keyOf(config, root = getRoot()) {
  return JSON.stringify([root, config.isGlobalStore, config.storeName ?? 'smartstore']);
}

function isStoreConfig(value) {
  if (typeof value === 'boolean') return true;
  return value !== null && typeof value === 'object' && !Array.isArray(value) &&
    ('isGlobalStore' in value || 'storeName' in value);
}

/** [storeConfig, rest]: a leading object with isGlobalStore/storeName, or a bare boolean. */
function splitConfig(args) {
  if (args.length && isStoreConfig(args[0])) return [normalizeConfig(args[0]), args.slice(1)];
  return [normalizeConfig(undefined), args];
}

async function getStore(config) {
  const root = getRoot();
  const key = keyOf(config, root);
  let promise = stores.get(key);
  if (promise) {
    const store = await promise.catch(() => null);
    if (store && !store.closed) return store;
    if (stores.get(key) === promise) stores.delete(key); // failed or closed: open again
  }
  promise = stores.get(key) || openStore({ ...config, root });
  stores.set(key, promise);
  promise.catch(() => { if (stores.get(key) === promise) stores.delete(key); });
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

module.exports = { splitConfig, getStore, closeStores, operation, later, message, toError, isStoreConfig, setLogLevel, getLogLevel };
