'use strict';
// The hybrid plugins' shared case table (Tests/plugin/cases.json), driven through the Cordova
// bridge's cordova.exec with the semantics of Tests/c/test_plugin.c: one dev server with the
// table's args, a bridge whose default remote is the server's, every 'sync' document event
// recorded, the steps run in order.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { REPO, tempRoot, startDevServer } = require('../test-support/helpers');
const { STATUS } = require('../lib/native');
const { createCordova } = require('../lib/bridge');

const table = JSON.parse(fs.readFileSync(path.join(REPO, 'Tests', 'plugin', 'cases.json'), 'utf8'));
const SERVICES = { smartstore: 'com.salesforce.smartstore', mobilesync: 'com.salesforce.mobilesync' };

/** "$name.a.0.b" -> that part of a saved value. */
function lookup(saved, reference) {
  const [name, ...parts] = reference.slice(1).split('.');
  let value = saved[name];
  for (const part of parts) value = value === undefined || value === null ? undefined : value[part];
  if (value === undefined) throw new Error(`unknown reference ${reference}`);
  return value;
}

function substitute(saved, value) {
  if (typeof value === 'string' && value.startsWith('$')) return lookup(saved, value);
  if (Array.isArray(value)) return value.map((v) => substitute(saved, v));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(saved, v)]));
  return value;
}

/** got "contains" want: objects by their members, arrays element by element (same length). */
function like(got, want) {
  if (Array.isArray(want)) return Array.isArray(got) && got.length === want.length && want.every((w, i) => like(got[i], w));
  if (want && typeof want === 'object') return got !== null && typeof got === 'object' && !Array.isArray(got) && Object.entries(want).every(([k, w]) => like(got[k], w));
  return got === want;
}

/** Checks a success's arguments (`got`) against a step's expect. */
function checkValue(where, got, expect) {
  const [value] = got;
  if (expect.okNone) assert.equal(got.length, 0, `${where}: success without an argument, got ${JSON.stringify(got)}`);
  if ('ok' in expect) assert.deepEqual(value, expect.ok, where);
  if (expect.okLike) assert.ok(like(value, expect.okLike), `${where}: ${JSON.stringify(value)}`);
  if (expect.okPositive) assert.ok(typeof value === 'number' && value > 0, `${where}: ${value}`);
  for (const key of expect.okHas || []) assert.ok(value && key in value, `${where}: no ${key} in ${JSON.stringify(value)}`);
}

/** Calls cordova.exec; resolves with {ok, args} (what success got) or {ok: false, args} (fail). */
function exec(cordova, service, action, args) {
  return new Promise((resolve) => cordova.exec((...got) => resolve({ ok: true, got }), (...got) => resolve({ ok: false, got }),
    SERVICES[service] || service, action, args));
}

test('the shared plugin case table through cordova.exec', { timeout: 120000 }, async (t) => {
  const server = await startDevServer(t, table.server.args);
  const cordova = createCordova({ root: tempRoot(t), remote: server.remote });
  t.after(() => cordova.close());
  const events = [];
  cordova.document.addEventListener('sync', (event) => events.push(event.detail));
  const saved = {};
  let seen = 0;

  for (const step of table.steps) {
    const where = `step '${step.name}'`;
    if (step.kind === 'exec') {
      const answer = await exec(cordova, step.service, step.action, substitute(saved, step.args));
      const expect = substitute(saved, step.expect);
      if (expect.error) {
        assert.equal(answer.ok, false, `${where}: expected ${expect.error}, got ${JSON.stringify(answer.got)}`);
        assert.equal(answer.got.length, 1, `${where}: fail gets one argument`);
        assert.equal(typeof answer.got[0], 'string', `${where}: fail gets the message`);
        if (expect.message) assert.ok(answer.got[0].includes(expect.message), `${where}: ${answer.got[0]}`);
        // The status is not part of Cordova's fail: check it through the dispatcher itself.
        const direct = await cordova.plugin.exec(SERVICES[step.service] || step.service, step.action, substitute(saved, step.args));
        assert.equal(direct.status, STATUS[expect.error], `${where}: status ${direct.status}`);
        continue;
      }
      assert.equal(answer.ok, true, `${where}: failed with ${JSON.stringify(answer.got)}`);
      // Every success has its value as the callback's one argument ("OK" where the platforms' plugins
      // call success() without one), as cordova-android and cordova-ios deliver it.
      assert.equal(answer.got.length, 1, `${where}: success gets one argument, got ${JSON.stringify(answer.got)}`);
      const [value] = answer.got;
      checkValue(where, answer.got, expect);
      if (step.save && value !== undefined) saved[step.save] = value;
    } else if (step.kind === 'waitEvent') {
      const want = substitute(saved, step.like);
      const deadline = Date.now() + step.timeoutMs;
      let found = -1;
      while ((found = events.findIndex((e, i) => i >= seen && like(e, want))) < 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.ok(found >= 0, `${where}: no such event among ${JSON.stringify(events.slice(seen))}`);
      seen = found + 1;
    } else if (step.kind === 'noEvent') {
      const want = substitute(saved, step.like);
      assert.ok(!events.some((e) => like(e, want)), `${where}: ${JSON.stringify(events)}`);
    } else if (step.kind === 'http') {
      const route = [].concat(substitute(saved, step.path)).join('');
      const response = await fetch(`${server.url}/services/data/v62.0/${route}`, {
        method: step.method, headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' },
        body: step.body === undefined ? undefined : JSON.stringify(step.body),
      });
      assert.ok(response.status < 300, `${where}: ${response.status}`);
      const got = response.status === 204 ? null : await response.json();
      if (step.expect) assert.ok(like(got, step.expect), `${where}: ${JSON.stringify(got)}`);
      if (step.save) saved[step.save] = got;
    } else {
      assert.fail(`${where}: unknown step kind ${step.kind}`);
    }
  }
});

// The same table through the React Native bridge objects (react-native-force's SmartStoreReactBridge /
// MobileSyncReactBridge on Android, SFSmartStoreReactBridge / SFMobileSyncReactBridge on iOS), each
// shape on a fresh root: the smartstore steps before the first sync (later ones read what the runs
// wrote, and these bridges' runs differ) and every step with a `reactNative` answer, the answer
// where those bridges differ from the Cordova plugins.
const RN_MOBILESYNC = new Set(['deleteSync', 'resetSyncManager', 'startLiveSync', 'stopLiveSync', 'getLiveSyncState']);
const FIRST_RUN = table.steps.findIndex((step) => step.service === 'mobilesync');
for (const shape of ['android', 'ios']) {
  test(`the shared plugin case table through the React Native bridges (${shape})`, { timeout: 120000 }, async (t) => {
    const server = await startDevServer(t, table.server.args);
    const cordova = createCordova({ root: tempRoot(t), remote: server.remote });
    t.after(() => cordova.close());
    const rn = cordova.reactNative;
    const [store, sync] = shape === 'android'
      ? [rn.SmartStoreReactBridge, rn.MobileSyncReactBridge] : [rn.SFSmartStoreReactBridge, rn.SFMobileSyncReactBridge];
    const saved = {};
    let ran = 0;
    for (const [index, step] of table.steps.entries()) {
      if (step.kind !== 'exec' || (index > FIRST_RUN && !step.reactNative)) continue;
      const method = step.service === 'smartstore' && step.action.startsWith('pg')
        ? step.action[2].toLowerCase() + step.action.slice(3) : step.service === 'mobilesync' && RN_MOBILESYNC.has(step.action) ? step.action : null;
      const fn = method && (step.service === 'smartstore' ? store : sync)[method];
      if (!fn) continue;
      const args = substitute(saved, step.args);
      const fields = args.find((a) => a && typeof a === 'object') || {};
      const where = `${shape} ${method}, step '${step.name}'`;
      const answer = await new Promise((resolve) => (shape === 'android'
        ? fn(fields, (...got) => resolve({ ok: true, got: got.map((text) => JSON.parse(text)) }), (...got) => resolve({ ok: false, got }))
        : fn(fields, (error, ...got) => resolve(error ? { ok: false, got: [error] } : { ok: true, got }))));
      const expect = substitute(saved, (step.reactNative && step.reactNative[shape]) || step.expect);
      ran++;
      if (expect.error) { assert.equal(answer.ok, false, `${where}: expected an error, got ${JSON.stringify(answer.got)}`); continue; }
      assert.equal(answer.ok, true, `${where}: failed with ${answer.got}`);
      if (!expect.okNone) assert.equal(answer.got.length, 1, `${where}: success gets one value, got ${JSON.stringify(answer.got)}`);
      checkValue(where, answer.got, expect);
      if (step.save && answer.got[0] !== undefined) saved[step.save] = answer.got[0];
    }
    assert.ok(ran >= 30, `${shape}: only ${ran} steps ran`);
  });
}
