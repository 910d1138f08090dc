'use strict';
// Benchmark (not a test): the Node module against C calling libsyncstore directly, same work.
//   upsert  100k Contact-like entries (3 string indexes) in batches of 1000, best of 3 rounds
//           (C and Node rounds alternate)
//   exact   10k exact queries on the indexed Id: store.find (one page, no cursor, async) and
//           store.findSync (the same on the JS thread) against syncstore_query_page in C,
//           store.query + cursor.close against the cursor calls in C; PAIRS runs of each
//           side in turn, medians printed
// Run: bash bindings/node/bench/run.sh [entries] [queries]  (builds the C side first).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { openStore, removeStore } = require('..');

const ENTRIES = Number(process.argv[2] || 100000);
const QUERIES = Number(process.argv[3] || 10000);
const BATCH = 1000;
const PAIRS = 5;
const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Ken', 'Dennis', 'Margaret', 'John'];
const TITLES = ['Engineer', 'Director', 'VP Sales', 'Analyst', 'Buyer', 'CEO', 'Consultant', 'Manager'];
const pad = (n, width) => String(n).padStart(width, '0');

// The same records as c_bench.c, as objects: a Node app passes objects, so JSON.stringify of
// each batch is part of the measured binding cost.
function batches() {
  const out = [];
  for (let from = 0; from < ENTRIES; from += BATCH) {
    const batch = [];
    for (let i = from; i < Math.min(ENTRIES, from + BATCH); i++) {
      batch.push({ attributes: { type: 'Contact', url: '/services/data/v62.0/sobjects/Contact' }, Id: `003${pad(i, 15)}`,
        FirstName: FIRST[i % 10], LastName: `Last${pad((i * 7919) % 1000, 4)}`, Email: `person${i}@example.com`,
        Title: TITLES[i % 8], Phone: `+1-555-${pad(i, 7)}`, MailingCity: 'Springfield', AccountId: `001${pad(i % 500, 15)}`,
        LastModifiedDate: '2026-01-21T23:51:33.000+0000' });
    }
    out.push(batch);
  }
  return out;
}

const INDEXES = [{ path: 'Id', type: 'string' }, { path: 'LastName', type: 'string' }, { path: 'Email', type: 'string' }];

// One upsert round into a fresh store; returns its time and the store.
async function upsertRound(root, storeName, data, options) {
  await removeStore({ storeName, root }).catch(() => {});
  const store = await openStore({ storeName, root });
  await store.registerSoup('contacts', INDEXES);
  const t0 = process.hrtime.bigint();
  for (const batch of data) await store.upsert('contacts', batch, options);
  return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, store };
}

function percentile(sorted, p) { return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]; }

// Interleaved in blocks of 100 so machine load hits each way alike:
//   find       store.find(): the first page, no cursor, one async call
//   findSync   store.findSync(): the same page, answered on the JS thread
//   cursor     store.query() then cursor.close(): two async calls
//   floor      an async call that does nothing in the engine (closing an unknown cursor)
async function queries(store) {
  const spec = (q) => ({ queryType: 'exact', indexPath: 'Id', matchKey: `003${pad((q * 7) % ENTRIES, 15)}`, pageSize: 10 });
  const ways = {
    find: async (q) => { if ((await store.find('contacts', spec(q))).length !== 1) throw new Error(`query ${q}`); },
    findSync: (q) => { if (store.findSync('contacts', spec(q)).length !== 1) throw new Error(`query ${q}`); },
    cursor: async (q) => { const cursor = await store.query('contacts', spec(q)); await cursor.close(); },
    floor: () => store.closeCursor(-1),
  };
  const samples = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (let q = 0; q < QUERIES; q += 100) {
    for (const [name, fn] of Object.entries(ways)) {
      for (let i = q; i < Math.min(QUERIES, q + 100); i++) {
        const t0 = process.hrtime.bigint();
        // A synchronous way is timed as a caller uses it: no await (a microtask turn) after it.
        const result = fn(i);
        if (result instanceof Promise) await result;
        samples[name].push(Number(process.hrtime.bigint() - t0) / 1e3);
      }
    }
  }
  const out = {};
  for (const [name, list] of Object.entries(samples)) {
    list.sort((x, y) => x - y);
    out[name] = { p50: percentile(list, 0.5), p99: percentile(list, 0.99) };
  }
  return out;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'syncstore-node-bench-'));
  try {
    const cBinary = process.env.SYNCSTORE_C_BENCH || path.join(__dirname, '..', 'build', 'c_bench');
    const runC = (queries) => JSON.parse(execFileSync(cBinary, [path.join(dir, 'c'), String(ENTRIES), String(queries), '1'], { encoding: 'utf8' }));
    const data = batches();
    // Rounds alternate C, Node (entries returned), Node (not returned); each keeps its best,
    // so load on the machine hits every way alike.
    const best = { c: Infinity, full: Infinity, plain: Infinity };
    let store = null;
    for (let round = 0; round < 3; round++) {
      best.c = Math.min(best.c, runC(1).upsertSeconds);
      if (store) await store.close();
      const full = await upsertRound(path.join(dir, 'node'), `full${round}`, data, {});
      best.full = Math.min(best.full, full.seconds);
      store = full.store;
      const plain = await upsertRound(path.join(dir, 'node'), `plain${round}`, data, { returnEntries: false });
      best.plain = Math.min(best.plain, plain.seconds);
      await plain.store.close();
    }
    // The lookups are timed in PAIRS runs, C then Node (on a noisy machine a run's p50 moves by
    // a third): each figure below is the median of the runs' p50s, each ratio the median of the
    // runs' ratios.
    const runs = [];
    for (let k = 0; k < PAIRS; k++) runs.push({ c: runC(QUERIES), q: await queries(store) });
    await store.close();
    const median = (values) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)];
    const c = { upsertSeconds: best.c };
    for (const key of ['pageP50us', 'pageP99us', 'queryP50us', 'queryP99us', 'handoffP50us', 'handoffP99us']) {
      c[key] = median(runs.map((run) => run.c[key]));
    }
    const q = {};
    for (const way of Object.keys(runs[0].q)) {
      q[way] = { p50: median(runs.map((run) => run.q[way].p50)), p99: median(runs.map((run) => run.q[way].p99)) };
    }
    const ratio = (way, base) => median(runs.map((run) => run.q[way].p50 / run.c[base]));
    const full = { best: best.full }, plain = { best: best.plain };

    const rate = (s) => Math.round(ENTRIES / s).toLocaleString('en-US');
    console.log(`Node module vs C (libsyncstore direct), ${ENTRIES} entries in batches of ${BATCH}, ${QUERIES} exact queries`);
    console.log(`upsert, stored entries returned   C ${c.upsertSeconds.toFixed(3)} s (${rate(c.upsertSeconds)}/s)   Node ${full.best.toFixed(3)} s (${rate(full.best)}/s)   Node/C ${(full.best / c.upsertSeconds).toFixed(2)}x (target <= 1.3x)`);
    console.log(`upsert, {returnEntries:false}                                 Node ${plain.best.toFixed(3)} s (${rate(plain.best)}/s)   Node/C ${(plain.best / c.upsertSeconds).toFixed(2)}x`);
    const line = (label, way, base) => console.log(`${label} p50 ${q[way].p50.toFixed(1)} us p99 ${q[way].p99.toFixed(1)} us   Node/C p50 ${ratio(way, base).toFixed(2)}x`);
    console.log(`exact query through Node's async API (target p50 < 50 us), against the same calls in C:`);
    console.log(`  C syncstore_query_page             p50 ${c.pageP50us.toFixed(1)} us p99 ${c.pageP99us.toFixed(1)} us`);
    line('  store.find (one async call)       ', 'find', 'pageP50us');
    line('  store.findSync (on the JS thread) ', 'findSync', 'pageP50us');
    const syncRatios = runs.map((run) => (run.q.findSync.p50 / run.c.pageP50us).toFixed(2)).join(', ');
    console.log(`    findSync / C target <= 1.3x: ${ratio('findSync', 'pageP50us') <= 1.3 ? 'met' : 'not met'} (runs: ${syncRatios})`);
    console.log(`  C query_soup + cursor_close        p50 ${c.queryP50us.toFixed(1)} us p99 ${c.queryP99us.toFixed(1)} us`);
    line('  store.query + cursor.close (two)  ', 'cursor', 'queryP50us');
    console.log(`  async call floor (no engine work)  p50 ${q.floor.p50.toFixed(1)} us p99 ${q.floor.p99.toFixed(1)} us`);
    console.log(`  C query_page with a thread handoff p50 ${c.handoffP50us.toFixed(1)} us p99 ${c.handoffP99us.toFixed(1)} us   (a condition-variable round trip per lookup, no Node)`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => { console.error(error); process.exitCode = 1; });
