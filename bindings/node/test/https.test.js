'use strict';
// A sync over HTTPS inside Node: node exports its bundled OpenSSL, and libcurl (loaded by the
// engine) binds to those symbols instead of the system libssl. This checks the pair still works.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { openStore } = require('..');
const { tempRoot, startDevServer } = require('../test-support/helpers');

test('sync down over HTTPS with a CA bundle', { timeout: 60000 }, async (t) => {
  const dir = tempRoot(t);
  const cert = path.join(dir, 'cert.pem'), key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const server = await startDevServer(t, ['--seed', 'Contact=300', '--tls-cert', cert, '--tls-key', key]);
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:/);
  const store = await openStore({ storeName: 'tls', root: dir });
  t.after(() => store.close());
  await store.registerSoup('contacts', [{ path: 'Id', type: 'string' }]);

  await store.setRemote({ ...server.remote, caBundle: cert });
  const final = await store.syncDown({ type: 'soql', query: 'SELECT Id, LastName FROM Contact' }, 'contacts').done;
  assert.equal(final.totalSize, 300);

  // Without the CA the server is refused, and the run says so.
  await store.setRemote(server.remote);
  await assert.rejects(store.syncDown({ type: 'soql', query: 'SELECT Id FROM Contact' }, 'contacts').done,
    (error) => error.state.status === 'FAILED' && error.state.errorCode === 5);
});
