'use strict';
// A container for a hybrid page on Node: what a WebView gives Salesforce's hybrid JavaScript.
// Salesforce's files are not part of SyncStore: the user brings their copies (see README.md) in
// the directory $SYNCSTORE_SFJS_DIR (or the first argument). The container signs the page in as
// the user of $SF_INSTANCE_URL / $SF_ACCESS_TOKEN, runs the page's code (app.js), and prints what
// the page saw as one JSON line on stdout. The page's own console goes to stderr.
const fs = require('node:fs');
const path = require('node:path');
const cordova = require('../../bindings/node/cordova');
const { run } = require('./app');

// In the order an index.html lists them: mobilesync.js needs Backbone and force+promise.js's
// forceJsClient when it loads.
const FILES = ['cordova.force.js', 'force.js', 'force+promise.js', 'underscore.js', 'backbone.js', 'mobilesync.js'];

function loadPage(dir) {
  const missing = FILES.filter((file) => !fs.existsSync(path.join(dir, file)));
  if (missing.length) throw new Error(`${dir} lacks ${missing.join(', ')} (Salesforce's hybrid files: see examples/hybrid-node/README.md)`);
  // What a browser page has and force.js reads as it loads: window (where it looks for cordova,
  // which makes it log in and send REST requests through the plugins) and location.
  globalThis.window = globalThis;
  globalThis.location = new URL('file:///www/index.html');
  cordova.install(); // globalThis.cordova, a document for 'deviceready' / 'sync', navigator
  for (const file of FILES) cordova.loadScript(path.join(dir, file));
}

async function main() {
  const dir = process.argv[2] || process.env.SYNCSTORE_SFJS_DIR;
  if (!dir) throw new Error('give the directory holding Salesforce\'s hybrid files: SYNCSTORE_SFJS_DIR=<dir> node examples/hybrid-node');
  const { SF_INSTANCE_URL: instanceUrl, SF_ACCESS_TOKEN: accessToken } = process.env;
  if (!instanceUrl || !accessToken) throw new Error('set SF_INSTANCE_URL and SF_ACCESS_TOKEN (a dev server: syncstore-devserver --token T)');
  // The logged-in user: every store syncs with these credentials, getAuthCredentials answers
  // them to force.js, and force.js' REST requests go to this instance with this token.
  cordova.configure({ remote: { instanceUrl, accessToken }, credentials: { userId: '005000000000001AAA', orgId: '00D000000000001AAA' } });
  const out = process.stdout;
  globalThis.console = new console.Console({ stdout: process.stderr, stderr: process.stderr });
  loadPage(dir);
  try {
    const report = await run();
    out.write(`${JSON.stringify(report)}\n`);
  } finally {
    await cordova.close();
  }
}

main().catch((error) => {
  process.stderr.write(`hybrid-node: ${error && error.stack ? error.stack : JSON.stringify(error)}\n`);
  process.exitCode = 1;
});
