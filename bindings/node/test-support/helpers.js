'use strict';
// Shared by the Node suites (kept outside test/: node --test runs every file there): temp store roots and a real dev server process on 127.0.0.1.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const REPO = path.resolve(__dirname, '..', '..', '..');
const TOKEN = 'node-test-token';

function devserverPath() {
  return process.env.SYNCSTORE_DEVSERVER || path.join(REPO, '.build', 'debug', 'syncstore-devserver');
}

function tempRoot(t, prefix = 'syncstore-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts the dev server; resolves with {url, token, proc}; stopped when the test ends. */
async function startDevServer(t, extraArgs = []) {
  const binary = devserverPath();
  if (!fs.existsSync(binary)) throw new Error(`syncstore-devserver is not built at ${binary} (set SYNCSTORE_DEVSERVER)`);
  const proc = spawn(binary, ['--host', '127.0.0.1', '--port', '0', '--token', TOKEN, ...extraArgs],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', resolve);
    proc.kill('SIGTERM');
  }));
  const lines = readline.createInterface({ input: proc.stdout });
  const url = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`syncstore-devserver exited with ${code}`)));
  });
  if (!url.startsWith('http://127.0.0.1') && !url.startsWith('https://127.0.0.1')) throw new Error(`unexpected dev server URL ${url}`);
  return { url, token: TOKEN, proc, remote: { instanceUrl: url, accessToken: TOKEN } };
}

/** Calls a Cordova-style function and resolves with what its success callback got. */
function cb(fn, ...args) {
  return new Promise((resolve, reject) => fn(...args, resolve, (error, extra) => reject(extra || new Error(String(error)))));
}

/** Rejects with what the error callback got (and fails if success is called). */
function cbError(fn, ...args) {
  return new Promise((resolve, reject) => fn(...args, (value) => reject(new Error(`expected an error, got ${JSON.stringify(value)}`)), (...errorArgs) => resolve(errorArgs)));
}

module.exports = { REPO, TOKEN, devserverPath, tempRoot, startDevServer, cb, cbError };
