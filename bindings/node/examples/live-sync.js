// Live sync: the store's named syncs run by themselves; a local edit reaches the server once
// writes pause for the debounce, and an unreachable server is "offline" until the next attempt.
const { openStore } = require('syncstore');

async function main() {
  const store = await openStore({ storeName: 'field' });
  await store.registerSoup('contacts', [
    { path: 'Id', type: 'string' },
    { path: 'LastName', type: 'string' },
    { path: '__local__', type: 'string' },
  ]);
  await store.setRemote({ instanceUrl: process.env.SF_INSTANCE_URL, accessToken: process.env.SF_ACCESS_TOKEN });
  if (!await store.hasSyncWithName('contacts-down')) { // named syncs, made once: live sync runs them
    await store.createSyncUp(null, 'contacts', { fieldlist: ['LastName'] }, 'contacts-up');
    await store.createSyncDown({ type: 'soql', query: 'SELECT Id, LastName FROM Contact' }, 'contacts', null, 'contacts-down');
  }

  // keepAlive: this process syncs until stop(); without it live sync lets the process exit.
  const live = store.startLiveSync({ debounceMs: 200, keepAlive: true });
  live.on('state', (event) => console.log(`live sync: ${event.state}` +
    (event.state === 'offline' ? ` (next attempt in ${event.nextRetryAt - Date.now()} ms: ${event.error})` : '')));
  live.on('run', (state) => { if (state.status !== 'RUNNING') console.log(`  ${state.name}: ${state.status}`); });
  for await (const event of live) if (event.state === 'live') break; // caught up: pushed, then pulled

  // A local edit: no sync call, live sync pushes it after the debounce.
  const pushed = new Promise((resolve) => live.on('run', (state) => {
    if (state.name === 'contacts-up' && state.status === 'DONE') resolve();
  }));
  await store.upsert('contacts', [{ attributes: { type: 'Contact' }, LastName: 'Hopper',
    __local__: true, __locally_created__: true }]);
  await pushed;
  console.log(`still dirty: ${(await store.find('contacts', { queryType: 'exact', indexPath: '__local__', matchKey: 'true' })).length}`);

  await live.stop();
  await store.close();
}

main().catch((error) => { console.error(error.code, error.message); process.exitCode = 1; });
