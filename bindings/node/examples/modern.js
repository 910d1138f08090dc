// Promise-first: open a store, write, page through a query, sync down and up.
const { openStore, buildAllQuerySpec } = require('syncstore');

async function main() {
  const store = await openStore({ storeName: 'crm' });
  await store.registerSoup('contacts', [
    { path: 'Id', type: 'string' },
    { path: 'LastName', type: 'string' },
    { path: '__local__', type: 'string' },
  ]);
  await store.setRemote({ instanceUrl: process.env.SF_INSTANCE_URL, accessToken: process.env.SF_ACCESS_TOKEN });

  const down = store.syncDown({ type: 'soql', query: 'SELECT Id, LastName FROM Contact' }, 'contacts');
  down.on('progress', (state) => console.log(`down ${state.status} ${state.progress}%`));
  console.log(`synced down ${(await down.done).totalSize} records`);

  // An offline edit: flag it, then push it.
  await store.upsert('contacts', [{ attributes: { type: 'Contact' }, LastName: 'Lovelace',
    __local__: true, __locally_created__: true }]);
  const up = await store.syncUp(null, 'contacts', { fieldlist: ['LastName'] }).done;
  console.log(`sync up ${up.status}`);

  let pages = 0;
  for await (const page of store.pages('contacts', buildAllQuerySpec('LastName', 'ascending', 100))) {
    pages += 1;
    if (pages === 1) console.log('first:', page[0].LastName);
  }
  console.log(`${pages} pages`);
  await store.close();
}

main().catch((error) => { console.error(error.code, error.message); process.exitCode = 1; });
