'use strict';
// Where stores live: set explicitly, else SYNCSTORE_ROOT, else a per-user data directory.
const os = require('node:os');
const path = require('node:path');

let explicitRoot = null;

function defaultRoot() {
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'syncstore');
  if (process.platform === 'win32') return path.join(process.env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'syncstore');
  return path.join(process.env.XDG_DATA_HOME || path.join(home, '.local', 'share'), 'syncstore');
}

function getRoot() {
  return explicitRoot || process.env.SYNCSTORE_ROOT || defaultRoot();
}

function setRoot(dir) {
  if (dir !== null && (typeof dir !== 'string' || dir === '')) throw new TypeError('the root directory must be a non-empty string or null');
  explicitRoot = dir ? path.resolve(dir) : null;
}

module.exports = { getRoot, setRoot, defaultRoot };
