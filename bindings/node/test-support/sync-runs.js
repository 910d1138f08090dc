'use strict';
// Shared by the sync protocol suites: a mobilesync run watched through its 'sync' events.
const assert = require('node:assert/strict');
const { mobilesync } = require('..');

const TERMINAL = ['DONE', 'FAILED', 'STOPPED'];

/** Runs a mobilesync start call; resolves with [state at start, the run's 'sync' events]. */
function run(start, ...args) {
  const events = [];
  let startState;
  return new Promise((resolve, reject) => {
    const ours = () => (startState ? events.filter((d) => d._soupEntryId === startState._soupEntryId) : []);
    const check = () => {
      if (!ours().some((d) => TERMINAL.includes(d.status))) return;
      mobilesync.off('sync', onSync);
      resolve([startState, ours()]);
    };
    const onSync = (detail) => { events.push(detail); check(); };
    mobilesync.on('sync', onSync);
    start(...args, (state) => { startState = state; check(); },
      (error) => { mobilesync.off('sync', onSync); reject(new Error(String(error))); });
  });
}

/** A clean run: RUNNING first, one terminal DONE last, progress never going down. */
function assertClean(events, what) {
  const statuses = events.map((d) => d.status);
  assert.equal(statuses[0], 'RUNNING', what);
  assert.equal(statuses.at(-1), 'DONE', `${what}: ${events.at(-1)?.error}`);
  assert.equal(statuses.filter((s) => TERMINAL.includes(s)).length, 1, what);
  const progress = events.slice(0, -1).map((d) => d.progress);
  assert.ok(progress.every((p, i) => i === 0 || p >= progress[i - 1]), `${what}: progress ${progress}`);
  const end = events.at(-1);
  assert.equal(end.errorCode, 0, `${what}: ${end.error}`);
  return end;
}

module.exports = { run, assertClean };
