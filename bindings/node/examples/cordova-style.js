// Cordova-style: the plugin's smartstore and mobilesync, callbacks and 'sync' events.
const { smartstore, mobilesync } = require('syncstore');

const remote = { instanceUrl: process.env.SF_INSTANCE_URL, accessToken: process.env.SF_ACCESS_TOKEN };
const fail = (message) => { console.error(message); process.exitCode = 1; };

mobilesync.on('sync', (detail) => {
  console.log(`sync ${detail._soupEntryId} ${detail.status} ${detail.progress}%`);
  if (detail.status !== 'DONE') return;
  const spec = smartstore.buildLikeQuerySpec('LastName', 'A%', 'ascending', 5);
  smartstore.querySoup('contacts', spec, (cursor) => {
    console.log(`${cursor.totalEntries} contacts named A..., first page:`,
      cursor.currentPageOrderedEntries.map((c) => c.LastName));
    smartstore.closeCursor(cursor);
  }, fail);
});

smartstore.registerSoup('contacts', [
  { path: 'Id', type: 'string' },
  { path: 'LastName', type: 'string' },
  { path: '__local__', type: 'string' },
], () => {
  mobilesync.setRemote(remote, () => {
    const started = (state) => console.log(`started sync ${state._soupEntryId}: ${state.status}`);
    // The first run creates the named sync; later runs run it again (only what changed since).
    mobilesync.getSyncStatus('contactsDown', (existing) => {
      if (existing) return mobilesync.reSync('contactsDown', started, fail);
      mobilesync.syncDown(
        { type: 'soql', query: 'SELECT Id, FirstName, LastName FROM Contact' },
        'contacts',
        { mergeMode: mobilesync.MERGE_MODE.OVERWRITE },
        'contactsDown',
        started,
        fail);
    }, fail);
  }, fail);
}, fail);
