'use strict';
// Child of test/cordova-bridge.test.js: starts a sync down through the bridge and returns. With a
// 'sync' listener on the document ("listen") the run keeps the process alive until its end,
// which it prints; without one ("forget") the process exits at once and the exit stops the run.
// "clean": after the sync, a cleanResyncGhosts whose answer (from the sync thread) is awaited
// keeps the process alive until it comes.
const path = require('node:path');
const bridge = require(path.resolve(__dirname, '..', 'cordova'));

const [root, url, token, mode] = process.argv.slice(2);
const cordova = bridge.create({ root, remote: { instanceUrl: url, accessToken: token } });
if (mode === 'listen') {
  cordova.document.addEventListener('sync', (event) => {
    if (event.detail.status !== 'RUNNING') process.stdout.write(`${event.detail.status}\n`);
  });
}
const fail = (message) => { console.error(message); process.exitCode = 2; };
if (mode === 'clean') {
  cordova.exec(() => {}, fail, 'com.salesforce.smartstore', 'pgRegisterSoup', [{ soupName: 'c', indexes: [{ path: 'Id', type: 'string' }] }]);
  cordova.plugin.runToEnd('syncDown', [{ soupName: 'c', target: { type: 'soql', query: 'SELECT Id, LastModifiedDate FROM Contact' }, options: {} }])
    .then(({ value }) => {
      process.stdout.write(`${value.status}\n`);
      cordova.exec((count) => process.stdout.write(`removed ${count}\n`), fail, 'com.salesforce.mobilesync', 'cleanResyncGhosts', [{ syncId: value._soupEntryId }]);
    });
  return;
}
cordova.exec(() => {}, fail, 'com.salesforce.smartstore', 'pgRegisterSoup', [{ soupName: 'c', indexes: [{ path: 'Id', type: 'string' }] }]);
cordova.exec((state) => process.stdout.write(`${state.status}\n`), fail, 'com.salesforce.mobilesync', 'syncDown',
  [{ soupName: 'c', target: { type: 'soql', query: 'SELECT Id, LastModifiedDate FROM Contact' }, options: { mergeMode: 'OVERWRITE' }, syncName: 'd' }]);
