'use strict';
// Loading: when the addon or libsyncstore cannot be found, require() fails with a STATE error
// (code and status agree) that names every place looked at and the command that builds it.
// Each case runs in a child process: the library loads once per process.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { tempRoot } = require('../test-support/helpers');

const HERE = path.join(__dirname, '..');
const ADDON = path.join(HERE, 'build', 'syncstore.node');
// The library's file name, from the header the addon was compiled with ("libsyncstore.so.1").
const SONAME = require(ADDON).SONAME;
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Runs `code` in a child node; returns what it printed as JSON. */
function child(code, env = process.env) {
  const result = spawnSync(process.execPath, ['-e', code], { env, encoding: 'utf8', timeout: 30000 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

const REQUIRE_AND_REPORT = (dir) => `
  try { require(${JSON.stringify(dir)}); console.log('null'); }
  catch (e) { console.log(JSON.stringify({ code: e.code, status: e.status, message: e.message })); }`;

/** The module's JS and addon copied into <tmp>/bindings/node (optionally without the addon): a
 *  checkout whose build/lib has no library. */
function bareCheckout(t, { withAddon = true } = {}) {
  const repo = tempRoot(t, 'syncstore-load-');
  const dir = path.join(repo, 'bindings', 'node');
  fs.mkdirSync(path.join(dir, 'build'), { recursive: true });
  fs.cpSync(path.join(HERE, 'lib'), path.join(dir, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(HERE, 'index.js'), path.join(dir, 'index.js'));
  if (withAddon) fs.copyFileSync(ADDON, path.join(dir, 'build', 'syncstore.node'));
  return { repo, dir };
}

function systemHasLibrary() {
  try {
    return execFileSync('/sbin/ldconfig', ['-p'], { encoding: 'utf8' }).includes(` ${SONAME} `);
  } catch {
    return false;
  }
}

test('the addon names errors after their status before the library is loaded', () => {
  const out = child(`
    const addon = require(${JSON.stringify(ADDON)});
    const report = (f) => { try { f(); return null; } catch (e) { return { code: e.code, status: e.status, message: e.message }; } };
    console.log(JSON.stringify({ missing: report(() => addon.load(${JSON.stringify(`/nonexistent/${SONAME}`)})), notText: report(() => addon.load(42)) }));`);
  assert.equal(out.missing.status, 11);
  assert.equal(out.missing.code, 'SYNCSTORE_ERR_STATE');
  assert.match(out.missing.message, new RegExp(`/nonexistent/${escape(SONAME)}: cannot open shared object file`));
  assert.deepEqual([out.notText.code, out.notText.status], ['SYNCSTORE_ERR_ARGUMENT', 1]);
});

test('a SYNCSTORE_LIB that does not load: STATE, the path, and the fix', () => {
  const out = child(REQUIRE_AND_REPORT(HERE), { ...process.env, SYNCSTORE_LIB: `/nonexistent/${SONAME}` });
  assert.deepEqual([out.code, out.status], ['SYNCSTORE_ERR_STATE', 11]);
  assert.ok(out.message.includes(`$SYNCSTORE_LIB (/nonexistent/${SONAME}): no such file`), out.message);
  assert.ok(out.message.includes(`bash ${path.resolve(HERE, '..', '..', 'scripts', 'build-node.sh')}`), out.message);
});

test('no library anywhere: every place looked at, and the command that builds it', (t) => {
  if (systemHasLibrary()) return t.skip(`the system loader has a ${SONAME}`);
  const { repo, dir } = bareCheckout(t);
  const env = { ...process.env };
  delete env.SYNCSTORE_LIB;
  delete env.LD_LIBRARY_PATH;
  const out = child(REQUIRE_AND_REPORT(dir), env);
  assert.deepEqual([out.code, out.status], ['SYNCSTORE_ERR_STATE', 11]);
  const lines = out.message.split('\n');
  assert.equal(lines[0], `cannot load libsyncstore (${SONAME}); looked in:`);
  assert.equal(lines[1], '  $SYNCSTORE_LIB: not set');
  assert.equal(lines[2], `  ${path.join(repo, 'build', 'lib', SONAME)}: no such file`);
  assert.match(lines[3], new RegExp(`^ {2}the system loader path \\(LD_LIBRARY_PATH, .*\\): ${escape(SONAME)}: cannot open shared object file`));
  assert.ok(lines[4].startsWith(`Build it with bash ${path.join(repo, 'scripts', 'build-node.sh')} `), lines[4]);
});

test('the addon not built: STATE and the command that builds it', (t) => {
  const { repo, dir } = bareCheckout(t, { withAddon: false });
  const out = child(REQUIRE_AND_REPORT(dir));
  assert.deepEqual([out.code, out.status], ['SYNCSTORE_ERR_STATE', 11]);
  assert.ok(out.message.includes(`not built (no ${path.join(dir, 'build', 'syncstore.node')}): run bash ${path.join(repo, 'scripts', 'build-node.sh')}`), out.message);
});
