'use strict';
// The addon and libsyncstore, loaded once per JS environment. Every store call goes through
// call(): the addon runs it off the JS thread (src/lane.c) and settles a promise with JSON text.
const fs = require('node:fs');
const path = require('node:path');

const STATUS = Object.freeze({
  OK: 0, ARGUMENT: 1, NOT_FOUND: 2, EXISTS: 3, BUSY: 4, NETWORK: 5, AUTH: 6, SERVER: 7,
  CONFLICT: 8, STORAGE: 9, INTERNAL: 10, STATE: 11,
});

const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k === 'OK' ? 'SYNCSTORE_OK' : `SYNCSTORE_ERR_${k}`]));

// An Error shaped like the addon's: .code (status name), .status (number), .retryable.
function syncStoreError(status, message, retryable = false) {
  const error = new Error(message);
  error.code = STATUS_NAMES[status] || 'SYNCSTORE_ERR_INTERNAL';
  error.status = status;
  error.retryable = retryable;
  return error;
}

const REPO = path.resolve(__dirname, '..', '..', '..');
const LIBRARY = 'libsyncstore.so.1';
const BUILD = `bash ${path.join(REPO, 'scripts', 'build-node.sh')}`;

function loadAddon() {
  const file = path.join(__dirname, '..', 'build', 'syncstore.node');
  if (!fs.existsSync(file)) {
    throw syncStoreError(STATUS.STATE, `the SyncStore Node addon is not built (no ${file}): run ${BUILD}`);
  }
  return require(file);
}

const addon = loadAddon();

/** Where libsyncstore is looked for, in order: $SYNCSTORE_LIB alone when set, else the
 *  repository's build/lib, else the system loader path. [place, what dlopen gets] pairs. */
function libraryPlaces() {
  if (process.env.SYNCSTORE_LIB) return [[`$SYNCSTORE_LIB (${process.env.SYNCSTORE_LIB})`, process.env.SYNCSTORE_LIB]];
  const inRepo = path.join(REPO, 'build', 'lib', LIBRARY);
  return [[inRepo, inRepo], ['the system loader path (LD_LIBRARY_PATH, /etc/ld.so.cache, /lib, /usr/lib)', LIBRARY]];
}

/** Loads the library from the first place that has it; otherwise a STATE error naming every
 *  place looked at, why each failed, and the command that builds it. */
function loadLibrary() {
  const failures = process.env.SYNCSTORE_LIB ? [] : ['$SYNCSTORE_LIB: not set'];
  for (const [place, file] of libraryPlaces()) {
    if (file.includes('/') && !fs.existsSync(file)) {
      failures.push(`${place}: no such file`);
      continue;
    }
    try {
      return addon.load(file);
    } catch (error) {
      failures.push(`${place}: ${error.message}`);
    }
  }
  const inRepo = path.join(REPO, 'build', 'lib', LIBRARY);
  const fix = process.env.SYNCSTORE_LIB
    ? `Point SYNCSTORE_LIB at a built ${LIBRARY}, or unset it to load ${inRepo} (${BUILD} builds it).`
    : `Build it with ${BUILD} (the CMake release build, into ${path.dirname(inRepo)}), or set SYNCSTORE_LIB to a built ${LIBRARY}.`;
  throw syncStoreError(STATUS.STATE, `cannot load libsyncstore (${LIBRARY}); looked in:\n  ${failures.join('\n  ')}\n${fix}`);
}

const version = loadLibrary();

// Mirrors the operation numbers of src/calls.c.
const OP = Object.freeze({
  OPEN: 0, CLOSE: 1, LIST_STORES: 2, REMOVE_STORE: 3, REMOVE_ALL_STORES: 4, DB_SIZE: 5,
  LOAD_STORE_CONFIG: 6, REGISTER_SOUP: 7, SOUP_EXISTS: 8, REMOVE_SOUP: 9, CLEAR_SOUP: 10,
  GET_INDEX_SPECS: 11, ALTER_SOUP: 12, REINDEX_SOUP: 13, UPSERT: 14, RETRIEVE: 15,
  REMOVE_ENTRIES: 16, REMOVE_BY_QUERY: 17, QUERY_SOUP: 18, SMART_QUERY: 19, MOVE_CURSOR: 20,
  CLOSE_CURSOR: 21, SET_REMOTE: 22, CREATE_SYNC_DOWN: 23, CREATE_SYNC_UP: 24,
  GET_SYNC_STATUS: 25, GET_SYNC_STATUS_BY_NAME: 26, DELETE_SYNC: 27, DELETE_SYNC_BY_NAME: 28,
  STOP_SYNCS: 29, LOAD_SYNC_CONFIG: 30, QUERY_PAGE: 31, CHANGE_KEY: 32,
});

// Mirrors the sync start operations of src/sync.c.
const SYNC_OP = Object.freeze({ DOWN: 0, UP: 1, RESYNC: 2, RESYNC_BY_NAME: 3, CLEAN_GHOSTS: 4, RESTART: 5 });

// JSON text for the C ABI: strings pass as they are (already JSON), null/undefined stay null.
function json(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value);
  } catch (error) {
    throw syncStoreError(STATUS.ARGUMENT, `cannot be converted to JSON: ${error.message}`);
  }
}

function call(op, handle, s0 = null, s1 = null, s2 = null, s3 = null, i0 = 0, i1 = 0) {
  try {
    return addon.call(op, handle, s0, s1, s2, s3, i0, i1);
  } catch (error) {
    return Promise.reject(error); // argument errors settle like engine errors
  }
}

async function callJson(...args) {
  const text = await call(...args);
  return text == null ? null : JSON.parse(text);
}

// Stores of this environment close when it exits, so engine threads never outlive it.
process.once('exit', () => addon.shutdown());

module.exports = { addon, version, OP, SYNC_OP, STATUS, syncStoreError, json, call, callJson };
