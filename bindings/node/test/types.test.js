'use strict';
// index.d.ts type-checks against a strict usage file (tsc from Debian's node-typescript).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const tsc = spawnSync('tsc', ['--version'], { encoding: 'utf8' });

test('index.d.ts passes tsc --strict on the usage file', { skip: tsc.error ? 'tsc is not installed (apt-get install node-typescript)' : false }, () => {
  const usage = path.join(__dirname, '..', 'test-support', 'types-usage.ts');
  const result = spawnSync('tsc', ['--noEmit', '--strict', '--target', 'es2022', '--module', 'commonjs',
    '--moduleResolution', 'node', '--lib', 'es2022', usage], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});
