// Watching a store: a live query result and a soup's commits, told on the event loop.
const { openStore, removeStore, buildRangeQuerySpec } = require('syncstore');

async function main() {
  await removeStore({ storeName: 'tasks' }).catch(() => {}); // a fresh store for this example
  const store = await openStore({ storeName: 'tasks' });
  await store.registerSoup('tasks', [{ path: 'title', type: 'string' }, { path: 'due', type: 'integer' }]);

  // Every commit that touches the soup, and who made it.
  const commits = store.watchSoup('tasks');
  commits.on('change', ({ origin, soups: [tasks] }) => {
    console.log(`${origin.kind}: ${tasks.inserted.count} added, ${tasks.updated.count} updated, ${tasks.deleted.count} deleted`);
  });
  await commits.ready;

  // The tasks due within 5 days: the result at once, then each time it changes.
  const dueSoon = store.watch('tasks', buildRangeQuerySpec('due', 0, 5, 'ascending', 10, 'due'));
  await dueSoon.ready;

  // Writes through this handle and another one, as a second part of an app (or another process).
  const other = await openStore({ storeName: 'tasks' });
  const writes = (async () => {
    await store.upsert('tasks', [{ title: 'file taxes', due: 3 }, { title: 'water plants', due: 9 }]);
    await other.upsert('tasks', [{ title: 'call the bank', due: 1 }]);
  })();

  for await (const result of dueSoon) {
    const titles = result.currentPageOrderedEntries.map((task) => task.title);
    console.log(`${result.origin.kind}: ${result.totalEntries} due soon: ${titles.join(', ') || 'none'}`);
    if (result.totalEntries === 2) break; // leaving the loop closes the watch
  }
  await writes;
  await other.close();
  await store.close(); // closes the soup watch too
}

main().catch((error) => { console.error(error.code, error.message); process.exitCode = 1; });
