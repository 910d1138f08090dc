'use strict';
// The README's first steps are the files in examples/: each appears verbatim in README.md and
// runs here against a dev server, as `require('syncstore')` resolves for an app.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { tempRoot, startDevServer } = require('../test-support/helpers');

const HERE = path.join(__dirname, '..');
const README = fs.readFileSync(path.join(HERE, 'README.md'), 'utf8');

function run(file, env) {
  return new Promise((resolve) => {
    // From another directory: the module is found as an app finds it, not relative to cwd.
    const child = spawn(process.execPath, [file], { env, cwd: env.SYNCSTORE_ROOT_PARENT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

async function environment(t) {
  const server = await startDevServer(t, ['--seed', 'Contact=150']);
  const dir = tempRoot(t);
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(HERE, path.join(dir, 'node_modules', 'syncstore'));
  return { ...process.env, NODE_PATH: path.join(dir, 'node_modules'), SYNCSTORE_ROOT: path.join(dir, 'stores'), SYNCSTORE_ROOT_PARENT: dir,
    SF_INSTANCE_URL: server.url, SF_ACCESS_TOKEN: server.token };
}

test('the repository README shows examples/modern.js verbatim', () => {
  const top = fs.readFileSync(path.join(HERE, '..', '..', 'README.md'), 'utf8');
  const code = fs.readFileSync(path.join(HERE, 'examples', 'modern.js'), 'utf8');
  assert.ok(top.includes('```js\n' + code + '```'), 'README.md (repository) must show bindings/node/examples/modern.js verbatim');
});

for (const name of fs.readdirSync(path.join(HERE, 'examples')).filter((f) => f.endsWith('.js'))) {
  test(`examples/${name} is in the README`, () => {
    const code = fs.readFileSync(path.join(HERE, 'examples', name), 'utf8');
    assert.ok(README.includes('```js\n' + code + '```'), `README.md must show examples/${name} verbatim`);
  });
}

test('examples/cordova-style.js runs, and runs again in the same root', { timeout: 90000 }, async (t) => {
  const env = await environment(t);
  for (let round = 1; round <= 2; round++) { // the second run finds the named sync and re-runs it
    const result = await run(path.join(HERE, 'examples', 'cordova-style.js'), env);
    assert.equal(result.code, 0, `run ${round}: ${result.err}`);
    assert.match(result.out, /started sync 1: RUNNING/);
    assert.match(result.out, /sync 1 DONE 100%/);
    assert.match(result.out, /\d+ contacts named A\.\.\., first page: \[/);
  }
});

test('examples/hybrid-page.js runs through the Cordova bridge', { timeout: 60000 }, async (t) => {
  const result = await run(path.join(HERE, 'examples', 'hybrid-page.js'), await environment(t));
  assert.equal(result.code, 0, result.err);
  assert.match(result.out, /^sync 1: RUNNING\nsynced 150; first: \w+, \w+, \w+\n$/);
});

test('examples/modern.js runs', { timeout: 60000 }, async (t) => {
  const result = await run(path.join(HERE, 'examples', 'modern.js'), await environment(t));
  assert.equal(result.code, 0, result.err);
  assert.match(result.out, /synced down 150 records/);
  assert.match(result.out, /sync up DONE/);
  assert.match(result.out, /2 pages/); // 151 contacts, 100 per page
});

test('examples/live-sync.js runs: caught up, the edit pushed, stopped; and again in the same root', { timeout: 90000 }, async (t) => {
  const env = await environment(t);
  for (let round = 1; round <= 2; round++) { // the second run finds the named syncs
    const result = await run(path.join(HERE, 'examples', 'live-sync.js'), env);
    assert.equal(result.code, 0, `run ${round}: ${result.err}`);
    assert.match(result.out, /^live sync: connecting\n {2}contacts-up: DONE\n {2}contacts-down: DONE\nlive sync: live\n/);
    assert.match(result.out, /\n {2}contacts-up: DONE\n(live sync: live\n)?still dirty: 0\n/);
    assert.match(result.out, /live sync: stopped\n$/);
  }
  const response = await fetch(`${env.SF_INSTANCE_URL}/services/data/v62.0/query?q=${encodeURIComponent("SELECT Id FROM Contact WHERE LastName = 'Hopper'")}`,
    { headers: { Authorization: `Bearer ${env.SF_ACCESS_TOKEN}` } });
  assert.equal((await response.json()).totalSize, 2);
});

test('examples/watch.js runs: the live result ends with both tasks due soon', { timeout: 60000 }, async (t) => {
  const dir = tempRoot(t);
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(HERE, path.join(dir, 'node_modules', 'syncstore'));
  const env = { ...process.env, NODE_PATH: path.join(dir, 'node_modules'), SYNCSTORE_ROOT: path.join(dir, 'stores'), SYNCSTORE_ROOT_PARENT: dir };
  for (let round = 1; round <= 2; round++) { // runs again over what the first run left
    const result = await run(path.join(HERE, 'examples', 'watch.js'), env);
    assert.equal(result.code, 0, result.err);
    // Which notices merge (the first one included) depends on timing: only the end is fixed.
    assert.match(result.out, /: 2 due soon: call the bank, file taxes\n/);
    assert.match(result.out, /andle: [23] added, 0 updated, 0 deleted\n/);
  }
});

test('examples/encrypted.js runs, and the store it leaves needs the rotated key', { timeout: 60000 }, async (t) => {
  const dir = tempRoot(t);
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(HERE, path.join(dir, 'node_modules', 'syncstore'));
  const stores = path.join(dir, 'stores');
  const env = { ...process.env, NODE_PATH: path.join(dir, 'node_modules'), SYNCSTORE_ROOT: stores, SYNCSTORE_ROOT_PARENT: dir,
    NOTES_KEY: 'first example key', NOTES_NEXT_KEY: 'second example key' };
  for (let round = 1; round <= 2; round++) { // runs again over what the first run left
    const result = await run(path.join(HERE, 'examples', 'encrypted.js'), env);
    assert.equal(result.code, 0, result.err);
    assert.match(result.out, /wrong key: SYNCSTORE_ERR_AUTH\n/);
    assert.match(result.out, /1 note: confidential\n/);
  }
  const db = fs.readFileSync(path.join(stores, 'user', 'notes.db'));
  assert.ok(!db.includes('confidential') && !db.includes('salary review'), 'the example\'s store holds plaintext');
  const { openStore } = require('..');
  await assert.rejects(openStore({ storeName: 'notes', root: stores, key: 'first example key' }), { code: 'SYNCSTORE_ERR_AUTH' });
  const store = await openStore({ storeName: 'notes', root: stores, key: 'second example key' });
  assert.equal((await store.find('notes', { queryType: 'range', indexPath: 'title', order: 'ascending', pageSize: 10 })).length, 1);
  await store.close();
  const unset = await run(path.join(HERE, 'examples', 'encrypted.js'), { ...env, NOTES_KEY: '' });
  assert.notEqual(unset.code, 0, 'without keys the example must refuse to run');
});
