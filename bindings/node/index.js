'use strict';
// SyncStore for Node: the Cordova plugin's smartstore / mobilesync API and a promise-first
// face (openStore), both thin over one N-API addon that calls libsyncstore's C ABI.
const { version, STATUS } = require('./lib/native');
const { openStore, listStores, removeStore, removeAllStores, Store } = require('./lib/store');
const { Cursor } = require('./lib/cursor');
const { SyncRun } = require('./lib/sync');
const { Watch } = require('./lib/watch');
const { LiveSync } = require('./lib/live');
const { getRoot, setRoot } = require('./lib/root');
const { smartstore, smartstoreClient } = require('./lib/smartstore');
const { setEncryptionKeyProvider } = require('./lib/cordova');
const { mobilesync, mobilesyncClient, MobileSync, createMobileSync, MERGE_MODE } = require('./lib/mobilesync');
const specs = require('./lib/querySpec');

module.exports = {
  // Cordova faces (callbacks) and their promise twins
  smartstore, mobilesync, smartstoreClient, mobilesyncClient, createMobileSync, MobileSync, MERGE_MODE,
  // promise-first face
  openStore, listStores, removeStore, removeAllStores, Store, Cursor, SyncRun, Watch, LiveSync,
  // root directory of stores: setRootDirectory(dir) > $SYNCSTORE_ROOT > per-user data dir
  setRootDirectory: setRoot, getRootDirectory: getRoot,
  // keys of encrypted stores the Cordova faces open: fn({storeName, isGlobalStore, root}) -> key
  setEncryptionKeyProvider,
  ...specs,
  STATUS, version,
};
