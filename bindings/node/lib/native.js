'use strict';
// The addon and libsyncstore, loaded once per JS environment. Every store call goes through
// call(): the addon runs it off the JS thread (src/lane.c) and settles a promise with JSON text.
const fs = require('node:fs');
const path = require('node:path');

// The error of a missing addon, which cannot ask it for codes: SYNCSTORE_ERR_STATE
// (Tests/c/check_abi_facts.py checks the pair against include/syncstore.h).
const ADDON_MISSING = { code: 'SYNCSTORE_ERR_STATE', status: 11 };

function addonMissing(message) {
  return Object.assign(new Error(message), ADDON_MISSING, { retryable: false });
}

const REPO = path.resolve(__dirname, '..', '..', '..');
const BUILD = `bash ${path.join(REPO, 'scripts', 'build-node.sh')}`;

function loadAddon() {
  const file = path.join(__dirname, '..', 'build', 'syncstore.node');
  if (!fs.existsSync(file)) {
    throw addonMissing(`the SyncStore Node addon is not built (no ${file}): run ${BUILD}`);
  }
  const loaded = require(file);
  // An addon built from older sources lacks what this JS takes from it (a pull without a rebuild).
  const missing = ['SONAME', 'STATUS', 'OP', 'SYNC_OP', 'statusName', 'load', 'storeClosed', 'queryPageSync', 'pluginApi', 'liveStart'].filter((name) => loaded[name] === undefined);
  if (missing.length) {
    throw addonMissing(`the SyncStore Node addon (${file}) was built from older sources (it has no ${missing.join(', ')}): run ${BUILD}`);
  }
  return loaded;
}

const addon = loadAddon();

// Status codes by name ({ARGUMENT: 1, ...}), from the header the addon was compiled with.
const STATUS = addon.STATUS;

// An Error shaped like the addon's: .code (the library's name of the status), .status, .retryable.
function syncStoreError(status, message, retryable = false) {
  const error = new Error(message);
  error.code = addon.statusName(status);
  error.status = status;
  error.retryable = retryable;
  return error;
}

// The library's file name ("libsyncstore.so.1"), from the header's SYNCSTORE_ABI_VERSION.
const LIBRARY = addon.SONAME;

/** Where libsyncstore is looked for, in order: $SYNCSTORE_LIB alone when set, else the copy
 *  packed beside the addon (the npm tarball of scripts/release.sh carries one), else the
 *  repository's build/lib, else the system loader path. [place, what dlopen gets] pairs. */
function libraryPlaces() {
  if (process.env.SYNCSTORE_LIB) return [[`$SYNCSTORE_LIB (${process.env.SYNCSTORE_LIB})`, process.env.SYNCSTORE_LIB]];
  const packed = path.join(__dirname, '..', 'build', LIBRARY);
  if (fs.existsSync(packed)) return [[packed, packed]];
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

// Operation numbers of src/calls.c (store calls) and src/sync.c (sync runs), exported by the addon.
const { OP, SYNC_OP } = addon;

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
