'use strict';
// Runs one of Salesforce's own hybrid test suites (the Mobile SDK's SFSmartStoreTestSuite.js,
// SFSmartStoreLoadTestSuite.js or SFMobileSyncTestSuite.js), unmodified, with their own QUnit, on
// the Cordova bridge: what the SDK's test app does in a WebView, with SyncStore's dispatcher as the
// native plugins. SyncStore does not ship these files: $SYNCSTORE_SF_SHARED is a checkout of
// forcedotcom/SalesforceMobileSDK-Shared (its libs/, test/ and dependencies/).
//
//   node salesforce-suite-child.js SmartStoreTestSuite | SmartStoreLoadTestSuite | MobileSyncTestSuite
//
// Env: SYNCSTORE_SF_SHARED, SYNCSTORE_ROOT (the stores), SF_INSTANCE_URL / SF_ACCESS_TOKEN (the
// logged-in user: a dev server), SF_TEST_TIMEOUT_MS (QUnit's per-test timeout, default 120000).
// Prints one JSON line on stdout: {suite, total, passed, failed: [{name, message}]}; the suites'
// own console output goes to stderr.
const fs = require('node:fs');
const path = require('node:path');
const cordova = require('../cordova');

const SUITES = {
  SmartStoreTestSuite: ['SFAbstractSmartStoreTestSuite.js', 'SFSmartStoreTestSuite.js'],
  SmartStoreLoadTestSuite: ['SFAbstractSmartStoreTestSuite.js', 'SFSmartStoreLoadTestSuite.js'],
  MobileSyncTestSuite: ['SFMobileSyncTestSuite.js'],
};

async function main() {
  const suite = process.argv[2];
  const shared = process.env.SYNCSTORE_SF_SHARED;
  if (!SUITES[suite]) throw new Error(`give one of ${Object.keys(SUITES).join(', ')}`);
  if (!shared) throw new Error('set SYNCSTORE_SF_SHARED to a checkout of SalesforceMobileSDK-Shared');
  const { SF_INSTANCE_URL: instanceUrl, SF_ACCESS_TOKEN: accessToken } = process.env;
  if (instanceUrl && accessToken) {
    cordova.configure({ remote: { instanceUrl, accessToken }, credentials: { userId: '005000000000001AAA', orgId: '00D000000000001AAA' } });
  }
  const out = process.stdout;
  globalThis.console = new console.Console({ stdout: process.stderr, stderr: process.stderr });
  // As in a WebView, a promise rejected with no handler is logged, not the end of the page: the
  // test waiting on it fails by QUnit's timeout.
  process.on('unhandledRejection', (reason) => console.error('unhandled rejection:', reason));

  // A page's globals, then its scripts in test.html's order (the SDK's JS libraries, QUnit, the
  // suites), with the bridge in place of cordova.js and the SDK's plugins.
  globalThis.window = globalThis;
  globalThis.location = new URL('file:///www/test.html');
  cordova.install();
  const dependencies = path.join(shared, 'dependencies');
  const scripts = [
    path.join(dependencies, 'underscore', 'underscore-min.js'), path.join(dependencies, 'backbone', 'backbone-min.js'),
    ...['force.js', 'force+promise.js', 'cordova.force.js', 'mobilesync.js'].map((f) => path.join(shared, 'libs', f)),
    path.join(dependencies, 'qunit', 'qunit.js'),
    ...['SFTestSuite.js', ...SUITES[suite]].map((f) => path.join(shared, 'test', f)),
  ];
  for (const file of scripts) {
    if (!fs.existsSync(file)) throw new Error(`${file} is missing`);
    cordova.loadScript(file);
  }
  // Signed in as the SDK's container signs the page in (force.js through the OAuth plugin), and
  // mobilesync.js set up, before a suite runs (test.html does this at load).
  if (instanceUrl) {
    await new Promise((resolve, reject) => globalThis.force.login(resolve, reject));
    globalThis.Force.init();
  }

  const results = [];
  const finished = new Promise((resolve) => {
    globalThis.navigator.testrunner = {
      onTestComplete(name, success, message) {
        results.push({ name, success, message });
        if (results.length === runner.allTests.length) resolve();
      },
    };
  });
  globalThis.QUnit.config.testTimeout = Number(process.env.SF_TEST_TIMEOUT_MS || 120000);
  const runner = new globalThis[suite]();
  runner.startTests();
  await finished;
  const failed = results.filter((r) => !r.success).map(({ name, message }) => ({ name, message }));
  out.write(`${JSON.stringify({ suite, total: results.length, passed: results.length - failed.length, failed })}\n`);
  await cordova.close();
}

main().then(() => process.exit(0), (error) => {
  process.stderr.write(`salesforce-suite: ${error && error.stack ? error.stack : JSON.stringify(error)}\n`);
  process.exit(1);
});
