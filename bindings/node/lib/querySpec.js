'use strict';
// QuerySpec builders of the Cordova plugin (same argument orders), made from the library's table
// (lib/api.js): their shapes and defaults are cordova.force.js's, as the library gives them.
const { builders } = require('./api');

const { buildAllQuerySpec } = builders;

/** A SoupIndexSpec: {path, type}. */
class SoupIndexSpec {
  constructor(path, type) {
    this.path = path;
    this.type = type;
  }
}

/** The plugin's QuerySpec constructor shape (fields filled by the builders). */
class QuerySpec {
  constructor(path) {
    Object.assign(this, buildAllQuerySpec(path ?? null));
  }
}

/** The plugin's StoreCursor shape (cursors come back from querySoup / runSmartQuery). */
class StoreCursor {
  constructor() {
    this.cursorId = null;
    this.currentPageIndex = 0;
    this.pageSize = 0;
    this.totalEntries = 0;
    this.totalPages = 0;
    this.currentPageOrderedEntries = null;
  }
}

module.exports = { ...builders, SoupIndexSpec, QuerySpec, StoreCursor };
