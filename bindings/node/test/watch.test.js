'use strict';
// Store#watchSoup and Store#watch: listeners whose notices reach JS on the event loop, as
// 'change' events and through async iteration, on real store files (include/syncstore.h,
// "Listeners"): own writes, another handle's, a sync run's (a custom target) and another
// process's; never a rolled-back one; nothing after close; the process not held open.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { openStore, Watch } = require('..');
const { addon } = require('../lib/native');
const { tempRoot } = require('../test-support/helpers');

const CHILD = path.join(__dirname, '..', 'test-support', 'watch-child.js');
const INDEXES = [{ path: 'name', type: 'string' }, { path: 'n', type: 'integer' }];


async function setup(t) {
  const root = tempRoot(t);
  const store = await openStore({ storeName: 'watched', root });
  t.after(() => store.close());
  await store.registerSoup('things', INDEXES);
  await store.registerSoup('others', INDEXES);
  return { root, store };
}

/** The next 'change' of a watch, or a failure after timeoutMs. */
function nextChange(watch, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { watch.off('change', on); reject(new Error(`no change within ${timeoutMs} ms`)); }, timeoutMs);
    const on = (notice) => { clearTimeout(timer); resolve(notice); };
    watch.once('change', on);
  });
}

const part = (notice, soup) => notice.soups.find((s) => s.soup === soup);

test('watchSoup: each commit once as a change event, with its origin; other soups and rolled-back writes are not heard', { timeout: 30000 }, async (t) => {
  const { root, store } = await setup(t);
  const watch = store.watchSoup('things');
  assert.ok(watch instanceof Watch);
  assert.equal(await watch.ready, watch);
  // Delivered through the handle's buffer: sent on the JS thread, not one hop per notice.
  assert.equal(addon.watchBuffered(store._rawHandle()), true);
  const seen = [];
  watch.on('change', (notice) => seen.push(notice));

  let got = nextChange(watch);
  const [a, b] = await store.upsert('things', [{ name: 'a', n: 1 }, { name: 'b', n: 2 }]);
  let notice = await got;
  assert.equal(notice.origin.kind, 'handle');
  assert.deepEqual(notice.soups.map((s) => s.soup), ['things']);
  assert.deepEqual(part(notice, 'things').inserted, { count: 2, ids: [a._soupEntryId, b._soupEntryId], cut: false });
  assert.equal(part(notice, 'things').updated.count, 0);

  // Another soup: not heard. A rolled-back write (its second entry is refused): not heard.
  await store.upsert('others', [{ name: 'elsewhere' }]);
  await assert.rejects(store.upsert('things', [{ name: 'c' }, 7]), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  // Another handle of this process: heard, as such. It is the next notice: nothing came between.
  const other = await openStore({ storeName: 'watched', root });
  t.after(() => other.close());
  got = nextChange(watch);
  await other.upsert('things', [{ ...a, n: 10 }]);
  notice = await got;
  assert.equal(notice.origin.kind, 'otherHandle');
  assert.deepEqual(part(notice, 'things').updated.ids, [a._soupEntryId]);
  assert.equal(part(notice, 'things').inserted.count, 0);

  got = nextChange(watch);
  await store.remove('things', [b._soupEntryId]);
  assert.deepEqual(part(await got, 'things').deleted.ids, [b._soupEntryId]);
  assert.equal(seen.length, 3);
  assert.ok(seen[0].sequence < seen[1].sequence && seen[1].sequence < seen[2].sequence);
  await watch.close();
  assert.equal(watch.closed, true);
});

test('watchSoup(null) hears every soup', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const watch = store.watchSoup(null);
  await watch.ready;
  const got = nextChange(watch);
  await store.upsert('others', [{ name: 'x' }]);
  assert.deepEqual((await got).soups.map((s) => s.soup), ['others']);
  const cleared = nextChange(watch);
  await store.clearSoup('things');
  assert.equal(part(await cleared, 'things').cleared, true);
});

test('for await: notices in order; close() ends the loop and no notice comes after it', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const watch = store.watchSoup('things');
  await watch.ready;
  const names = [];
  const loop = (async () => {
    for await (const notice of watch) {
      names.push(...part(notice, 'things').inserted.ids);
      if (names.length === 3) watch.close();
    }
    return 'ended';
  })();
  for (const name of ['a', 'b', 'c']) await store.upsert('things', [{ name }]);
  assert.equal(await loop, 'ended');
  assert.deepEqual(names, [1, 2, 3]);
  // Closed: a later write reaches no listener, and iterating a closed watch ends at once.
  let late = 0;
  watch.on('change', () => late++);
  await store.upsert('things', [{ name: 'late' }]);
  await sleep(200);
  assert.equal(late, 0);
  for await (const notice of watch) assert.fail(`a notice after close: ${JSON.stringify(notice)}`);
});

test('notices before the first consumer are kept for it', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const watch = store.watchSoup('things');
  await watch.ready;
  const [entry] = await store.upsert('things', [{ name: 'early' }]);
  await sleep(100); // told meanwhile, with nobody listening or iterating yet
  for await (const notice of watch) {
    assert.deepEqual(part(notice, 'things').inserted.ids, [entry._soupEntryId]);
    break;
  }
});

test('breaking out of for await closes the watch; the store\'s close ends the others', { timeout: 30000 }, async (t) => {
  const { root } = await setup(t);
  const store = await openStore({ storeName: 'watched', root });
  const first = store.watchSoup('things');
  const second = store.watchSoup('things');
  await Promise.all([first.ready, second.ready]);
  const closes = [];
  second.on('close', () => closes.push('second'));
  const secondHeard = nextChange(second);
  const ending = (async () => { for await (const notice of second) closes.push(notice.origin.kind); return 'ended'; })();
  const writing = store.upsert('things', [{ name: 'a' }]);
  for await (const notice of first) {
    assert.equal(notice.origin.kind, 'handle');
    break;
  }
  await writing;
  await secondHeard;
  assert.equal(first.closed, true);
  await store.close();
  assert.equal(await ending, 'ended');
  assert.equal(second.closed, true);
  assert.deepEqual(closes, ['handle', 'second']);
  // A watch of a closed store fails: 'error', ready rejects, iteration throws.
  const late = store.watchSoup('things');
  await assert.rejects(late.ready, { code: 'SYNCSTORE_ERR_STATE' });
  await assert.rejects((async () => { for await (const n of late) assert.fail(String(n)); })(), { code: 'SYNCSTORE_ERR_STATE' });
});

test('a watch that cannot be added: error event, ready rejects, iteration throws, and it closes', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const watch = store.watchSoup('missing');
  const error = await new Promise((resolve) => watch.once('error', resolve));
  assert.equal(error.code, 'SYNCSTORE_ERR_NOT_FOUND');
  assert.equal(watch.closed, true);
  await assert.rejects(watch.ready, { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  const iterated = store.watchSoup('missing');
  await assert.rejects((async () => { for await (const n of iterated) assert.fail(String(n)); })(), { code: 'SYNCSTORE_ERR_NOT_FOUND' });
  assert.throws(() => store.watchSoup(42), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.throws(() => store.watchSoup('things', { minIntervalMs: -1 }), { code: 'SYNCSTORE_ERR_ARGUMENT' });
  assert.throws(() => store.watch('things'), { code: 'SYNCSTORE_ERR_ARGUMENT' });
});

test('a sync run\'s writes are heard with origin "sync" and the sync\'s id', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const records = Array.from({ length: 30 }, (_, i) => ({ Id: `r${i}`, name: `n${i}`, LastModifiedDate: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }));
  await store.registerSoup('synced', [{ path: 'Id', type: 'string' }, { path: 'name', type: 'string' }]);
  // A custom target: the engine's worker thread writes its pages, as a sync down from a server.
  store.registerTarget('memory', {
    async fetchPage(target, sinceMs, continuation) {
      const start = continuation ? Number(continuation) : 0;
      const next = start + 10 < records.length ? String(start + 10) : undefined;
      return { records: records.slice(start, start + 10), totalSize: records.length, ...(next ? { next } : {}) };
    },
  });
  const watch = store.watchSoup('synced');
  await watch.ready;
  const notices = [];
  watch.on('change', (notice) => notices.push(notice));
  const state = await store.syncDown({ type: 'memory' }, 'synced', { mergeMode: 'OVERWRITE' }, 'memoryDown').done;
  assert.equal(state.status, 'DONE');
  // The last page's notice may still be on its way.
  const deadline = Date.now() + 5000;
  const inserted = () => notices.reduce((sum, n) => sum + (part(n, 'synced')?.inserted.count ?? 0), 0);
  while (inserted() < records.length && Date.now() < deadline) await sleep(10);
  assert.equal(inserted(), records.length);
  for (const notice of notices) {
    assert.equal(notice.origin.kind, 'sync');
    assert.equal(notice.origin.syncId, state._soupEntryId);
    assert.equal(notice.origin.syncName, 'memoryDown');
  }
});

test('another process\'s commit is heard', { timeout: 30000 }, async (t) => {
  const { root, store } = await setup(t);
  const watch = store.watchSoup('things');
  await watch.ready;
  const got = nextChange(watch, 10000);
  const result = await runChild(root, 'write');
  assert.equal(result.code, 0, result.err);
  const notice = await got;
  assert.equal(notice.origin.kind, 'otherProcess');
  assert.equal(part(notice, 'things').soup, 'things');
});

test('watch: the query\'s result at once, then each change of it', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  await store.upsert('things', [{ name: 'a', n: 1 }, { name: 'b', n: 5 }]);
  const spec = { queryType: 'range', indexPath: 'n', beginKey: 0, endKey: 3, order: 'ascending', orderPath: 'n', pageSize: 10 };
  const watch = store.watch('things', spec);
  const it = watch[Symbol.asyncIterator]();
  // The first notice, before any write (a write made while it waits would be merged into it).
  const { value: first } = await it.next();
  assert.equal(first.origin.kind, 'initial');
  assert.equal(first.commits, 0);
  assert.equal(first.totalEntries, 1);
  assert.deepEqual(first.currentPageOrderedEntries.map((e) => e.name), ['a']);
  // Outside the range: changes nothing of the result, so it is not heard; inside: heard.
  await store.upsert('things', [{ name: 'c', n: 9 }]);
  const [inside] = await store.upsert('things', [{ name: 'd', n: 2 }]);
  const { value: second } = await it.next();
  assert.equal(second.origin.kind, 'handle');
  assert.equal(second.totalEntries, 2);
  assert.deepEqual(second.added.ids, [inside._soupEntryId]);
  assert.deepEqual(second.currentPageOrderedEntries.map((e) => e.name), ['a', 'd']);
  await it.return();
  assert.equal(watch.closed, true); // leaving the iteration closed it
  // The spec may name its soup itself, and a Smart SQL spec needs none.
  const named = store.watch({ ...spec, soupName: 'things' });
  const smart = store.watch({ queryType: 'smart', smartSql: 'select count(*) from {things}', pageSize: 1 });
  for (const w of [named, smart]) {
    for await (const notice of w) {
      assert.equal(notice.origin.kind, 'initial');
      break;
    }
  }
  await assert.rejects(store.watch('things', { ...spec, queryType: 'sideways' }).ready, { code: 'SYNCSTORE_ERR_ARGUMENT' });
  await assert.rejects(store.watch({ queryType: 'smart', smartSql: 'delete from {things}' }).ready, { code: 'SYNCSTORE_ERR_ARGUMENT' });
  await assert.rejects(store.watch('missing', spec).ready, { code: 'SYNCSTORE_ERR_NOT_FOUND' });
});

test('minIntervalMs merges the commits made within it into one notice', { timeout: 30000 }, async (t) => {
  const { store } = await setup(t);
  const watch = store.watchSoup('things', { minIntervalMs: 300 });
  await watch.ready;
  const notices = [];
  watch.on('change', (notice) => notices.push(notice));
  for (let i = 0; i < 5; i++) await store.upsert('things', [{ name: `m${i}` }]);
  const deadline = Date.now() + 5000;
  const total = () => notices.reduce((sum, n) => sum + part(n, 'things').inserted.count, 0);
  while (total() < 5 && Date.now() < deadline) await sleep(20);
  assert.equal(total(), 5);
  assert.ok(notices.length < 5, `${notices.length} notices for 5 commits within 300 ms`);
  assert.equal(notices.reduce((sum, n) => sum + n.commits, 0), 5);
});

function runChild(root, variant) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, root, variant], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
    child.on('exit', (code, signal) => { clearTimeout(timer); resolve({ code, signal, out, err }); });
  });
}

test('a watch does not keep the process alive; one made with keepAlive does until it is closed', { timeout: 60000 }, async (t) => {
  const root = tempRoot(t);
  const idle = await runChild(root, 'idle');
  assert.deepEqual([idle.code, idle.signal, idle.out, idle.err], [0, null, 'heard\n', '']);
  const held = await runChild(tempRoot(t), 'keepAlive');
  assert.equal(held.code, 0, held.err);
  const match = /^closed\nalive (\d+)\n$/.exec(held.out);
  assert.ok(match, JSON.stringify(held));
  assert.ok(Number(match[1]) >= 300, held.out);
});
