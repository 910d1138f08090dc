// Encrypted stores: open with a key, change it, and give the Cordova face its keys.
const { openStore, removeStore, smartstore, setEncryptionKeyProvider } = require('syncstore');

// From where the app keeps secrets (a keychain, a secrets manager); never from source code.
const key = process.env.NOTES_KEY;
const nextKey = process.env.NOTES_NEXT_KEY;

async function main() {
  if (!key || !nextKey) throw new Error('set NOTES_KEY and NOTES_NEXT_KEY');
  await removeStore({ storeName: 'notes' }).catch(() => {}); // a fresh store for this example

  const store = await openStore({ storeName: 'notes', key });
  await store.registerSoup('notes', [{ path: 'title', type: 'string' }]);
  await store.upsert('notes', [{ title: 'salary review', body: 'confidential' }]);
  await store.close();

  await openStore({ storeName: 'notes', key: 'a guess' })
    .catch((error) => console.log(`wrong key: ${error.code}`)); // SYNCSTORE_ERR_AUTH

  // A new key, atomically, every entry kept; the old key stops working.
  const again = await openStore({ storeName: 'notes', key });
  await again.changeKey(nextKey);
  await again.close();

  // The Cordova face takes no key: it asks this provider whenever it opens a store.
  setEncryptionKeyProvider(({ storeName }) => (storeName === 'notes' ? nextKey : null));
  const spec = smartstore.buildAllQuerySpec('title');
  smartstore.querySoup({ storeName: 'notes' }, 'notes', spec, (cursor) => {
    console.log(`${cursor.totalEntries} note: ${cursor.currentPageOrderedEntries[0].body}`);
  }, (message) => { console.error(message); process.exitCode = 1; });
}

main().catch((error) => { console.error(error.code, error.message); process.exitCode = 1; });
