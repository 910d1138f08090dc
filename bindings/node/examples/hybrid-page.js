// A hybrid page's code on Node, as it runs in a Cordova WebView: modules through cordova.define,
// calls through require('cordova/exec'), sync progress as document 'sync' events.
const cordova = require('syncstore/cordova');
cordova.configure({ remote: { instanceUrl: process.env.SF_INSTANCE_URL, accessToken: process.env.SF_ACCESS_TOKEN } });
cordova.install(); // globalThis.cordova, and a document (and navigator) where Node has none

cordova.define('app.store', (require, exports, module) => {
  const exec = require('cordova/exec');
  module.exports = (service, action, fields) => new Promise((resolve, reject) =>
    exec(resolve, reject, `com.salesforce.${service}`, action, [fields]));
});
const call = cordova.require('app.store');

document.addEventListener('sync', async (event) => {
  const { status, totalSize } = event.detail;
  if (status !== 'DONE') return;
  const cursor = await call('smartstore', 'pgQuerySoup', { soupName: 'contacts',
    querySpec: { queryType: 'range', indexPath: 'LastName', orderPath: 'LastName', order: 'ascending', pageSize: 3 } });
  console.log(`synced ${totalSize}; first: ${cursor.currentPageOrderedEntries.map((c) => c.LastName).join(', ')}`);
  await call('smartstore', 'pgCloseCursor', { cursorId: cursor.cursorId });
});

(async () => {
  await call('smartstore', 'pgRegisterSoup', { soupName: 'contacts',
    indexes: [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }] });
  const state = await call('mobilesync', 'syncDown', { soupName: 'contacts', syncName: null,
    target: { type: 'soql', query: 'SELECT Id, LastName, LastModifiedDate FROM Contact' }, options: { mergeMode: 'OVERWRITE' } });
  console.log(`sync ${state._soupEntryId}: ${state.status}`);
})().catch((message) => { console.error(message); process.exitCode = 1; });
