'use strict';
// QuerySpec builders of the Cordova plugin (same argument orders; pageSize 10, ascending).

function spec(queryType, fields) {
  const s = { queryType, indexPath: null, matchKey: null, beginKey: null, endKey: null, likeKey: null,
    smartSql: null, orderPath: null, order: 'ascending', pageSize: 10, selectPaths: null };
  for (const [key, value] of Object.entries(fields)) if (value != null) s[key] = value; // like the plugin: absent or null keeps the default
  if (s.orderPath === null && queryType !== 'smart') s.orderPath = s.indexPath;
  return s;
}

const buildAllQuerySpec = (path, order, pageSize, selectPaths) =>
  spec('range', { indexPath: path, order, pageSize, selectPaths });

const buildExactQuerySpec = (path, matchKey, pageSize, order, orderPath, selectPaths) =>
  spec('exact', { indexPath: path, matchKey, pageSize, order, orderPath, selectPaths });

const buildRangeQuerySpec = (path, beginKey, endKey, order, pageSize, orderPath, selectPaths) =>
  spec('range', { indexPath: path, beginKey, endKey, order, pageSize, orderPath, selectPaths });

const buildLikeQuerySpec = (path, likeKey, order, pageSize, orderPath, selectPaths) =>
  spec('like', { indexPath: path, likeKey, order, pageSize, orderPath, selectPaths });

const buildMatchQuerySpec = (path, matchKey, order, pageSize, orderPath, selectPaths) =>
  spec('match', { indexPath: path, matchKey, order, pageSize, orderPath, selectPaths });

const buildSmartQuerySpec = (smartSql, pageSize) => spec('smart', { smartSql, pageSize });

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
    Object.assign(this, spec('range', { indexPath: path ?? null }));
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

module.exports = {
  buildAllQuerySpec, buildExactQuerySpec, buildRangeQuerySpec, buildLikeQuerySpec,
  buildMatchQuerySpec, buildSmartQuerySpec, SoupIndexSpec, QuerySpec, StoreCursor,
};
