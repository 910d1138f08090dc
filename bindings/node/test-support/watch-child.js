'use strict';
// Child of test/watch.test.js. Variants:
//   idle       watches a soup and a query, hears a write,
//              then returns with watches and the store open: the process must exit on its own.
//   keepAlive  a watch made with keepAlive holds the process until it is closed (300 ms after it
//              heard a write); prints how long it stayed.
//   write      writes one entry to the store and exits (another process's commit).
const path = require('node:path');
const { openStore } = require(path.resolve(__dirname, '..'));

const [root, variant] = process.argv.slice(2);

(async () => {
  const store = await openStore({ storeName: 'watched', root });
  if (variant === 'write') {
    await store.upsert('things', [{ name: 'from another process' }]);
    await store.close();
    return;
  }
  await store.registerSoup('things', [{ path: 'name', type: 'string' }]);
  if (variant === 'idle') {
    // Watches left open at the end: a 'change' listener, and a query's.
    const soup = store.watchSoup('things');
    soup.on('change', () => {});
    store.watch('things', { queryType: 'range', indexPath: 'name', order: 'ascending', pageSize: 5 });
    // One iterated until it hears the write (an iteration holds the process while it waits).
    const waiter = store.watchSoup('things');
    await Promise.all([soup.ready, waiter.ready]);
    await store.upsert('things', [{ name: 'a' }]);
    for await (const notice of waiter) if (notice.soups[0].inserted.count === 1) break;
    process.stdout.write('heard\n');
    return; // the store and two watches stay open
  }
  if (variant === 'keepAlive') {
    const watch = store.watchSoup('things', { keepAlive: true });
    const started = Date.now();
    watch.once('change', () => {
      setTimeout(() => { watch.close(); process.stdout.write('closed\n'); }, 300).unref();
    });
    process.on('exit', () => process.stdout.write(`alive ${Date.now() - started}\n`));
    await watch.ready;
    await store.upsert('things', [{ name: 'a' }]);
  }
})().catch((error) => { console.error(error); process.exitCode = 2; });
