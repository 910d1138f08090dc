'use strict';
// Child of test/live-sync.test.js: starts live sync on a store whose remote is the dev server
// and returns with it running. The process must exit on its own with code 0 (the test checks):
// live sync does not keep it alive, and the close of its stores at exit stops it.
//   variant "iterate": an iteration holds the process until "live", then the script ends;
//   variant "keepAlive": keepAlive holds it until stop() (called once it is live).
const path = require('node:path');
const { openStore } = require(path.resolve(__dirname, '..'));

const [root, url, token, variant] = process.argv.slice(2);

(async () => {
  const store = await openStore({ storeName: 'live', root });
  await store.registerSoup('contacts', [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: '__local__', type: 'string' }]);
  await store.setRemote({ instanceUrl: url, accessToken: token });
  if (!await store.hasSyncWithName('up')) await store.createSyncUp(null, 'contacts', { fieldlist: ['LastName'] }, 'up');
  if (!await store.hasSyncWithName('down')) await store.createSyncDown({ type: 'soql', query: 'SELECT LastName FROM Contact' }, 'contacts', null, 'down');
  if (variant === 'keepAlive') {
    const live = store.startLiveSync({ debounceMs: 50, keepAlive: true });
    live.on('state', (event) => {
      if (event.state === 'live') live.stop().then(() => process.stdout.write(`stopped ${live.state}\n`));
    });
    await live.started;
    return; // keepAlive holds the process until the stop
  }
  const live = store.startLiveSync({ debounceMs: 50 });
  for await (const event of live) {
    if (event.state === 'live') break;
  }
  // A write that a sync up will push after the debounce: the process may end before it.
  await store.upsert('contacts', [{ attributes: { type: 'Contact' }, LastName: 'AtExit', __local__: true, __locally_created__: true }]);
  process.stdout.write(`live ${live.state}\n`);
})().catch((error) => { console.error(error); process.exitCode = 2; });
