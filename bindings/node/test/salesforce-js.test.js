'use strict';
// Opt-in: Salesforce's own hybrid JavaScript, unmodified, through the Cordova bridge against a
// dev server: examples/hybrid-node (a page of app code of our own) loaded with the user's copies
// of cordova.force.js, force.js, force+promise.js, mobilesync.js, Backbone and underscore from
// $SYNCSTORE_SFJS_DIR. SyncStore does not ship those files, so without the variable the test is
// skipped (see examples/hybrid-node/README.md for where the files come from).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { REPO, tempRoot, startDevServer } = require('../test-support/helpers');

const DIR = process.env.SYNCSTORE_SFJS_DIR;
const EXAMPLE = path.join(REPO, 'examples', 'hybrid-node', 'index.js');
const SKIP = DIR ? false : 'set SYNCSTORE_SFJS_DIR to a directory holding Salesforce\'s cordova.force.js, force.js, force+promise.js, '
  + 'mobilesync.js, backbone.js and underscore.js to run it (examples/hybrid-node/README.md)';

function runExample(env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [EXAMPLE], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

test("Salesforce's hybrid JavaScript runs on Node through the bridge (examples/hybrid-node)", { skip: SKIP, timeout: 90000 }, async (t) => {
  const server = await startDevServer(t, ['--seed', 'Contact=25,Account=5']);
  const { code, out, err } = await runExample({ ...process.env, SYNCSTORE_SFJS_DIR: DIR, SYNCSTORE_ROOT: tempRoot(t),
    SF_INSTANCE_URL: server.url, SF_ACCESS_TOKEN: server.token });
  const problems = err.split('\n').filter((line) => /hybrid-node:|Error/.test(line));
  assert.equal(code, 0, `the example failed:\n${problems.join('\n') || err.slice(-3000)}`);
  const report = JSON.parse(out.trim().split('\n').pop());
  assert.equal(report.loggedIn, true, 'force.login through the OAuth plugin once deviceready fired');

  const ss = report.smartstore;
  assert.equal(ss.soupExists, true);
  assert.equal(ss.upsertByTitleKeptId, true, 'upsertSoupEntriesWithExternalId updates the entry with that title');
  assert.deepEqual(ss.pagedTitles, ['Call Ada', 'Call Grace', 'Draft memo', 'Draft plan', 'Visit Alan']);
  assert.equal(ss.totalPages, 3);
  assert.deepEqual([ss.exact, ss.range, ss.like, ss.match], [1, 3, 2, 2]);
  assert.deepEqual(ss.smart, [5, 9]);
  assert.deepEqual(ss.retrieved, ['Call Ada', 'Call Grace']);
  assert.equal(ss.afterRemoves, 2, 'removeFromSoup by ids and by query spec');
  assert.deepEqual(ss.indexPaths, ['title', 'priority', 'body', 'owner']);
  assert.equal(ss.afterClear, 0);
  assert.ok(ss.userStoreSize > 0 && ss.globalStoreSize > 0);
  assert.deepEqual(ss.userStores, ['offline', 'smartstore']);
  assert.deepEqual(ss.globalStores, ['smartstore']);
  assert.deepEqual(ss.userStoresAfterRemove, ['smartstore']);

  const ms = report.mobilesync;
  assert.equal(ms.downStarted, 'RUNNING', 'syncDown answers the state at its start');
  assert.deepEqual(ms.downDone, { status: 'DONE', progress: 100, totalSize: 25 });
  assert.equal(ms.contactsOnDevice, 25);
  assert.equal(ms.upDone, 'DONE');
  assert.deepEqual(ms.pushedNames, ['Created On Device', 'Edited On Device']);
  assert.equal(ms.reSyncById, 'DONE');
  assert.equal(ms.reSyncByName, 'DONE');
  assert.equal(ms.ghostsRemoved, 1, 'the contact deleted in the org leaves the device');
  assert.equal(ms.statusById, 'allContacts');
  assert.equal(ms.statusByName, true);
  assert.equal(ms.statusOfUnknown, null, 'getSyncStatus of an unknown sync gives null');
  assert.equal(ms.statusAfterDelete, null);
  assert.deepEqual(ms.eventsOfDown.filter((s) => s !== 'RUNNING'), ['DONE', 'DONE', 'DONE'], 'one DONE per run, none for cleanResyncGhosts');

  const rest = report.rest;
  assert.equal(rest.contacts, 25 + 1 - 1);
  assert.equal(rest.created, true);
  assert.equal(rest.retrieved, 'Hybrid Traders');
  assert.equal(rest.updated, 'Hybrid Traders Ltd');
  assert.match(rest.afterDelete, /404/);

  const bb = report.backbone;
  assert.equal(bb.savedId, true, 'Force.SObject save (server first) got an Id');
  assert.equal(bb.cachedAfterSave, 'Backbone Inc');
  assert.equal(bb.cacheFirst, 'Backbone Inc');
  assert.deepEqual(bb.localOnly, { local: true, server: 'Backbone Inc' }, 'a cache-only save stays on the device');
  assert.equal(bb.savedToServer, 'Backbone Local');
  assert.equal(bb.serverOnly, 'Backbone Local');
  assert.equal(bb.collectionFromServer, 6);
  assert.equal(bb.collectionFromCache, 6);
  assert.equal(bb.syncRemoteObjects, 'Backbone Local');
  assert.equal(bb.fetchSObjects, 6);
  assert.equal(bb.layout, true, 'Force.SObjectType describeLayout');
  assert.deepEqual(bb.destroyed, { cache: null, server: 'gone' });
});
